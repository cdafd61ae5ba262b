package glcompute

import (
	"cmp"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"

	"gonum.org/v1/gonum/blas"
	"gonum.org/v1/gonum/blas/blas32"
	"gonum.org/v1/gonum/blas/blas64"

	"github.com/glmul/glmul/glcompute/internal/dispatch"
	"github.com/glmul/glmul/glcompute/internal/glw"
	"github.com/glmul/glmul/glcompute/tuning"
	"github.com/glmul/glmul/shaders"
)

// Mul64 computes C = A·B in float64 with the dfast kernel (MulOptions.Kernel:
// a shaders.LookupFloat64 spec; "" or "dfast": the device's,
// Info.Float64Kernel or its shape class's), as Mul does for float32: one
// pipelined pass through the staging buffers, in row bands of C, or in
// panels (K too, summed on the GPU) where a matrix is over one storage
// binding or the three over MaxGPUMemory, or K over the driver's loop
// budget. C is overwritten; A and B are not modified; Timings are Mul's.
// Without float64 in shaders (OpenGL ES) it returns an error matching
// ErrUnsupported, as it does for SplitK above 1 and Measure. Empty
// products, the buffers kept between calls, the thread rule and panics are
// Mul's (docs/LIBRARY.md, "float64").
func (d *Device) Mul64(c, a, b blas64.General, opts *MulOptions) (Timings, error) {
	if checkProduct(dims64(c), dims64(a), dims64(b)) {
		d.emptyProduct(opts)
		if c.Rows > 0 && c.Cols > 0 { // K = 0: C = A·B is zero
			for i := range c.Rows {
				clear(c.Data[i*c.Stride : i*c.Stride+c.Cols])
			}
		}
		return Timings{}, nil
	}
	return d.product64(c, blas.NoTrans, a, blas.NoTrans, b, opts)
}

// planHost64 plans an m×k by k×n float64 product with opts as planHost
// plans a float32 one: the options with defaults filled in, the kernel,
// the checks of what the driver allows, and one piece or panels
// (panels64). It makes no GL call.
func (d *Device) planHost64(m, k, n int, opts *MulOptions) (hp hostPlan, err error) {
	d.mustBeOpen()
	if opts != nil {
		hp.o = *opts
	}
	hp.o.check()
	hp.o.MaxGroups = cmp.Or(hp.o.MaxGroups, defaultMaxGroups)
	if err := d.float64Support(); err != nil {
		return hp, err
	}
	if hp.o.SplitK > 1 || hp.o.Measure != nil {
		return hp, fmt.Errorf("%w: float64 products take no MulOptions.SplitK (dfast cannot split K; a long K runs in K panels) or Measure yet; leave them zero", ErrUnsupported)
	}
	if err := d.checkMaxGroups(hp.o.MaxGroups); err != nil {
		return hp, err
	}
	spec := hp.o.Kernel
	if spec == "" || spec == "dfast" { // the device's, as "fast" is float32's
		spec = cmp.Or(d.float64Kernel(m, k, n), "dfast")
	}
	kern, err := shaders.LookupFloat64(spec)
	if err != nil {
		return hp, fmt.Errorf("%w: %w", ErrUnsupported, err)
	}
	if err := d.fits(kern); err != nil {
		return hp, err
	}
	hp.kernels.kern = kern
	hp.panels, hp.paneled, err = d.panels64(m, k, n, &hp.o, kern)
	return hp, err
}

// float64Kernel is the dfast configuration an m×k by k×n product runs
// untold: glmul tune's for its shape class where it chose one
// (Info.Float64ClassKernels), else Info.Float64Kernel.
func (d *Device) float64Kernel(m, k, n int) string {
	if spec, ok := d.info.Float64ClassKernels[string(tuning.Classify(m, k, n))]; ok {
		return spec
	}
	return d.info.Float64Kernel
}

// align64 is the row length, in doubles, to which a float64 product pads
// A, B and C on the GPU: whole 16-byte units, as float32's are (fast's
// vec4s), which dfast's dvec2 loads and Reduce64's sums of K panels read.
const align64 = 2

