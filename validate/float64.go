package validate

import (
	"math"
	"math/rand/v2"
	"sync"

	"gonum.org/v1/gonum/blas/blas64"
)

// Float64 products (glcompute.Device.Mul64) are checked as float32 ones
// are, the model's unit roundoff u = 2⁻⁵³, against a reference whose own
// error is far below the product's: each element summed in double-double
// (ddSums), not in float64, whose error would be of the product's order.
// docs/VALIDATION.md, "float64 products", derives the tolerance:
//
//	τ = min(λ·u·√(8K)·P, γ_K(u)·Σ|aₖbₖ|) + 2·γ_K(u)²·Σ|aₖbₖ| + 2K·2⁻¹⁰²²
//
// the probabilistic and the worst-case bounds of the product's rounding
// as for float32, then twice the double-double reference's bound (Dot2's,
// γ_K² where a float64 reference would need γ_K) and a flush of subnormal
// results to zero below float64's smallest normal, as llvmpipe's
// denormals-are-zero mode makes them.

// precision is the arithmetic of the product a float64 check models: its
// unit roundoff and the smallest normal value it may flush below. The
// reference's terms (ddSums) are float64's whatever it is: the tests run
// the check with float32's u to show what a float32-strength tolerance
// would let through.
type precision struct{ u, tiny float64 }

// float64Arithmetic is the GPU's float64 kernel's.
var float64Arithmetic = precision{u: u64, tiny: math.Ldexp(1, -1022)}

// elementBound is τ above for a K-term element whose partial sums peak at
// peak and whose terms' magnitudes add up to mag.
func (pr precision) elementBound(k int, peak, mag float64) float64 {
	p := Lambda * pr.u * math.Sqrt(8*float64(k)) * peak
	w := gamma(k, pr.u) * mag
	g := gamma(k, u64)
	return min(p, w) + 2*g*g*mag + 2*float64(k)*pr.tiny
}

// Check64 validates C = A·B, a float64 product, with the given mode, as
// Check does a float32 one; rng draws Freivalds' vectors. Auto chooses as
// for float32 (Choose).
func Check64(mode Mode, a, b, c blas64.General, rng *rand.Rand) Result {
	switch mode {
	case None:
		return Result{Mode: None, OK: true}
	case Auto, "":
		mode = Choose(a.Rows, a.Cols, b.Cols)
	}
	if mode == Full {
		return CheckFull64(a, b, c)
	}
	return CheckFreivalds64(a, b, c, FreivaldsVectors, rng)
}

// CheckFull64 compares every element of C, a float64 product, with its
// double-double reference, each against its own tolerance (the file's
// doc), as CheckFull does a float32 product's. A NaN or an Inf in A's row
// i or B's column j must make element (i, j) NaN or ±Inf; finite inputs
// may give ±Inf or NaN only where their positive or negative terms can
// pass float64's largest value (overflowMayGive).
func CheckFull64(a, b, c blas64.General) Result { return float64Arithmetic.checkFull(a, b, c) }

func (pr precision) checkFull(a, b, c blas64.General) Result {
	checkShapes64(a, b, c)
	f := pr.newFull64(b)
	f.check(a, c, 0)
	return f.result()
}

// full64 is the full check of products by b, block of rows by block of
// rows (check): FullRows for float64. check and result are safe for
// concurrent use.
type full64 struct {
	pr          precision
	b           blas64.General
	colNF       []bool // B's columns with a NaN or an Inf
	mu          sync.Mutex
	r           Result
	diff2, ref2 float64
}

func (pr precision) newFull64(b blas64.General) *full64 {
	return &full64{pr: pr, b: b, colNF: nonFiniteCols(b.Data, b.Rows, b.Cols, b.Stride),
		r: Result{Mode: Full, OK: true, Row: -1, Col: -1, f64: true}}
}

