package glcompute

import (
	"cmp"
	"fmt"
	"strings"
	"sync"
	"time"

	"gonum.org/v1/gonum/blas/blas32"

	"github.com/glmul/glmul/glcompute/internal/egl"
)

// Group is several Devices used as one: Group.Mul shares a product's
// column panels of C among them as each becomes free, so a faster device
// takes more. Its methods are safe for concurrent use; products on one
// Group run one at a time.
type Group struct {
	mu    sync.Mutex // one product at a time
	devs  []*Device
	owned bool
	// minCols is the narrowest column panel handed out (0:
	// groupMinCols), and fault, where set, is asked as a device takes a
	// panel: an error makes that device fail there, as a lost context
	// would. Both for tests.
	minCols int
	fault   func(device, panel int) error
}

// OpenGroup opens a Device on each EGL device listed, by its 1-based
// index in EGLDevices' list, with opts (whose Device is ignored); nil
// lists every hardware GPU EGL enumerates, or Mesa's software device
// where there is none. A platform whose EGL cannot enumerate devices, or
// a device that fails to open, gives an error matching ErrNoContext (the
// devices opened before it are released). Release releases the Devices.
func OpenGroup(devices []int, opts *Options) (*Group, error) {
	opts.check()
	if devices == nil {
		var err error
		if devices, err = groupDevices(); err != nil {
			return nil, err
		}
	}
	if len(devices) == 0 {
		panic("glcompute: OpenGroup of no devices")
	}
	o := Options{}
	if opts != nil {
		o = *opts
	}
	if o.Backend == BackendGLFW {
		return nil, fmt.Errorf("%w: a Group opens one headless EGL context a GPU; GLFW gives one context, on the display's GPU", ErrNoContext)
	}
	g := &Group{owned: true}
	for _, i := range devices {
		if i < 1 {
			panic("glcompute: OpenGroup: device indices count from 1")
		}
		o.Device = i
		if o.Backend == BackendAuto || o.Backend == "" {
			o.Backend = BackendEGL
		}
		d, err := Open(&o)
		if err != nil {
			g.Release()
			return nil, fmt.Errorf("glcompute: device %d of the group: %w", i, err)
		}
		g.devs = append(g.devs, d)
	}
	return g, nil
}

// groupDevices lists the EGL devices OpenGroup(nil, ...) opens: the
// hardware ones, else the software ones.
func groupDevices() ([]int, error) {
	devs := egl.Devices()
	if len(devs) == 0 {
		return nil, fmt.Errorf("%w: EGL cannot enumerate devices here (EGL_EXT_device_enumeration), so a group cannot name one context a GPU", ErrNoContext)
	}
	var hw, sw []int
	for _, d := range devs {
		if d.Software {
			sw = append(sw, d.Index)
		} else {
			hw = append(hw, d.Index)
		}
	}
	if len(hw) > 0 {
		return hw, nil
	}
	return sw, nil
}

// NewGroup groups Devices made by Open; Release of the Group leaves
// them open. It panics on none, on a borrowed Device (the group runs each
// device's work on its own thread) and on a Device listed twice.
func NewGroup(devs ...*Device) *Group {
	if len(devs) == 0 {
		panic("glcompute: NewGroup of no devices")
	}
	seen := map[*Device]bool{}
	for _, d := range devs {
		d.mustBeOpen()
		if d.borrowed {
			panic("glcompute: NewGroup: a borrowed Device cannot be in a group")
		}
		if seen[d] {
			panic("glcompute: NewGroup: a Device listed twice")
		}
		seen[d] = true
	}
	return &Group{devs: devs}
}

// Devices returns the group's devices, in the order given.
func (g *Group) Devices() []*Device { return g.devs }

// Release releases the Devices OpenGroup opened (none that NewGroup was
// given). It is idempotent.
func (g *Group) Release() {
	if g.owned {
		for _, d := range g.devs {
			d.Release()
		}
	}
}

