package glcompute

import (
	"context"
	"fmt"
	"time"

	"gonum.org/v1/gonum/blas/blas32"
	"gonum.org/v1/gonum/blas/blas64"

	"github.com/glmul/glmul/glcompute/internal/dispatch"
	"github.com/glmul/glmul/glcompute/tuning"
)

// DefaultMaxGroups is the paper's cap on work groups per dispatch and axis
// (64×64), which keeps each dispatch short enough for Windows' GPU watchdog.
const DefaultMaxGroups = dispatch.DefaultMaxGroups

// MulOptions configure one Mul. A nil *MulOptions means the zero value of
// every field.
//
// A negative count, size or duration panics (a programmer error).
type MulOptions struct {
	// Kernel names the compute shader as shaders.Lookup reads it:
	// "tiled32" (the paper's), "fast" (the device's tuned or built-in
	// configuration, Info.DefaultKernel) or a configuration such as
	// "fast:128x128x8_8x8". Zero value "": "fast".
	Kernel string
	// MaxGroups caps the work groups per dispatch along each axis. Zero
	// value: DefaultMaxGroups (64).
	MaxGroups int
	// SplitK splits the inner dimension across this many slices of work
	// groups, each writing a partial C that a second pass adds up: for
	// products whose result has too few tiles to fill the GPU (64×4096×64
	// is one tile). Fast kernel only; a product in panels is not split.
	// Zero value: chosen from the size of the result's grid
	// (tuning.AutoSplitK: only grids under about a wave of the device's
	// work groups, 128 on a GPU, are split); 1:
	// no split. On Mesa's llvmpipe, K is split at least as many ways as
	// its loop limit needs, in panels too (see the package documentation,
	// "Mesa's llvmpipe and long K").
	SplitK int
	// Progress, if set, is called as each block of C arrives in host
	// memory (Timings.Steps of them), with the number done and the total.
	// It runs on the device's thread and must not call the Device. Zero
	// value: no calls.
	Progress func(done, total int)
	// Arrived, if set, is called as each block of C of the pipelined
	// pass arrives in host memory, before Progress, with its first row
	// and column and its shape, in elements. The pass writes that block
	// no more: a caller may read it while Mul goes on (to check C as it
	// arrives). It runs on the device's thread and must not call the
	// Device. Group.Mul refuses it. Zero value: no calls.
	Arrived func(r0, c0, rows, cols int)
	// Context, if set, is checked between the steps of the pipelined pass
	// (bands or panels): once it is done, Mul stops after the step in
	// progress and returns its error. A single dispatch cannot be stopped.
	// Zero value: nil, never stopped.
	Context context.Context
	// MaxBinding lowers the bytes one matrix may take in one shader
	// storage binding below the driver's GL_MAX_SHADER_STORAGE_BLOCK_SIZE,
	// and MaxGPUMemory caps the bytes of GPU buffers a product may use
	// (A, B, C, A's transpose, and a K split's or stream-K's workspace,
	// which a product runs without where the cap leaves no room for it).
	// A product over either runs in panels (Timings.Panels), streaming
	// A again for every column panel of B when all of A does not fit:
	// lowering them makes small products exercise those paths. Zero
	// values: the driver's limit, and no memory cap.
	MaxBinding, MaxGPUMemory int64
	// Measure, if set, is called once the product is planned and its GPU
	// buffers are allocated, before the pipelined pass that gives C: it
	// may run the product's stages one at a time (upload, whole runs,
	// readback) to time them; whatever it leaves in the
	// buffers, the pass then computes C afresh. It runs on the device's
	// thread and must not call the Device. Mul reads A and B, and writes
	// C, only in the stages the hook runs (Upload, ReadBack) and once it
	// has returned, so a caller may still be making them while a hook
	// that waits for them runs. An error it returns ends Mul with it. glmul's measurements (warm-up, repetitions, the GL
	// timer) are made so, outside the library. Zero value: the product
	// runs once, pipelined.
	Measure func(tuning.Stages) error
}

