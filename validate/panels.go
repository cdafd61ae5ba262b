package validate

import (
	"math/rand/v2"

	"gonum.org/v1/gonum/blas/blas32"
)

// Panels checks a product C = A·B that arrives a panel of rows at a time
// beside the rows of A that made it (a streamed product,
// stream.Mul): by Freivalds' method (Rows) where the mode is
// Freivalds and the panel's rows of A are finite, in full (FullRows)
// otherwise, since Freivalds' sums cannot tell where a NaN belongs. A B
// with NaN or Inf makes every panel full.
//
// Check and Result are safe for concurrent use.
type Panels struct {
	mode Mode
	rows *Rows     // Freivalds' vectors, for Freivalds panels
	full *lazyFull // B in float64 for panels checked in full: rows's own where there are rows
}

// NewPanels prepares the check of products by b (k×n) in mode Full,
// Freivalds or None (Auto is the caller's to resolve: it depends on the
// whole product's size), Freivalds' vectors drawn from rng.
func NewPanels(mode Mode, b blas32.General, rng *rand.Rand) *Panels {
	if mode == Auto || mode == "" {
		panic("validate: NewPanels needs Full, Freivalds or None, not Auto")
	}
	p := &Panels{mode: mode, full: &lazyFull{b: b}}
	if mode == Freivalds {
		p.rows = NewRows(b, FreivaldsVectors, rng)
		p.full = p.rows.full // one float64 B for its overflowed rows and the full panels
	}
	return p
}

// Check checks rows r0… of C (c) against the same rows of A (a).
func (p *Panels) Check(a, c blas32.General, r0 int) {
	switch {
	case p.mode == None:
	case p.mode == Freivalds:
		p.rows.Check(a, c, r0)
	default:
		p.full.get().Check(a, c, r0)
	}
}

// Result is the worst of the panels' checks so far: Freivalds', with the
// rows and panels checked in full (NaN or Inf in them, or overflowed)
// where they did worse (Rows.Result).
func (p *Panels) Result() Result {
	switch full := p.full.made(); { // Result may run beside Check
	case p.mode == None:
		return Result{Mode: None, OK: true}
	case p.rows != nil:
		return p.rows.Result()
	case full == nil:
		return Result{Mode: p.mode, OK: true, Row: -1, Col: -1}
	default:
		return full.Result()
	}
}
