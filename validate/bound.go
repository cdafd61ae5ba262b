package validate

import (
	"math"

	"gonum.org/v1/gonum/blas/blas32"
)

// The tolerance of an element of C, the model behind it (the package doc
// derives it; docs/VALIDATION.md works the numbers):
//
//	τ = min(λ·u·√(8K)·P, γ_K·Σ|aₖbₖ|) + γ_K(u₆₄)·Σ|aₖbₖ| + 2K·2⁻¹²⁶
//
// with P = maxₖ |Σ_{l≤k} a_l b_l|, the largest partial sum in the order k
// runs. The first term is the probabilistic bound, the second the
// worst-case one (the smaller of two valid bounds is valid); then the
// float64 reference's own error and float32's flush of subnormal results
// to zero (2⁻¹²⁶ a step at most).

// Lambda is the confidence factor of the probabilistic bound: under the
// model, an element's rounding error exceeds λ standard bounds with
// probability at most 2·exp(−λ²/2) = 5·10⁻¹⁸, so a correct product of 2³⁸
// elements raises a false alarm with probability below 2·10⁻⁶.
const Lambda = 9

// probScale is λ·u·√8, the probabilistic bound's factor before √K·P.
var probScale = Lambda * u32 * math.Sqrt(8)

// tiny is float32's smallest normal value: a GPU may flush a product or a
// sum below it to zero, an absolute error the relative model misses.
var tiny = math.Ldexp(1, -126)

// elementBound is τ above for a K-term element whose partial sums peak at
// peak and whose terms' magnitudes add up to mag.
func elementBound(k int, peak, mag float64) float64 {
	p := probScale * math.Sqrt(float64(k)) * peak
	w := gamma(k, u32) * mag
	return min(p, w) + gamma(k, u64)*mag + 2*float64(k)*tiny
}

// sumBlock is how many rows of A and columns of B partialSums takes at a
// time: four rows share each load of B, and a block's sums (4×3×256
// float64, 24 KiB) stay in the L1 cache.
const (
	sumRows = 4
	sumCols = 256
)

// partialSums computes, for rows [i0, i1) of a times b, each element's
// float64 sum (ref), the sum of its terms' magnitudes (mag) and the
// largest magnitude of its partial sums Σ_{l≤k} (peak), k running in
// order; the outputs are (i1−i0)×b.Cols, row-major. gonum's Dgemm cannot
// give the partial sums, so this loop is written by hand; it reads A and
// B as float32 and converts on the fly.
func partialSums(a, b blas32.General, i0, i1 int, ref, mag, peak []float64) {
	n, k := b.Cols, a.Cols
	var s, t, p [sumRows][sumCols]float64
	for r0 := i0; r0 < i1; r0 += sumRows {
		rows := min(sumRows, i1-r0)
		for j0 := 0; j0 < n; j0 += sumCols {
			w := min(sumCols, n-j0)
			for r := range rows {
				clear(s[r][:w])
				clear(t[r][:w])
				clear(p[r][:w])
			}
			for l := range k {
				brow := b.Data[l*b.Stride+j0 : l*b.Stride+j0+w]
				for r := range rows {
					av := float64(a.Data[(r0+r)*a.Stride+l])
					if av == 0 {
						continue // no term: s, t and p are unchanged
					}
					sr, tr, pr := s[r][:w:w], t[r][:w:w], p[r][:w:w]
					for j, bv := range brow {
						x := av * float64(bv)
						sr[j] += x
						tr[j] += math.Abs(x)
						if v := math.Abs(sr[j]); v > pr[j] {
							pr[j] = v
						}
					}
				}
			}
			for r := range rows {
				o := (r0+r-i0)*n + j0
				copy(ref[o:o+w], s[r][:w])
				copy(mag[o:o+w], t[r][:w])
				copy(peak[o:o+w], p[r][:w])
			}
		}
	}
}
