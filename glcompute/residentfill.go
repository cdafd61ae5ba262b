package glcompute

import (
	"errors"
	"fmt"

	"github.com/glmul/glmul/glcompute/internal/dispatch"
	"github.com/glmul/glmul/glcompute/internal/glw"
	"github.com/glmul/glmul/glcompute/tuning"
	"github.com/glmul/glmul/shaders"
)

// A resident fast product (Matrix.Mul, Gemm's fast path) whose tiles
// leave multiprocessors idle, under a wave of them or in its last one,
// fills the GPU as a host product does (hostproduct.go): K split into
// slices that reduce.comp sums (tuning.AutoSplitK), or stream-K where
// that beats the split (tuning.UseStreamK, streamk.go). Unsplit, resident
// products took up to several times a host product's time
// (docs/results/h100/resident.md; docs/PERFORMANCE.md, "Copies in
// pieces, resident products that fill the GPU").
//
// Both need a workspace, which the Device keeps for later products as it
// keeps A's transpose (work, grown to the largest asked for, never
// shrunk, until Release), up to maxResidentWorkBytes. Stream-K that would
// need more gives way to the split; a split that would, or a workspace
// the driver is out of memory for, to the unsplit product. A size the
// driver refused is not asked for again (workFailed): each failed
// allocation costs a call that saves all the state glmul touches, and on
// a borrowed context leaves an error flag in the host's context.

// maxResidentWorkBytes is the largest workspace the Device keeps for
// resident products: a K split whose slices' partial results (each as
// large as C) need more runs unsplit; stream-K (two tiles a
// multiprocessor) that would, split.
const maxResidentWorkBytes = 256 << 20

// fillPlan is how a resident fast product runs: unsplit (splits 1, sk nil),
// in splits slices of ksplit steps of K summed by red, or stream-K (sk).
// bytes is the workspace it needs.
type fillPlan struct {
	splits, ksplit int
	red            *program
	sk             *streamK
	bytes          int64
	// loop: the driver's loop budget needs the split (loops.go): it
	// never gives way to an unsplit product.
	loop bool
}

// errGrowWork is a resident product's answer where its fill needs a
// larger workspace than the Device has and may not grow it in this call
// (runFilled).
var errGrowWork = errors.New("glcompute: the resident workspace must grow")

// planFill returns the fill of a resident product of p, a fast kernel,
// over plan's groups, m×k×n; on the device thread. Unsplit where nothing
// is gained, the kernel is paced (program.go: each dispatch's groups are
// budgeted unsplit), or the workspace would pass maxResidentWorkBytes or
// one binding.
func (d *Device) planFill(p *program, plan dispatch.Plan, m, k, n int) (fillPlan, error) {
	f := fillPlan{splits: 1, ksplit: k}
	kern := p.kernel
	if need := d.kSlices(kern, k); need > 1 {
		return d.loopFill(kern, m, k, n, need)
	}
	if p.pace != nil || kern.Name != "fast" || !kern.Strided || kern.StepK == 0 {
		return f, nil
	}
	slots := d.slots(kern)
	split := tuning.AutoSplitK(plan.GroupsX*plan.GroupsY, k, tuning.Wave(d.tuningDriver()), slots)
	if split < 2 {
		return f, nil
	}
	ksplit := roundUp((k+split-1)/split, kern.StepK) // as a host product rounds it (hostProduct.plan)
	splits := (k + ksplit - 1) / ksplit
	if splits < 2 {
		return f, nil
	}
	if sk := newStreamK(kern, m, k, n, slots, splits, defaultMaxGroups, d.info.MaxWorkGroupCount[0]); sk != nil && d.workable(sk.bytes) &&
		d.checkBlock("the stream-K workspace is", sk.bytes) == nil {
		if err := d.streamKPrograms(sk); err != nil {
			return f, err
		}
		return fillPlan{splits: 1, ksplit: k, sk: sk, bytes: sk.bytes}, nil
	}
	bytes := 4 * int64(splits) * int64(m) * int64(n) // the slices' partial Cs, rows compact (fastLayout)
	if !d.workable(bytes) || d.checkBlock(fmt.Sprintf("the split-K workspace of %d partial results is", splits), bytes) != nil {
		return f, nil
	}
	red, err := d.programOf(shaders.Reduce())
	if err != nil {
		return f, err
	}
	return fillPlan{splits: splits, ksplit: ksplit, red: red, bytes: bytes}, nil
}