// panels64 decides whether a float64 product runs in one piece or in
// panels, and plans the panels: panels where A, B or C is over one
// storage binding (MaxBinding, the driver's limit, 2³² doubles), the three
// over MaxGPUMemory, or K over what dfast may loop over on this driver
// (maxKRange): dfast cannot split K, so such a K runs in K panels within
// it (dispatch.Limits.CutK).
func (d *Device) panels64(m, k, n int, o *MulOptions, kern shaders.Kernel) (plan dispatch.PanelPlan, paneled bool, err error) {
	binding := d.info.MaxSSBOBlockSize
	if o.MaxBinding > 0 {
		binding = min(binding, o.MaxBinding)
	}
	binding = min(binding, 8*maxIndex)
	if kern.Textures && d.texBlock > 0 {
		// dfast's _tex views A and B whole through buffer textures: a
		// matrix over what one views runs in panels, as one over a
		// binding does.
		binding = min(binding, d.texBlock)
	}
	if max(m, k, n) > 1<<31 {
		return plan, false, fmt.Errorf("%w: a dimension of the float64 %d×%d by %d×%d product is over 2³¹", ErrTooLarge, m, k, k, n)
	}
	// float64: the products of dimensions up to 2³¹ overflow int64 in bytes.
	ld := func(cols int) float64 { return float64(roundUp(cols, align64)) }
	a, b, c := 8*float64(m)*ld(k), 8*float64(k)*ld(n), 8*float64(m)*float64(n)
	if a+b+c >= 1<<62 {
		return plan, false, fmt.Errorf("%w: the float64 %d×%d by %d×%d product's matrices take %s, more than any GPU holds", ErrTooLarge, m, k, k, n, formatBytes(a+b+c))
	}
	lim := float64(binding)
	if a <= lim && b <= lim && c <= lim && (o.MaxGPUMemory <= 0 || a+b+c <= float64(o.MaxGPUMemory)) && d.kSlices(kern, k) == 1 {
		return plan, false, nil
	}
	limits := dispatch.Limits{Size: 8, Binding: binding, Memory: o.MaxGPUMemory, MaxK: d.maxKRange(kern), CutK: true}
	if plan, err = limits.Panels(m, k, n, align64, kern.TileM, kern.TileN); err != nil {
		return plan, false, fmt.Errorf("%w: float64: %w", ErrTooLarge, err)
	}
	return plan, true, nil
}

// product64 sets dst (m×n) to op(A)·op(B), A and B as stored, tA and tB
// saying whether each is transposed (glblas.Float64's Dgemm): a transposed operand
// transposed on the caller's goroutines, then the product run on the
// device's as Mul runs one, its matrices handed to the transfer layer as
// words (words64).
func (d *Device) product64(dst blas64.General, tA blas.Transpose, a blas64.General, tB blas.Transpose, b blas64.General, opts *MulOptions) (Timings, error) {
	k := a.Cols
	if tA != blas.NoTrans {
		k = a.Rows
	}
	hp, err := d.planHost64(dst.Rows, k, dst.Cols, opts)
	if err == nil {
		err = hp.o.stopped()
	}
	if err != nil {
		return Timings{}, err
	}
	a, b = transpose64(a, tA), transpose64(b, tB)
	var t Timings
	d.call(func() {
		c, a, b := words64(dst), words64(a), words64(b)
		if hp.paneled {
			t, err = d.mulPanels(c, a, b, &hp, 0) // idle is for Measure's Stages, refused
		} else {
			t, err = d.mul64(c, a, b, &hp)
		}
	})
	d.worked()
	if err == nil {
		d.runs64.Add(1)
	}
	return t, err
}

// transpose64 returns op(x): x itself, or its transpose, compact, made in
// blocks that stay in cache both ways, on GOMAXPROCS goroutines that take
// bands of its rows in turn.
func transpose64(x blas64.General, t blas.Transpose) blas64.General {
	if t == blas.NoTrans {
		return x
	}
	out := blas64.General{Rows: x.Cols, Cols: x.Rows, Stride: x.Rows, Data: make([]float64, x.Cols*x.Rows)}
	const tile = 32
	bands := (out.Rows + tile - 1) / tile
	var next atomic.Int64
	var wg sync.WaitGroup
	for range min(runtime.GOMAXPROCS(0), bands) {
		wg.Go(func() {
			for j0 := int(next.Add(1)-1) * tile; j0 < out.Rows; j0 = int(next.Add(1)-1) * tile {
				for i0 := 0; i0 < x.Rows; i0 += tile {
					for i := i0; i < min(i0+tile, x.Rows); i++ {
						row := x.Data[i*x.Stride:]
						for j := j0; j < min(j0+tile, x.Cols); j++ {
							out.Data[j*out.Stride+i] = row[j]
						}
					}
				}
			}
		})
	}
	wg.Wait()
	return out
}

