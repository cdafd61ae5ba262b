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
// Options.MaxBinding is negative.
func Mul(d *glcompute.Device, c RowWriter, a, b RowReader, o *Options) (Result, error) {
	link.Own(d, "stream.Mul needs a Device that owns its context (Open): its GPU stage runs on a goroutine of its own, where a borrowed context is not current")
	if a.Rows() < 0 || a.Cols() < 0 || b.Rows() < 0 || b.Cols() < 0 {
		panic(fmt.Sprintf("stream: Mul: A is %d×%d and B %d×%d: no dimension may be negative", a.Rows(), a.Cols(), b.Rows(), b.Cols()))
	}
	if a.Cols() != b.Rows() {
		panic(fmt.Sprintf("stream: Mul: A is %d×%d and B %d×%d: A's columns must equal B's rows", a.Rows(), a.Cols(), b.Rows(), b.Cols()))
	}
	if o == nil {
		o = &Options{}
	}
	if o.MaxBinding < 0 {
		panic("stream: Options.MaxBinding is negative")
	}
	p := newPlan(a.Rows(), a.Cols(), b.Cols(), o.PanelBytes)
	if !p.empty() {
		if err := p.fitBinding(link.Binding(d, o.MaxBinding)); err != nil {
			return Result{}, err
		}
		// The kernel, on a panel's shape, before anything is read.
		if _, err := d.Plan(p.rows, p.kper, p.cols, &glcompute.MulOptions{Kernel: o.Kernel, MaxBinding: o.MaxBinding}); err != nil {
			return Result{}, err
		}
	}
	if need := p.hostBytes(); o.HostLimit > 0 && need > o.HostLimit {
		return Result{}, fmt.Errorf("stream: the %d×%d by %d×%d product needs %.1f GiB of host memory for B and its panels of A and C, over the limit of %.1f GiB: %w",
			p.m, p.k, p.k, p.n, float64(need)/(1<<30), float64(o.HostLimit)/(1<<30), ErrHostMemory)
	}
	r := Result{M: p.m, K: p.k, N: p.n, Panels: p.panels, PanelRows: p.rows, BPanels: p.bpanels, KPanels: p.kpanels, Kernel: o.Kernel}
	ctx := o.Context
	if ctx == nil {
		ctx = context.Background()
	}
	start := time.Now()
	var err error
	if p.empty() {
		r.Kernel = "" // none runs
		err = zeroStream(ctx, c, p, o.Progress, &r)
	} else {
		if o.Kernel == "" || o.Kernel == "fast" {
			r.Kernel = tuner.Of(d).KernelFor(p.rows, p.kper, p.cols)
		}
		err = run(ctx, d, p, a, b, c, o, &r)
	}
	r.Wall = time.Since(start)
	r.HostBytes = p.hostBytes()
	return r, err
}

// hostPanels is how many panels of host memory circulate: one being read,
// one on the GPU, one being checked or written. More let the stages run
// further apart, at a panel of memory each.
const hostPanels = 3

