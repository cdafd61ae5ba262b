// Package devgroup runs one product over several GPUs of a host: a Group
// of glcompute Devices, one context and thread each, shares the column
// panels of C among them as each becomes free, so that a faster device
// takes more, and reruns on the others the panels of a device that fails.
//
//	g, err := devgroup.Open(nil, nil) // one headless EGL context on every GPU
//	...
//	defer g.Release()
//	t, err := g.Mul(c, a, b, nil)
//
// A product streamed by panels of rows (package stream) runs over a
// group's devices with stream.MulDevices(g.Devices(), ...).
package devgroup

import (
	"context"
	"fmt"
	"sync"
	"time"

	"gonum.org/v1/gonum/blas/blas32"

	"github.com/glmul/glmul/glcompute"
	"github.com/glmul/glmul/glcompute/internal/egl"
	"github.com/glmul/glmul/glcompute/internal/link"
)

// Group is several Devices used as one. Its methods are safe for
// concurrent use; products on one Group run one at a time.
type Group struct {
	mu    sync.Mutex // one product at a time
	devs  []*glcompute.Device
	owned bool
	// minCols is the narrowest column panel handed out (0: minCols), and
	// fault, where set, is asked as a device takes a panel: an error
	// makes that device fail there, as a lost context would. Both for
	// tests.
	minCols int
	fault   func(device, panel int) error
	// panelsOnly makes every device run its panels as a panel product,
	// never streamed (tests and benchmarks compare the two).
	panelsOnly bool
}

// Devices lists the host's EGL devices (its GPUs, and Mesa's software
// device where installed) as "index: description" lines, numbered from 1
// as Open's list and glcompute.Options.Device take them, or nil where EGL
// cannot enumerate devices. Safe from any goroutine.
func Devices() []string {
	var out []string
	for _, dev := range egl.Devices() {
		out = append(out, dev.String())
	}
	return out
}

// Open opens a Device on each EGL device listed, by its 1-based index in
// Devices' list, with opts (whose Device is ignored; Backend "" or
// "auto" is headless EGL, and GLFW is refused with ErrNoContext); nil
// lists every hardware GPU EGL enumerates, or Mesa's software device
// where there is none. A platform whose EGL cannot enumerate devices, or
// a device that fails to open, gives an error matching
// glcompute.ErrNoContext (the devices opened before it are released).
// Release releases the Devices. It panics on an empty list, an index
// below 1, or Options that glcompute.Open panics on.
func Open(devices []int, opts *glcompute.Options) (*Group, error) {
	link.Options(opts)
	if devices == nil {
		var err error
		if devices, err = hardware(); err != nil {
			return nil, err
		}
	}
	if len(devices) == 0 {
		panic("devgroup: Open of no devices")
	}
	o := glcompute.Options{}
	if opts != nil {
		o = *opts
	}
	if o.Backend == glcompute.BackendGLFW {
		return nil, fmt.Errorf("%w: a group opens one headless EGL context a GPU; GLFW gives one context, on the display's GPU", glcompute.ErrNoContext)
	}
	if o.Backend == "auto" || o.Backend == "" {
		o.Backend = glcompute.BackendEGL
	}
	g := &Group{owned: true}
	for _, i := range devices {
		if i < 1 {
			panic("devgroup: Open: device indices count from 1")
		}
		o.Device = i
		d, err := glcompute.Open(&o)
		if err != nil {
			g.Release()
			return nil, fmt.Errorf("devgroup: EGL device %d: %w", i, err)
		}
		g.devs = append(g.devs, d)
	}
	return g, nil
}

