package stream

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"time"

	"gonum.org/v1/gonum/blas"
	"gonum.org/v1/gonum/blas/blas32"

	"github.com/glmul/glmul/glcompute"
	"github.com/glmul/glmul/glcompute/internal/errs"
	"github.com/glmul/glmul/glcompute/internal/link"
	"github.com/glmul/glmul/glcompute/tuner"
)

// Mul computes C = A·B on d for matrices that need not fit in memory: A
// is read by panels of rows from a, B whole from b, and C's rows are
// written in order to c (on Mul's goroutine), so that memory holds B and
// a few panels (Result.HostBytes). Reading, the GPU, the check
// (Options.Check) and writing overlap, each on a goroutine of its own. An
// error from any stage stops the others (c's rows are then incomplete);
// d's Release during Mul stops it with glcompute.ErrReleased. Panels of B
// and of K, empty products: docs/LIBRARY.md. Safe from any goroutine.
//
// It panics on a borrowed Device (it needs Open's), a released one or one
// not made by Open, if A's columns differ from B's rows, if a dimension or
// Options.MaxBinding is negative, or if Options.Check64 (Mul64's) is set.
func Mul(d *glcompute.Device, c RowWriter, a, b RowReader, o *Options) (Result, error) {
	return mulOn([]*glcompute.Device{d}, "Mul", c, a, b, o)
}

// mulOn is Mul over devs, one or more (MulDevices); who names the caller
// in panics.
func mulOn(devs []*glcompute.Device, who string, c RowWriter, a, b RowReader, o *Options) (Result, error) {
	for _, d := range devs {
		link.Own(d, "stream."+who+" needs a Device that owns its context (Open): its GPU stage runs on a goroutine of its own, where a borrowed context is not current")
	}
	o = checkArgs(who, a.Rows(), a.Cols(), b.Rows(), b.Cols(), o)
	if o.Check64 != nil {
		panic("stream: " + who + ": Options.Check64 checks Mul64's float64 panels: set Check")
	}
	p := newPlan(a.Rows(), a.Cols(), b.Cols(), o.PanelBytes)
	p.held = heldPanels(len(devs))
	if !p.empty() {
		binding := link.Binding(devs[0], o.MaxBinding)
		for _, d := range devs[1:] {
			binding = min(binding, link.Binding(d, o.MaxBinding))
		}
		if err := p.fitBinding(binding); err != nil {
			return Result{}, err
		}
		// The kernel, on a panel's shape, before anything is read.
		for _, d := range devs {
			if _, err := d.Plan(p.rows, p.kper, p.cols, &glcompute.MulOptions{Kernel: o.Kernel, MaxBinding: o.MaxBinding}); err != nil {
				return Result{}, err
			}
		}
	}
	return runPlan(p, o, func(ctx context.Context, r *Result) error {
		if p.empty() {
			return zeroStream[blas32.General](ctx, c, p, o.Progress, r)
		}
		r.Devices = make([]DeviceShare, len(devs))
		for i, d := range devs {
			r.Devices[i].Kernel = o.Kernel
			if o.Kernel == "" || o.Kernel == "fast" {
				r.Devices[i].Kernel = tuner.Of(d).KernelFor(p.rows, p.kper, p.cols)
			}
		}
		r.Kernel = r.Devices[0].Kernel
		var check func(b blas32.General) func(a, c blas32.General, r0 int)
		if o.Check != nil {
			check = func(b blas32.General) func(a, c blas32.General, r0 int) { return o.Check(b) }
		}
		e := ends[blas32.General]{a: a, c: c, check: check, progress: o.Progress}
		load := func(ctx context.Context) (blas32.General, error) { return readB(ctx, b, p, r) }
		return run(ctx, devs, p, e, r, load, func(_ context.Context, i int) (gpuStage[blas32.General], error) {
			g, err := newStreamGPU(devs[i], p, o.Kernel)
			if err != nil {
				return nil, err // not a nil *streamGPU in an interface
			}
			return g, nil
		})
	})
}