// check checks rows r0… of C: a holds those rows of A, c the same rows of
// C.
func (f *full64) check(a, c blas64.General, r0 int) {
	n, k := c.Cols, a.Cols
	hi, lo, mag, peak := make([]float64, c.Rows*n), make([]float64, c.Rows*n), make([]float64, c.Rows*n), make([]float64, c.Rows*n)
	ddSums(a, f.b, hi, lo, mag, peak)
	rowNF := nonFiniteRows(a.Data, a.Rows, a.Cols, a.Stride)
	g := gamma(k, u64)
	worst := Result{Row: -1, Col: -1}
	var diff2, ref2 float64
	for i := range c.Rows {
		for j := range n {
			e, got := i*n+j, c.Data[i*c.Stride+j]
			if rowNF[i] || f.colNF[j] {
				// IEEE arithmetic makes every such element NaN or ±Inf
				// (a·NaN, 0·Inf, Inf + finite): any of them is right.
				if got-got != 0 {
					continue
				}
				worst = worse(worst, missedNonFinite(r0+i, j, got))
				continue
			}
			if got-got != 0 && f.overflowMayGive(a.Data[i*a.Stride:i*a.Stride+k], j, got, g) {
				continue // float64's own overflow
			}
			want := hi[e] + lo[e]
			d, bound := math.Abs((got-hi[e])-lo[e]), f.pr.elementBound(k, peak[e], mag[e])
			diff2 += d * d
			ref2 += want * want
			if r := ratio(d, bound); r > worst.WorstRatio || worst.Row < 0 {
				worst = Result{WorstRatio: r, Row: r0 + i, Col: j, Got: got, Want: want, Bound: bound}
			}
		}
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.diff2, f.ref2 = f.diff2+diff2, f.ref2+ref2
	if worst.Row >= 0 && (worst.WorstRatio > f.r.WorstRatio || f.r.Row < 0) {
		f.r.WorstRatio, f.r.Row, f.r.Col, f.r.Got, f.r.Want, f.r.Bound = worst.WorstRatio, worst.Row, worst.Col, worst.Got, worst.Want, worst.Bound
	}
}

// overflowMayGive reports whether float64 arithmetic can make got, a
// non-finite element, of the finite terms arow[l]·b[l][j]: their positive
// and negative parts are added up apart (an element that overflows is
// rare: this pass is its own) and judged as overflowMayGive judges a
// float32 element's, against float64's largest value. Terms that
// overflow alone make their part +Inf, which may overflow.
func (f *full64) overflowMayGive(arow []float64, j int, got, g float64) bool {
	var pos, neg float64
	for l, av := range arow {
		switch t := float64(av * f.b.Data[l*f.b.Stride+j]); {
		case t > 0:
			pos += t
		case t < 0:
			neg -= t
		}
	}
	return overflowMayGive(got, pos, neg, g, math.MaxFloat64)
}

// result is the check of every row checked so far.
func (f *full64) result() Result {
	f.mu.Lock()
	defer f.mu.Unlock()
	return finished(f.r, f.diff2, f.ref2)
}

// CheckFreivalds64 compares C·x with A·(B·x) for vectors random vectors
// drawn from rng, uniform on [-1, 1), as CheckFreivalds does for a float32
// product: B·x, A·(B·x) and C·x summed in double-double, the tolerance of
// (Ĉx)ᵢ Rows's with u = 2⁻⁵³, plus the double-double sums' own error,
// 2·γ_{2K+N}(u)²·(‖aᵢ‖·‖|B|·|x|‖ + ‖cᵢ‖·‖x‖) (Cauchy–Schwarz, as Rows
// bounds its float64 evaluation). A row of C with a NaN or an Inf that its
// inputs do not explain is checked in full.
func CheckFreivalds64(a, b, c blas64.General, vectors int, rng *rand.Rand) Result {
	return float64Arithmetic.checkFreivalds(a, b, c, vectors, rng)
}

func (pr precision) checkFreivalds(a, b, c blas64.General, vectors int, rng *rand.Rand) Result {
	checkShapes64(a, b, c)
	f := pr.newFreivalds64(a, b, vectors, rng)
	var mu sync.Mutex
	res := Result{Mode: Freivalds, OK: true, Vectors: vectors, Row: -1, Col: -1, f64: true}
	inParallel(a.Rows, 4*(f.k+f.n)*vectors, func(i0, i1 int) {
		worst := f.rows(a, c, i0, i1)
		mu.Lock()
		defer mu.Unlock()
		if worst.WorstRatio > res.WorstRatio || res.Row < 0 && worst.WorstRatio >= 0 {
			res.WorstRatio, res.Row, res.Col, res.Got, res.Want, res.Bound = worst.WorstRatio, worst.Row, worst.Col, worst.Got, worst.Want, worst.Bound
		}
	})
	if full := f.full.made(); full != nil { // rows checked in full: the worse element of the two
		if fr := full.result(); fr.WorstRatio > res.WorstRatio {
			res.WorstRatio, res.Row, res.Col, res.Got, res.Want, res.Bound = fr.WorstRatio, fr.Row, fr.Col, fr.Got, fr.Want, fr.Bound
		}
	}
	res.OK = res.WorstRatio <= 1
	return res
}

// freivalds64 is one float64 Freivalds check: its random vectors x (V of
// them, interleaved: x[j*V+v]), zero on B's non-finite columns, their
// norms and sums of magnitudes, and y = B·x in double-double (yHi, yLo)
// with the norms of |B|·|x| for the reference's own error.
type freivalds64 struct {
	pr                 precision
	k, n, V            int
	colNF, rowNF       []bool
	anyColNF           bool
	x, xNorm, xSum     []float64
	yHi, yLo, yAbsNorm []float64
	scale, slack       float64
	full               *lazy64
}

// newFreivalds64 draws the vectors (one value for every column, as
// NewRows draws them) and projects B on them.
func (pr precision) newFreivalds64(a, b blas64.General, V int, rng *rand.Rand) *freivalds64 {
	k, n := a.Cols, b.Cols
	f := &freivalds64{pr: pr, k: k, n: n, V: V, colNF: nonFiniteCols(b.Data, b.Rows, b.Cols, b.Stride),
		rowNF: nonFiniteRows(a.Data, a.Rows, a.Cols, a.Stride),
		x:     make([]float64, n*V), xNorm: make([]float64, V), xSum: make([]float64, V)}
	for v := range V {
		for j := range n {
			xv := 2*rng.Float64() - 1
			if f.colNF[j] {
				xv, f.anyColNF = 0, true
			}
			f.x[j*V+v] = xv
			f.xNorm[v] += xv * xv
			f.xSum[v] += math.Abs(xv)
		}
		f.xNorm[v] = math.Sqrt(f.xNorm[v])
	}
	f.project(b)
	f.scale = Lambda * pr.u * math.Sqrt(8) * math.Sqrt(3/float64(V))
	g := gamma(2*k+n, u64)
	f.slack = 2 * g * g
	f.full = &lazy64{make: func() *full64 { return pr.newFull64(b) }}
	return f
}

// project computes y = B·x in double-double, and the norms of |B|·|x|.
func (f *freivalds64) project(b blas64.General) {
	k, n, V := f.k, f.n, f.V
	f.yHi, f.yLo, f.yAbsNorm = make([]float64, k*V), make([]float64, k*V), make([]float64, V)
	yAbs := make([]float64, k*V)
	inParallel(k, 4*n*V, func(p0, p1 int) {
		for p := p0; p < p1; p++ {
			row := b.Data[p*b.Stride : p*b.Stride+n]
			for v := range V {
				var hi, lo, abs float64
				for j, bv := range row {
					if f.colNF[j] {
						continue // 0·NaN would be NaN
					}
					t, e := twoProduct(bv, f.x[j*V+v])
					s, q := twoSum(hi, t)
					hi, lo, abs = s, lo+(q+e), abs+math.Abs(t)
				}
				f.yHi[p*V+v], f.yLo[p*V+v], yAbs[p*V+v] = hi, lo, abs
			}
		}
	})
	for p := range k {
		for v := range V {
			f.yAbsNorm[v] += yAbs[p*V+v] * yAbs[p*V+v]
		}
	}
	for v := range f.yAbsNorm {
		f.yAbsNorm[v] = math.Sqrt(f.yAbsNorm[v])
	}
}

// rows checks rows [i0, i1) of C and returns the worst of them. A row
// of A with a NaN or an Inf must give a row of C that is non-finite
// throughout, a column of B one too; a row of C with a NaN or an Inf
// that its inputs do not explain is checked in full.
func (f *freivalds64) rows(a, c blas64.General, i0, i1 int) Result {
	k, n, V := f.k, f.n, f.V
	worst := Result{WorstRatio: -1, Col: -1}
	want, wantLo, got, gotLo := make([]float64, V), make([]float64, V), make([]float64, V), make([]float64, V)
	masked := make([]float64, n)
	for i := i0; i < i1; i++ {
		arow, crow := a.Data[i*a.Stride:i*a.Stride+k], c.Data[i*c.Stride:i*c.Stride+n]
		if f.rowNF[i] { // every element of C's row must be NaN or ±Inf
			if j := firstFinite(crow, nil); j >= 0 {
				worst = worse(worst, missedNonFinite(i, j, crow[j]))
			}
			continue
		}
		if f.anyColNF {
			if j := firstFinite(crow, f.colNF); j >= 0 {
				worst = worse(worst, missedNonFinite(i, j, crow[j]))
			}
			for j, cv := range crow {
				if f.colNF[j] {
					cv = 0 // x is 0 there, and 0·NaN would be NaN
				}
				masked[j] = cv
			}
			crow = masked
		}
		if !finite(crow) { // overflowed, or wrong: the full check tells which
			f.full.get().check(blas64.General{Rows: 1, Cols: k, Stride: k, Data: arow}, blas64.General{Rows: 1, Cols: n, Stride: n, Data: c.Data[i*c.Stride : i*c.Stride+n]}, i)
			continue
		}
		var walk, an, cn float64
		for v := range V {
			var w float64
			want[v], wantLo[v], w = ddDotWalk(arow, f.yHi, f.yLo, v, V)
			walk += w
			got[v], gotLo[v], _ = ddDotWalk(crow, f.x, nil, v, V)
		}
		for _, av := range arow {
			an += av * av
		}
		for _, cv := range crow {
			cn += cv * cv
		}
		an, cn = math.Sqrt(an), math.Sqrt(cn)
		for v := range V {
			d := math.Abs((got[v] - want[v]) + (gotLo[v] - wantLo[v]))
			bound := f.scale*math.Sqrt(walk) + f.slack*(an*f.yAbsNorm[v]+cn*f.xNorm[v]) + 2*float64(k)*f.pr.tiny*f.xSum[v]
			worst = worse(worst, Result{WorstRatio: ratio(d, bound), Row: i, Col: -1, Got: got[v] + gotLo[v], Want: want[v] + wantLo[v], Bound: bound})
		}
	}
	return worst
}

// lazy64 is a full64 made at its first use (get), as lazyFull is a
// FullRows.
type lazy64 struct {
	make func() *full64
	once sync.Once
	f    *full64
}

func (l *lazy64) get() *full64 {
	l.once.Do(func() { l.f = l.make() })
	return l.f
}

// made returns the full64 if get made it, else nil; not beside get.
func (l *lazy64) made() *full64 { return l.f }

// finite reports whether every element of row is finite.
func finite(row []float64) bool {
	for _, v := range row {
		if v-v != 0 {
			return false
		}
	}
	return true
}

func checkShapes64(a, b, c blas64.General) {
	if a.Cols != b.Rows || c.Rows != a.Rows || c.Cols != b.Cols {
		panic("validate: shapes of A, B and C do not agree")
	}
}
