package validate

import (
	"math"

	"gonum.org/v1/gonum/blas"
	"gonum.org/v1/gonum/blas/blas32"
	"gonum.org/v1/gonum/blas/blas64"
)

// The tolerance of an element of C, the model behind it (the package doc
// derives it; docs/VALIDATION.md works the numbers):
//
//	τ = min(λ·u·√(8K)·P, γ_K·Σ|aₖbₖ|) + γ_K(u₆₄)·Σ|aₖbₖ| + 2K·2⁻¹²⁶
//
// with P ≥ maxₖ |Σ_{l≤k} a_l b_l|, the largest partial sum in the order k
// runs (partialSums). The first term is the probabilistic bound, the second the
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

// sumBlock is how many k partialSums takes at a time: it sees the
// partial sums at the ends of such blocks and bounds those inside.
const sumBlock = 64

// partialSums computes, for a times b, each element's float64 sum (ref),
// the sum of its terms' magnitudes (mag) and a bound on the magnitudes of
// its partial sums Σ_{l≤k}, k running in order (peak): the largest at the
// end of a block of sumBlock k plus the largest Σ|a||b| within one block,
// which bounds how far a partial sum inside a block strays from the one
// at its start. The outputs are a.Rows×b.Cols, row-major. Two float64
// Dgemms a block (gonum's, parallel), as the full check took before it
// gathered peaks; A's and B's blocks are converted as they are needed.
func partialSums(a, b blas32.General, ref, mag, peak []float64) {
	r, k, n := a.Rows, a.Cols, b.Cols
	L := min(sumBlock, k)
	s := blas64.General{Rows: r, Cols: n, Stride: n, Data: ref}
	q := blas64.General{Rows: r, Cols: n, Stride: n, Data: make([]float64, r*n)}
	peakQ := make([]float64, r*n)
	ab, aa := blas64.General{Rows: r, Stride: L, Data: make([]float64, r*L)}, blas64.General{Rows: r, Stride: L, Data: make([]float64, r*L)}
	bb, ba := blas64.General{Cols: n, Stride: n, Data: make([]float64, L*n)}, blas64.General{Cols: n, Stride: n, Data: make([]float64, L*n)}
	clear(ref)
	clear(mag)
	clear(peak)
	for l0 := 0; l0 < k; l0 += L {
		w := min(L, k-l0)
		ab.Cols, aa.Cols, bb.Rows, ba.Rows = w, w, w, w
		for i := range r {
			for l, v := range a.Data[i*a.Stride+l0 : i*a.Stride+l0+w] {
				ab.Data[i*L+l], aa.Data[i*L+l] = float64(v), math.Abs(float64(v))
			}
		}
		for l := range w {
			for j, v := range b.Data[(l0+l)*b.Stride : (l0+l)*b.Stride+n] {
				bb.Data[l*n+j], ba.Data[l*n+j] = float64(v), math.Abs(float64(v))
			}
		}
		blas64.Gemm(blas.NoTrans, blas.NoTrans, 1, ab, bb, 1, s)
		blas64.Gemm(blas.NoTrans, blas.NoTrans, 1, aa, ba, 0, q)
		for e, sv := range ref {
			qv := q.Data[e]
			mag[e] += qv
			peak[e] = max(peak[e], math.Abs(sv))
			peakQ[e] = max(peakQ[e], qv)
		}
	}
	for e := range peak {
		peak[e] += peakQ[e]
	}
}
