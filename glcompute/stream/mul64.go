package stream

import (
	"cmp"
	"context"
	"math"

	"gonum.org/v1/gonum/blas/blas64"

	"github.com/glmul/glmul/glcompute"
	"github.com/glmul/glmul/glcompute/internal/link"
	"github.com/glmul/glmul/internal/streamhook"
)

// RowReader64 is RowReader in float64: Mul64's A, whose ReadRows fills
// dst as RowReader's does.
type RowReader64 interface {
	Rows() int
	Cols() int
	ReadRows(dst blas64.General, r0 int) error
}

// RowWriter64 is RowWriter in float64: Mul64's C (glmul's
// matfile.Sink64).
type RowWriter64 interface{ WriteRows(m blas64.General) error }

// Mul64 computes C = A·B in float64 on d through Mul's four stages: A
// read by panels of rows from a, each panel checked (Options.Check64),
// C's rows written in order to c. B is lent, whole, not read: the GPU
// stage multiplies each panel host to host with d.Mul64 (its C poisoned
// with NaN first, so that an element left unwritten fails a check), which
// uploads B with every panel; b is not modified. A kernel's errors come
// with the first panel. Errors, Release, empty products and the thread
// rule are Mul's; docs/LIBRARY.md, "stream.Mul64", says why B is lent.
//
// It panics where Mul does, where Options.Check (Mul's) is set, and if
// b's Stride or Data do not hold its Rows×Cols.
func Mul64(d *glcompute.Device, c RowWriter64, a RowReader64, b blas64.General, o *Options) (Result, error) {
	link.Own(d, "stream.Mul64 needs a Device that owns its context (Open): its GPU stage runs on a goroutine of its own, where a borrowed context is not current")
	o = checkArgs("Mul64", a.Rows(), a.Cols(), b.Rows, b.Cols, o)
	if b.Rows > 0 && b.Cols > 0 && (b.Stride < b.Cols || len(b.Data) < (b.Rows-1)*b.Stride+b.Cols) {
		panic("stream: Mul64: B's Stride or Data do not hold its Rows×Cols")
	}
	if o.Check != nil {
		panic("stream: Mul64: Options.Check checks Mul's float32 panels: set Check64")
	}
	p := newPlan64(a.Rows(), a.Cols(), b.Cols, o.PanelBytes)
	return runPlan(p, o, func(ctx context.Context, r *Result) error {
		if p.empty() {
			return zeroStream[blas64.General](ctx, c, p, o.Progress, r)
		}
		e := ends[blas64.General]{a: a, c: c, check: o.Check64, progress: o.Progress}
		r.Devices = make([]DeviceShare, 1)
		defer func() { r.Devices[0].Kernel = r.Kernel }()
		load := func(context.Context) (blas64.General, error) { return b, nil }
		return run(ctx, []*glcompute.Device{d}, p, e, r, load, func(ctx context.Context, _ int) (gpuStage[blas64.General], error) {
			return &gpu64{dev: d, p: p, b: b, o: glcompute.MulOptions{Kernel: o.Kernel, MaxBinding: o.MaxBinding, Context: ctx}, kernel: &r.Kernel}, nil
		})
	})
}

// gpu64 is Mul64's GPU stage. It keeps no matrices on the GPU (a float64
// B over one storage binding needs Device.Mul64's panels, which
// NewMatrix64 has not), so it has none to make, to upload B into or to
// read a panel back from while the next one runs, as Mul's streamGPU
// does: each panel's product (Device.Mul64: mul) runs host to host, with
// B, and the panel is done when it returns. Its options carry the product's context,
// which stops a panel's product midway.
type gpu64 struct {
	dev    *glcompute.Device
	p      plan
	b      blas64.General
	o      glcompute.MulOptions
	kernel *string // Result.Kernel: the first panel's
}

func (g *gpu64) uploadB(blas64.General) error { return nil }
func (g *gpu64) release()                     {}

// step multiplies panel pn's rows of A by B into its C, poisoned first
// with NaN, and returns pn.
func (g *gpu64) step(pn *panel[blas64.General]) (*panel[blas64.General], error) {
	if pn == nil {
		return nil, nil
	}
	rows := g.p.rowsOf(pn.i)
	c := rowsView(pn.c, rows, g.p.n)
	for i := range c.Data {
		c.Data[i] = math.NaN()
	}
	t, err := g.mul(c, rowsView(pn.a, rows, g.p.k))
	if err != nil {
		return nil, errPanel("computing", g.p, pn.i, err)
	}
	*g.kernel = cmp.Or(*g.kernel, t.Kernel)
	return pn, nil
}

// mul computes c = a·B: Device.Mul64, or streamhook's where glmul's tests
// set it.
func (g *gpu64) mul(c, a blas64.General) (glcompute.Timings, error) {
	if streamhook.Mul64 == nil {
		return g.dev.Mul64(c, a, g.b, &g.o)
	}
	t, err := streamhook.Mul64(g.dev, c, a, g.b, &g.o)
	tm, _ := t.(glcompute.Timings)
	return tm, err
}
