package glcompute

import (
	"math"

	"github.com/glmul/glmul/glcompute/internal/dispatch"
	"github.com/glmul/glmul/shaders"
)

// Batch describes Count small products (none: nothing to do), each M×K by
// K×N (sizes 1 to 32), row-major. Product i's A starts StrideA elements
// (doubles in GemmBatched64) after product i−1's, its rows LdA apart;
// likewise B and C, from each Matrix's Offset. Row strides let a std430
// array of mat3 (columns padded to vec4, read row-major as their
// transposes: LdA = 4, StrideA = 12) be used in place.
//
// Zero values: LdA = K, LdB = N, LdC = N (compact rows); StrideA = the
// span of one A ((M−1)·LdA + K), likewise StrideB and StrideC (matrices
// back to back). Negative values panic, as do row strides below the row
// length and a StrideC below one C's span (products would write over each
// other); A and B may overlap freely.
type Batch struct {
	Count, M, K, N            int
	StrideA, StrideB, StrideC int
	LdA, LdB, LdC             int
}

// normalized fills in Batch's zero values and panics on bad ones.
func (bt Batch) normalized() Batch {
	if bt.Count < 0 || bt.M < 1 || bt.K < 1 || bt.N < 1 || bt.M > 32 || bt.K > 32 || bt.N > 32 {
		panic("glcompute: Batch: Count ≥ 0 and sizes 1…32 required")
	}
	for _, v := range []int{bt.StrideA, bt.StrideB, bt.StrideC, bt.LdA, bt.LdB, bt.LdC} {
		if v < 0 {
			panic("glcompute: Batch: negative stride")
		}
	}
	def := func(v *int, d int) {
		if *v == 0 {
			*v = d
		}
	}
	def(&bt.LdA, bt.K)
	def(&bt.LdB, bt.N)
	def(&bt.LdC, bt.N)
	if bt.LdA < bt.K || bt.LdB < bt.N || bt.LdC < bt.N {
		panic("glcompute: Batch: row stride below the row length")
	}
	def(&bt.StrideA, bt.spanA())
	def(&bt.StrideB, bt.spanB())
	def(&bt.StrideC, bt.spanC())
	if bt.StrideC < bt.spanC() {
		panic("glcompute: Batch: StrideC below one C's span: products would overlap")
	}
	return bt
}

func (bt Batch) spanA() int { return (bt.M-1)*bt.LdA + bt.K }
func (bt Batch) spanB() int { return (bt.K-1)*bt.LdB + bt.N }
func (bt Batch) spanC() int { return (bt.M-1)*bt.LdC + bt.N }

// batchExtent is the elements from a batch's first to one past its last.
func batchExtent(count, stride, span int) int { return (count-1)*stride + span }

// MulBatched queues the products C[i] = A[i]·B[i] of bt (GemmBatched with
// α = 1, β = 0; GemmBatched64 for float64 matrices).
func (d *Device) MulBatched(c, a, b *Matrix, bt Batch) error {
	if c.f64 {
		return d.GemmBatched64(c, 1, a, b, 0, bt)
	}
	return d.GemmBatched(c, 1, a, b, 0, bt)
}

// GemmBatched queues the products C[i] = α·A[i]·B[i] + β·C[i] of bt,
// reading the batch from the buffers of a and b and writing c's; the three
// Matrix shapes are ignored, only their buffers and offsets count, and
// every product must lie within its buffer. β = 0 does not read C; α = 0
// does not read A or B. Like Gemm it returns at once, with a memory
// barrier after. A Count of 0 does nothing: no GL call, no barrier.
//
// It panics on a bad Batch (see its doc), a NaN α or β, a batch that runs
// past the end of its buffer, or a C batch that shares floats with the A
// or B batch; it returns an error matching ErrTooLarge if a batch spans
// more than one shader storage block.
func (d *Device) GemmBatched(c *Matrix, alpha float32, a, b *Matrix, beta float32, bt Batch) error {
	nan := math.IsNaN(float64(alpha)) || math.IsNaN(float64(beta))
	return d.gemmBatched(c, a, b, bt, false, nan, func(p *program) {
		p.setFloat("alpha", alpha)
		p.setFloat("beta", beta)
	})
}

// GemmBatched64 is GemmBatched on float64 matrices (NewMatrix64), their
// strides and offsets in doubles, α and β float64.
func (d *Device) GemmBatched64(c *Matrix, alpha float64, a, b *Matrix, beta float64, bt Batch) error {
	return d.gemmBatched(c, a, b, bt, true, math.IsNaN(alpha) || math.IsNaN(beta), func(p *program) {
		p.setDouble("alpha", alpha)
		p.setDouble("beta", beta)
	})
}

// gemmBatched runs GemmBatched (f64 false) or GemmBatched64 (f64 true):
// the checks, then batched.comp in the element type, setAB setting α and
// β, nan whether either is NaN. A float64 batch is bound over its words.
func (d *Device) gemmBatched(c, a, b *Matrix, bt Batch, f64, nan bool, setAB func(p *program)) error {
	method, kern, w := "GemmBatched", shaders.Batched(), 1
	if f64 {
		method, kern, w = "GemmBatched64", shaders.Batched64(), 2
	}
	for _, x := range []*Matrix{c, a, b} {
		x.checkLive(d) // their shapes are the Batch's
		x.mustBe(f64, method)
	}
	bt = bt.normalized()
	if nan {
		panic("glcompute: " + method + ": α or β is NaN")
	}
	if bt.Count == 0 { // an empty scene: nothing to bind or dispatch
		d.checkOpen()
		return nil
	}
	ext := [3]int{batchExtent(bt.Count, bt.StrideA, bt.spanA()), batchExtent(bt.Count, bt.StrideB, bt.spanB()), batchExtent(bt.Count, bt.StrideC, bt.spanC())}
	if overlaps(c, w*c.Offset, w*ext[2], a, w*a.Offset, w*ext[0]) || overlaps(c, w*c.Offset, w*ext[2], b, w*b.Offset, w*ext[1]) {
		panic("glcompute: " + method + ": C overlaps A or B")
	}
	for i, x := range []*Matrix{a, b, c} {
		name := string("ABC"[i])
		if x.Offset < 0 || 4*int64(w)*int64(x.Offset+ext[i]) > x.size {
			panic("glcompute: " + method + ": a batch runs past the end of its buffer")
		}
		if err := d.checkExtent("the batch of "+name, w*x.Offset, w*ext[i]); err != nil {
			return err
		}
	}
	total := bt.Count * bt.M * bt.N
	var err error
	d.call(func() {
		var p *program
		if p, err = d.programOf(kern); err != nil {
			return
		}
		d.clearErrors()
		p.prog.Use()
		bind := func(i uint32, x *Matrix, n int) int { return d.bind(p, i, x, w*x.Offset, w*n) / w }
		offA, offB, offC := bind(0, a, ext[0]), bind(1, b, ext[1]), bind(2, c, ext[2])
		p.setUints(uniform{"M", bt.M}, uniform{"N", bt.N}, uniform{"K", bt.K}, uniform{"count", bt.Count},
			uniform{"lda", bt.LdA}, uniform{"ldb", bt.LdB}, uniform{"ldc", bt.LdC}, uniform{"strideA", bt.StrideA},
			uniform{"strideB", bt.StrideB}, uniform{"strideC", bt.StrideC}, uniform{"offA", offA}, uniform{"offB", offB},
			uniform{"offC", offC})
		setAB(p)
		p.dispatchLinear(dispatch.Linear(total, p.kernel.Threads), 0)
		err = d.finishDispatch(p)
	})
	return err
}
