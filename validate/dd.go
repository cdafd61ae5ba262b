package validate

import (
	"math"

	"gonum.org/v1/gonum/blas/blas64"
)

// The float64 check's reference: each element's sum in double-double
// (Ogita, Rump and Oishi's Dot2, "Accurate sum and dot product", SIAM J.
// Sci. Comput. 26(6), 2005, §5): every product split exactly into its
// rounded value and its error by a fused multiply-add (TwoProduct), every
// addition into its sum and its error (TwoSum), the errors added up in a
// second float64. The pair hi + lo, left unevaluated, is within
// γ_K(u)²·Σ|aₖbₖ| of the exact sum (u = 2⁻⁵³; their Dot2 bound without its
// final rounding): 1.4·10⁻²⁰·Σ|aₖbₖ| at K = 2²⁰, 10⁵ times less than a
// float64 kernel's tolerance on data that cancel. A reference in float64
// alone would have errors of the kernel's order and a bound of K·u, and
// the check would be of float32's strength.

// twoSum returns s = fl(x + y) and e with s + e = x + y exactly (Knuth's
// TwoSum: any magnitudes, six additions).
func twoSum(x, y float64) (s, e float64) {
	s = x + y
	z := s - x
	return s, (x - (s - z)) + (y - z)
}

// twoProduct returns p = fl(x·y) and e with p + e = x·y exactly, where
// x·y neither overflows nor underflows. The conversion keeps the compiler
// from fusing the product into a later addition (the Go spec allows it
// without one).
func twoProduct(x, y float64) (p, e float64) {
	p = float64(x * y)
	return p, math.FMA(x, y, -p)
}

// ddColumns is how many columns of C ddSums holds at a time: their
// double-double sums, magnitudes and peaks (five float64s a column) for
// ddRows rows stay in the first-level cache beside a block of B's row.
const (
	ddColumns = 128
	ddRows    = 2
)

// ddSums is partialSums for float64 data in double-double: for a times b
// it sets each element's sum hi + lo (Dot2, in the order k runs), the sum
// of its terms' magnitudes (mag, in float64: a bound's, rounded) and a
// bound on the magnitudes of its partial sums (peak: the largest
// |hi| + |lo| at the end of a block of sumBlock k, plus the largest
// Σ|a||b| within one block). The outputs are a.Rows×b.Cols, row-major.
// Rows of C are shared out over the CPUs; each takes ddRows rows of A at
// a time over ddColumns columns of B, so that a load of B serves them all.
func ddSums(a, b blas64.General, hi, lo, mag, peak []float64) {
	r, k, n := a.Rows, a.Cols, b.Cols
	clear(hi)
	clear(lo)
	clear(mag)
	clear(peak)
	groups := (r + ddRows - 1) / ddRows
	inParallel(groups, ddRows*k*n*4, func(g0, g1 int) {
		var start, inBlock [ddRows][ddColumns]float64
		for g := g0; g < g1; g++ {
			i0, i1 := g*ddRows, min(r, (g+1)*ddRows)
			for j0 := 0; j0 < n; j0 += ddColumns {
				w := min(ddColumns, n-j0)
				for i := range i1 - i0 {
					clear(inBlock[i][:w])
				}
				for l0 := 0; l0 < k; l0 += sumBlock {
					l1 := min(k, l0+sumBlock)
					for i := range i1 - i0 {
						copy(start[i][:w], mag[(i0+i)*n+j0:][:w])
					}
					if i1-i0 == 2 {
						ddBlock2(a, b, i0, j0, w, l0, l1, hi, lo, mag)
					} else {
						ddBlock1(a, b, i0, j0, w, l0, l1, hi, lo, mag)
					}
					for i := range i1 - i0 {
						e := (i0+i)*n + j0
						for j := range w {
							peak[e+j] = max(peak[e+j], math.Abs(hi[e+j])+math.Abs(lo[e+j]))
							inBlock[i][j] = max(inBlock[i][j], mag[e+j]-start[i][j])
						}
					}
				}
				for i := range i1 - i0 {
					e := (i0+i)*n + j0
					for j := range w {
						peak[e+j] += inBlock[i][j]
					}
				}
			}
		}
	})
}

// ddBlock1 adds the terms l0 ≤ l < l1 of row i of C's columns j0 to
// j0+w into its double-double sums and magnitudes.
func ddBlock1(a, b blas64.General, i, j0, w, l0, l1 int, hi, lo, mag []float64) {
	n := b.Cols
	h, q, m := hi[i*n+j0:][:w], lo[i*n+j0:][:w], mag[i*n+j0:][:w]
	for l := l0; l < l1; l++ {
		av := a.Data[i*a.Stride+l]
		for j, bv := range b.Data[l*b.Stride+j0:][:w] {
			p, e := twoProduct(av, bv)
			s, t := twoSum(h[j], p)
			h[j], q[j], m[j] = s, q[j]+(t+e), m[j]+math.Abs(p)
		}
	}
}

// ddBlock2 is ddBlock1 for rows i and i+1 at once: each element of B
// loaded once for both.
func ddBlock2(a, b blas64.General, i, j0, w, l0, l1 int, hi, lo, mag []float64) {
	n := b.Cols
	h0, q0, m0 := hi[i*n+j0:][:w], lo[i*n+j0:][:w], mag[i*n+j0:][:w]
	h1, q1, m1 := hi[(i+1)*n+j0:][:w], lo[(i+1)*n+j0:][:w], mag[(i+1)*n+j0:][:w]
	for l := l0; l < l1; l++ {
		a0, a1 := a.Data[i*a.Stride+l], a.Data[(i+1)*a.Stride+l]
		for j, bv := range b.Data[l*b.Stride+j0:][:w] {
			p, e := twoProduct(a0, bv)
			s, t := twoSum(h0[j], p)
			h0[j], q0[j], m0[j] = s, q0[j]+(t+e), m0[j]+math.Abs(p)
			p, e = twoProduct(a1, bv)
			s, t = twoSum(h1[j], p)
			h1[j], q1[j], m1[j] = s, q1[j]+(t+e), m1[j]+math.Abs(p)
		}
	}
}

// ddDotWalk returns Σₗ x[l]·(yHi[l·V+v] + yLo[l·V+v]) for one v of V in
// double-double (hi, lo; yLo nil for a y of plain float64s: then Dot2
// exactly), and the squares of its partial sums added up (walk, in
// float64: Rows's estimate of the rounding's spread). y's low parts are
// multiplied in float64 and added to lo: their errors are of order u²
// times the terms, which the reference's γ²-bound covers.
func ddDotWalk(x, yHi, yLo []float64, v, V int) (hi, lo, walk float64) {
	for l, xv := range x {
		p, e := twoProduct(xv, yHi[l*V+v])
		s, t := twoSum(hi, p)
		hi, lo = s, lo+(t+e)
		if yLo != nil {
			lo += float64(xv * yLo[l*V+v])
		}
		walk += hi * hi
	}
	return hi, lo, walk
}