// checkArgs panics where Mul or Mul64 (who) is given an m×k A and a k2×n
// B that cannot be multiplied, or negative Options; it returns o, the
// zero Options where nil.
func checkArgs(who string, m, k, k2, n int, o *Options) *Options {
	if m < 0 || k < 0 || k2 < 0 || n < 0 {
		panic(fmt.Sprintf("stream: %s: A is %d×%d and B %d×%d: no dimension may be negative", who, m, k, k2, n))
	}
	if k != k2 {
		panic(fmt.Sprintf("stream: %s: A is %d×%d and B %d×%d: A's columns must equal B's rows", who, m, k, k2, n))
	}
	if o == nil {
		o = &Options{}
	}
	if o.MaxBinding < 0 {
		panic("stream: Options.MaxBinding is negative")
	}
	return o
}

// runPlan runs p's product, f, with o's Context (Background where nil),
// once its host memory is within o.HostLimit (else ErrHostMemory's error,
// before anything is read), and returns its Result: its shape and panels,
// what f set, its wall time and host memory.
func runPlan(p plan, o *Options, f func(ctx context.Context, r *Result) error) (Result, error) {
	if need := p.hostBytes(); o.HostLimit > 0 && need > o.HostLimit {
		return Result{}, fmt.Errorf("stream: the %d×%d by %d×%d product needs %.1f GiB of host memory for B and its panels of A and C, over the limit of %.1f GiB: %w",
			p.m, p.k, p.k, p.n, float64(need)/(1<<30), float64(o.HostLimit)/(1<<30), ErrHostMemory)
	}
	r := Result{M: p.m, K: p.k, N: p.n, Panels: p.panels, PanelRows: p.rows, BPanels: p.bpanels, KPanels: p.kpanels}
	ctx := o.Context
	if ctx == nil {
		ctx = context.Background()
	}
	start := time.Now()
	err := f(ctx, &r)
	r.Wall = time.Since(start)
	r.HostBytes = p.hostBytes()
	return r, err
}

// hostPanels is how many panels of host memory circulate: one being read,
// one on the GPU, one being checked or written. More let the stages run
// further apart, at a panel of memory each.
const hostPanels = 3

// streamGPU is Mul's GPU stage on one device: B, in its K and column
// panels (b[q][j]), and two panels of A and C that the panels it takes
// use in turn (slot turn the next one's, the other prev's), so that one
// panel's C is read back while the next one's product runs. The turn is
// the device's own, not the panel's index: a group's device takes any
// panels, 3 then 5, say. A slot's A is a matrix for each K panel
// (a[s][q]), its C one for each column panel of B (c[s][j]).
type streamGPU struct {
	dev    *glcompute.Device
	p      plan
	kernel string // Options.Kernel
	b      [][]*glcompute.Matrix
	a, c   [2][]*glcompute.Matrix
	prev   *panel[blas32.General] // the panel whose product runs, in slot 1-turn
	turn   int
}

// newStreamGPU allocates the product's matrices, before anything is
// read: a product the driver has not the memory for fails at once.
func newStreamGPU(dev *glcompute.Device, p plan, kernel string) (_ *streamGPU, err error) {
	g := &streamGPU{dev: dev, p: p, kernel: kernel, b: make([][]*glcompute.Matrix, p.kpanels)}
	defer func() {
		if err != nil {
			g.release() // what was made before the failure
			err = fmt.Errorf("stream: the %d×%d by %d×%d product needs %s of GPU memory for B and two panels of A and C: %w",
				p.m, p.k, p.k, p.n, errs.FormatBytes(float64(p.gpuBytes())), err)
		}
	}()
	matrices := func(ms *[]*glcompute.Matrix, n int, shape func(i int) (rows, cols int)) error {
		for i := range n {
			m, err := dev.NewMatrix(shape(i))
			if err != nil {
				return err
			}
			*ms = append(*ms, m)
		}
		return nil
	}
	bcols := func(j int) (int, int) { _, cols := p.colsOf(j); return p.rows, cols }
	for q := range p.kpanels {
		_, kc := p.kOf(q)
		if err := matrices(&g.b[q], p.bpanels, func(j int) (int, int) { _, cols := bcols(j); return kc, cols }); err != nil {
			return nil, err
		}
	}
	for s := 0; s < min(2, p.panels); s++ {
		if err := matrices(&g.a[s], p.kpanels, func(q int) (int, int) { _, kc := p.kOf(q); return p.rows, kc }); err != nil {
			return nil, err
		}
		if err := matrices(&g.c[s], p.bpanels, bcols); err != nil {
			return nil, err
		}
	}
	return g, nil
}