// check panics on a negative field.
func (o *MulOptions) check() {
	for _, f := range []struct {
		v    int64
		name string
	}{
		{int64(o.MaxGroups), "glcompute: MulOptions.MaxGroups is negative"},
		{int64(o.SplitK), "glcompute: MulOptions.SplitK is negative"},
		{o.MaxBinding, "glcompute: MulOptions.MaxBinding is negative"},
		{o.MaxGPUMemory, "glcompute: MulOptions.MaxGPUMemory is negative"},
	} {
		if f.v < 0 {
			panic(f.name)
		}
	}
}

// Layout is how a product was laid out on the GPU: its kernel, its
// dispatches and work groups, its K split, edge strips and panels.
type Layout struct {
	// Kernel is the spec of the kernel that ran ("fast:128x128x8_8x8").
	Kernel string `json:"kernel"`
	// Dispatches is the number of compute dispatches of one whole product
	// (for a product in panels, of all its panels in the pass).
	Dispatches int `json:"dispatches"`
	// Splits is the number of slices K was split into (MulOptions.SplitK);
	// 1 without split-K.
	Splits int `json:"k_splits"`
	// EdgeKernel, where not "", computed the strips of C past the kernel's
	// whole tiles, in EdgeGroups work groups beside the interior's (Groups
	// then counts the interior's); see tuning.UseEdges. These describe the
	// plan of the whole product; the bands of a pipelined pass plan their
	// own interiors and strips.
	EdgeKernel string `json:"edge_kernel,omitempty"`
	EdgeGroups int    `json:"edge_groups,omitempty"`
	// StreamKTiles, where not 0, is how many tiles of C after whole waves
	// of them StreamKGroups work groups shared, each taking an equal run of
	// their K steps, a second pass summing the pieces (stream-K; see
	// tuning.UseStreamK). Groups then counts the tiles.
	StreamKTiles  int `json:"stream_k_tiles,omitempty"`
	StreamKGroups int `json:"stream_k_groups,omitempty"`
	// Groups is the number of work groups along x (columns) and y (rows)
	// (over all panels of a product run in panels).
	Groups [2]int `json:"groups"`
	// Panels describes the panel plan of a product run in panels (see
	// MulOptions.MaxBinding), "" for one run in one piece.
	Panels string `json:"panels,omitempty"`
}

// Timings of one Mul: its layout and its pipelined pass. Times are wall
// clock on the CPU, except GPU's.
type Timings struct {
	Layout
	// EndToEnd is the wall time of the pipelined pass: from A and B in
	// host memory to C in host memory, in Steps blocks of C (row bands of
	// C, or panels), uploading the next block's operands and reading back
	// the last block of C while the GPU computes the current one. Context
	// creation and a Measure hook are not in it.
	EndToEnd time.Duration `json:"end_to_end_ns"`
	Steps    int           `json:"pipeline_steps"`
	// Streamed: the pass moved A and C with compute passes beside the
	// kernel's (a streamed pass: see the package documentation).
	Streamed bool `json:"streamed,omitempty"`
	// Upload and Readback are the host's busy time within the pass copying
	// into and out of the staging buffers. Compute holds one element, the
	// GPU's time with the pass's dispatches in flight: by GL_TIMESTAMP
	// queries where the GL timer gives real times (GPU then holds the same
	// element; nil otherwise), else the wall time of the dispatch calls, as
	// on a driver that computes within them (Mesa's llvmpipe). Their sum
	// exceeds EndToEnd by what overlapped; Compute never exceeds it.
	// (Slices because a Mul could once repeat its runs; MulOptions.Measure
	// does that now.)
	Upload   time.Duration   `json:"upload_ns"`
	Compute  []time.Duration `json:"compute_ns"`
	GPU      []time.Duration `json:"gpu_ns,omitempty"`
	Readback time.Duration   `json:"readback_ns"`
	// UploadBytes and ReadbackBytes are the bytes the pass moved each way.
	UploadBytes   int64 `json:"upload_bytes"`
	ReadbackBytes int64 `json:"readback_bytes"`
}

