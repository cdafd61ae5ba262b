package glcompute

import (
	"fmt"
	"time"

	"gonum.org/v1/gonum/blas/blas32"

	"github.com/glmul/glmul/glcompute/internal/glw"
	"github.com/glmul/glmul/internal/dispatch"
	"github.com/glmul/glmul/shaders"
)

// Plan says how Mul would run an m×k by k×n product with opts: "" for
// one piece, else the panel plan; an error (matching ErrTooLarge or
// ErrUnsupported) where it cannot run at all: an unknown kernel or one the
// device cannot run, too many groups a dispatch, a product beyond
// bindings or memory that this kernel cannot split. It lets a caller refuse a
// product before making its inputs. Safe from any goroutine.
func (d *Device) Plan(m, k, n int, opts *MulOptions) (string, error) {
	if m < 1 || k < 1 || n < 1 {
		panic("glcompute: matrix dimension below 1")
	}
	if d.isReleased() {
		panic("glcompute: use of a released Device")
	}
	var o MulOptions
	if opts != nil {
		o = *opts
	}
	if o.Kernel == "" || o.Kernel == "fast" {
		o.Kernel = d.kernelFor(m, k, n)
	}
	kern, err := shaders.Lookup(o.Kernel)
	if err != nil {
		return "", fmt.Errorf("%w: %w", ErrUnsupported, err)
	}
	if err := d.fits(kern); err != nil {
		return "", err
	}
	if lim := min(d.info.MaxWorkGroupCount[0], d.info.MaxWorkGroupCount[1]); o.MaxGroups > lim {
		return "", fmt.Errorf("%w: %d work groups per dispatch requested, the driver allows %d (GL_MAX_COMPUTE_WORK_GROUP_COUNT)", ErrUnsupported, o.MaxGroups, lim)
	}
	plan, paneled, err := d.planPanels(m, k, n, &o)
	if err != nil || !paneled {
		return "", err
	}
	return plan.String(), nil
}

// planPanels decides whether an m×k by k×n product runs in one piece or
// in panels, and plans the panels.
func (d *Device) planPanels(m, k, n int, o *MulOptions) (plan dispatch.PanelPlan, paneled bool, err error) {
	binding := d.info.MaxSSBOBlockSize
	if o.MaxBinding > 0 {
		binding = min(binding, o.MaxBinding)
	}
	binding = min(binding, 4*maxIndex)
	kern, err := shaders.Lookup(o.Kernel)
	if err != nil {
		return plan, false, fmt.Errorf("glcompute: %w", err)
	}
	al := kern.Align
	if max(m, k, n) > 1<<31 {
		return plan, false, fmt.Errorf("%w: a dimension of the %d×%d by %d×%d product is over 2³¹", ErrTooLarge, m, k, k, n)
	}
	// float64: the products of dimensions up to 2³¹ overflow int64 at 4 bytes.
	ld := func(cols int) float64 { return float64(roundUp(cols, al)) }
	a, b, c := 4*float64(m)*ld(k), 4*float64(k)*ld(n), 4*float64(m)*ld(n)
	lim := float64(binding)
	if a <= lim && b <= lim && c <= lim && (o.MaxGPUMemory <= 0 || a+b+c <= float64(o.MaxGPUMemory)) {
		return plan, false, nil
	}
	if !kern.Strided {
		return plan, false, fmt.Errorf("%w: the %d×%d by %d×%d product does not fit one shader storage binding (%s) or the GPU memory allowed, and kernel %s cannot run in panels; use fast",
			ErrTooLarge, m, k, k, n, formatBytes(float64(binding)), kern.Spec())
	}
	if o.SplitK > 1 {
		return plan, false, fmt.Errorf("%w: the %d×%d by %d×%d product needs panels, and split-K does not run in panels; drop the split", ErrTooLarge, m, k, k, n)
	}
	plan, err = dispatch.Panels(m, k, n, al, kern.TileM, kern.TileN, binding, o.MaxGPUMemory)
	if err != nil {
		return plan, false, fmt.Errorf("%w: %w", ErrTooLarge, err)
	}
	return plan, true, nil
}

