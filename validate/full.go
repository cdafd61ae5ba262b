package validate

import (
	"math"
	"sync"
	"sync/atomic"

	"gonum.org/v1/gonum/blas/blas32"
)

// FullRows checks a product C = A·B in full, block of rows by block of
// rows, as CheckFull does for a whole product: Check compares a block of
// C's rows with the float64 product of the same rows of A, each element
// against its own tolerance (elementBound); Result is the worst element and
// the relative Frobenius error over every row checked. Check and Result
// are safe for concurrent use.
type FullRows struct {
	b      blas32.General
	colNF  []bool // B's columns with a NaN or an Inf
	mu     sync.Mutex
	r      Result
	diff2  float64
	ref2   float64
	blocks int
}

// NewFullRows prepares the full check of products by b.
func NewFullRows(b blas32.General) *FullRows {
	_, colNF := nonFinite(blas32.General{Rows: 0, Cols: b.Rows, Stride: b.Rows}, b)
	return &FullRows{b: b, colNF: colNF, r: Result{Mode: Full, OK: true, Row: -1, Col: -1}}
}

// Check checks rows r0… of C: a holds those rows of A, c the same rows of
// C. It panics if the shapes disagree with B's.
func (f *FullRows) Check(a, c blas32.General, r0 int) {
	if a.Cols != f.b.Rows || c.Cols != f.b.Cols || a.Rows != c.Rows {
		panic("validate: shapes of A, B and C do not agree")
	}
	n, k := c.Cols, a.Cols
	ref, mag, peak := make([]float64, c.Rows*n), make([]float64, c.Rows*n), make([]float64, c.Rows*n)
	partialSums(a, f.b, ref, mag, peak)
	g := gamma(k, u32) + gamma(k, u64) // overflowMayGive's slack
	rowNF, _ := nonFinite(a, blas32.General{Rows: 0, Cols: 0})
	worst := Result{Row: -1, Col: -1}
	var diff2, ref2 float64
	for i := 0; i < c.Rows; i++ {
		for j := 0; j < n; j++ {
			got, want, m := float64(c.Data[i*c.Stride+j]), ref[i*n+j], mag[i*n+j]
			if math.IsNaN(want) && math.IsNaN(got) || math.IsInf(want, 0) && got == want {
				continue // NaN and Inf propagate: the same class is right
			}
			if (math.IsNaN(got) || math.IsInf(got, 0)) && (rowNF[i] || f.colNF[j]) {
				// IEEE arithmetic makes 0·NaN NaN and 0·Inf NaN; the
				// float64 reference skips zero terms, the GPU does not.
				// Either is right where a non-finite input meets this
				// element.
				continue
			}
			if overflowMayGive(got, (m+want)/2, (m-want)/2, g, math.MaxFloat32) {
				continue // float32's own overflow (see overflowMayGive)
			}
			d, bound := math.Abs(got-want), elementBound(k, peak[i*n+j], m)
			diff2 += d * d
			ref2 += want * want
			if r := ratio(d, bound); r > worst.WorstRatio || worst.Row < 0 {
				worst.WorstRatio, worst.Row, worst.Col, worst.Got, worst.Want, worst.Bound = r, r0+i, j, got, want, bound
			}
		}
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.diff2, f.ref2, f.blocks = f.diff2+diff2, f.ref2+ref2, f.blocks+1
	if worst.Row >= 0 && (worst.WorstRatio > f.r.WorstRatio || f.r.Row < 0) {
		f.r.WorstRatio, f.r.Row, f.r.Col, f.r.Got, f.r.Want, f.r.Bound = worst.WorstRatio, worst.Row, worst.Col, worst.Got, worst.Want, worst.Bound
	}
}

// lazyFull is a FullRows over b made at its first use (get): the full
// check that Panels (mode Full) and Rows (rows that overflowed) fall back
// on, one for both.
type lazyFull struct {
	b    blas32.General
	once sync.Once
	p    atomic.Pointer[FullRows]
}

// get returns the FullRows, made on the first call.
func (l *lazyFull) get() *FullRows {
	l.once.Do(func() { l.p.Store(NewFullRows(l.b)) })
	return l.p.Load()
}

// made returns the FullRows if get made it, else nil; safe beside get.
func (l *lazyFull) made() *FullRows { return l.p.Load() }

// Result is the check of every row Checked so far.
func (f *FullRows) Result() Result {
	f.mu.Lock()
	defer f.mu.Unlock()
	return finished(f.r, f.diff2, f.ref2)
}

// finished is r, the worst element found, with its verdict and the
// relative Frobenius error of the squared sums diff2 and ref2 (the
// absolute one where the reference is zero).
func finished(r Result, diff2, ref2 float64) Result {
	r.OK = r.WorstRatio <= 1
	if ref2 > 0 {
		r.RelFrobenius = math.Sqrt(diff2 / ref2)
	} else {
		r.RelFrobenius = math.Sqrt(diff2)
	}
	return r
}

// mayOverflow reports whether a sum of terms whose magnitudes add up to
// mag (in float64), taken in any order, may pass limit, the largest value
// of the sum's type: math.MaxFloat32, or math.MaxFloat64 (mag is then +Inf
// where it overflowed itself); g is the slack for rounding (γ_K: a sum of
// terms that add up to just under that value can round past it).
func mayOverflow(mag, g, limit float64) bool { return mag*(1+g) > limit }

// overflowMayGive reports whether float32 arithmetic can make got, a
// non-finite element, of finite terms whose positive ones add up to pos
// and negative ones to neg in magnitude (pos = (Σ|aᵢₖ||bₖⱼ| + cᵢⱼ)/2,
// neg = (Σ|aᵢₖ||bₖⱼ| − cᵢⱼ)/2 from the float64 sums), in any order of
// summation (split K, a tree): every partial sum lies in [−neg, pos], so
// +Inf needs pos to overflow, −Inf neg, and NaN (+Inf meeting −Inf)
// both. NumPy's float32 product gives such elements too; anything else
// non-finite is an error. A product whose terms cancel (2e38 − 2e38) may
// not be Inf or NaN at all. limit is the type's largest value
// (mayOverflow).
func overflowMayGive(got, pos, neg, g, limit float64) bool {
	up, down := mayOverflow(pos, g, limit), mayOverflow(neg, g, limit)
	switch {
	case math.IsNaN(got):
		return up && down
	case math.IsInf(got, 1):
		return up
	case math.IsInf(got, -1):
		return down
	}
	return false
}