// hostProduct64 is one float64 product of host matrices run in one piece
// (Mul64's counterpart of hostProduct, with none of fast's transposes,
// splits or edge strips): its kernel, its GPU buffers, taken from the
// device's pool and kept there for the next product, and the row bands
// of its pipelined pass. Strides count doubles. Every method runs on the
// device thread.
type hostProduct64 struct {
	d                *Device
	o                *MulOptions
	p                *program
	m, k, n          int
	lda, ldb, ldc    int
	bufA, bufB, bufC glw.Buffer
	held             []pooled
	dispatches       int // the pass's (Timings.Dispatches)
}

// mul64 runs the product c = a·b of a plan in one piece (hp), a, b and c
// as words (words64: c.Cols counts two a double), in one pipelined pass.
// On the device thread.
func (d *Device) mul64(c, a, b blas32.General, hp *hostPlan) (t Timings, err error) {
	d.clearErrors()
	h := &hostProduct64{d: d, o: &hp.o, m: a.Rows, k: b.Rows, n: c.Cols / int(float64Words)}
	defer h.release()
	if h.p, err = d.programOf(hp.kernels.kern); err != nil {
		return t, err
	}
	// A and B go up with rows of whole 16-byte units; C comes back
	// compact (dfast writes it double by double).
	h.lda, h.ldb, h.ldc = roundUp(h.k, align64), roundUp(h.n, align64), h.n
	plan, err := h.p.plan(h.m, h.n, h.o.MaxGroups)
	if err != nil {
		return t, err
	}
	t.Kernel, t.Splits, t.Groups = h.p.kernel.Spec(), 1, [2]int{plan.GroupsX, plan.GroupsY}
	err = d.takeBuffers(h.o.MaxGPUMemory > 0, &h.held, wanted{&h.bufA, 8 * h.m * h.lda, "A"}, wanted{&h.bufB, 8 * h.k * h.ldb, "B"}, wanted{&h.bufC, 8 * h.m * h.ldc, "C"})
	if err != nil {
		return t, err
	}
	defer d.unbindAll()
	pl := &pipeline{d: d, o: h.o, steps: h.steps(c, a, b, plan.GroupsX), report: h.o.Progress, words: float64Words}
	pt, err := pl.run()
	pt.fill(&t)
	t.Dispatches = h.dispatches
	return t, err
}

// steps are the pipelined pass's steps, a row band of C each (bandRows,
// as Mul's bands, in words a row): the first uploads B and A's first
// band, each later one its band of A while the GPU computes the band
// before, and each band of C is poisoned, computed and read back while
// the next computes. groupsX is the kernel's work groups across C.
func (h *hostProduct64) steps(c, a, b blas32.General, groupsX int) []pipeStep {
	const w = float64Words
	waveRows := 0
	if slots := h.d.slots(h.p.kernel); slots > 0 {
		waveRows = slots / groupsX
	}
	per := bandRows(h.m, h.p.kernel.TileM, pipelineBands, int(w)*max(h.lda, h.ldc), h.d.stage().Bytes, waveRows)
	var steps []pipeStep
	for r0 := 0; r0 < h.m; r0 += per {
		rows := min(per, h.m-r0)
		s := pipeStep{
			up:     []upTransfer{{dst: w.view(h.bufA, r0*h.lda, h.lda), src: w.part(a, r0, 0, rows, h.k)}},
			c:      w.view(h.bufC, r0*h.ldc, h.ldc),
			out:    w.part(c, r0, 0, rows, h.n),
			poison: int(w) * rows * h.ldc,
			run:    func() error { return h.band(r0, rows) },
		}
		if r0 == 0 {
			s.up = append([]upTransfer{{dst: w.view(h.bufB, 0, h.ldb), src: w.part(b, 0, 0, h.k, h.n)}}, s.up...)
		}
		steps = append(steps, s)
	}
	return steps
}

// band queues the kernel over rows [r0, r0+rows) of C: its offsets moved
// to the band's first row of A and of C.
func (h *hostProduct64) band(r0, rows int) error {
	h.p.prog.Use()
	h.d.bindStorage(h.p, 0, h.bufA, 0, 0) // buffer textures too, for _tex
	h.d.bindStorage(h.p, 1, h.bufB, 0, 0)
	h.bufC.BindStorage(2)
	h.p.setLayout(rows, h.k, h.n, h.lda, h.ldb, h.ldc, r0*h.lda, 0, r0*h.ldc)
	n, err := h.p.dispatchTiles(rows, h.n, h.o.MaxGroups)
	h.dispatches += n
	return err
}

// release returns A, B and C's buffers to the device's pool.
func (h *hostProduct64) release() {
	if len(h.held) > 0 { // a product that failed before allocating keeps the pool as it was
		h.d.keepBuffers(h.held)
	}
	h.held, h.bufA, h.bufB, h.bufC = nil, 0, 0, 0
}
