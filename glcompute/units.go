package glcompute

import (
	"fmt"

	"gonum.org/v1/gonum/blas/blas32"

	"github.com/glmul/glmul/glcompute/internal/link"
	"github.com/glmul/glmul/glcompute/tuning"
)

// planUnit plans a device's part of a group product: the m×k by k×w
// product of one column panel of C (widest columns where two are claimed
// at once), streamed (unitstream.go) where the
// kernel chosen for it reads A transposed and streamed is set, else in
// panels whatever its size, A in about four row panels where M allows,
// so that the device's first column panel computes while the rest of A
// goes up.
func (d *Device) planUnit(m, k, w, widest int, o *MulOptions, streamed bool) (hostPlan, error) {
	hp, err := d.planHostPanels(m, k, w, o, true)
	if err != nil {
		return hp, err
	}
	if streamed {
		// The device's panels share one transpose of A: the default
		// keeps its transposed kernel however narrow a panel is.
		if hk, err := d.chooseHost(hp.o.Kernel, m, k, max(w, tuning.TransposedAMinN)); err == nil && hk.kern.TransposeA {
			hp.unitKern, hp.unitWidest = hk.kern, widest // fits: planHostPanels checked it
		}
	}
	pl := &hp.panels
	tile := hp.kernels.kern.TileM
	if rows := roundUp((m+3)/4, tile); pl.RowsPer > rows && rows >= 256 {
		pl.RowsPer = rows
	}
	return hp, nil
}

// mulUnits runs, on the device's thread, its part of a group product:
// the column panels claim hands it, one after another in one pipelined
// pass, until none is left or the device fails. ready is called once the
// device's buffers are made (or it failed before): it returns when every
// device's are, so that the group's EndToEnd, like Mul's, leaves out
// making them.
func (d *Device) mulUnits(c, a, b blas32.General, hp *hostPlan, claim link.Claim, ready func()) (t Timings, err error) {
	readied := false
	signal := func() { // once, after the buffers are made or on the way out
		if !readied {
			readied = true
			ready()
		}
	}
	defer signal()
	d.clearErrors()
	us := d.unitStreamOf(hp, a.Rows, a.Cols, hp.unitWidest)
	if us == nil && hp.unitWidest > hp.panels.N {
		us = d.unitStreamOf(hp, a.Rows, a.Cols, hp.panels.N)
	}
	if us != nil {
		return us.mulUnits(c, a, b, claim, signal)
	}
	o := &hp.o
	pp := &panelProduct{d: d, o: o, plan: hp.panels}
	defer pp.release()
	defer d.unbindAll()
	if pp.p, err = d.programOf(hp.kernels.kern); err != nil {
		return t, err
	}
	t.Kernel, t.Panels = pp.p.kernel.Spec(), hp.panels.String()
	if err := pp.planSplit(); err != nil {
		return t, err
	}
	t.Splits = pp.splits
	if err := pp.alloc(); err != nil {
		return t, err
	}
	signal()
	next := func() []pipeStep {
		c0, w, landed, fault, ok := claim(hp.panels.N)
		if !ok {
			return nil
		}
		steps := pp.steps(blockView(c, 0, c.Rows, c0, w), a, blockView(b, 0, b.Rows, c0, w))
		steps[len(steps)-1].landed = landed
		if fault != nil {
			steps[0].run = func() error { return fault }
		}
		return steps
	}
	first := next()
	if first == nil {
		return t, nil
	}
	pl := &pipeline{d: d, o: o, steps: first, more: next}
	pt, err := pl.run()
	pt.fill(&t)
	t.Dispatches = pp.dispatches
	return t, err
}

// mulUnits is Device.mulUnits streamed: the pass's buffers made, ready
// signalled, then the pass over the panels claim hands out.
func (us *unitStream) mulUnits(c, a, b blas32.General, claim link.Claim, ready func()) (t Timings, err error) {
	defer us.release()
	defer us.d.unbindAll()
	t.Kernel = us.p.kernel.Spec()
	t.Panels = fmt.Sprintf("column panels streamed in bands of %d rows (%d), A kept transposed", us.rows, us.bands)
	if err := us.alloc(); err != nil {
		return t, err
	}
	ready()
	pt, err := us.run(c, a, b, claim)
	pt.fill(&t)
	return t, err
}
