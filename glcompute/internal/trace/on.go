//go:build glmul_trace

package trace

import (
	"fmt"
	"os"
	"sync"
	"time"
)

var last struct {
	sync.Mutex
	t time.Time
}

// Stage marks the end of a stage named stage ("" starts the clock) and
// prints its time on stderr.
func Stage(stage string) {
	last.Lock()
	defer last.Unlock()
	now := time.Now()
	if stage != "" && !last.t.IsZero() {
		fmt.Fprintf(os.Stderr, "glcompute trace: %8.2f ms  %s\n", float64(now.Sub(last.t))/1e6, stage)
	}
	last.t = now
}
