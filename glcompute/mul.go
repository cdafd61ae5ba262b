package glcompute

import (
	"fmt"
	"time"

	"gonum.org/v1/gonum/blas/blas32"
)

// Mul computes C = A·B on the GPU in one pipelined pass (A and B going up
// while the GPU computes and finished blocks of C come back), in panels
// where the product exceeds a binding or MaxGPUMemory (Plan). C is
// overwritten entirely; A and B are not modified (a pinned.Matrix operand's
// row padding is zeroed). An empty product runs nothing: with K = 0, C is
// zeros. The GPU buffers are kept for the next Mul until Release
// (docs/LIBRARY.md). Safe from any goroutine.
//
// It panics if the shapes disagree, a dimension is negative, or a slice
// is too short for its shape and stride.
func (d *Device) Mul(c, a, b blas32.General, opts *MulOptions) (Timings, error) {
	if checkProduct(dims32(c), dims32(a), dims32(b)) {
		d.emptyProduct(opts)
		if c.Rows > 0 && c.Cols > 0 { // K = 0: C = A·B is zero
			for i := range c.Rows {
				clear(c.Data[i*c.Stride : i*c.Stride+c.Cols])
			}
		}
		return Timings{}, nil
	}
	hp, err := d.planHost(a.Rows, a.Cols, b.Cols, opts)
	if err != nil {
		return Timings{}, err
	}
	idle := d.idle()
	var t Timings
	d.call(func() {
		switch {
		case hp.unit.kern.Name != "":
			t, err = d.mulUnitsAlone(c, a, b, &hp, idle)
		case hp.paneled:
			t, err = d.mulPanels(c, a, b, &hp, idle)
		default:
			t, err = d.mul(c, a, b, &hp, idle)
		}
	})
	d.worked()
	return t, err
}

// Plan says how Mul would run an m×k by k×n product with opts: its
// Layout's Kernel and, for a product in panels, Panels, the other fields
// zero (Mul's Timings.Layout has them, from the bands it plans); or an error
// (matching ErrTooLarge or ErrUnsupported) where it cannot run at all: an
// unknown kernel or one the device cannot run, too many groups a
// dispatch, a product beyond bindings or memory that this kernel cannot
// split. It lets a caller refuse a product before making its inputs.
// Safe from any goroutine.
//
// An empty product (a dimension 0) runs on no GPU (see Mul): a zero
// Layout. A negative dimension panics.
func (d *Device) Plan(m, k, n int, opts *MulOptions) (Layout, error) {
	if m < 0 || k < 0 || n < 0 {
		panic("glcompute: negative matrix dimension")
	}
	if d.isReleased() {
		panic("glcompute: use of a released Device")
	}
	if m == 0 || k == 0 || n == 0 {
		if opts != nil {
			opts.check()
		}
		return Layout{}, nil
	}
	hp, err := d.planHost(m, k, n, opts)
	if err != nil {
		return Layout{}, err
	}
	l := Layout{Kernel: hp.kernels.kern.Spec()}
	switch {
	case hp.unit.kern.Name != "":
		l.Kernel, l.Panels = hp.unit.kern.Spec(), hp.unit.String()
	case hp.paneled:
		l.Panels = hp.panels.String()
	}
	return l, nil
}

// emptyProduct checks what an empty product checks: its options, and
// that the Device is open.
func (d *Device) emptyProduct(opts *MulOptions) {
	if opts != nil {
		opts.check()
	}
	d.checkOpen()
}

// planHost plans an m×k by k×n product of host matrices with opts: the
// one place where Mul and Plan choose the kernel (chooseHost), check what
// the driver allows, and decide on panels (planPanels).
func (d *Device) planHost(m, k, n int, opts *MulOptions) (hp hostPlan, err error) {
	return d.planHostPanels(m, k, n, opts, false)
}

// planHostPanels is planHost, in panels where forcePanels is set.
func (d *Device) planHostPanels(m, k, n int, opts *MulOptions, forcePanels bool) (hp hostPlan, err error) {
	hp.forcePanels = forcePanels
	d.mustBeOpen()
	if opts != nil {
		hp.o = *opts
	}
	hp.o.check()
	if hp.o.MaxGroups == 0 {
		hp.o.MaxGroups = defaultMaxGroups
	}
	if err := d.checkMaxGroups(hp.o.MaxGroups); err != nil {
		return hp, err
	}
	if hp.kernels, err = d.chooseHost(hp.o.Kernel, m, k, n); err != nil {
		return hp, err
	}
	if err := d.fits(hp.kernels.kern); err != nil {
		return hp, err
	}
	if kern := hp.kernels.kern; kern.StepK == 0 && d.kSlices(kern, k) > 1 {
		return hp, d.errLoopBudget(kern, k)
	}
	hp.panels, hp.paneled, err = d.planPanels(m, k, n, &hp)
	if err == nil && hp.paneled && !forcePanels {
		cols, widest := alonePanels(n)
		hp.unit = d.planUnits(&hp, m, k, cols, widest)
	}
	return hp, err
}

// checkMaxGroups returns ErrUnsupported for a MaxGroups over the
// driver's limit.
func (d *Device) checkMaxGroups(groups int) error {
	if lim := min(d.info.MaxWorkGroupCount[0], d.info.MaxWorkGroupCount[1]); groups > lim {
		return fmt.Errorf("%w: %d work groups per dispatch requested, the driver allows %d (GL_MAX_COMPUTE_WORK_GROUP_COUNT)", ErrUnsupported, groups, lim)
	}
	return nil
}

// mul runs on the device thread: a hostProduct, offered to the Measure
// hook stage by stage, then pipelined. idle is how long the device had
// no work before this Mul (stages.Idle).
func (d *Device) mul(c, a, b blas32.General, hp *hostPlan, idle time.Duration) (t Timings, err error) {
	d.clearErrors()
	o := &hp.o
	h := &hostProduct{d: d, o: o, kernels: hp.kernels, m: a.Rows, k: a.Cols, n: b.Cols}
	defer h.release()
	if err := h.plan(c, a, b); err != nil {
		return t, err
	}
	t.Kernel = h.p.kernel.Spec()
	t.Dispatches, t.Groups, t.Splits = len(h.chunks.Chunks)+len(h.edges), [2]int{h.chunks.GroupsX, h.chunks.GroupsY}, h.splits
	if h.edge != nil {
		t.EdgeKernel = h.edge.kernel.Spec()
		for _, c := range h.edges {
			t.EdgeGroups += c.GroupsX * c.GroupsY
		}
	}
	if !h.runsWhole() {
		t.Splits = 1 // the only pass runs its bands unsplit
	}
	if h.sk != nil {
		t.StreamKTiles, t.StreamKGroups = h.sk.tiles, h.sk.groups
		t.Dispatches = 2 + len(h.sk.fixChunks)
	}
	if err := h.alloc(); err != nil {
		return t, err
	}
	defer d.unbindAll()
	if o.Measure != nil {
		if err := o.Measure(&stages{h: h, c: c, a: a, b: b, idle: idle}); err != nil {
			return t, err
		}
	}
	pt, err := h.pipelined(c, a, b, o.Progress)
	pt.fill(&t)
	return t, err
}