// loopFill returns the fill of a resident m×k×n product of kern that the
// driver's loop budget makes split in need slices or more (loops.go),
// whatever maxResidentWorkBytes says; an error where its workspace is
// over one binding.
func (d *Device) loopFill(kern shaders.Kernel, m, k, n, need int) (fillPlan, error) {
	ksplit := roundUp((k+need-1)/need, kern.StepK)
	splits := (k + ksplit - 1) / ksplit
	bytes := 4 * int64(splits) * int64(m) * int64(n)
	if err := d.checkBlock(fmt.Sprintf("K = %d runs in %d slices on this driver (%s); their partial results are", k, splits, d.loopLimit()), bytes); err != nil {
		return fillPlan{}, err
	}
	red, err := d.programOf(shaders.Reduce())
	if err != nil {
		return fillPlan{}, err
	}
	return fillPlan{splits: splits, ksplit: ksplit, red: red, bytes: bytes, loop: true}, nil
}

// workable reports whether a workspace of bytes may be had: at most
// maxResidentWorkBytes, and under any size the driver refused.
func (d *Device) workable(bytes int64) bool {
	return bytes <= maxResidentWorkBytes && (d.workFailed == 0 || bytes < d.workFailed)
}

// workFor makes sure the workspace holds f.bytes, on the device thread:
// where it is smaller and grow is false it returns errGrowWork (the
// caller runs the product again in a call that saves the copy bindings
// too, with grow true); where the driver is out of memory for it, it
// keeps the workspace it had, remembers the size, and returns the
// unsplit fill instead.
func (d *Device) workFor(f fillPlan, k int, grow bool) (fillPlan, error) {
	if f.bytes <= d.workBytes {
		return f, nil
	}
	if !grow {
		return f, errGrowWork
	}
	w, err := d.newBuffer(int(f.bytes), nil, glw.StaticDraw, "creating the resident products' workspace")
	if err != nil {
		if errors.Is(err, ErrOutOfMemory) && !f.loop {
			d.clearErrors()
			d.workFailed = f.bytes
			return fillPlan{splits: 1, ksplit: k}, nil
		}
		return f, err
	}
	d.work.Release() // the smaller one it replaces, if any
	d.work, d.workBytes = w, f.bytes
	// NaN in every float: a piece or slice the sum read but no group wrote
	// would reach C as NaN and fail a check, not pass as stale sums.
	return f, d.poison(d.work, int(f.bytes))
}

// runFilled runs product, a resident product on the device thread told
// whether it may grow the workspace, in a call that keeps the copy
// bindings; where it needs a larger workspace, again in one that saves
// them too (newBuffer binds one).
func (d *Device) runFilled(product func(grow bool) error) error {
	var err error
	d.callKeeping(func() { err = product(false) })
	if errors.Is(err, errGrowWork) {
		d.call(func() { err = product(true) })
	}
	return err
}

// runFast queues the resident product c = A·b with fast kernel p and its
// fill over plan, A lda floats a row, bound by bindA for a program
// (binding 0, or its texture) at the element offset it returns; then the
// barrier after it (finishDispatch). On the device thread, the workspace
// large enough.
func (d *Device) runFast(p *program, plan dispatch.Plan, f fillPlan, lda int, bindA func(*program) int, b, c *Matrix) error {
	bindC := func(q *program) int { return d.bind(q, 2, c, c.Offset, c.span()) / 4 }
	switch {
	case f.sk != nil:
		// Bindings 0 and 2 change under what d.bound records: bind
		// everything anew, and have the next call do so too.
		d.bound.valid = false
		f.sk.work = d.work
		f.sk.p.prog.Use()
		offA, offB := bindA(f.sk.p), d.bind(f.sk.p, 1, b, b.Offset, b.span())
		f.sk.queue(c.Rows, b.Rows, c.Cols, lda, b.Stride, c.Stride, offA/4, offB/4, bindC)
		d.bound = boundState{}
		return d.finishDispatch(f.sk.fix)
	case f.splits > 1:
		d.bound.valid = false
		p.prog.Use()
		offA, offB := bindA(p), d.bind(p, 1, b, b.Offset, b.span())
		bytes := f.bytes
		d.work.BindStorageRange(2, 0, bytes)
		setResidentFast(p, c, lda, b, offA, offB, 0)
		p.setUint("ksplit", uint32(f.ksplit))
		for _, ch := range plan.Chunks {
			p.dispatchChunk(ch, f.splits) // unpaced: planFill splits no paced kernel
		}
		glw.BarrierStorage()
		f.red.prog.Use()
		// reduce.comp counts the slices from the bound length.
		d.work.BindStorageRange(0, 0, bytes)
		count := c.Rows * c.Cols / 4
		f.red.setUints(uniform{"count", count}, uniform{"offC4", bindC(f.red)})
		f.red.dispatchLinear(dispatch.Linear(count, f.red.kernel.Threads), 0)
		d.bound = boundState{}
		return d.finishDispatch(f.red)
	}
	return d.dispatchResident(p, plan, func() {
		offA, offB := bindA(p), d.bind(p, 1, b, b.Offset, b.span())
		setResidentFast(p, c, lda, b, offA, offB, d.bind(p, 2, c, c.Offset, c.span()))
	})
}