// gpuBytes is the GPU memory of a streamed product: B and two panels of
// A and C.
func (p plan) gpuBytes() int64 {
	return 4 * (int64(p.kp)*int64(p.np) + int64(min(2, p.panels))*int64(p.rows)*int64(p.kp+p.np))
}

// uploadB uploads B (hb: readB's, padded) into its panels.
func (g *streamGPU) uploadB(hb blas32.General) error {
	for q, row := range g.b {
		k0, kc := g.p.kOf(q)
		for j, b := range row {
			c0, cols := g.p.colsOf(j)
			if err := b.Upload(blockView(hb, k0, kc, c0, cols)); err != nil {
				return err
			}
		}
	}
	return nil
}

// release frees the GPU matrices.
func (g *streamGPU) release() {
	for _, m := range slices.Concat(slices.Concat(g.b...), g.a[0], g.a[1], g.c[0], g.c[1]) {
		if m != nil {
			m.Release()
		}
	}
}

// slot returns slot s's matrices of A and C for panel i: the slot's own,
// or views of their first rows for a last panel that is shorter; release
// frees the views.
func (g *streamGPU) slot(s, i int) (a, c []*glcompute.Matrix, release func(), err error) {
	rows := g.p.rowsOf(i)
	if rows == g.p.rows {
		return g.a[s], g.c[s], func() {}, nil
	}
	var views []*glcompute.Matrix
	release = func() {
		for _, v := range views {
			v.Release()
		}
	}
	for _, m := range slices.Concat(g.a[s], g.c[s]) {
		v, err := g.dev.WrapBuffer(m.Buffer(), 0, rows, m.Cols, m.Cols)
		if err != nil {
			release()
			return nil, nil, nil, err
		}
		views = append(views, v)
	}
	return views[:len(g.a[s])], views[len(g.a[s]):], release, nil
}

// step multiplies panel pn (nil: none, the last one was) and reads back
// the panel before it, whose product ran meanwhile, which it returns (nil
// for the first).
func (g *streamGPU) step(pn *panel[blas32.General]) (*panel[blas32.General], error) {
	if pn != nil {
		if err := g.multiply(pn, g.turn); err != nil {
			return nil, err
		}
	}
	done := g.prev
	if done != nil {
		if err := g.readBack(done, 1-g.turn); err != nil {
			return nil, err
		}
	}
	g.prev = pn
	if pn != nil {
		g.turn = 1 - g.turn
	}
	return done, nil
}

// multiply uploads panel pn's rows of A into slot s, a K panel at a time, and queues
// their products by B's column panels: the first K panel's with the
// kernel, the later ones added to it (Gemm's β = 1).
func (g *streamGPU) multiply(pn *panel[blas32.General], s int) error {
	return g.on(pn, s, func(a, c []*glcompute.Matrix) error {
		for q, aq := range a {
			k0, kc := g.p.kOf(q)
			if err := aq.Upload(blockView(pn.a, 0, aq.Rows, k0, kc)); err != nil {
				return errPanel("uploading A for", g.p, pn.i, err)
			}
		}
		for j, cj := range c {
			for q, aq := range a {
				var err error
				if q == 0 {
					err = link.MulKernel(cj, aq, g.b[q][j], g.kernel)
				} else {
					err = cj.Gemm(blas.NoTrans, blas.NoTrans, 1, aq, g.b[q][j], 1)
				}
				if err != nil {
					return errPanel("computing", g.p, pn.i, err)
				}
			}
		}
		return nil
	})
}

// readBack copies panel pn's C from slot s into its host memory, a
// column panel at a time.
func (g *streamGPU) readBack(pn *panel[blas32.General], s int) error {
	return g.on(pn, s, func(_, c []*glcompute.Matrix) error {
		for j, cj := range c {
			c0, cols := g.p.colsOf(j)
			if err := cj.Download(blockView(pn.c, 0, cj.Rows, c0, cols)); err != nil {
				return errPanel("reading back", g.p, pn.i, err)
			}
		}
		return nil
	})
}

// on calls f with panel pn's matrices of A and C in slot s.
func (g *streamGPU) on(pn *panel[blas32.General], s int, f func(a, c []*glcompute.Matrix) error) error {
	a, c, release, err := g.slot(s, pn.i)
	if err != nil {
		return err
	}
	defer release()
	return f(a, c)
}