// streamGPU is the GPU side of a streamed product: B, in its K and
// column panels (b[q][j]), and two panels of A and C that panels take in
// turn (panel i in slot i%2), so that one panel's C is read back while
// the next one's product runs. A slot's A is a matrix for each K panel
// (a[s][q]), its C one for each column panel of B (c[s][j]).
type streamGPU struct {
	dev    *glcompute.Device
	p      plan
	kernel string // Options.Kernel
	b      [][]*glcompute.Matrix
	a, c   [2][]*glcompute.Matrix
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

// uploadB uploads B (hb, padded) into its panels.
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

// slot returns panel i's matrices of A and C: the slot's own, or views of
// their first rows for a last panel that is shorter; release frees the
// views.
func (g *streamGPU) slot(i int) (a, c []*glcompute.Matrix, release func(), err error) {
	s, rows := i%2, g.p.rowsOf(i)
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

// multiply uploads panel pn's rows of A, a K panel at a time, and queues
// their products by B's column panels: the first K panel's with the
// kernel, the later ones added to it (Gemm's β = 1).
func (g *streamGPU) multiply(pn *streamPanel) error {
	return g.on(pn, func(a, c []*glcompute.Matrix) error {
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

// readBack copies panel pn's C into its host memory, a column panel at a
// time.
func (g *streamGPU) readBack(pn *streamPanel) error {
	return g.on(pn, func(_, c []*glcompute.Matrix) error {
		for j, cj := range c {
			c0, cols := g.p.colsOf(j)
			if err := cj.Download(blockView(pn.c, 0, cj.Rows, c0, cols)); err != nil {
				return errPanel("reading back", g.p, pn.i, err)
			}
		}
		return nil
	})
}

// on calls f with panel pn's matrices of A and C (slot).
func (g *streamGPU) on(pn *streamPanel, f func(a, c []*glcompute.Matrix) error) error {
	a, c, release, err := g.slot(pn.i)
	if err != nil {
		return err
	}
	defer release()
	return f(a, c)
}

// streamStages is one streamed product's pipeline: its channels and the
// first error.
type streamStages struct {
	p      plan
	ctx    context.Context
	cancel context.CancelCauseFunc
	free   chan *streamPanel // panels to read into
	read   chan *streamPanel // A read: to the GPU
	back   chan *streamPanel // C read back: to the check
	ready  chan *streamPanel // checked: to the writer
}

// take receives from ch, or reports false once the product stopped.
func (st *streamStages) take(ch chan *streamPanel) (*streamPanel, bool) {
	select {
	case pn, ok := <-ch:
		return pn, ok
	case <-st.ctx.Done():
		return nil, false
	}
}

// give sends pn on ch, or reports false once the product stopped.
func (st *streamStages) give(ch chan *streamPanel, pn *streamPanel) bool {
	select {
	case ch <- pn:
		return true
	case <-st.ctx.Done():
		return false
	}
}

// run runs the four stages, once the GPU's matrices are made
// (holdGPU): the reader starts at once, beside B's read and upload; the GPU and the check on goroutines of their own once B
// is up (Options.Check prepared meanwhile), the writer on the
// caller's.
func run(ctx context.Context, dev *glcompute.Device, p plan, a, b RowReader, c RowWriter, o *Options, r *Result) error {
	st := &streamStages{p: p, free: make(chan *streamPanel, hostPanels), read: make(chan *streamPanel, 1), back: make(chan *streamPanel, 1), ready: make(chan *streamPanel, 1)}
	st.ctx, st.cancel = context.WithCancelCause(ctx)
	for range min(hostPanels, p.panels) {
		st.free <- newPanel(p)
	}
	var wg sync.WaitGroup
	// On every way out, a panic included: stop the stages, then wait for
	// them.
	defer func() {
		st.cancel(nil)
		wg.Wait()
	}()
	g, releaseGPU, err := holdGPU(dev, st, p, o.Kernel)
	if err != nil {
		st.cancel(err)
		return err
	}
	gpuStage := false
	defer func() {
		if !gpuStage { // else the stage releases them
			releaseGPU()
		}
	}()
	wg.Go(func() { st.reader(a, &r.Read) })
	hb, err := readB(st.ctx, b, p, r)
	if err != nil {
		st.cancel(err)
		return err
	}
	prepared := make(chan PanelCheck, 1) // the check's set-up, beside B's upload
	wg.Go(func() {                       // waited for on every way out, as the stages are
		var check PanelCheck
		if o.Check != nil {
			check = o.Check(rowsView(hb, p.k, p.n))
		}
		prepared <- check
	})
	if err := g.uploadB(hb); err != nil {
		st.cancel(err)
		return err
	}
	gpuStage = true
	wg.Go(func() {
		defer releaseGPU() // once the stage, its only user, has stopped
		st.gpu(g, &r.GPU)
	})
	wg.Go(func() {
		if check := <-prepared; st.ctx.Err() == nil {
			st.checker(check, &r.Check)
		}
	})
	st.writer(c, o.Progress, &r.Write)
	wg.Wait()
	if st.ctx.Err() != nil {
		return context.Cause(st.ctx)
	}
	return nil
}

// holdGPU makes st's GPU matrices, before anything is read (a product
// the driver has not the memory for fails at once), and from then until
// release releases them the product holds the Device: Release stops it and
// waits for it (link.Hold).
func holdGPU(dev *glcompute.Device, st *streamStages, p plan, kernel string) (g *streamGPU, release func(), err error) {
	done, err := link.Hold(dev, st.cancel)
	if err != nil {
		return nil, nil, err
	}
	if g, err = newStreamGPU(dev, p, kernel); err != nil {
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
func (st *streamStages) reader(a RowReader, busy *time.Duration) {
	defer close(st.read)
	for i := range st.p.panels {
		pn, ok := st.take(st.free)
		if !ok {
			return
		}
		pn.i = i
		if err := timeInto(busy, func() error { return a.ReadRows(rowsView(pn.a, st.p.rowsOf(i), st.p.k), i*st.p.rows) }); err != nil {
			st.cancel(err)
			return
		}
		if !st.give(st.read, pn) {
			return
		}
	}
}

// gpu multiplies each panel read, then reads back the panel before it,
// whose product ran meanwhile.
func (st *streamStages) gpu(g *streamGPU, busy *time.Duration) {
	defer close(st.back)
	var prev *streamPanel
	for {
		pn, ok := st.take(st.read)
		if !ok && st.ctx.Err() != nil {
			return
		}
		if ok {
			if err := timeInto(busy, func() error { return g.multiply(pn) }); err != nil {
				st.cancel(err)
				return
			}
		}
		if prev != nil {
			if err := timeInto(busy, func() error { return g.readBack(prev) }); err != nil {
				st.cancel(err)
				return
			}
			if !st.give(st.back, prev) {
				return
			}
		}
		if !ok {
			return
		}
		prev = pn
	}
}

// checker checks each panel read back (nil check: passes it on).
func (st *streamStages) checker(check PanelCheck, busy *time.Duration) {
	defer close(st.ready)
	for {
		pn, ok := st.take(st.back)
		if !ok {
			return
		}
		if rows := st.p.rowsOf(pn.i); check != nil {
			timeInto(busy, func() error {
				check(rowsView(pn.a, rows, st.p.k), rowsView(pn.c, rows, st.p.n), pn.i*st.p.rows)
				return nil
			})
		}
		if !st.give(st.ready, pn) {
			return
		}
	}
}

// writer writes each checked panel of C, in order, and frees its memory
// for the reader.
func (st *streamStages) writer(c RowWriter, progress func(done, total int), busy *time.Duration) {
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
