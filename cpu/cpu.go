package cpu

import (
	"math/rand/v2"

	"gonum.org/v1/gonum/blas"
	"gonum.org/v1/gonum/blas/blas32"
	"gonum.org/v1/gonum/blas/blas64"
)

// New returns a zeroed rows×cols float32 matrix. On Linux one of 8 MiB
// or more is advised into transparent huge pages (huge_linux.go): its
// first touch and its freeing at exit, a second or more for the
// gigabytes of glmul -n 32768, then take a fraction of the time.
func New(rows, cols int) blas32.General {
	m := blas32.General{Rows: rows, Cols: cols, Stride: cols, Data: make([]float32, rows*cols)}
	adviseHuge(m.Data)
	return m
}

// Random returns a rows×cols matrix of values drawn uniformly from [-1, 1)
// by rng: signed, so that sums cancel as they do in real data and a kernel
// that drops or repeats a term cannot hide behind all-positive inputs.
// Each is a float64 on [-1, 1) rounded to float32, which gives 1 for one
// draw in 2²⁶ (FillUniform's values never reach 1).
func Random(rows, cols int, rng *rand.Rand) blas32.General {
	m := New(rows, cols)
	Fill(m, rng)
	return m
}

// Fill sets the elements of m (not its stride gaps) to values uniform on
// [-1, 1) from rng, row by row: the same values Random gives for a compact
// matrix of m's shape.
func Fill(m blas32.General, rng *rand.Rand) {
	for i := 0; i < m.Rows; i++ {
		row := m.Data[i*m.Stride : i*m.Stride+m.Cols]
		for j := range row {
			row[j] = float32(2*rng.Float64() - 1)
		}
	}
}

// Naive computes C = A·B with the paper's Algorithm 3: the i-j-k triple loop
// accumulating in float32, single-threaded. It is the CPU column of the
// paper's Table 1 and is deliberately not optimized.
func Naive(c, a, b blas32.General) { NaiveRows(c, a, b, 0, a.Rows) }

// NaiveRows runs Naive on rows [i0, i1) of C only, so that a caller can
// report progress or stop between chunks of rows.
func NaiveRows(c, a, b blas32.General, i0, i1 int) {
	checkShapes(c, a, b)
	naiveRows(c.Data, a.Data, b.Data, c.Stride, a.Stride, b.Stride, a.Cols, b.Cols, i0, i1)
}

// naiveRows is the loop of NaiveRows and NaiveRows64: row i of C, column
// j, the sum over k in order, in E, for the rows [i0, i1).
func naiveRows[E float32 | float64](c, a, b []E, ldc, lda, ldb, n, l, i0, i1 int) {
	for i := i0; i < i1; i++ {
		for j := 0; j < l; j++ {
			var sum E
			for k := 0; k < n; k++ {
				sum = sum + a[i*lda+k]*b[k*ldb+j]
			}
			c[i*ldc+j] = sum
		}
	}
}

// Sgemm computes C = A·B in float32 with gonum's optimized, multi-threaded
// Sgemm: the fast CPU baseline.
func Sgemm(c, a, b blas32.General) {
	checkShapes(c, a, b)
	blas32.Gemm(blas.NoTrans, blas.NoTrans, 1, a, b, 0, c)
}

// NaiveRows64 is NaiveRows in float64: the paper's Algorithm 3 on rows
// [i0, i1) of C, accumulating in float64, single-threaded (the naive CPU
// column of glmul table -type f64).
func NaiveRows64(c, a, b blas64.General, i0, i1 int) {
	checkShapes64(c, a, b)
	naiveRows(c.Data, a.Data, b.Data, c.Stride, a.Stride, b.Stride, a.Cols, b.Cols, i0, i1)
}

// Dgemm computes C = A·B in float64 with gonum's optimized,
// multi-threaded Dgemm: the fast CPU baseline of float64 products.
func Dgemm(c, a, b blas64.General) {
	checkShapes64(c, a, b)
	blas64.Gemm(blas.NoTrans, blas.NoTrans, 1, a, b, 0, c)
}

// Reference computes C = A·B in float64 from float32 inputs: the reference
// against which float32 results are validated. If abs is true it computes
// |A|·|B| instead, the magnitude that rounding-error bounds scale with.
func Reference(a, b blas32.General, abs bool) blas64.General {
	if a.Cols != b.Rows {
		panic("cpu: inner dimensions of A and B differ")
	}
	a64, b64 := To64(a, abs), To64(b, abs)
	c := blas64.General{Rows: a.Rows, Cols: b.Cols, Stride: b.Cols, Data: make([]float64, a.Rows*b.Cols)}
	blas64.Gemm(blas.NoTrans, blas.NoTrans, 1, a64, b64, 0, c)
	return c
}

// To64 converts a float32 matrix to a compact float64 one, taking absolute
// values if abs is true.
func To64(m blas32.General, abs bool) blas64.General {
	out := blas64.General{Rows: m.Rows, Cols: m.Cols, Stride: m.Cols, Data: make([]float64, m.Rows*m.Cols)}
	for i := 0; i < m.Rows; i++ {
		row := m.Data[i*m.Stride : i*m.Stride+m.Cols]
		dst := out.Data[i*m.Cols : (i+1)*m.Cols]
		for j, v := range row {
			f := float64(v)
			if abs && f < 0 {
				f = -f
			}
			dst[j] = f
		}
	}
	return out
}

func checkShapes(c, a, b blas32.General) {
	checkDims(c.Rows, c.Cols, c.Stride, a.Rows, a.Cols, a.Stride, b.Rows, b.Cols, b.Stride)
}

func checkShapes64(c, a, b blas64.General) {
	checkDims(c.Rows, c.Cols, c.Stride, a.Rows, a.Cols, a.Stride, b.Rows, b.Cols, b.Stride)
}

// checkDims panics unless C (cr×cc, stride cs) can hold A·B.
func checkDims(cr, cc, cs, ar, ac, as, br, bc, bs int) {
	switch {
	case ac != br:
		panic("cpu: inner dimensions of A and B differ")
	case cr != ar || cc != bc:
		panic("cpu: C has the wrong shape")
	case as < ac || bs < bc || cs < cc:
		panic("cpu: bad stride")
	}
}