// rowReader, rowWriter and gpuStage are what the stages ask of a product
// of matrix type M: Mul's RowReader, RowWriter and streamGPU; Mul64's
// RowReader64, RowWriter64 and gpu64.
type rowReader[M any] interface {
	ReadRows(dst M, r0 int) error
}

type rowWriter[M any] interface {
	WriteRows(m M) error
}

// gpuStage is the GPU's part of a streamed product on one device: its
// B, and the product of each panel. run calls uploadB on a goroutine of
// its own, step on the device's GPU stage's, release once that has
// stopped (or where it never started).
type gpuStage[M matrix] interface {
	// uploadB readies B (as run's load returned it) for the products,
	// while the check is prepared.
	uploadB(b M) error
	// step takes panel pn (nil: none now, or the last was taken) and
	// returns the panel whose C is now in host memory (nil: none yet):
	// Mul's the one before pn, read back while pn's product runs; Mul64's
	// pn itself.
	step(pn *panel[M]) (*panel[M], error)
	release()
}

// ends is what a streamed product reads, writes and checks: A, C, the
// check (nil: none) and the progress (nil: none) of Options.
type ends[M matrix] struct {
	a        rowReader[M]
	c        rowWriter[M]
	check    func(b M) func(a, c M, r0 int)
	progress func(done, total int)
}

// stages is one streamed product's pipeline: its channels and the first
// error, over panels of matrix type M. Panels go from free to
// read, computed (back), checked (ready) and back to free once written.
type stages[M matrix] struct {
	p      plan
	ctx    context.Context
	cancel context.CancelCauseFunc
	free   chan *panel[M] // panels to read into
	read   chan *panel[M] // A read: to the GPU
	back   chan *panel[M] // C computed: to the check
	ready  chan *panel[M] // checked: to the writer
}

// take receives from ch, or reports false once the product stopped.
func (st *stages[M]) take(ch chan *panel[M]) (*panel[M], bool) {
	select {
	case pn, ok := <-ch:
		return pn, ok
	case <-st.ctx.Done():
		return nil, false
	}
}

// give sends pn on ch, or reports false once the product stopped.
func (st *stages[M]) give(ch chan *panel[M], pn *panel[M]) bool {
	select {
	case ch <- pn:
		return true
	case <-st.ctx.Done():
		return false
	}
}

// run runs the four stages, once each device's GPU stage is made
// (holdGPUs): the reader starts at once, beside B's load (load: B in host
// memory, padded as the plan says); B's upload to each device beside the
// check's set-up; then the GPU stages (one device's, or a group's: gpus)
// and the check on goroutines of their own, the writer on the caller's.
// Each stage adds its busy time to r's.
func run[M matrix](ctx context.Context, devs []*glcompute.Device, p plan, e ends[M], r *Result, load func(ctx context.Context) (M, error), newGPU func(ctx context.Context, dev int) (gpuStage[M], error)) error {
	st := &stages[M]{p: p, free: make(chan *panel[M], p.held), read: make(chan *panel[M], 1), back: make(chan *panel[M], 1), ready: make(chan *panel[M], 1)}
	st.ctx, st.cancel = context.WithCancelCause(ctx)
	for range min(p.held, p.panels) {
		st.free <- newPanel[M](p)
	}
	var wg sync.WaitGroup
	// On every way out, a panic included: stop the stages, then wait for
	// them.
	defer func() {
		st.cancel(nil)
		wg.Wait()
	}()
	gs, err := holdGPUs(st.ctx, devs, st.cancel, newGPU)
	if err != nil {
		st.cancel(err)
		return err
	}
	gpuStage := false
	defer func() {
		if !gpuStage { // else the stage releases them
			gs.release()
		}
	}()
	wg.Go(func() { st.reader(e.a, &r.Read) })
	b, err := load(st.ctx)
	if err != nil {
		st.cancel(err)
		return err
	}
	prepared := make(chan func(a, c M, r0 int), 1) // the check's set-up, beside B's upload
	wg.Go(func() {                                 // waited for on every way out, as the stages are
		var check func(a, c M, r0 int)
		if e.check != nil {
			check = e.check(rowsView(b, p.k, p.n))
		}
		prepared <- check
	})
	if err := gs.uploadB(b, r); err != nil {
		st.cancel(err)
		return err
	}
	gpuStage = true
	wg.Go(func() { st.gpus(gs, r) })
	wg.Go(func() {
		if check := <-prepared; st.ctx.Err() == nil {
			st.checker(check, &r.Check)
		}
	})
	st.writer(e.c, e.progress, &r.Write)
	wg.Wait()
	if st.ctx.Err() != nil {
		return context.Cause(st.ctx)
	}
	return nil
}

