//go:build glmul_trace && linux

package trace

import (
	"fmt"
	"os"
	"sync"
	"syscall"
	"time"
)

// On is true in the diagnostic build: code that only formats what Stage
// prints sits behind it.
const On = true

var last struct {
	sync.Mutex
	start time.Time
	t     map[int]time.Time // by OS thread: a group's devices each have one
}

// Stage marks the end of a stage named stage ("" starts the clock) and
// prints on stderr the time since the process's first Stage, the OS
// thread (each device of a group runs on its own) and how long the stage
// took since the last one on that thread.
func Stage(stage string) {
	last.Lock()
	defer last.Unlock()
	now, tid := time.Now(), syscall.Gettid()
	if last.t == nil {
		last.start, last.t = now, map[int]time.Time{}
	}
	if t, ok := last.t[tid]; ok && stage != "" {
		fmt.Fprintf(os.Stderr, "glcompute trace: %9.2f ms  tid %d  %8.2f ms  %s\n",
			float64(now.Sub(last.start))/1e6, tid, float64(now.Sub(t))/1e6, stage)
	}
	last.t[tid] = now
}
