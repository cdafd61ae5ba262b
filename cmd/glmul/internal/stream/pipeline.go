package stream

import (
	"context"
	"sync"
	"time"

	"gonum.org/v1/gonum/blas/blas32"

	"github.com/glmul/glmul/glcompute"
)

// hostPanels is how many panels of host memory circulate: one being read,
// one on the GPU, one being checked or written. More let the stages run
// further apart, at a panel of memory each.
const hostPanels = 3

// gpu is the GPU side of a product: B, and two panels of A and C that
// panels take in turn (panel i in slot i%2), so that one panel's C is read
// back while the next one's product runs.
type gpu struct {
	dev    *glcompute.Device
	p      plan
	kernel string // Options.Kernel
	b      *glcompute.Matrix
	a, c   [2]*glcompute.Matrix
}

// newGPU uploads B (hb, padded) and allocates the panels' matrices.
func newGPU(dev *glcompute.Device, p plan, hb blas32.General, kernel string) (_ *gpu, err error) {
	g := &gpu{dev: dev, p: p, kernel: kernel}
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
func (g *gpu) release() {
	for _, m := range []*glcompute.Matrix{g.b, g.a[0], g.a[1], g.c[0], g.c[1]} {
		if m != nil {
			m.Release()
		}
	}
}

// slot returns panel i's matrices of A and C: the slot's own, or views of
// their first rows for a last panel that is shorter; release frees the
// views.
func (g *gpu) slot(i int) (a, c *glcompute.Matrix, release func(), err error) {
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
func (g *gpu) multiply(pn *panel) error {
	a, c, release, err := g.slot(pn.i)
	if err != nil {
		return err
	}
	defer release()
	if err := a.Upload(view(pn.a, a.Rows, g.p.kp)); err != nil {
		return errPanel("uploading A for", g.p, pn.i, err)
	}
	if err := c.MulKernel(g.kernel, a, g.b); err != nil {
		return errPanel("computing", g.p, pn.i, err)
	}
	return nil
}

// readBack copies panel pn's C into its host memory.
func (g *gpu) readBack(pn *panel) error {
	_, c, release, err := g.slot(pn.i)
	if err != nil {
		return err
	}
	defer release()
	if err := c.Download(view(pn.c, c.Rows, g.p.np)); err != nil {
		return errPanel("reading back", g.p, pn.i, err)
	}
	return nil
}

// stages is one product's pipeline: its channels and the first error.
type stages struct {
	p      plan
	ctx    context.Context
	cancel context.CancelCauseFunc
	free   chan *panel // panels to read into
	read   chan *panel // A read: to the GPU
	back   chan *panel // C read back: to the check
	ready  chan *panel // checked: to the writer
}

// take receives from ch, or reports false once the product stopped.
func (st *stages) take(ch chan *panel) (*panel, bool) {
	select {
	case pn, ok := <-ch:
		return pn, ok
	case <-st.ctx.Done():
		return nil, false
	}
}

// give sends pn on ch, or reports false once the product stopped.
func (st *stages) give(ch chan *panel, pn *panel) bool {
	select {
	case ch <- pn:
		return true
	case <-st.ctx.Done():
		return false
	}
}

// run runs the four stages: the reader starts at once, beside B's read
// and upload; the GPU and the checker on goroutines of their own once B
// is up (Freivalds' B·x computed meanwhile), the writer on the caller's.
func run(ctx context.Context, dev *glcompute.Device, p plan, a, b RowReader, c RowWriter, o Options, r *Result) error {
	st := &stages{p: p, free: make(chan *panel, hostPanels), read: make(chan *panel, 1), back: make(chan *panel, 1), ready: make(chan *panel, 1)}
	st.ctx, st.cancel = context.WithCancelCause(ctx)
	for range min(hostPanels, p.panels) {
		st.free <- newPanel(p)
	}
	var wg sync.WaitGroup
	// On every way out, a panic included: stop the stages, then wait for
	// them (before g's release, deferred later, frees what they use).
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
	prepared := make(chan *checker, 1) // B·x for Freivalds, beside B's upload
	go func() { prepared <- newChecker(o, p, hb) }()
	g, err := newGPU(dev, p, hb, o.Kernel)
	if err != nil {
		st.cancel(err)
		return err
	}
	defer func() {
		st.cancel(nil)
		wg.Wait()
		g.release()
	}()
	wg.Go(func() { st.gpu(g, &r.GPU) })
	var chk *checker
	wg.Go(func() {
		if chk = <-prepared; st.ctx.Err() == nil {
			st.checker(chk, &r.Check)
		}
	})
	st.writer(c, o.Progress, &r.Write)
	wg.Wait()
	r.Validation = chk.result()
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
func (st *stages) reader(a RowReader, busy *time.Duration) {
	defer close(st.read)
	for i := range st.p.panels {
		pn, ok := st.take(st.free)
		if !ok {
			return
		}
		pn.i = i
		if err := timed(busy, func() error { return a.ReadRows(view(pn.a, st.p.rowsOf(i), st.p.k), i*st.p.rows) }); err != nil {
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
func (st *stages) gpu(g *gpu, busy *time.Duration) {
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

// checker validates each panel read back.
func (st *stages) checker(chk *checker, busy *time.Duration) {
	defer close(st.ready)
	for {
		pn, ok := st.take(st.back)
		if !ok {
			return
		}
		rows := st.p.rowsOf(pn.i)
		timed(busy, func() error {
			chk.check(view(pn.a, rows, st.p.k), view(pn.c, rows, st.p.n), pn.i*st.p.rows)
			return nil
		})
		if !st.give(st.ready, pn) {
			return
		}
	}
}

// writer writes each checked panel of C, in order, and frees its memory
// for the reader.
func (st *stages) writer(c RowWriter, progress func(done, total int), busy *time.Duration) {
	for done := 1; ; done++ {
		pn, ok := st.take(st.ready)
		if !ok {
			return
		}
		if err := timed(busy, func() error { return c.WriteRows(view(pn.c, st.p.rowsOf(pn.i), st.p.n)) }); err != nil {
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
