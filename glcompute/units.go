package glcompute

import (
	"time"

	"gonum.org/v1/gonum/blas/blas32"

	"github.com/glmul/glmul/glcompute/internal/link"
	"github.com/glmul/glmul/glcompute/tuning"
)

// planUnit plans a device's part of a group product: the m×k by k×w
// product of one column panel of C (widest columns where two are claimed
// at once), streamed (planUnits) where streamed is set, else in
// panels whatever its size, A in about four row panels where M allows,
// so that the device's first column panel computes while the rest of A
// goes up.
func (d *Device) planUnit(m, k, w, widest int, o *MulOptions, streamed bool) (hostPlan, error) {
	hp, err := d.planHostPanels(m, k, w, o, true)
	if err != nil {
		return hp, err
	}
	if streamed {
		hp.unit = d.planUnits(&hp, m, k, w, widest)
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
	if hp.unit.kern.Name != "" {
		us, err := d.newUnitStream(hp.unit, &hp.o, a.Rows, a.Cols)
		if err != nil {
			return t, err
		}
		return us.mulUnits(c, a, b, claim, func() error { signal(); return nil })
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

// mulUnits is Device.mulUnits streamed: the pass's buffers made, then
// prepared called (a group's meeting, Mul's Measure hook), then the pass
// over the panels claim hands out.
func (us *unitStream) mulUnits(c, a, b blas32.General, claim link.Claim, prepared func() error) (t Timings, err error) {
	defer func() { us.release(err != nil) }()
	defer us.d.unbindAll()
	t.Kernel = us.p.kernel.Spec()
	t.Panels = us.unitLayout.String()
	if err := us.alloc(); err != nil {
		return t, err
	}
	if err := prepared(); err != nil {
		return t, err
	}
	pt, err := us.run(c, a, b, claim)
	pt.fill(&t)
	t.Splits, t.Dispatches = 1, us.dispatches
	return t, err
}

// planUnits lays out the streamed pass of products whose column panels
// are w columns (widest where two are taken at once), with the kernel
// that reads A transposed chosen for them: the device's panels share one
// transpose of A, so the default keeps its transposed kernel however
// narrow a panel is. It tries widest, then w; a zero layout where
// neither runs (planUnitStream) or the kernel reads A as it is.
func (d *Device) planUnits(hp *hostPlan, m, k, w, widest int) unitLayout {
	hk, err := d.chooseHost(hp.o.Kernel, m, k, max(w, tuning.TransposedAMinN))
	if err != nil || !hk.kern.TransposeA || d.fits(hk.kern) != nil {
		return unitLayout{}
	}
	for _, cols := range []int{widest, w} {
		if ul, ok := d.planUnitStream(hk.kern, &hp.o, m, k, cols); ok {
			return ul
		}
	}
	return unitLayout{}
}

// alonePanels is the column panels' width (and the widest claim: two
// panels) in which Mul cuts C of n columns for a streamed panel pass on
// one device: four panels, as a group of one device cuts it (devgroup),
// the first two taken at once where the pass holds their width.
func alonePanels(n int) (cols, widest int) {
	panels := min(4, max(1, n/aloneMinCols))
	cols = roundUp((n+panels-1)/panels, 4)
	if cols >= 256 {
		cols = roundUp(cols, 64) // whole tiles of the fast kernels
	}
	if (n+cols-1)/cols >= 4 {
		return cols, min(n, 2*cols)
	}
	return cols, cols
}

// aloneMinCols is the narrowest panel alonePanels cuts (tests lower it,
// so that small products run in several).
var aloneMinCols = 512

// mulUnitsAlone runs Mul's product in panels as one streamed panel pass
// (unitstream.go) on this device: C's column panels (alonePanels) in
// order, after any Measure hook (its stages those of a product in
// panels: Run runs the first band's kernel). idle is Stages.Idle's. On
// the device thread.
func (d *Device) mulUnitsAlone(c, a, b blas32.General, hp *hostPlan, idle time.Duration) (Timings, error) {
	d.clearErrors()
	us, err := d.newUnitStream(hp.unit, &hp.o, a.Rows, a.Cols)
	if err != nil {
		return Timings{}, err
	}
	n := b.Cols
	cols, _ := alonePanels(n)
	first := cols
	if us.widest >= 2*cols && (n+cols-1)/cols >= 4 {
		first = 2 * cols
	}
	us.report, us.total = hp.o.Progress, us.bands*(1+(n-first+cols-1)/cols)
	next := 0
	claim := func(widest int) (c0, w int, landed func(), fault error, ok bool) {
		if next >= n {
			return 0, 0, nil, nil, false
		}
		w = cols
		if next == 0 {
			w = first
		}
		c0, w = next, min(w, n-next)
		next += w
		return c0, w, nil, nil, true
	}
	k := us.kern
	prepared := func() error {
		if m := hp.o.Measure; m != nil {
			return m(&stages{first: us.runFirst, d: d, idle: idle})
		}
		return nil
	}
	t, err := us.mulUnits(c, a, b, claim, prepared)
	t.Groups = [2]int{(n + k.TileN - 1) / k.TileN, (a.Rows + k.TileM - 1) / k.TileM}
	return t, err
}