// Mul computes C = A·B on the GPU in one pipelined pass (A and B going up
// while the GPU computes and finished blocks of C come back), in panels
// where the product exceeds a binding or MaxGPUMemory (Plan). C is
// overwritten entirely; A and B are not modified (a HostMatrix operand's
// row padding is zeroed). An empty product runs nothing: with K = 0, C is
// zeros. The GPU buffers are kept for the next Mul until Release
// (docs/LIBRARY.md). Safe from any goroutine.
//
// It panics if the shapes disagree, a dimension is negative, or a slice
// is too short for its shape and stride.
func (d *Device) Mul(c, a, b blas32.General, opts *MulOptions) (Timings, error) {
	if checkProduct(dims32(c), dims32(a), dims32(b)) {
		d.emptyProduct(opts)
		if c.Rows > 0 && c.Cols > 0 { // K = 0: C = A·B is zero
			for i := range c.Rows {
				clear(c.Data[i*c.Stride : i*c.Stride+c.Cols])
			}
		}
		return Timings{}, nil
	}
	hp, err := d.planHost(a.Rows, a.Cols, b.Cols, opts)
	if err != nil {
		return Timings{}, err
	}
	idle := d.idle()
	var t Timings
	d.call(func() {
		if hp.paneled {
			t, err = d.mulPanels(c, a, b, &hp, idle)
		} else {
			t, err = d.mul(c, a, b, &hp, idle)
		}
	})
	d.worked()
	return t, err
}

// dims is what the checks of Mul's and Mul64's operands read of a
// matrix, whatever its element type: its shape, stride and data length.
type dims struct{ rows, cols, stride, len int }

func dims32(m blas32.General) dims { return dims{m.Rows, m.Cols, m.Stride, len(m.Data)} }
func dims64(m blas64.General) dims { return dims{m.Rows, m.Cols, m.Stride, len(m.Data)} }

// checkProduct panics unless c = a·b is a product Mul can take: shapes
// that agree, no negative dimension, strides and data that fit the
// shapes. empty reports a product with a dimension 0.
func checkProduct(c, a, b dims) (empty bool) {
	emptyA, emptyB, emptyC := a.checkOperand(), b.checkOperand(), c.checkOperand()
	if a.cols != b.rows {
		panic("glcompute: inner dimensions of A and B differ")
	}
	if c.rows != a.rows || c.cols != b.cols {
		panic("glcompute: C has the wrong shape")
	}
	return emptyA || emptyB || emptyC
}

// emptyProduct checks what an empty product checks: its options, and
// that the Device is open.
func (d *Device) emptyProduct(opts *MulOptions) {
	if opts != nil {
		opts.check()
	}
	d.checkOpen()
}

// checkGeneral panics unless m has at least a row and a column, a stride
// no shorter than a row, and data for its shape.
func checkGeneral(m blas32.General) {
	if m.Rows < 1 || m.Cols < 1 {
		panic("glcompute: matrix dimension below 1")
	}
	dims32(m).checkLayout()
}

// checkOperand is checkGeneral for an operand of Mul, which may have no
// rows or no columns (empty reports so); its data may then be nil.
func checkOperand(m blas32.General) (empty bool) { return dims32(m).checkOperand() }

func (m dims) checkOperand() (empty bool) {
	if m.rows < 0 || m.cols < 0 {
		panic("glcompute: negative matrix dimension")
	}
	if m.rows == 0 || m.cols == 0 {
		if m.stride < m.cols {
			panic("glcompute: stride shorter than a row")
		}
		return true
	}
	m.checkLayout()
	return false
}

// checkLayout panics unless m's stride and data fit its shape (rows and
// cols at least 1).
func (m dims) checkLayout() {
	if m.stride < m.cols {
		panic("glcompute: stride shorter than a row")
	}
	if m.len < (m.rows-1)*m.stride+m.cols {
		panic("glcompute: matrix data shorter than its shape")
	}
}