// hardware lists the EGL devices Open(nil, ...) opens: the hardware
// ones, else the software ones.
func hardware() ([]int, error) {
	devs := egl.Devices()
	if len(devs) == 0 {
		return nil, fmt.Errorf("%w: EGL cannot enumerate devices here (EGL_EXT_device_enumeration), so a group cannot name one context a GPU", glcompute.ErrNoContext)
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

// New groups Devices made by glcompute.Open; Release of the Group leaves
// them open. It panics on none, on a borrowed Device (the group runs each
// device's work on its own thread) and on a Device listed twice.
func New(devs ...*glcompute.Device) *Group {
	if len(devs) == 0 {
		panic("devgroup: New of no devices")
	}
	seen := map[*glcompute.Device]bool{}
	for _, d := range devs {
		link.Member(d)
		if seen[d] {
			panic("devgroup: New: a Device listed twice")
		}
		seen[d] = true
	}
	return &Group{devs: devs}
}

// Devices returns the group's devices, in the order given.
func (g *Group) Devices() []*glcompute.Device { return g.devs }

// Release releases the Devices Open opened (none that New was given), at
// once, each on its own thread: a driver's teardown of a device takes
// what it takes, and the devices' need not add up. It is idempotent.
func (g *Group) Release() {
	if !g.owned {
		return
	}
	var wg sync.WaitGroup
	for _, d := range g.devs {
		wg.Go(d.Release)
	}
	wg.Wait()
}

// Timings are one Group.Mul's figures.
type Timings struct {
	// EndToEnd runs from the first upload to the last block of C in host
	// memory, over every device: as Device.Mul's, it leaves out compiling
	// the kernels and making the GPU buffers.
	EndToEnd time.Duration `json:"end_to_end_ns"`
	// Panels is how many column panels of PanelCols columns C was shared
	// out in (the last one what is left).
	Panels    int `json:"panels"`
	PanelCols int `json:"panel_cols"`
	// Devices has one share a device of the group, in its order.
	Devices []Share `json:"devices"`
}

// Share is one device's part of a Group.Mul.
type Share struct {
	// Panels is how many column panels of C the device computed, and Flop
	// their floating-point operations.
	Panels int     `json:"panels"`
	Flop   float64 `json:"flop"`
	// Timings is the device's pass: its kernel, panel plan and, in
	// EndToEnd, the time it worked (a device that failed: until then).
	Timings glcompute.Timings `json:"timings"`
	// Err is why the device stopped during the product, if it did: its
	// unfinished panels then ran on the others (Reruns of them).
	Err    error `json:"-"`
	Reruns int   `json:"reruns,omitempty"`
}

// Mul computes C = A·B over the group's devices: C's column panels are
// handed out one at a time to whichever device is free (a device's first
// claim two where there are enough), each device keeping A on its GPU
// (MulOptions.MaxGPUMemory permitting) and moving its panels' B and C
// beside its kernels (docs/LIBRARY.md, "Several GPUs"). A device that
// fails during the product has its unfinished panels rerun on the others
// (Share.Err says why); with none left, Mul returns the errors and C is
// incomplete. opts apply to each device; Progress counts column panels;
// SplitK above 1, Measure and Arrived are refused with
// glcompute.ErrUnsupported. Shapes, panics and empty products are
// Device.Mul's. Safe from any goroutine.
func (g *Group) Mul(c, a, b blas32.General, opts *glcompute.MulOptions) (Timings, error) {
	return g.mul(c, a, b, opts, nil)
}

// MulReady is Mul for inputs still being made (A, B, or C's first
// contents, on other goroutines): each device plans the product and
// makes its buffers, which a group's first product of a shape spends
// most of a second on at 32768 (docs/PERFORMANCE.md, "The whole process
// over two H200s"), and then ready is called, once, before any device
// reads A or B or writes C; EndToEnd starts when it returns. An empty
// product calls it before writing C's zeros. Otherwise as Mul.
func (g *Group) MulReady(c, a, b blas32.General, opts *glcompute.MulOptions, ready func()) (Timings, error) {
	return g.mul(c, a, b, opts, ready)
}

// mul is Mul, calling ready (nil: none) as MulReady says.
func (g *Group) mul(c, a, b blas32.General, opts *glcompute.MulOptions, ready func()) (Timings, error) {
	if link.Product(g.devs[0], c, a, b, opts) {
		if ready != nil {
			ready()
		}
		if c.Rows > 0 && c.Cols > 0 {
			for i := range c.Rows {
				clear(c.Data[i*c.Stride : i*c.Stride+c.Cols])
			}
		}
		return Timings{Devices: make([]Share, len(g.devs))}, nil
	}
	var o glcompute.MulOptions
	if opts != nil {
		o = *opts
	}
	if o.SplitK > 1 || o.Measure != nil || o.Arrived != nil {
		return Timings{}, fmt.Errorf("%w: a group shares out C's column panels: it splits no product along K (MulOptions.SplitK above 1) and takes no Measure hook or Arrived callback", glcompute.ErrUnsupported)
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	m, k, n := a.Rows, a.Cols, b.Cols
	r := g.newRun(n, o.Progress)
	plans := make([]any, len(g.devs))
	for i, d := range g.devs {
		var err error
		if plans[i], err = link.PlanUnit(d, &o, m, k, r.cols, r.widest(), !g.panelsOnly); err != nil {
			return Timings{}, fmt.Errorf("devgroup: device %d of the group: %w", i+1, err)
		}
	}
	t := Timings{Panels: r.panels, PanelCols: r.cols, Devices: make([]Share, len(g.devs))}
	live := make([]bool, len(g.devs))
	for i := range live {
		live[i] = true
	}
	var start time.Time
	for r.left() > 0 {
		before := r.left()
		ran := g.round(c, a, b, plans, r, &t, live, &start, ready)
		if err := stopped(o.Context); err != nil {
			return t, err
		}
		if !ran || r.left() > 0 && !anyLive(live) {
			return t, r.failure(t.Devices)
		}
		if r.left() == before && anyLive(live) && !r.retried() {
			panic("devgroup: a round computed no panel and none failed") // a scheduler bug, not a device's
		}
	}
	t.EndToEnd = time.Since(start)
	for i := range t.Devices {
		sh := &t.Devices[i]
		sh.Panels, sh.Reruns = r.done[i], r.reruns[i]
		sh.Flop = 2 * float64(m) * float64(k) * float64(r.doneCols[i])
	}
	return t, nil
}

func stopped(ctx context.Context) error {
	if ctx == nil {
		return nil
	}
	return ctx.Err()
}

// round runs the live devices on r's panels until none is left to take,
// each on its own thread, and reports whether any ran. A device that
// fails is no longer live and gives its unfinished panels back (a later
// round reruns them where the others had finished). The first time,
// once every device has made its buffers, the first device past that
// meeting calls inputs (nil: none) and sets *start, before any device
// starts its panels (stamped on the caller's goroutine, it could come
// after they had ended).
func (g *Group) round(c, a, b blas32.General, plans []any, r *run, t *Timings, live []bool, start *time.Time, inputs func()) (ran bool) {
	var wg, prepared sync.WaitGroup
	var stamp sync.Once
	for i, d := range g.devs {
		if !live[i] {
			continue
		}
		ran = true
		prepared.Add(1)
		ready := func() {
			prepared.Done()
			prepared.Wait()
			stamp.Do(func() { // the others wait here until it is done
				if start.IsZero() {
					if inputs != nil {
						inputs()
					}
					*start = time.Now() // the first round's buffers made, as Mul's EndToEnd excludes them
				}
			})
		}
		wg.Go(func() {
			dt, err := link.RunUnits(d, plans[i], c, a, b, r.claimer(i), ready)
			sh := &t.Devices[i]
			add(&sh.Timings, dt.(glcompute.Timings))
			if err != nil {
				live[i] = false
				sh.Err = err
				r.requeue(i)
			}
		})
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

// add accumulates a device's passes into t (a device runs one pass a
// round of Mul: more than one only after another device failed).
func add(t *glcompute.Timings, u glcompute.Timings) {
	if t.Kernel == "" {
		t.Layout = u.Layout
	}
	t.EndToEnd += u.EndToEnd
	t.Steps += u.Steps
	t.Streamed = t.Streamed || u.Streamed
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