// holdGPU makes one device's GPU stage (newGPU, given the product's ctx),
// before anything is read (a product the driver has not the memory for
// fails at once), and from then until release releases it the product
// holds the Device: Release stops it with cancel and waits for it
// (link.Hold).
func holdGPU[M matrix](ctx context.Context, dev *glcompute.Device, cancel context.CancelCauseFunc, newGPU func(ctx context.Context) (gpuStage[M], error)) (g gpuStage[M], release func(), err error) {
	done, err := link.Hold(dev, cancel)
	if err != nil {
		return nil, nil, err
	}
	if g, err = newGPU(ctx); err != nil {
		done()
		return nil, nil, err
	}
	return g, func() {
		g.release()
		done()
	}, nil
}

// timeInto adds f's wall time to *busy and returns f's error.
func timeInto(busy *time.Duration, f func() error) error {
	t0 := time.Now()
	err := f()
	*busy += time.Since(t0)
	return err
}

// reader reads A's panels in order.
func (st *stages[M]) reader(a rowReader[M], busy *time.Duration) {
	defer close(st.read)
	for i := range st.p.panels {
		pn, ok := st.take(st.free)
		if !ok {
			return
		}
		pn.i, pn.rerun = i, false
		if err := timeInto(busy, func() error { return a.ReadRows(rowsView(pn.a, st.p.rowsOf(i), st.p.k), i*st.p.rows) }); err != nil {
			st.cancel(err)
			return
		}
		if !st.give(st.read, pn) {
			return
		}
	}
}

// gpu hands each panel read to one device's GPU stage (step), and each
// panel it returns, computed, to the check, counting them and its busy
// time in sh.
func (st *stages[M]) gpu(g gpuStage[M], sh *DeviceShare) {
	for {
		pn, ok := st.take(st.read)
		if !ok && st.ctx.Err() != nil {
			return
		}
		var done *panel[M]
		if err := timeInto(&sh.GPU, func() (err error) { done, err = st.step(g, 0, pn); return err }); err != nil {
			st.cancel(err)
			return
		}
		if done != nil {
			sh.Panels++
			if !st.give(st.back, done) {
				return
			}
		}
		if !ok {
			return
		}
	}
}

// checker checks each panel computed, in the panels' order (nil check:
// passes it on), whatever order they come in (a group's devices finish
// them out of order). A check that stopped the product (cancelling
// Options.Context) keeps its panel from the writer.
func (st *stages[M]) checker(check func(a, c M, r0 int), busy *time.Duration) {
	defer close(st.ready)
	early := map[int]*panel[M]{} // computed before a panel ahead of them
	for next := 0; ; {
		pn, ok := st.take(st.back)
		if !ok {
			return
		}
		early[pn.i] = pn
		for pn := early[next]; pn != nil; pn = early[next] {
			delete(early, next)
			next++
			if rows := st.p.rowsOf(pn.i); check != nil {
				timeInto(busy, func() error {
					check(rowsView(pn.a, rows, st.p.k), rowsView(pn.c, rows, st.p.n), pn.i*st.p.rows)
					return nil
				})
				if st.ctx.Err() != nil {
					return
				}
			}
			if !st.give(st.ready, pn) {
				return
			}
		}
	}
}

// writer writes each checked panel of C, in order, and frees its memory
// for the reader.
func (st *stages[M]) writer(c rowWriter[M], progress func(done, total int), busy *time.Duration) {
	for done := 1; ; done++ {
		pn, ok := st.take(st.ready)
		if !ok {
			return
		}
		if err := timeInto(busy, func() error { return c.WriteRows(rowsView(pn.c, st.p.rowsOf(pn.i), st.p.n)) }); err != nil {
			st.cancel(err)
			return
		}
		if progress != nil {
			progress(done, st.p.panels)
		}
		if !st.give(st.free, pn) {
			return
		}
	}
}
