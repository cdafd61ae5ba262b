package validate

import (
	"math"
	"sync"

	"gonum.org/v1/gonum/blas"
	"gonum.org/v1/gonum/blas/blas32"
	"gonum.org/v1/gonum/blas/blas64"

	"github.com/glmul/glmul/cpu"
)

// FullRows checks a product C = A·B in full, block of rows by block of
// rows, as CheckFull does for a whole product: NewFullRows converts B and
// |B| to float64 once; Check compares a block of C's rows with the float64
// product of the same rows of A; Result is the worst element and the
// relative Frobenius error over every row checked. Check and Result are
// safe for concurrent use.
type FullRows struct {
	b      blas32.General
	b64    blas64.General // B in float64
	bAbs   blas64.General // |B|
	colNF  []bool         // B's columns with a NaN or an Inf
	mu     sync.Mutex
	r      Result
	diff2  float64
	ref2   float64
	blocks int
}

// NewFullRows prepares the full check of products by b.
func NewFullRows(b blas32.General) *FullRows {
	_, colNF := nonFinite(blas32.General{Rows: 0, Cols: b.Rows, Stride: b.Rows}, b)
	return &FullRows{b: b, b64: cpu.To64(b, false), bAbs: cpu.To64(b, true), colNF: colNF,
		r: Result{Mode: Full, OK: true, Row: -1, Col: -1}}
}

// Check checks rows r0… of C: a holds those rows of A, c the same rows of
// C. It panics if the shapes disagree with B's.
func (f *FullRows) Check(a, c blas32.General, r0 int) {
	if a.Cols != f.b.Rows || c.Cols != f.b.Cols || a.Rows != c.Rows {
		panic("validate: shapes of A, B and C do not agree")
	}
	ref := float64Product(cpu.To64(a, false), f.b64)
	mag := float64Product(cpu.To64(a, true), f.bAbs)
	// The float64 reference has its own (tiny) error, γ_K in float64.
	g := gamma(a.Cols, u32) + gamma(a.Cols, u64)
	rowNF, _ := nonFinite(a, blas32.General{Rows: 0, Cols: 0})
	worst := Result{Row: -1, Col: -1}
	var diff2, ref2 float64
	for i := 0; i < c.Rows; i++ {
		for j := 0; j < c.Cols; j++ {
			got, want := float64(c.Data[i*c.Stride+j]), ref.Data[i*ref.Stride+j]
			bound := g * mag.Data[i*mag.Stride+j]
			if math.IsNaN(want) && math.IsNaN(got) || math.IsInf(want, 0) && got == want {
				continue // NaN and Inf propagate: the same class is right
			}
			if (math.IsNaN(got) || math.IsInf(got, 0)) && (rowNF[i] || f.colNF[j]) {
				// IEEE arithmetic makes 0·NaN NaN and 0·Inf NaN; the
				// float64 reference (gonum) skips zero terms, the GPU
				// does not. Either is right where a non-finite input
				// meets this element.
				continue
			}
			if (math.IsNaN(got) || math.IsInf(got, 0)) && mayOverflow(mag.Data[i*mag.Stride+j]) {
				continue // float32's own overflow (see mayOverflow)
			}
			d := math.Abs(got - want)
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

// Result is the check of every row Checked so far.
func (f *FullRows) Result() Result {
	f.mu.Lock()
	defer f.mu.Unlock()
	r := f.r
	r.OK = r.WorstRatio <= 1
	if f.ref2 > 0 {
		r.RelFrobenius = math.Sqrt(f.diff2 / f.ref2)
	} else {
		r.RelFrobenius = math.Sqrt(f.diff2)
	}
	return r
}

// mayOverflow reports whether a float32 dot product whose terms' absolute
// values sum to mag (Σ|aᵢₖ||bₖⱼ|, in float64) may overflow: a partial sum
// may then pass float32's largest value, and the element is ±Inf, or NaN
// where partial sums of both signs did, as NumPy's float32 product gives
// it, whatever the float64 reference. Where mag is below that largest
// value no partial sum can reach it, and a non-finite element is an error.
func mayOverflow(mag float64) bool { return mag > math.MaxFloat32 }

// float64Product is a·b in float64.
func float64Product(a, b blas64.General) blas64.General {
	c := blas64.General{Rows: a.Rows, Cols: b.Cols, Stride: b.Cols, Data: make([]float64, a.Rows*b.Cols)}
	blas64.Gemm(blas.NoTrans, blas.NoTrans, 1, a, b, 0, c)
	return c
}