// GroupTimings are one Group.Mul's figures.
type GroupTimings struct {
	// EndToEnd runs from the first upload to the last block of C in host
	// memory, over every device: as Mul's, it leaves out compiling the
	// kernels and making the GPU buffers.
	EndToEnd time.Duration `json:"end_to_end_ns"`
	// Panels is how many column panels of PanelCols columns C was shared
	// out in (the last one what is left).
	Panels    int `json:"panels"`
	PanelCols int `json:"panel_cols"`
	// Devices has one share a device of the group, in its order.
	Devices []DeviceShare `json:"devices"`
}

// DeviceShare is one device's part of a Group.Mul.
type DeviceShare struct {
	// Panels is how many column panels of C the device computed, and Flop
	// their floating-point operations.
	Panels int     `json:"panels"`
	Flop   float64 `json:"flop"`
	// Timings is the device's pass: its kernel, panel plan and, in
	// EndToEnd, the time it worked (a device that failed: until then).
	Timings Timings `json:"timings"`
	// Err is why the device stopped during the product, if it did: its
	// unfinished panels then ran on the others (Reruns of them).
	Err    error `json:"-"`
	Reruns int   `json:"reruns,omitempty"`
}

// groupPanelsPer is how many column panels of C a group hands out per
// device: enough that a faster device takes more and the last panels
// finish together; few enough that each fills the GPU.
const groupPanelsPer = 4

// groupMinCols is the narrowest column panel a group hands out.
const groupMinCols = 512

