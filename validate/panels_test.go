package validate

import (
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"gonum.org/v1/gonum/blas/blas32"

	"github.com/glmul/glmul/cpu"
)

// TestPanels: panels of a correct product pass in the mode asked for; a
// panel whose rows of A hold a NaN is checked by Freivalds' method all the
// same (the NaN's row of C must be non-finite, element by element); a
// wrong element fails, with its row; None checks nothing.
func TestPanels(t *testing.T) {
	rng := rand.New(rand.NewPCG(21, 22))
	m, k, n := 200, 37, 19
	a, b := cpu.Random(m, k, rng), cpu.Random(k, n, rng)
	a.Data[150*a.Stride+3] = float32(math.NaN())
	c := cpu.New(m, n)
	cpu.Sgemm(c, a, b)
	var p *Panels
	run := func(mode Mode, bad int, wrong float32) Result {
		p = NewPanels(mode, b, rand.New(rand.NewPCG(1, 2)))
		for r0 := 0; r0 < m; r0 += 64 {
			rows := min(64, m-r0)
			cc := rowsOf(c, r0, rows)
			cc.Data = append([]float32(nil), cc.Data[:rows*c.Stride]...)
			if bad >= r0 && bad < r0+rows {
				cc.Data[(bad-r0)*c.Stride+5] = wrong
			}
			p.Check(rowsOf(a, r0, rows), cc, r0)
		}
		return p.Result()
	}
	if r := run(Freivalds, -1, 0); !r.OK || p.rows == nil || p.full.made() != nil {
		t.Errorf("Freivalds, NaN in panel 3: %+v, Freivalds' check made: %t, the full one: %t", r, p.rows != nil, p.full.made() != nil)
	}
	if r := run(Full, -1, 0); !r.OK || r.Mode != Full {
		t.Errorf("Full: %+v", r)
	}
	for _, bad := range []int{10, 140} {
		if r := run(Freivalds, bad, c.Data[bad*c.Stride+5]+1); r.OK || r.Row != bad {
			t.Errorf("Freivalds, C[%d][5] wrong: %+v", bad, r)
		}
	}
	if r := run(Freivalds, 150, 1); r.OK || r.Row != 150 || r.Col != 5 || !strings.Contains(r.Err().Error(), "C[150][5] = 1") {
		t.Errorf("Freivalds, C[150][5] finite in A's NaN row: %+v", r)
	}
	if r := run(None, 10, 0); !r.OK || r.Mode != None {
		t.Errorf("None: %+v", r)
	}
}

// TestNonFiniteColumns: a NaN or an Inf in B's column j reaches C's
// column j alone. Freivalds' check keeps its mode and its cost (before,
// such a B switched every panel to the full check, 88 s against 0.34 s
// at 4096²), the rest of C is checked as usual, and C's column j must be
// non-finite.
func TestNonFiniteColumns(t *testing.T) {
	rng := rand.New(rand.NewPCG(23, 24))
	m, k, n := 60, 300, 40
	a, b := cpu.Random(m, k, rng), cpu.Random(k, n, rng)
	b.Data[17*b.Stride+9] = float32(math.NaN())
	b.Data[3*b.Stride+30] = float32(math.Inf(-1))
	c := cpu.New(m, n)
	cpu.Sgemm(c, a, b)
	for _, mode := range []Mode{Freivalds, Full} {
		check := func(c blas32.General) Result {
			p := NewPanels(mode, b, rand.New(rand.NewPCG(1, 2)))
			p.Check(a, c, 0)
			if mode == Freivalds && p.full.made() != nil {
				t.Errorf("%s: the full check was made", mode)
			}
			return p.Result()
		}
		if r := check(c); !r.OK || r.Mode != mode {
			t.Errorf("%s: correct product: %+v", mode, r)
		}
		for _, e := range []struct {
			i, j int
			v    float32
		}{{4, 9, 2}, {7, 30, 0}, {11, 8, 0}} { // finite in the NaN and Inf columns; wrong beside them
			bad := cpu.New(m, n)
			copy(bad.Data, c.Data)
			if e.j == 8 {
				e.v = c.Data[e.i*c.Stride+8] * 1.01
			}
			bad.Data[e.i*bad.Stride+e.j] = e.v
			if r := check(bad); r.OK || r.Row != e.i {
				t.Errorf("%s: C[%d][%d] = %v accepted or misplaced: %+v", mode, e.i, e.j, e.v, r)
			}
		}
	}
}
