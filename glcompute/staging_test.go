package glcompute

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/glmul/glmul/cpu"
	"github.com/glmul/glmul/validate"
)

// TestStagingLongRows: rows larger than a staging buffer (4 KiB: 1024
// floats) go through it in pieces, both ways, through persistent mappings
// and glMapBufferRange per chunk: A's rows (K off a multiple of 4, the
// last piece padded with zeros), B's and C's rows through Measure's
// stages, and a product in panels; each C against float64. They were
// refused ("a row of 2504 floats is larger than a staging buffer (4096
// bytes); raise Options.StagingBytes"), an option glmul's user cannot set.
func TestStagingLongRows(t *testing.T) {
	for _, mapOnce := range []bool{false, true} {
		d := openDeviceWith(t, &Options{Backend: BackendEGL, StagingBytes: 4096, NoPersistentMapping: mapOnce})
		rng := rand.New(rand.NewPCG(11, 12))
		for _, c := range []struct {
			m, k, n int
			o       MulOptions
			staged  bool
		}{
			{3, 2501, 5, MulOptions{}, false},
			{5, 3, 2100, MulOptions{}, true},
			{70, 1030, 600, MulOptions{Kernel: "fast:64x64x8_4x4", MaxBinding: 512 << 10}, false},
		} {
			name := fmt.Sprintf("%d×%d×%d (persistent %v)", c.m, c.k, c.n, !mapOnce)
			a, b, cm := cpu.Random(c.m, c.k, rng), cpu.Random(c.k, c.n, rng), cpu.New(c.m, c.n)
			tm, err := mulStaged(d, cm, a, b, c.o, c.staged)
			if err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			if (c.o.MaxBinding > 0) != (tm.Panels != "") {
				t.Errorf("%s: panels %q", name, tm.Panels)
			}
			if res := validate.CheckFull(a, b, cm); res.Err() != nil {
				t.Errorf("%s: %v", name, res.Err())
			}
		}
	}
}