// panelProduct is one Mul run in panels: the buffers of a B column panel,
// of A's row panels (all of them, or two in turn when A is streamed) and
// of two C panels. Every method runs on the device thread.
type panelProduct struct {
	d    *Device
	o    *MulOptions
	plan dispatch.PanelPlan
	p    *program
	bufB glw.Buffer
	bufA []glw.Buffer
	bufC [2]glw.Buffer
	t    *Timings
	// compute sums the panels' dispatches, from queueing to the GPU's end.
	compute time.Duration
}

// mulPanels runs c = a·b panel by panel: for each column panel of B, each
// row panel of A (uploaded once when A stays on the GPU), one dispatch
// plan, a wait for it, and the C panel's readback. Staging overlaps the
// host's copies with the GPU's within each transfer; transfers and compute
// do not overlap yet, which keeps their times apart and honest.
func (d *Device) mulPanels(c, a, b blas32.General, o *MulOptions, plan dispatch.PanelPlan) (t Timings, err error) {
	d.clearErrors()
	pp := &panelProduct{d: d, o: o, plan: plan, t: &t}
	defer pp.release()
	if pp.p, err = d.program(o.Kernel); err != nil {
		return t, err
	}
	t.Kernel, t.Panels = pp.p.kernel.Spec(), plan.String()
	k := pp.p.kernel
	t.Groups = [2]int{(plan.N + k.TileN - 1) / k.TileN, (plan.M + k.TileM - 1) / k.TileM} // over all panels
	if err := pp.alloc(); err != nil {
		return t, err
	}
	if err := pp.warmUp(); err != nil {
		return t, err
	}
	for j := 0; j < plan.ColPanels(); j++ {
		if err := pp.columnPanel(a, b, c, j); err != nil {
			return t, err
		}
	}
	t.Compute = []time.Duration{pp.compute}
	unbindAll()
	return t, d.checkError("running the product in panels")
}

// warmUp runs the first panel's product, untimed, Warmup times and then
// until MinWarmup has passed, as a product in one piece warms up with
// whole products: the GPU's clocks rise, and the panel buffers it uses
// are first touched. The inputs are whatever the buffers hold; the
// results are discarded.
func (pp *panelProduct) warmUp() error {
	o, pl := pp.o, pp.plan
	if o.Warmup == 0 && o.MinWarmup == 0 {
		return nil
	}
	rows, cols := min(pl.RowsPer, pl.M), min(pl.ColsPer, pl.N)
	start := time.Now()
	for i := 0; i < o.Warmup || time.Since(start) < o.MinWarmup; i++ {
		if err := o.stopped(); err != nil {
			return err
		}
		if err := pp.dispatch(pp.bufA[0], pp.bufC[0], rows, cols, pl.Ld(cols)); err != nil {
			return err
		}
		glw.Finish()
	}
	pp.t.Dispatches = 0 // the warm-up's are not the product's
	return nil
}

// alloc creates the panel buffers.
func (pp *panelProduct) alloc() error {
	pl := pp.plan
	immutable := pp.d.stage().bufferStorage
	nA := 2
	if pl.KeepA {
		nA = pl.RowPanels()
	}
	pp.bufA = make([]glw.Buffer, nA)
	bufs := []*glw.Buffer{&pp.bufB, &pp.bufC[0], &pp.bufC[1]}
	sizes := []int{4 * pl.K * pl.Ld(pl.ColsPer), 4 * pl.RowsPer * pl.Ld(pl.ColsPer), 4 * pl.RowsPer * pl.Ld(pl.ColsPer)}
	for i := range pp.bufA {
		bufs = append(bufs, &pp.bufA[i])
		sizes = append(sizes, 4*pl.RowsPer*pl.Ld(pl.K))
	}
	for i, b := range bufs {
		var ok bool
		if *b, ok = glw.NewDeviceBuffer(sizes[i], immutable); !ok {
			return fmt.Errorf("%w: a %s panel buffer for %s", ErrOutOfMemory, formatBytes(float64(sizes[i])), pl)
		}
	}
	return nil
}

// timed adds the time f takes to *total.
func timed(total *time.Duration, f func() error) error {
	start := time.Now()
	err := f()
	*total += time.Since(start)
	return err
}

