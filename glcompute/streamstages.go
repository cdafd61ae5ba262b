package glcompute

import (
	"context"
	"sync"
	"time"

	"gonum.org/v1/gonum/blas/blas32"
)

// hostPanels is how many panels of host memory circulate: one being read,
// one on the GPU, one being checked or written. More let the stages run
// further apart, at a panel of memory each.
const hostPanels = 3

// streamGPU is the GPU side of a streamed product: B, and two panels of A and C that
// panels take in turn (panel i in slot i%2), so that one panel's C is read
// back while the next one's product runs.
type streamGPU struct {
	dev    *Device
	p      streamPlan
	kernel string // StreamOptions.Kernel
	b      *Matrix
	a, c   [2]*Matrix
}

// newGPU uploads B (hb, padded) and allocates the panels' matrices.
func newStreamGPU(dev *Device, p streamPlan, hb blas32.General, kernel string) (_ *streamGPU, err error) {
	g := &streamGPU{dev: dev, p: p, kernel: kernel}
	defer func() {
		if err != nil {
			g.release() // what was made before the failure
		}
	}()
	if g.b, err = dev.NewMatrix(p.kp, p.np); err != nil {
		return nil, err
	}
	if err = g.b.Upload(hb); err != nil {
		return nil, err
	}
	for s := 0; s < min(2, p.panels); s++ {
		if g.a[s], err = dev.NewMatrix(p.rows, p.kp); err != nil {
			return nil, err
		}
		if g.c[s], err = dev.NewMatrix(p.rows, p.np); err != nil {
			return nil, err
		}
	}
	return g, nil
}

// release frees the GPU matrices.
func (g *streamGPU) release() {
	for _, m := range []*Matrix{g.b, g.a[0], g.a[1], g.c[0], g.c[1]} {
		if m != nil {
			m.Release()
		}
	}
}

// slot returns panel i's matrices of A and C: the slot's own, or views of
// their first rows for a last panel that is shorter; release frees the
// views.
func (g *streamGPU) slot(i int) (a, c *Matrix, release func(), err error) {
	s, rows := i%2, g.p.rowsOf(i)
	a, c = g.a[s], g.c[s]
	if rows == g.p.rows {
		return a, c, func() {}, nil
	}
	if a, err = g.dev.WrapBuffer(g.a[s].Buffer(), 0, rows, g.p.kp, g.p.kp); err != nil {
		return nil, nil, nil, err
	}
	if c, err = g.dev.WrapBuffer(g.c[s].Buffer(), 0, rows, g.p.np, g.p.np); err != nil {
		a.Release()
		return nil, nil, nil, err
	}
	return a, c, func() { a.Release(); c.Release() }, nil
}

// multiply uploads panel pn's rows of A and queues their product by B.
func (g *streamGPU) multiply(pn *panel) error {
	return g.on(pn, func(a, c *Matrix) error {
		if err := a.Upload(rowsView(pn.a, a.Rows, g.p.kp)); err != nil {
			return errPanel("uploading A for", g.p, pn.i, err)
		}
		if err := c.MulKernel(g.kernel, a, g.b); err != nil {
			return errPanel("computing", g.p, pn.i, err)
		}
		return nil
	})
}

// readBack copies panel pn's C into its host memory.
func (g *streamGPU) readBack(pn *panel) error {
	return g.on(pn, func(_, c *Matrix) error {
		if err := c.Download(rowsView(pn.c, c.Rows, g.p.np)); err != nil {
			return errPanel("reading back", g.p, pn.i, err)
		}
		return nil
	})
}

// on calls f with panel pn's matrices of A and C (slot).
func (g *streamGPU) on(pn *panel, f func(a, c *Matrix) error) error {
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
	p      streamPlan
	ctx    context.Context
	cancel context.CancelCauseFunc
	free   chan *panel // panels to read into
	read   chan *panel // A read: to the GPU
	back   chan *panel // C read back: to the check
	ready  chan *panel // checked: to the writer
}

// take receives from ch, or reports false once the product stopped.
func (st *streamStages) take(ch chan *panel) (*panel, bool) {
	select {
	case pn, ok := <-ch:
		return pn, ok
	case <-st.ctx.Done():
		return nil, false
	}
}

// give sends pn on ch, or reports false once the product stopped.
func (st *streamStages) give(ch chan *panel, pn *panel) bool {
	select {
	case ch <- pn:
		return true
	case <-st.ctx.Done():
		return false
	}
}

// runStream runs the four stages: the reader starts at once, beside B's
// read and upload; the GPU and the check on goroutines of their own once B
// is up (StreamOptions.Check prepared meanwhile), the writer on the
// caller's.
func runStream(ctx context.Context, dev *Device, p streamPlan, a, b RowReader, c RowWriter, o *StreamOptions, r *StreamResult) error {
	st := &streamStages{p: p, free: make(chan *panel, hostPanels), read: make(chan *panel, 1), back: make(chan *panel, 1), ready: make(chan *panel, 1)}
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
	wg.Go(func() { st.reader(a, &r.Read) })
	hb, err := readB(b, p, r)
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
	// From here until its matrices are released, the GPU stage holds the
	// Device: Release stops it and waits for it (Device.stopStreams).
	if err := dev.startStream(st); err != nil {
		st.cancel(err)
		return err
	}
	g, err := newStreamGPU(dev, p, hb, o.Kernel)
	if err != nil {
		dev.endStream(st)
		st.cancel(err)
		return err
	}
	wg.Go(func() {
		defer dev.endStream(st)
		defer g.release() // once the stage, its only user, has stopped
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

// timed adds f's wall time to *busy and returns f's error.
func timed(busy *time.Duration, f func() error) error {
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
		if err := timed(busy, func() error { return a.ReadRows(rowsView(pn.a, st.p.rowsOf(i), st.p.k), i*st.p.rows) }); err != nil {
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
	var prev *panel
	for {
		pn, ok := st.take(st.read)
		if !ok && st.ctx.Err() != nil {
			return
		}
		if ok {
			if err := timed(busy, func() error { return g.multiply(pn) }); err != nil {
				st.cancel(err)
				return
			}
		}
		if prev != nil {
			if err := timed(busy, func() error { return g.readBack(prev) }); err != nil {
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
			timed(busy, func() error {
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
		if err := timed(busy, func() error { return c.WriteRows(rowsView(pn.c, st.p.rowsOf(pn.i), st.p.n)) }); err != nil {
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