// hostPlan is how one host product runs: its options with the defaults
// filled in, its kernels, and its panels where it runs in panels.
type hostPlan struct {
	o       MulOptions
	kernels hostKernels
	panels  dispatch.PanelPlan
	paneled bool
	// forcePanels: panels even where the product fits (a Group's device
	// runs its column panels as a panel product).
	forcePanels bool
}

// planHost plans an m×k by k×n product of host matrices with opts: the
// one place where Mul and Plan choose the kernel (chooseHost), check what
// the driver allows, and decide on panels (planPanels).
func (d *Device) planHost(m, k, n int, opts *MulOptions) (hp hostPlan, err error) {
	return d.planHostPanels(m, k, n, opts, false)
}

// planHostPanels is planHost, in panels where forcePanels is set.
func (d *Device) planHostPanels(m, k, n int, opts *MulOptions, forcePanels bool) (hp hostPlan, err error) {
	hp.forcePanels = forcePanels
	d.mustBeOpen()
	if opts != nil {
		hp.o = *opts
	}
	hp.o.check()
	if hp.o.MaxGroups == 0 {
		hp.o.MaxGroups = DefaultMaxGroups
	}
	if err := d.checkMaxGroups(hp.o.MaxGroups); err != nil {
		return hp, err
	}
	if hp.kernels, err = d.chooseHost(hp.o.Kernel, m, k, n); err != nil {
		return hp, err
	}
	if err := d.fits(hp.kernels.kern); err != nil {
		return hp, err
	}
	if kern := hp.kernels.kern; kern.StepK == 0 && d.kSlices(kern, k) > 1 {
		return hp, d.errLoopBudget(kern, k)
	}
	hp.panels, hp.paneled, err = d.planPanels(m, k, n, &hp)
	return hp, err
}

// checkMaxGroups returns ErrUnsupported for a MaxGroups over the
// driver's limit.
func (d *Device) checkMaxGroups(groups int) error {
	if lim := min(d.info.MaxWorkGroupCount[0], d.info.MaxWorkGroupCount[1]); groups > lim {
		return fmt.Errorf("%w: %d work groups per dispatch requested, the driver allows %d (GL_MAX_COMPUTE_WORK_GROUP_COUNT)", ErrUnsupported, groups, lim)
	}
	return nil
}

// mul runs on the device thread: a hostProduct, offered to the Measure
// hook stage by stage, then pipelined. idle is how long the device had
// no work before this Mul (stages.Idle).
func (d *Device) mul(c, a, b blas32.General, hp *hostPlan, idle time.Duration) (t Timings, err error) {
	d.clearErrors()
	o := &hp.o
	h := &hostProduct{d: d, o: o, kernels: hp.kernels, m: a.Rows, k: a.Cols, n: b.Cols}
	defer h.release()
	if err := h.plan(c, a, b); err != nil {
		return t, err
	}
	t.Kernel = h.p.kernel.Spec()
	t.Dispatches, t.Groups, t.Splits = len(h.chunks.Chunks)+len(h.edges), [2]int{h.chunks.GroupsX, h.chunks.GroupsY}, h.splits
	if h.edge != nil {
		t.EdgeKernel = h.edge.kernel.Spec()
		for _, c := range h.edges {
			t.EdgeGroups += c.GroupsX * c.GroupsY
		}
	}
	if !h.runsWhole() {
		t.Splits = 1 // the only pass runs its bands unsplit
	}
	if h.sk != nil {
		t.StreamKTiles, t.StreamKGroups = h.sk.tiles, h.sk.groups
		t.Dispatches = 2 + len(h.sk.fixChunks)
	}
	if err := h.alloc(); err != nil {
		return t, err
	}
	defer d.unbindAll()
	if o.Measure != nil {
		if err := o.Measure(&stages{h: h, c: c, a: a, b: b, idle: idle}); err != nil {
			return t, err
		}
	}
	pt, err := h.pipelined(c, a, b, o.Progress)
	pt.fill(&t)
	return t, err
}

// stopped returns the error of o.Context once it is done, else nil.
func (o *MulOptions) stopped() error {
	if o.Context == nil {
		return nil
	}
	return o.Context.Err()
}
