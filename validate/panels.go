package validate

import (
	"math/rand/v2"
	"sync"
	"sync/atomic"

	"gonum.org/v1/gonum/blas/blas32"
)

// Panels checks a product C = A·B that arrives a panel of rows at a time
// beside the rows of A that made it (a streamed product,
// glcompute.MulStream): by Freivalds' method (Rows) where the mode is
// Freivalds and the panel's rows of A are finite, in full (FullRows)
// otherwise, since Freivalds' sums cannot tell where a NaN belongs. A B
// with NaN or Inf makes every panel full.
//
// Check and Result are safe for concurrent use.
type Panels struct {
	mode Mode
	b    blas32.General
	rows *Rows                    // Freivalds' vectors, for Freivalds panels
	full atomic.Pointer[FullRows] // B in float64, made for the first full panel
	once sync.Once
}

// NewPanels prepares the check of products by b (k×n) in mode Full,
// Freivalds or None (Auto is the caller's to resolve: it depends on the
// whole product's size), Freivalds' vectors drawn from rng.
func NewPanels(mode Mode, b blas32.General, rng *rand.Rand) *Panels {
	if mode == Auto || mode == "" {
		panic("validate: NewPanels needs Full, Freivalds or None, not Auto")
	}
	if mode == Freivalds && !finite(b) {
		mode = Full
	}
	p := &Panels{mode: mode, b: b}
	if mode == Freivalds {
		p.rows = NewRows(b, FreivaldsVectors, rng)
	}
	return p
}

// Check checks rows r0… of C (c) against the same rows of A (a).
func (p *Panels) Check(a, c blas32.General, r0 int) {
	switch {
	case p.mode == None:
	case p.mode == Freivalds && finite(a):
		p.rows.Check(a, c, r0)
	default:
		p.once.Do(func() { p.full.Store(NewFullRows(p.b)) })
		p.full.Load().Check(a, c, r0)
	}
}

// Result is the worst of the panels' checks so far: Freivalds', unless a
// panel checked in full (rows with NaN or Inf) did worse.
func (p *Panels) Result() Result {
	full := p.full.Load() // Result may run beside Check
	switch {
	case p.mode == None:
		return Result{Mode: None, OK: true}
	case p.rows == nil && full == nil:
		return Result{Mode: p.mode, OK: true, Row: -1, Col: -1}
	case p.rows == nil:
		return full.Result()
	}
	r := p.rows.Result()
	if full != nil {
		if f := full.Result(); f.WorstRatio > r.WorstRatio || !f.OK {
			r = f
		}
	}
	return r
}

// finite reports whether every element of m is finite.
func finite(m blas32.General) bool {
	for i := 0; i < m.Rows; i++ {
		for _, v := range m.Data[i*m.Stride : i*m.Stride+m.Cols] {
			if v-v != 0 { // NaN or ±Inf
				return false
			}
		}
	}
	return true
}
