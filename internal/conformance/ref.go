package conformance

import (
	"math"
	"math/rand/v2"
	"os"
	"strconv"

	"gonum.org/v1/gonum/blas"
	"gonum.org/v1/gonum/blas/blas32"
	"gonum.org/v1/gonum/blas/blas64"
	"gonum.org/v1/gonum/blas/gonum"
)

// GemmRef returns α·op(A)·op(B) + β·C0 in float64 and the error bound of a
// float32 evaluation: γ_{K+2}·(|α|·(|op(A)||op(B)|) + |β·C0|).
func GemmRef(tA, tB blas.Transpose, alpha float32, a, b blas32.General, beta float32, c0 blas32.General) (ref, bound []float64) {
	m, n := c0.Rows, c0.Cols
	k := a.Cols
	if tA == blas.Trans {
		k = a.Rows
	}
	at := func(i, p int) float64 {
		if tA == blas.Trans {
			return float64(a.Data[p*a.Stride+i])
		}
		return float64(a.Data[i*a.Stride+p])
	}
	bt := func(p, j int) float64 {
		if tB == blas.Trans {
			return float64(b.Data[j*b.Stride+p])
		}
		return float64(b.Data[p*b.Stride+j])
	}
	u := math.Ldexp(1, -24)
	g := float64(k+2) * u / (1 - float64(k+2)*u)
	ref, bound = make([]float64, m*n), make([]float64, m*n)
	for i := 0; i < m; i++ {
		for j := 0; j < n; j++ {
			var s, sa float64
			if alpha != 0 {
				for p := 0; p < k; p++ {
					s += at(i, p) * bt(p, j)
					sa += math.Abs(at(i, p) * bt(p, j))
				}
			}
			r := float64(alpha) * s
			mag := math.Abs(float64(alpha)) * sa
			if beta != 0 {
				cv := float64(beta) * float64(c0.Data[i*c0.Stride+j])
				r += cv
				mag += math.Abs(cv)
			}
			ref[i*n+j], bound[i*n+j] = r, g*mag
		}
	}
	return ref, bound
}

// RandomPadded returns a rows×cols matrix of seeded values in [-1, 1)
// with row stride cols+pad.
func RandomPadded(rows, cols, pad int, rng *rand.Rand) blas32.General {
	m := blas32.General{Rows: rows, Cols: cols, Stride: cols + pad, Data: make([]float32, rows*(cols+pad))}
	for i := range m.Data {
		m.Data[i] = float32(2*rng.Float64() - 1)
	}
	return m
}

// Random64 returns a rows×cols matrix of row stride stride, seeded
// values in [-1, 1), NaN in each row's padding.
func Random64(rows, cols, stride int, rng *rand.Rand) blas64.General {
	m := blas64.General{Rows: rows, Cols: cols, Stride: stride, Data: make([]float64, rows*stride)}
	for i := range m.Data {
		m.Data[i] = math.NaN()
		if i%stride < cols {
			m.Data[i] = 2*rng.Float64() - 1
		}
	}
	return m
}

// GemmRef64 returns α·op(A)·op(B) + β·C0 (m×n, row stride n) by gonum's
// Dgemm, A and B taken as zero where α = 0 (BLAS reads neither then;
// gonum's Dgemm multiplies them still, NaN included), and the error
// bound of a float64 evaluation, each order of summation against
// gonum's: 2γ_{K+2}·(|α|·(|op(A)||op(B)|) + |β·C0|), u = 2⁻⁵³. GemmRef is
// its float32 counterpart.
func GemmRef64(tA, tB blas.Transpose, alpha float64, a, b blas64.General, beta float64, c0 blas64.General) (ref, bound []float64) {
	m, n, k := c0.Rows, c0.Cols, a.Cols
	if tA != blas.NoTrans {
		k = a.Rows
	}
	ref, bound = make([]float64, m*n), make([]float64, m*n)
	for i := range m {
		for j := range n {
			v := c0.Data[i*c0.Stride+j]
			ref[i*n+j], bound[i*n+j] = v, math.Abs(v)
		}
	}
	abs := func(x blas64.General) []float64 {
		y := make([]float64, len(x.Data))
		for i, v := range x.Data {
			y[i] = math.Abs(v)
		}
		return y
	}
	if alpha == 0 {
		a.Data, b.Data = make([]float64, len(a.Data)), make([]float64, len(b.Data))
	}
	lda, ldb, ldc := max(a.Stride, 1), max(b.Stride, 1), max(n, 1)
	impl := gonum.Implementation{}
	impl.Dgemm(tA, tB, m, n, k, alpha, a.Data, lda, b.Data, ldb, beta, ref, ldc)
	impl.Dgemm(tA, tB, m, n, k, math.Abs(alpha), abs(a), lda, abs(b), ldb, math.Abs(beta), bound, ldc)
	u := math.Ldexp(1, -53)
	g := float64(k+2) * u / (1 - float64(k+2)*u)
	for i := range bound {
		bound[i] *= 2 * g
	}
	return ref, bound
}

// EnvSize reads a benchmark's size from the environment variable name
// (def where unset or not a positive integer), so that CI (llvmpipe)
// runs small sizes and a GPU machine the sizes its figures need.
func EnvSize(name string, def int) int {
	if v, err := strconv.Atoi(os.Getenv(name)); err == nil && v > 0 {
		return v
	}
	return def
}

// MulRef64 returns A·B (m×n, row stride n) summed in float64, and each
// element's bound on a float64 product's distance from it:
// 2γ_K·(|A||B|)ᵢⱼ + 2K·2⁻¹⁰²², γ_K = K·u/(1−K·u), u = 2⁻⁵³. The product
// and this reference are each within γ_K·(|A||B|)ᵢⱼ of the exact value,
// whatever their order of summation; a device that flushes subnormal
// results to zero (llvmpipe) loses less than 2⁻¹⁰²² a term more, as
// validate's float64 tolerance allows.
func MulRef64(a, b blas64.General) (ref, bound []float64) {
	m, k, n := a.Rows, a.Cols, b.Cols
	u := math.Ldexp(1, -53)
	g := float64(k) * u / (1 - float64(k)*u)
	ref, bound = make([]float64, m*n), make([]float64, m*n)
	for i := range m {
		for j := range n {
			var s, mag float64
			for p := range k {
				t := a.Data[i*a.Stride+p] * b.Data[p*b.Stride+j]
				s += t
				mag += math.Abs(t)
			}
			ref[i*n+j], bound[i*n+j] = s, 2*g*mag+2*float64(k)*math.Ldexp(1, -1022)
		}
	}
	return ref, bound
}
