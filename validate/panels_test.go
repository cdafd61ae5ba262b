package validate

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/glmul/glmul/cpu"
)

// TestPanels: panels of a correct product pass in the mode asked for; a
// panel whose rows of A hold a NaN is checked in full (which accepts the
// NaN it makes in C), the others by Freivalds' method; a wrong element
// fails, with its row, whichever check its panel had; a B with Inf makes
// every panel full; None checks nothing.
func TestPanels(t *testing.T) {
	rng := rand.New(rand.NewPCG(21, 22))
	m, k, n := 200, 37, 19
	a, b := cpu.Random(m, k, rng), cpu.Random(k, n, rng)
	a.Data[150*a.Stride+3] = float32(math.NaN())
	c := cpu.New(m, n)
	cpu.Sgemm(c, a, b)
	var p *Panels
	run := func(mode Mode, bad int) Result {
		p = NewPanels(mode, b, rand.New(rand.NewPCG(1, 2)))
		for r0 := 0; r0 < m; r0 += 64 {
			rows := min(64, m-r0)
			cc := rowsOf(c, r0, rows)
			cc.Data = append([]float32(nil), cc.Data[:rows*c.Stride]...)
			if bad >= r0 && bad < r0+rows {
				cc.Data[(bad-r0)*c.Stride+5] += 1
			}
			p.Check(rowsOf(a, r0, rows), cc, r0)
		}
		return p.Result()
	}
	if r := run(Freivalds, -1); !r.OK || p.rows == nil || p.full.made() == nil {
		t.Errorf("Freivalds, NaN in panel 3: %+v, Freivalds' check made: %t, the full one: %t", r, p.rows != nil, p.full.made() != nil)
	}
	if r := run(Full, -1); !r.OK || r.Mode != Full {
		t.Errorf("Full: %+v", r)
	}
	for _, bad := range []int{10, 140} { // a Freivalds panel, the full one
		if r := run(Freivalds, bad); r.OK || r.Row != bad {
			t.Errorf("Freivalds, C[%d][5] wrong: %+v", bad, r)
		}
	}
	if r := run(None, 10); !r.OK || r.Mode != None {
		t.Errorf("None: %+v", r)
	}
	b.Data[2*b.Stride+1] = float32(math.Inf(1))
	if p := NewPanels(Freivalds, b, rng); p.mode != Full {
		t.Errorf("B with Inf: mode %s, want full", p.mode)
	}
}