// columnPanel computes C's column panel j: B's panel up, then each row
// panel of C.
func (pp *panelProduct) columnPanel(a, b, c blas32.General, j int) error {
	pl, st := pp.plan, pp.d.stage()
	c0 := j * pl.ColsPer
	cols := min(pl.ColsPer, pl.N-c0)
	ldn := pl.Ld(cols)
	err := timed(&pp.t.Upload, func() error {
		return st.upload(view{buf: pp.bufB, stride: ldn}, blas32.General{Rows: pl.K, Cols: cols, Stride: b.Stride, Data: b.Data[c0:]})
	})
	if err != nil {
		return err
	}
	pp.t.UploadBytes += 4 * int64(pl.K) * int64(ldn)
	for i := 0; i < pl.RowPanels(); i++ {
		if err := pp.o.stopped(); err != nil {
			return err
		}
		r0 := i * pl.RowsPer
		rows := min(pl.RowsPer, pl.M-r0)
		bufA := pp.bufA[i%len(pp.bufA)]
		if !pl.KeepA || j == 0 {
			err := timed(&pp.t.Upload, func() error {
				return st.upload(view{buf: bufA, stride: pl.Ld(pl.K)}, blas32.General{Rows: rows, Cols: pl.K, Stride: a.Stride, Data: a.Data[r0*a.Stride:]})
			})
			if err != nil {
				return err
			}
			pp.t.UploadBytes += 4 * int64(rows) * int64(pl.Ld(pl.K))
		}
		bufC := pp.bufC[i%2]
		// Poison the C panel: an element the kernel misses reads back as
		// NaN. The first clear of each buffer is also where the driver
		// first touches its memory (tens of ms a GiB on NVIDIA): counted
		// with the transfers, as in a product in one piece.
		err := timed(&pp.t.Upload, func() error {
			defer glw.Finish()
			return pp.d.poison(bufC, 4*rows*ldn)
		})
		if err != nil {
			return err
		}
		err = timed(&pp.compute, func() error {
			if err := pp.dispatch(bufA, bufC, rows, cols, ldn); err != nil {
				return err
			}
			// Wait for the panel's product so that the readback's time is
			// the transfer's alone (the readback would wait for it anyway).
			f := glw.NewFence()
			glw.Flush()
			f.Signaled(^uint64(0))
			f.Release()
			return nil
		})
		if err != nil {
			return err
		}
		err = timed(&pp.t.Readback, func() error {
			return st.download(blas32.General{Rows: rows, Cols: cols, Stride: c.Stride, Data: c.Data[r0*c.Stride+c0:]}, view{buf: bufC, stride: ldn})
		})
		if err != nil {
			return err
		}
		pp.t.ReadbackBytes += 4 * int64(rows) * int64(ldn)
	}
	return nil
}

// dispatch queues one C panel's product: rows×K of A by K×cols of B.
func (pp *panelProduct) dispatch(bufA, bufC glw.Buffer, rows, cols, ldn int) error {
	p := pp.p
	plan, err := dispatch.New(rows, cols, p.kernel.TileM, p.kernel.TileN, pp.o.MaxGroups)
	if err != nil {
		return fmt.Errorf("glcompute: %w", err)
	}
	p.prog.Use()
	bufA.BindStorage(0)
	pp.bufB.BindStorage(1)
	bufC.BindStorage(2)
	p.setUints(uniform{"M", rows}, uniform{"K", pp.plan.K}, uniform{"N", cols}, uniform{"lda", pp.plan.Ld(pp.plan.K)},
		uniform{"ldb", ldn}, uniform{"ldc", ldn}, uniform{"offA4", 0}, uniform{"offB4", 0}, uniform{"offC4", 0},
		uniform{"ksplit", pp.plan.K})
	pp.t.Dispatches += len(plan.Chunks)
	for _, ch := range plan.Chunks {
		p.setUint("x0", uint32(ch.X0))
		p.setUint("y0", uint32(ch.Y0))
		glw.Dispatch(ch.GroupsX, ch.GroupsY)
	}
	return nil
}

// release deletes the panel buffers.
func (pp *panelProduct) release() {
	for _, b := range append([]*glw.Buffer{&pp.bufB, &pp.bufC[0], &pp.bufC[1]}, ptrs(pp.bufA)...) {
		b.Release()
	}
}

func ptrs(bs []glw.Buffer) []*glw.Buffer {
	out := make([]*glw.Buffer, len(bs))
	for i := range bs {
		out[i] = &bs[i]
	}
	return out
}
