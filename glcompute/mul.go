package glcompute

import (
	"context"
	"errors"
	"fmt"
	"math"
	"time"

	"gonum.org/v1/gonum/blas/blas32"

	"github.com/glmul/glmul/glcompute/internal/dispatch"
	"github.com/glmul/glmul/glcompute/internal/glw"
	"github.com/glmul/glmul/internal/tuning"
	"github.com/glmul/glmul/shaders"
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
	// no split.
	SplitK int
	// Progress, if set, is called as each block of C arrives in host
	// memory (Timings.Steps of them), with the number done and the total.
	// It runs on the device's thread and must not call the Device. Zero
	// value: no calls.
	Progress func(done, total int)
	// Context, if set, is checked between the steps of the pipelined pass
	// (bands or panels): once it is done, Mul stops after the step in
	// progress and returns its error. A single dispatch cannot be stopped.
	// Zero value: nil, never stopped.
	Context context.Context
	// MaxBinding lowers the bytes one matrix may take in one shader
	// storage binding below the driver's GL_MAX_SHADER_STORAGE_BLOCK_SIZE,
	// and MaxGPUMemory caps the bytes of GPU buffers a product may use.
	// A product over either runs in panels (Timings.Panels), streaming
	// A again for every column panel of B when all of A does not fit:
	// lowering them makes small products exercise those paths. Zero
	// values: the driver's limit, and no memory cap.
	MaxBinding, MaxGPUMemory int64
	// Measure, if set, is called once the product is planned and its GPU
	// buffers are allocated, before the pipelined pass that gives C: it
	// may run the product's stages one at a time through Stages (upload,
	// whole runs, readback) to time them; whatever it leaves in the
	// buffers, the pass then computes C afresh. It runs on the device's
	// thread and must not call the Device. An error it returns ends Mul
	// with that error. glmul's measurements (warm-up, repetitions, the GL
	// timer) are made so, outside the library. Zero value: the product
	// runs once, pipelined.
	Measure func(*Stages) error
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

// Timings of one Mul: its plan and its pipelined pass. Times are wall
// clock on the CPU, except Compute where GPUTimer says otherwise.
type Timings struct {
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
	// Groups is the number of work groups along x (columns) and y (rows)
	// (over all panels of a product run in panels).
	Groups [2]int `json:"groups"`
	// Panels describes the panel plan of a product run in panels (see
	// MulOptions.MaxBinding), "" for one run in one piece.
	Panels string `json:"panels,omitempty"`
	// EndToEnd is the wall time of the pipelined pass: from A and B in
	// host memory to C in host memory, in Steps blocks of C (row bands of
	// C, or panels), uploading the next block's operands and reading back
	// the last block of C while the GPU computes the current one. Context
	// creation and a Measure hook are not in it.
	EndToEnd time.Duration `json:"end_to_end_ns"`
	Steps    int           `json:"pipeline_steps"`
	// Upload, Compute and Readback are each stage's busy time within the
	// pass: the host's copies into and out of the staging buffers, the
	// GPU's time with the dispatches in flight (by GL_TIMESTAMP queries
	// where GPUTimer, else the wall time of the dispatch calls, as on a
	// driver that computes within them). Their sum exceeds EndToEnd by
	// what overlapped; Compute never exceeds it.
	Upload   time.Duration `json:"upload_ns"`
	Compute  time.Duration `json:"compute_ns"`
	Readback time.Duration `json:"readback_ns"`
	GPUTimer bool          `json:"gpu_timer"`
	// UploadBytes and ReadbackBytes are the bytes the pass moved each way.
	UploadBytes   int64 `json:"upload_bytes"`
	ReadbackBytes int64 `json:"readback_bytes"`
}

// maxIndex is the largest element index the kernels' 32-bit uint arithmetic
// can address.
const maxIndex = math.MaxUint32

// CheckShape reports whether an m×k by k×n product fits one binding: each
// matrix, its rows padded to 4 floats as the kernels hold them, within one
// shader storage block (checkBlock). Mul runs larger products in panels
// (see Plan, which says whether a product can run at all). It returns an error matching
// ErrTooLarge that names the limit and the largest square size that fits.
// It panics if a dimension is below 1. Safe from any goroutine.
func (d *Device) CheckShape(m, k, n int) error {
	if m < 1 || k < 1 || n < 1 {
		panic("glcompute: matrix dimension below 1")
	}
	padded := func(rows, cols int) int64 { return 4 * int64(rows) * int64(roundUp(cols, 4)) }
	for _, mat := range []struct {
		name       string
		rows, cols int
	}{{"A", m, k}, {"B", k, n}, {"C", m, n}} {
		err := d.checkBlock(fmt.Sprintf("%s is %d×%d float32 =", mat.name, mat.rows, mat.cols), padded(mat.rows, mat.cols))
		if err == nil {
			continue
		}
		largest := int(math.Sqrt(float64(d.info.MaxSSBOBlockSize / 4)))
		for largest > 1 && d.checkBlock("", padded(largest, largest)) != nil {
			largest--
		}
		return fmt.Errorf("%w; the largest square size that fits is n = %d", err, largest)
	}
	return nil
}

// checkBlock is the one rule for what fits one shader storage binding: at
// most GL_MAX_SHADER_STORAGE_BLOCK_SIZE bytes, and floats that 32-bit
// indices reach. what names the data ("the split-K workspace is").
func (d *Device) checkBlock(what string, bytes int64) error {
	if limit := d.info.MaxSSBOBlockSize; bytes > limit || bytes/4 > maxIndex {
		return fmt.Errorf("%w: %s %s, over this driver's largest shader storage block (GL_MAX_SHADER_STORAGE_BLOCK_SIZE = %s)",
			ErrTooLarge, what, formatBytes(float64(bytes)), formatBytes(float64(limit)))
	}
	return nil
}

func formatBytes(b float64) string {
	switch {
	case b >= 1<<30:
		return fmt.Sprintf("%.2f GiB", b/(1<<30))
	case b >= 1<<20:
		return fmt.Sprintf("%.1f MiB", b/(1<<20))
	}
	return fmt.Sprintf("%.0f bytes", b)
}

// Mul computes C = A·B on the GPU in one pipelined pass: A and B go up
// in blocks while the GPU computes and the finished blocks of C come back
// (Timings). A product over one binding or MaxGPUMemory runs in panels
// (see Plan). C is
// overwritten entirely; A and B are not modified (a HostMatrix operand's
// row padding is zeroed). Safe from any goroutine.
//
// The GPU buffers of A, B and C are kept for the next Mul, which reuses
// them where they are large enough (see keepBuffers). They are freed by
// Release, by a product in panels or under MaxGPUMemory, or when an
// allocation fails.
//
// It panics if the shapes disagree or a slice is too short for its shape and
// stride.
func (d *Device) Mul(c, a, b blas32.General, opts *MulOptions) (Timings, error) {
	checkGeneral(a)
	checkGeneral(b)
	checkGeneral(c)
	if a.Cols != b.Rows {
		panic("glcompute: inner dimensions of A and B differ")
	}
	if c.Rows != a.Rows || c.Cols != b.Cols {
		panic("glcompute: C has the wrong shape")
	}
	var o MulOptions
	if opts != nil {
		o = *opts
	}
	o.check()
	if o.Kernel == "" || o.Kernel == "fast" {
		o.Kernel = d.kernelFor(a.Rows, a.Cols, b.Cols)
	}
	if o.MaxGroups == 0 {
		o.MaxGroups = DefaultMaxGroups
	}
	if lim := min(d.info.MaxWorkGroupCount[0], d.info.MaxWorkGroupCount[1]); o.MaxGroups > lim {
		return Timings{}, fmt.Errorf("%w: %d work groups per dispatch requested, the driver allows %d (GL_MAX_COMPUTE_WORK_GROUP_COUNT)", ErrUnsupported, o.MaxGroups, lim)
	}
	plan, paneled, err := d.planPanels(a.Rows, a.Cols, b.Cols, &o)
	if err != nil {
		return Timings{}, err
	}
	idle := d.idle()
	var t Timings
	d.call(func() {
		if paneled {
			t, err = d.mulPanels(c, a, b, &o, plan, idle)
		} else {
			t, err = d.mul(c, a, b, &o, idle)
		}
	})
	d.worked()
	return t, err
}

func checkGeneral(m blas32.General) {
	if m.Rows < 1 || m.Cols < 1 {
		panic("glcompute: matrix dimension below 1")
	}
	if m.Stride < m.Cols {
		panic("glcompute: stride shorter than a row")
	}
	if len(m.Data) < (m.Rows-1)*m.Stride+m.Cols {
		panic("glcompute: matrix data shorter than its shape")
	}
}

// roundUp rounds x up to a multiple of align.
func roundUp(x, align int) int { return (x + align - 1) / align * align }

// clearErrors drains glGetError before glmul's own calls; never on a
// borrowed context, whose error flags are the host's.
func (d *Device) clearErrors() {
	if !d.borrowed {
		glw.ClearErrors()
	}
}

// checkError returns glmul's GL errors after a step; nil on a borrowed
// context (see NewDeviceFromCurrent).
func (d *Device) checkError(what string) error {
	if d.borrowed {
		return nil
	}
	if err := glw.CheckError(what); err != nil {
		return driverError(err)
	}
	return nil
}

// driverError classifies a GL error.
func driverError(err error) error {
	if errors.Is(err, glw.ErrOutOfMemory) {
		return fmt.Errorf("%w: %w", ErrOutOfMemory, err)
	}
	return fmt.Errorf("%w: %w", ErrDriver, err)
}

// mul runs on the device thread: a hostProduct, offered to the Measure
// hook stage by stage, then pipelined. idle is how long the device had
// no work before this Mul (Stages.Idle).
func (d *Device) mul(c, a, b blas32.General, o *MulOptions, idle time.Duration) (t Timings, err error) {
	d.clearErrors()
	h := &hostProduct{d: d, o: o, m: a.Rows, k: a.Cols, n: b.Cols}
	defer h.release()
	if err := h.plan(); err != nil {
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
	if o.Measure == nil && h.rowsPerBand() < h.m {
		t.Splits = 1 // the only pass runs its bands unsplit
	}
	if err := h.alloc(); err != nil {
		return t, err
	}
	defer d.unbindAll()
	if o.Measure != nil {
		if err := o.Measure(&Stages{h: h, c: c, a: a, b: b, idle: idle}); err != nil {
			return t, err
		}
	}
	pt, err := h.pipelined(c, a, b, o.Progress)
	pt.fill(&t)
	return t, err
}

// pipelineBands is how many row bands of C a product in one piece is
// pipelined in (fewer when M is under that many tiles).
const pipelineBands = 4

// pipelined runs the product once in row bands of C (bandRows): B and
// A's first band up, then, while the GPU computes band i, the host uploads
// band i+1 of A and reads back band i−1 of C. A kernel without row offsets
// (tiled32) and a product split along K to fill the GPU run as one band;
// one split only to fill its last wave (waveSplit) runs its bands unsplit,
// the bands cut to whole waves instead.
func (h *hostProduct) pipelined(c, a, b blas32.General, report func(done, total int)) (passTimes, error) {
	rowsPer := h.rowsPerBand()
	var steps []pipeStep
	for r0 := 0; r0 < h.m; r0 += rowsPer {
		rows := min(rowsPer, h.m-r0)
		s := pipeStep{
			up:     []upTransfer{{dst: view{buf: h.bufA, off: r0 * h.lda, stride: h.lda}, src: part{m: a, r0: r0, rows: rows, cols: h.k}}},
			c:      view{buf: h.bufC, off: r0 * h.ldc, stride: h.ldc},
			out:    part{m: c, r0: r0, rows: rows, cols: h.n},
			poison: rows * h.ldc,
			run:    h.band(r0, rows),
		}
		if r0 == 0 {
			s.up = append([]upTransfer{{dst: view{buf: h.bufB, stride: h.ldb}, src: part{m: b, rows: h.k, cols: h.n}}}, s.up...)
		}
		if rows == h.m {
			s.run = func() error { h.bind(); h.run(); return nil }
		}
		steps = append(steps, s)
	}
	pl := &pipeline{d: h.d, o: h.o, steps: steps, report: report}
	return pl.run()
}

// band returns the step that computes rows [r0, r0+rows) of C: the kernel
// with its row offsets moved to the band.
// rowsPerBand is how many rows of C a step of the pipelined pass
// computes: h.m (one step) for a kernel without row offsets and for a
// product split along K to fill the GPU.
func (h *hostProduct) rowsPerBand() int {
	k := h.p.kernel
	if !k.Strided || h.splits > 1 && !h.waveSplit {
		return h.m
	}
	waveRows := 0
	if h.slots > 0 {
		waveRows = h.slots / h.chunks.GroupsX
	}
	return bandRows(h.m, k.TileM, pipelineBands, max(h.lda, h.ldc), h.d.stage().bytes, waveRows)
}

func (h *hostProduct) band(r0, rows int) func() error {
	return func() error {
		if h.tr != nil {
			h.transposeA(r0, rows)
		}
		h.p.prog.Use()
		h.d.bindStorage(h.p, 0, h.kernelA(), 0, 0)
		h.d.bindStorage(h.p, 1, h.bufB, 0, 0)
		h.bufC.BindStorage(2)
		h.p.setUints(uniform{"M", rows}, uniform{"offA4", h.offA4(r0)}, uniform{"offC4", r0 * h.ldc / 4}, uniform{"ksplit", h.k})
		if h.edge != nil { // the band's own interior and strips
			k, ek := h.p.kernel, h.edge.kernel
			if interior, edges, ok := dispatch.Edges(rows, h.n, k.TileM, k.TileN, ek.TileM, ek.TileN, h.o.MaxGroups); ok {
				h.p.dispatchChunks(interior)
				h.runEdges(edges, rows, r0)
				return nil
			}
		}
		_, err := h.p.dispatchTiles(rows, h.n, h.o.MaxGroups)
		return err
	}
}

// runEdges queues the edge kernel over the strips edges of the rows of C
// from r0 on (rows of them), with no barrier before: the strips are
// elements of C that the interior's dispatches do not write.
func (h *hostProduct) runEdges(edges []dispatch.Chunk, rows, r0 int) {
	h.edge.prog.Use()
	if h.tr != nil { // the edge kernel reads A as it is
		h.d.bindStorage(h.edge, 0, h.bufA, 0, 0)
	}
	h.edge.setUints(uniform{"M", rows}, uniform{"K", h.k}, uniform{"N", h.n}, uniform{"lda", h.lda}, uniform{"ldb", h.ldb},
		uniform{"ldc", h.ldc}, uniform{"offA4", r0 * h.lda / 4}, uniform{"offB4", 0}, uniform{"offC4", r0 * h.ldc / 4}, uniform{"ksplit", h.k})
	h.edge.dispatchChunks(dispatch.Plan{Chunks: edges})
}

// hostProduct is one Mul of host matrices: its kernel and plan, its GPU
// buffers (rows padded as the kernel needs), the split-K workspace, and the
// progress of its dispatches. Every method runs on the device thread.
type hostProduct struct {
	d             *Device
	o             *MulOptions
	m, k, n       int
	p, red        *program // the kernel; reduce.comp for split-K
	chunks        dispatch.Plan
	lda, ldb, ldc int
	bufA, bufB    glw.Buffer
	bufC, work    glw.Buffer
	held          []pooled // A, B and C's buffers, from the device's pool
	splits        int      // K slices: 1 without split-K
	ksplit        int      // K per slice
	// slots is how many of the kernel's work groups the GPU runs at once
	// where known (0: unknown), and waveSplit says the K split only fills
	// the last of several waves (tuning.AutoSplitK).
	slots     int
	waveSplit bool
	reduce    []dispatch.LinearChunk
	progress  progress
	// edge and edges: where the kernel's tiles leave strips of C past
	// whole tiles, a smaller-tiled kernel and its dispatches over them
	// (dispatch.Edges); chunks then covers the interior only.
	edge  *program
	edges []dispatch.Chunk
	// tr, bufT and ldt: for a kernel that reads A transposed
	// (Kernel.TransposeA), transpose.comp and the K×ldt transpose it
	// writes from bufA before each product or band (transposeA).
	tr   *program
	bufT glw.Buffer
	ldt  int
}

// kernelA is the buffer the kernel reads A from: A, or its transpose.
func (h *hostProduct) kernelA() glw.Buffer {
	if h.tr != nil {
		return h.bufT
	}
	return h.bufA
}

// offA4 is the kernel's offA4 for the rows of C from r0 on: A's row r0,
// or the transpose's column r0 (bands start at multiples of 4 rows).
func (h *hostProduct) offA4(r0 int) int {
	if h.tr != nil {
		return r0 / 4
	}
	return r0 * h.lda / 4
}

// transposeA writes rows [r0, r0+rows) of A as columns of bufT (the last
// rows also the zero columns up to ldt), then the storage barrier that
// makes them visible to the kernel. No barrier before it: no dispatch
// still queued reads what it writes (bands write disjoint columns, and the
// runs of a product and products follow a glFinish or a readback); one
// there cost the pipelined 4096³ 0.5-1.3 ms of its overlap on the H100.
// It leaves its own program and bindings: the kernel's are made again
// after it.
func (h *hostProduct) transposeA(r0, rows int) {
	cols := rows
	if r0+rows == h.m {
		cols = h.ldt - r0
	}
	h.tr.prog.Use()
	h.d.bindStorage(h.tr, 0, h.bufA, 0, 0)
	h.bufT.BindStorage(2)
	h.tr.transpose(rows, cols, h.k, h.lda, h.ldt, r0*h.lda, r0, h.o.MaxGroups) // its plan was checked in plan
}

// transpose queues transpose.comp (tr, in use, with A bound at 0 and T at
// 2): rows rows of A (K floats each, lda apart, from element offA) become
// columns offT… of T (K rows, ldt apart), cols of them, those past rows
// written as zero; then the storage barrier that makes T visible to the
// kernel.
func (tr *program) transpose(rows, cols, k, lda, ldt, offA, offT, maxGroups int) error {
	tr.setUints(uniform{"rows", rows}, uniform{"cols", cols}, uniform{"K", k}, uniform{"lda", lda},
		uniform{"ldt", ldt}, uniform{"offA", offA}, uniform{"offT", offT})
	if _, err := tr.dispatchTiles(k, cols, maxGroups); err != nil {
		return err
	}
	glw.BarrierStorage()
	return nil
}

// plan compiles the kernel and plans the dispatches and the K split.
func (h *hostProduct) plan() error {
	var err error
	if h.p, err = h.d.program(h.o.Kernel); err != nil {
		return err
	}
	if h.chunks, err = dispatch.New(h.m, h.n, h.p.kernel.TileM, h.p.kernel.TileN, h.o.MaxGroups); err != nil {
		return fmt.Errorf("glcompute: %w", err)
	}
	al := h.p.kernel.Align
	h.lda, h.ldb, h.ldc = roundUp(h.k, al), roundUp(h.n, al), roundUp(h.n, al)
	h.splits, h.ksplit = 1, h.k
	kernelLda := h.lda
	if h.p.kernel.TransposeA {
		if h.tr, err = h.d.programOf(shaders.Transpose()); err != nil {
			return err
		}
		h.ldt = roundUp(h.m, al)
		kernelLda = h.ldt
		if _, err := h.tr.plan(h.k, h.ldt, h.o.MaxGroups); err != nil {
			return err
		}
	}
	if h.p.kernel.TileM*h.p.kernel.TileN >= tuning.OneGroupPerSM {
		h.slots = h.d.info.SMCount
	}
	if err := h.planEdges(); err != nil {
		return err
	}
	split := h.o.SplitK
	if groups, wave := h.chunks.GroupsX*h.chunks.GroupsY, tuning.Wave(h.d.tuningDriver()); split == 0 {
		split = tuning.AutoSplitK(groups, h.k, wave, h.slots)
		h.waveSplit = groups >= wave
	}
	if split > 1 && h.p.kernel.StepK > 0 {
		h.ksplit = roundUp((h.k+split-1)/split, h.p.kernel.StepK)
		h.splits = (h.k + h.ksplit - 1) / h.ksplit
	}
	h.p.prog.Use()
	h.p.setUints(uniform{"M", h.m}, uniform{"K", h.k}, uniform{"N", h.n})
	if h.p.kernel.Strided {
		h.p.setUints(uniform{"lda", kernelLda}, uniform{"ldb", h.ldb}, uniform{"ldc", h.ldc},
			uniform{"offA4", 0}, uniform{"offB4", 0}, uniform{"offC4", 0}, uniform{"ksplit", h.ksplit})
	}
	if h.splits == 1 || h.o.Measure == nil && h.rowsPerBand() < h.m {
		return nil // no pass runs the split: no workspace
	}
	count := h.m * h.ldc / 4 // vec4s of C
	if err := h.d.checkBlock(fmt.Sprintf("the split-K workspace of %d partial results is", h.splits), 4*int64(h.splits)*int64(count)*4); err != nil {
		return err
	}
	if h.red, err = h.d.programOf(shaders.Reduce()); err != nil {
		return err
	}
	h.reduce = dispatch.Linear(count, h.red.kernel.Threads)
	h.red.prog.Use()
	h.red.setUints(uniform{"count", count}, uniform{"offC4", 0})
	h.work, err = h.d.newBuffer(4*h.splits*h.m*h.ldc, nil, glw.StaticRead, "creating the split-K workspace")
	if errors.Is(err, ErrOutOfMemory) && len(h.d.pool) > 0 {
		h.d.drainPool()
		h.d.clearErrors()
		h.work, err = h.d.newBuffer(4*h.splits*h.m*h.ldc, nil, glw.StaticRead, "creating the split-K workspace")
	}
	return err
}

// planEdges replaces the kernel's plan by its interior and the strips past
// it (dispatch.Edges), computed by the device's small-grid kernel in the
// same pass, where tuning.UseEdges says the strips fit beside the
// interior's last wave (h.slots known, the kernel's tiles filling a
// multiprocessor) and the interior runs unsplit (edges write C, not the
// split-K workspace): the K split plan then decides is 1.
func (h *hostProduct) planEdges() error {
	spec := h.d.info.SmallGridKernel
	k := h.p.kernel
	if h.slots == 0 || h.o.SplitK > 1 || spec == "" || spec == k.Spec() || !k.Strided {
		return nil
	}
	ek, err := shaders.Lookup(spec)
	if err != nil || ek.StepK == 0 || ek.Textures != k.Textures { // one set of bindings serves both
		return nil
	}
	interior, edges, ok := dispatch.Edges(h.m, h.n, k.TileM, k.TileN, ek.TileM, ek.TileN, h.o.MaxGroups)
	if !ok {
		return nil
	}
	groups := 0
	for _, c := range edges {
		groups += c.GroupsX * c.GroupsY
	}
	ig := interior.GroupsX * interior.GroupsY
	if !tuning.UseEdges(ig, groups, h.slots) || h.o.SplitK == 0 && tuning.AutoSplitK(ig, h.k, tuning.Wave(h.d.tuningDriver()), h.slots) > 1 {
		return nil
	}
	if h.edge, err = h.d.program(spec); err != nil {
		return err
	}
	h.chunks, h.edges = interior, edges
	return nil
}

// alloc takes the GPU buffers of A, B and C from the device's pool or
// creates them (device memory, never mapped, where the driver has
// glBufferStorage).
func (h *hostProduct) alloc() error {
	if h.o.MaxGPUMemory > 0 { // a cap counts this product's buffers only
		h.d.drainPool()
	}
	immutable := h.d.stage().bufferStorage
	type wanted struct {
		buf   *glw.Buffer
		bytes int
		name  string
	}
	bufs := []wanted{{&h.bufA, 4 * h.m * h.lda, "A"}, {&h.bufB, 4 * h.k * h.ldb, "B"}, {&h.bufC, 4 * h.m * h.ldc, "C"}}
	if h.tr != nil {
		bufs = append(bufs, wanted{&h.bufT, 4 * h.k * h.ldt, "A's transpose"})
	}
	for _, x := range bufs {
		b, ok := h.d.takeBuffer(x.bytes, immutable)
		if !ok {
			return fmt.Errorf("%w: %s: the driver could not allocate %s", ErrOutOfMemory, x.name, formatBytes(float64(x.bytes)))
		}
		*x.buf = b.buf
		h.held = append(h.held, b)
	}
	return nil
}

// upload copies A and B into their buffers through the staging buffers
// and poisons C with NaN (an element the kernel fails to write then fails
// validation), and returns how long that took, to the GPU's finish.
func (h *hostProduct) upload(a, b blas32.General) (time.Duration, error) {
	start := time.Now()
	st := h.d.stage()
	for _, x := range []struct {
		g   blas32.General
		buf glw.Buffer
		ld  int
	}{{a, h.bufA, h.lda}, {b, h.bufB, h.ldb}} {
		if hm := h.d.hostMatrix(x.g, x.ld); hm != nil {
			hm.copyIn(view{buf: x.buf}, 0, hm.Rows)
		} else if err := st.upload(view{buf: x.buf, stride: x.ld}, x.g); err != nil {
			return 0, err
		}
	}
	if err := h.d.poison(h.bufC, 4*h.m*h.ldc); err != nil {
		return 0, err
	}
	glw.Finish()
	return time.Since(start), h.d.checkError("uploading A and B")
}

// bind binds A, B and C (or the split-K workspace) for the kernel.
func (h *hostProduct) bind() {
	h.d.bindStorage(h.p, 0, h.kernelA(), 0, 0)
	h.d.bindStorage(h.p, 1, h.bufB, 0, 0)
	if h.splits > 1 {
		h.work.BindStorage(2)
	} else {
		h.bufC.BindStorage(2)
	}
}

// unbindAll empties storage bindings 0–2, the current program and the
// buffer textures; on the device thread.
func (d *Device) unbindAll() {
	d.detachTextures()
	for i := uint32(0); i < 3; i++ {
		glw.Buffer(0).BindStorage(i)
	}
	glw.Program(0).Use()
}

// run queues one whole product: the kernel's dispatches and, with
// split-K, the reduction into C.
func (h *hostProduct) run() {
	if h.tr != nil {
		h.transposeA(0, h.m)
	}
	h.p.prog.Use()
	if h.splits > 1 || h.tr != nil {
		h.bind()
	}
	if h.p.kernel.Strided { // a pipelined pass's bands change these
		h.p.setUints(uniform{"M", h.m}, uniform{"offA4", 0}, uniform{"offC4", 0}, uniform{"ksplit", h.ksplit})
	}
	for _, ch := range h.chunks.Chunks {
		if h.p.pace != nil && h.splits == 1 {
			h.p.dispatchPaced(ch) // a K split's slices are not paced (pacing.go)
		} else {
			h.p.setUint("x0", uint32(ch.X0))
			h.p.setUint("y0", uint32(ch.Y0))
			glw.Dispatch3(ch.GroupsX, ch.GroupsY, h.splits)
		}
		h.progress.dispatched()
	}
	if h.edge != nil { // unsplit (plan): C is bound, not the workspace
		h.runEdges(h.edges, h.m, 0)
	}
	if h.splits > 1 {
		glw.BarrierStorage()
		h.red.prog.Use()
		h.work.BindStorage(0)
		h.bufC.BindStorage(2)
		for _, ch := range h.reduce {
			h.red.setUint("first", uint32(ch.First))
			glw.Dispatch(ch.GroupsX, ch.GroupsY)
		}
	}
	h.progress.drain()
}

// readBack copies C into c through the staging buffers and returns how
// long that took.
func (h *hostProduct) readBack(c blas32.General) (time.Duration, error) {
	start := time.Now()
	if hm := h.d.hostMatrix(c, h.ldc); hm != nil {
		f := hm.copyOut(view{buf: h.bufC}, 0, hm.Rows)
		f.Signaled(^uint64(0))
		f.Release()
	} else if err := h.d.stage().download(c, view{buf: h.bufC, stride: h.ldc}); err != nil {
		return 0, err
	}
	return time.Since(start), h.d.checkError("reading C back")
}

// release returns A, B and C's buffers (and A's transpose) to the
// device's pool and deletes the workspace.
func (h *hostProduct) release() {
	if len(h.held) > 0 { // a product that failed before allocating keeps the pool as it was
		h.d.keepBuffers(h.held)
	}
	h.held, h.bufA, h.bufB, h.bufC, h.bufT = nil, 0, 0, 0, 0
	h.work.Release()
}

// stopped returns the error of o.Context once it is done, else nil.
func (o *MulOptions) stopped() error {
	if o.Context == nil {
		return nil
	}
	return o.Context.Err()
}

// progress calls onDispatch as the dispatches of a run complete, through
// a fence after each (Stages.Run).
type progress struct {
	onDispatch func()
	pending    []glw.Fence
}

func (p *progress) dispatched() {
	if p.onDispatch == nil {
		return
	}
	glw.Flush()
	p.pending = append(p.pending, glw.NewFence())
	p.poll(0)
}

// poll reports the fences that have passed, waiting up to timeoutNs for each.
func (p *progress) poll(timeoutNs uint64) {
	for len(p.pending) > 0 && p.pending[0].Signaled(timeoutNs) {
		p.pending[0].Release()
		p.pending = p.pending[1:]
		p.onDispatch()
	}
}

// drain waits for every pending fence.
func (p *progress) drain() {
	for len(p.pending) > 0 {
		p.poll(uint64(100 * time.Millisecond))
	}
}