// Mul computes C = A·B over the group's devices: C's column panels are
// handed out one at a time to whichever device is free, each device
// keeping A on its GPU (MulOptions.MaxGPUMemory permitting) and
// pipelining its panels' uploads, products and readbacks. A device that
// fails during the product has its unfinished panels rerun on the others
// (DeviceShare.Err says why); with none left, Mul returns the errors and
// C is incomplete. opts apply to each device; Progress counts column
// panels; SplitK above 1, Measure and Arrived are refused with
// ErrUnsupported. Shapes, panics and empty products are Mul's. Safe from
// any goroutine.
func (g *Group) Mul(c, a, b blas32.General, opts *MulOptions) (GroupTimings, error) {
	if checkProduct(dims32(c), dims32(a), dims32(b)) {
		g.devs[0].emptyProduct(opts)
		if c.Rows > 0 && c.Cols > 0 {
			for i := range c.Rows {
				clear(c.Data[i*c.Stride : i*c.Stride+c.Cols])
			}
		}
		return GroupTimings{Devices: make([]DeviceShare, len(g.devs))}, nil
	}
	var o MulOptions
	if opts != nil {
		o = *opts
	}
	o.check()
	if o.SplitK > 1 || o.Measure != nil || o.Arrived != nil {
		return GroupTimings{}, fmt.Errorf("%w: a Group's product runs in panels, which neither split K (MulOptions.SplitK) nor take a Measure hook or an Arrived callback", ErrUnsupported)
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	m, k, n := a.Rows, a.Cols, b.Cols
	gr := g.newGroupRun(n, o.Progress)
	plans := make([]hostPlan, len(g.devs))
	for i, d := range g.devs {
		var err error
		if plans[i], err = d.planUnit(m, k, gr.cols, &o); err != nil {
			return GroupTimings{}, fmt.Errorf("glcompute: device %d of the group: %w", i+1, err)
		}
	}
	t := GroupTimings{Panels: gr.panels, PanelCols: gr.cols, Devices: make([]DeviceShare, len(g.devs))}
	live := make([]bool, len(g.devs))
	for i := range live {
		live[i] = true
	}
	var start time.Time
	for gr.left() > 0 {
		before := gr.left()
		ran := g.round(c, a, b, plans, gr, &t, live, &start)
		if err := o.stopped(); err != nil {
			return t, err
		}
		if !ran || gr.left() > 0 && !anyLive(live) {
			return t, gr.failure(t.Devices)
		}
		if gr.left() == before && anyLive(live) && !gr.retried() {
			panic("glcompute: a group's round computed no panel and none failed") // a scheduler bug, not a device's
		}
	}
	t.EndToEnd = time.Since(start)
	for i := range t.Devices {
		sh := &t.Devices[i]
		sh.Panels, sh.Reruns = gr.done[i], gr.reruns[i]
		sh.Flop = 2 * float64(m) * float64(k) * float64(gr.doneCols[i])
	}
	return t, nil
}

// round runs the live devices on gr's panels until none is left to take,
// each on its own thread, and reports whether any ran. A device that
// fails is no longer live and gives its unfinished panels back (a later
// round reruns them where the others had finished). *start is set, the
// first time, once every device has made its buffers.
func (g *Group) round(c, a, b blas32.General, plans []hostPlan, gr *groupRun, t *GroupTimings, live []bool, start *time.Time) (ran bool) {
	var wg, prepared sync.WaitGroup
	for i, d := range g.devs {
		if !live[i] {
			continue
		}
		ran = true
		prepared.Add(1)
		ready := func() { prepared.Done(); prepared.Wait() }
		wg.Go(func() {
			var dt Timings
			var err error
			d.call(func() { dt, err = d.mulUnits(c, a, b, &plans[i], gr, i, ready) })
			d.worked()
			sh := &t.Devices[i]
			sh.Timings.add(dt)
			if err != nil {
				live[i] = false
				sh.Err = err
				gr.requeue(i)
			}
		})
	}
	prepared.Wait()
	if start.IsZero() {
		*start = time.Now() // the first round's buffers made, as Mul's EndToEnd excludes them
	}
	wg.Wait()
	return ran
}

func anyLive(live []bool) bool {
	for _, l := range live {
		if l {
			return true
		}
	}
	return false
}

// add accumulates a device's passes (a device runs one pass a round of
// Group.Mul: more than one only after another device failed).
func (t *Timings) add(u Timings) {
	if t.Kernel == "" {
		t.Layout = u.Layout
	}
	t.EndToEnd += u.EndToEnd
	t.Steps += u.Steps
	t.Upload += u.Upload
	t.Readback += u.Readback
	t.UploadBytes += u.UploadBytes
	t.ReadbackBytes += u.ReadbackBytes
	if len(u.Compute) > 0 {
		if len(t.Compute) == 0 {
			t.Compute = []time.Duration{0}
		}
		t.Compute[0] += u.Compute[0]
	}
}

// groupRun is one Group.Mul's column panels: which are handed out, which
// are done and by whom, and the panels a failed device gives back.
type groupRun struct {
	mu       sync.Mutex
	n        int // C's columns
	cols     int // a panel's
	panels   int
	next     int   // the next panel never handed out
	retry    []int // panels given back by a failed device
	claimed  [][]int
	landed   []bool
	left_    int
	done     []int // panels done, by device
	doneCols []int // their columns
	reruns   []int
	errs     []error
	progress func(done, total int)
	fault    func(device, panel int) error
}

// newGroupRun cuts C's n columns into panels for g's devices.
func (g *Group) newGroupRun(n int, progress func(done, total int)) *groupRun {
	devices := len(g.devs)
	panels := min(devices*groupPanelsPer, max(1, n/cmp.Or(g.minCols, groupMinCols)))
	cols := roundUp((n+panels-1)/panels, 4)
	if cols >= 256 {
		cols = roundUp(cols, 64) // whole tiles of the fast kernels
	}
	panels = (n + cols - 1) / cols
	return &groupRun{n: n, cols: cols, panels: panels, claimed: make([][]int, devices), landed: make([]bool, panels),
		left_: panels, done: make([]int, devices), doneCols: make([]int, devices), reruns: make([]int, devices),
		errs: make([]error, devices), progress: progress, fault: g.fault}
}

// claim hands device dev its next panel: one given back first, else the
// next never handed out; false when none is left.
func (gr *groupRun) claim(dev int) (p int, rerun bool, ok bool) {
	gr.mu.Lock()
	defer gr.mu.Unlock()
	switch {
	case len(gr.retry) > 0:
		p, gr.retry = gr.retry[0], gr.retry[1:]
		rerun = true
	case gr.next < gr.panels:
		p = gr.next
		gr.next++
	default:
		return 0, false, false
	}
	gr.claimed[dev] = append(gr.claimed[dev], p)
	return p, rerun, true
}

// land records panel p done by device dev.
func (gr *groupRun) land(dev, p int, rerun bool) {
	gr.mu.Lock()
	defer gr.mu.Unlock()
	gr.landed[p] = true
	gr.left_--
	gr.done[dev]++
	gr.doneCols[dev] += min(gr.cols, gr.n-p*gr.cols)
	if rerun {
		gr.reruns[dev]++
	}
	if gr.progress != nil {
		gr.progress(gr.panels-gr.left_, gr.panels)
	}
}

// requeue gives back the panels device dev took and did not finish.
func (gr *groupRun) requeue(dev int) {
	gr.mu.Lock()
	defer gr.mu.Unlock()
	for _, p := range gr.claimed[dev] {
		if !gr.landed[p] {
			gr.retry = append(gr.retry, p)
		}
	}
	gr.claimed[dev] = nil
}

// retried reports whether panels wait to be rerun.
func (gr *groupRun) retried() bool {
	gr.mu.Lock()
	defer gr.mu.Unlock()
	return len(gr.retry) > 0
}

// left is how many panels are not done.
func (gr *groupRun) left() int {
	gr.mu.Lock()
	defer gr.mu.Unlock()
	return gr.left_
}

// failure is the error of a product every device failed.
func (gr *groupRun) failure(shares []DeviceShare) error {
	var errs []string
	var first error
	for i, sh := range shares {
		if sh.Err != nil {
			errs = append(errs, fmt.Sprintf("device %d: %v", i+1, sh.Err))
			if first == nil {
				first = sh.Err
			}
		}
	}
	return fmt.Errorf("glcompute: every device of the group failed, %d of %d column panels of C not computed (%s): %w",
		gr.left(), gr.panels, strings.Join(errs, "; "), first)
}

// planUnit plans a device's part of a Group product: the m×k by k×w
// product of one column panel of C, in panels whatever its size, A in
// about four row panels where M allows, so that the device's first
// column panel computes while the rest of A goes up.
func (d *Device) planUnit(m, k, w int, o *MulOptions) (hostPlan, error) {
	hp, err := d.planHostPanels(m, k, w, o, true)
	if err != nil {
		return hp, err
	}
	pl := &hp.panels
	tile := hp.kernels.kern.TileM
	if rows := roundUp((m+3)/4, tile); pl.RowsPer > rows && rows >= 256 {
		pl.RowsPer = rows
	}
	return hp, nil
}

// mulUnits runs on device dev's thread its part of a Group product: the
// column panels it takes from gr, one after another in one pipelined
// pass, until none is left or the device fails. ready is called once the
// device's buffers are made (or it failed before): it returns when every
// device's are, so that the group's EndToEnd, like Mul's, leaves out
// making them.
func (d *Device) mulUnits(c, a, b blas32.General, hp *hostPlan, gr *groupRun, dev int, ready func()) (t Timings, err error) {
	readied := false
	signal := func() { // once, after the buffers are made or on the way out
		if !readied {
			readied = true
			ready()
		}
	}
	defer signal()
	d.clearErrors()
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
		p, rerun, ok := gr.claim(dev)
		if !ok {
			return nil
		}
		c0 := p * gr.cols
		w := min(gr.cols, gr.n-c0)
		steps := pp.steps(blockView(c, 0, c.Rows, c0, w), a, blockView(b, 0, b.Rows, c0, w))
		steps[len(steps)-1].landed = func() { gr.land(dev, p, rerun) }
		if gr.fault != nil {
			if err := gr.fault(dev, p); err != nil {
				steps[0].run = func() error { return err }
			}
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
