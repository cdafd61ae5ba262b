package glcompute

import (
	"math"

	"github.com/glmul/glmul/glcompute/internal/dispatch"
	"github.com/glmul/glmul/shaders"
)

// Batch describes Count small products (none: nothing to do), each M×K by
// K×N (sizes 1 to 32), row-major. Product i's A starts StrideA floats after product i−1's, its
// rows LdA floats apart; likewise B and C. Counting starts at each
// Matrix's Offset. Row strides let a std430 array of mat3 (columns padded
// to vec4, read row-major as their transposes: LdA = 4, StrideA = 12) be
// used in place.
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

// batchExtent is the floats from a batch's first element to one past its last.
func batchExtent(count, stride, span int) int { return (count-1)*stride + span }

// MulBatched queues the products C[i] = A[i]·B[i] of bt (GemmBatched with
// α = 1, β = 0).
func (d *Device) MulBatched(c, a, b *Matrix, bt Batch) error {
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
	for _, x := range []*Matrix{c, a, b} {
		x.checkLive(d) // their shapes are the Batch's
		x.mustBe(false, "GemmBatched")
	}
	bt = bt.normalized()
	if math.IsNaN(float64(alpha)) || math.IsNaN(float64(beta)) {
		panic("glcompute: GemmBatched: α or β is NaN")
	}
	if bt.Count == 0 { // an empty scene: nothing to bind or dispatch
		d.checkOpen()
		return nil
	}
	ext := [3]int{batchExtent(bt.Count, bt.StrideA, bt.spanA()), batchExtent(bt.Count, bt.StrideB, bt.spanB()), batchExtent(bt.Count, bt.StrideC, bt.spanC())}
	if overlaps(c, c.Offset, ext[2], a, a.Offset, ext[0]) || overlaps(c, c.Offset, ext[2], b, b.Offset, ext[1]) {
		panic("glcompute: GemmBatched: C overlaps A or B")
	}
	for i, x := range []*Matrix{a, b, c} {
		name := string("ABC"[i])
		if x.Offset < 0 || 4*int64(x.Offset+ext[i]) > x.size {
			panic("glcompute: GemmBatched: a batch runs past the end of its buffer")
		}
		if err := d.checkExtent("the batch of "+name, x.Offset, ext[i]); err != nil {
			return err
		}
	}
	total := bt.Count * bt.M * bt.N
	var err error
	d.call(func() {
		var p *program
		if p, err = d.programOf(shaders.Batched()); err != nil {
			return
		}
		d.clearErrors()
		p.prog.Use()
		offA, offB, offC := d.bind(p, 0, a, a.Offset, ext[0]), d.bind(p, 1, b, b.Offset, ext[1]), d.bind(p, 2, c, c.Offset, ext[2])
		p.setUints(uniform{"M", bt.M}, uniform{"N", bt.N}, uniform{"K", bt.K}, uniform{"count", bt.Count},
			uniform{"lda", bt.LdA}, uniform{"ldb", bt.LdB}, uniform{"ldc", bt.LdC}, uniform{"strideA", bt.StrideA},
			uniform{"strideB", bt.StrideB}, uniform{"strideC", bt.StrideC}, uniform{"offA", offA}, uniform{"offB", offB},
			uniform{"offC", offC})
		p.setFloat("alpha", alpha)
		p.setFloat("beta", beta)
		p.dispatchLinear(dispatch.Linear(total, p.kernel.Threads), 0)
		err = d.finishDispatch(p)
	})
	return err
}
