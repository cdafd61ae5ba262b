package glcompute

import (
	"errors"
	"fmt"
	"time"

	"gonum.org/v1/gonum/blas/blas32"

	"github.com/glmul/glmul/glcompute/internal/dispatch"
	"github.com/glmul/glmul/glcompute/internal/glw"
	"github.com/glmul/glmul/glcompute/internal/staging"
	"github.com/glmul/glmul/glcompute/tuning"
	"github.com/glmul/glmul/internal/cause"
	"github.com/glmul/glmul/shaders"
)

// hostPlan is how one host product runs: its options with the defaults
// filled in, its kernels, and its panels where it runs in panels.
type hostPlan struct {
	o       MulOptions
	kernels hostKernels
	panels  dispatch.PanelPlan
	paneled bool
	// forcePanels: panels even where the product fits (a device group's device
	// runs its column panels as a panel product).
	forcePanels bool
	// unit lays out the streamed panel pass (unitstream.go) of a product
	// in panels, Mul's or a group device's; its kern's Name "": none,
	// the product runs as a panel product.
	unit unitLayout
}

// hostProduct is one Mul of host matrices: its kernel and plan, its GPU
// buffers (rows padded as the kernel needs), the split-K workspace, and the
// progress of its dispatches. Every method runs on the device thread.
type hostProduct struct {
	d             *Device
	o             *MulOptions
	kernels       hostKernels
	m, k, n       int
	p, red        *program // the kernel; reduce.comp for split-K
	chunks        dispatch.Plan
	lda, ldb, ldc int
	bufA, bufB    glw.Buffer
	bufC, work    glw.Buffer
	held          []pooled // A, B and C's buffers (and the stream-K workspace), from the device's pool
	splits        int      // K slices: 1 without split-K
	ksplit        int      // K per slice
	// slots is how many of the kernel's work groups the GPU runs at once
	// where known (0: unknown), and waveSplit says the K split only fills
	// the last of several waves (tuning.AutoSplitK).
	slots     int
	waveSplit bool
	// mapped: A, B and C are all mapped host matrices (allMapped), which
	// the GPU reads and writes with no host copy through staging; the pass
	// then runs streamed (streams) or in one step (rowsPerBand). Bands of
	// copy commands overlap nothing here: one context runs the GPU's
	// copies and dispatches in order, and bands only add their fences and
	// waits (docs/PERFORMANCE.md, "Bands, copy goroutines and -mapped in one
	// step").
	mapped bool
	// plainAC: neither A nor C is a mapped host matrix and the staging
	// buffers are mapped persistently, so that a streamed pass can read
	// A's bands from them and write C's there (stagedEnds).
	plainAC  bool
	reduce   []dispatch.LinearChunk
	progress progress
	// edge and edges: where the kernel's tiles leave strips of C past
	// whole tiles, a smaller-tiled kernel and its dispatches over them
	// (dispatch.Edges); chunks then covers the interior only.
	edge  *program
	edges []dispatch.Chunk
	// tr, bufT and ldt: for a kernel that reads A transposed
	// (Kernel.TransposeA), transpose.comp and the K×ldt transpose it
	// writes from bufA before each product or band (transposeA), or a
	// streamed pass from host memory (streamTranspose).
	tr   *program
	bufT glw.Buffer
	ldt  int
	// bandRows and trs: where set (planBands), a whole product (run)
	// transposes A and runs the kernel in bands of bandRows rows, each
	// band's transpose after the first queued beside the kernel on the
	// band before (TransposeStream, trs).
	bandRows int
	trs      *program
	// sk, where set, runs each whole product as stream-K (streamk.go):
	// whole waves of tiles, then the last tiles shared by every
	// multiprocessor. A pass in bands runs the plain kernel.
	sk *streamK
	// outC, where set, is the buffer the kernel writes C into instead of
	// bufC: the pipelined pass of a product whose C is a mapped host
	// matrix writes it there directly (pipelined), with no copy back.
	outC glw.Buffer
}

// cBuf is the buffer the kernel (or split-K's reduction) writes C into.
func (h *hostProduct) cBuf() glw.Buffer {
	if h.outC != 0 {
		return h.outC
	}
	return h.bufC
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

// plan compiles the kernel and plans the dispatches and the K split, for
// the product c = a·b.
func (h *hostProduct) plan(c, a, b blas32.General) error {
	var err error
	if h.p, err = h.d.programOf(h.kernels.kern); err != nil {
		return err
	}
	if h.chunks, err = dispatch.New(h.m, h.n, h.p.kernel.TileM, h.p.kernel.TileN, h.o.MaxGroups); err != nil {
		return fmt.Errorf("glcompute: %w", err)
	}
	al := h.p.kernel.Align
	h.lda, h.ldb, h.ldc = roundUp(h.k, al), roundUp(h.n, al), roundUp(h.n, al)
	h.mapped = h.allMapped(c, a, b)
	h.plainAC = h.d.hostMatrix(a, h.lda) == nil && h.d.hostMatrix(c, h.ldc) == nil && h.d.stage().Persistent
	h.splits, h.ksplit = 1, h.k
	if h.p.kernel.TransposeA {
		if h.tr, err = h.d.programOf(shaders.Transpose()); err != nil {
			return err
		}
		h.ldt = roundUp(h.m, al)
		if _, err := h.tr.plan(h.k, h.ldt, h.o.MaxGroups); err != nil {
			return err
		}
	}
	h.slots = h.d.slots(h.p.kernel)
	if err := h.planEdges(); err != nil {
		return err
	}
	if err := h.planSplit(); err != nil {
		return err
	}
	h.planBands()
	h.p.prog.Use()
	h.p.setUints(uniform{"M", h.m}, uniform{"K", h.k}, uniform{"N", h.n})
	if h.p.kernel.Strided {
		h.p.setUints(uniform{"lda", h.kernelLda()}, uniform{"ldb", h.ldb}, uniform{"ldc", h.ldc},
			uniform{"offA4", 0}, uniform{"offB4", 0}, uniform{"offC4", 0}, uniform{"ksplit", h.ksplit})
	}
	return h.planWorkspace()
}

// planSplit decides the K split: MulOptions.SplitK, else
// tuning.AutoSplitK's, raised to the slices the driver's loop budget
// needs (loops.go: those run the product whole, never in bands), or
// stream-K in its place (planStreamK). A split over MaxGPUMemory is
// dropped, or an error where SplitK or the loop budget asked for it.
func (h *hostProduct) planSplit() error {
	split := h.o.SplitK
	if groups, wave := h.chunks.GroupsX*h.chunks.GroupsY, tuning.Wave(h.d.tuningDriver()); split == 0 {
		split = tuning.AutoSplitK(groups, h.k, wave, h.slots)
		h.waveSplit = groups >= wave
	}
	need := h.d.kSlices(h.p.kernel, h.k)
	if need > 1 {
		split, h.waveSplit = max(split, need), false
	}
	if split > 1 && h.p.kernel.StepK > 0 {
		h.ksplit = roundUp((h.k+split-1)/split, h.p.kernel.StepK)
		h.splits = (h.k + h.ksplit - 1) / h.ksplit
	}
	if need == 1 {
		if err := h.planStreamK(); err != nil {
			return err
		}
	}
	if h.splits > 1 && !h.underCap(4*int64(h.splits)*int64(h.m)*int64(h.ldc)) {
		why := "drop the split or raise the cap"
		if need > 1 {
			why = fmt.Sprintf("K = %d needs at least %d on this driver, %s; raise the cap", h.k, need, h.d.loopLimit())
		}
		if h.o.SplitK > 1 || need > 1 {
			return cause.Mark(fmt.Errorf("%w: split-K in %d slices needs a workspace of %s beside A, B and C, over MulOptions.MaxGPUMemory (%s); %s",
				ErrTooLarge, h.splits, formatBytes(float64(4*h.splits*h.m*h.ldc)), formatBytes(float64(h.o.MaxGPUMemory)), why), cause.SplitKOverCap)
		}
		h.splits, h.ksplit, h.waveSplit = 1, h.k, false
	}
	return nil
}

// planBands plans bands for a whole product (run) whose kernel reads A
// transposed: the transpose of A's first band runs alone, and each later
// band's beside the kernel on the band before, in the multiprocessors its
// last wave leaves idle and as its groups finish, as a streamed pass does
// (hoststream.go); a product in one dispatch waits for the whole transpose
// first (docs/PERFORMANCE.md, "Figures from the library's comments"). Only
// where the bands' waves of work groups add up to no more than the
// product's and each runs at least minBandWaves (transposeBandRows); for a
// product that runs unsplit, without stream-K or edge strips, unpaced
// (program.go: a streamed transpose is one long dispatch), and that runs
// whole at all (under Measure, or a pass in one step). Bands only make it
// faster: where the streamed transpose does not compile, the product runs
// whole.
func (h *hostProduct) planBands() {
	h.bandRows = 0
	if h.tr == nil || h.splits > 1 || h.sk != nil || h.edge != nil || !h.p.kernel.Strided || h.slots == 0 || h.p.pace != nil ||
		!h.runsWhole() {
		return
	}
	rows := transposeBandRows(h.m, h.p.kernel.TileM, h.chunks.GroupsX, h.slots)
	if rows == 0 {
		return
	}
	trs, err := h.d.programOf(shaders.TransposeStream(h.d.streamThreads()))
	if err != nil {
		return
	}
	h.trs, h.bandRows = trs, rows
}

// transposeBands is the most bands planBands cuts a product into, and
// minBandWaves the fewest waves of work groups in each but the last:
// bands of two waves or more gained a little, bands of one wave lost
// (docs/PERFORMANCE.md, "The tenth session").
const (
	transposeBands = 4
	minBandWaves   = 2
)

// transposeBandRows returns the rows of C of each band (whole tiles of
// tile rows; the last band may have fewer) that cut m rows, in tiles of
// groupsX across, into transposeBands bands or fewer but at least two,
// with the waves of slots work groups that the bands run one after the
// other adding up to no more than the whole product's, at least
// minBandWaves in each band but the last, and a whole tile's rows in the
// last (fewer could not move its tiles back into the band before, and
// would read with bounds checks); 0 where none does. 4096³ with 132
// slots (16 rows of 32 tiles): 2 bands of 256 tiles, 2 waves
// each, as the whole product's 3.88; 6144³ (24 rows of 48): 3 bands of
// 384 tiles, 3 waves each, where 4 bands would take 12 waves for the
// product's 9.
func transposeBandRows(m, tile, groupsX, slots int) int {
	tileRows := (m + tile - 1) / tile
	waves := func(tileRows int) int { return (tileRows*groupsX + slots - 1) / slots }
	whole := waves(tileRows)
	for bands := transposeBands; bands >= 2; bands-- {
		per := (tileRows + bands - 1) / bands
		if per >= tileRows || waves(per) < minBandWaves {
			continue
		}
		sum := 0
		for r := 0; r < tileRows; r += per {
			sum += waves(min(per, tileRows-r))
		}
		if last := m - (tileRows-1)/per*per*tile; sum <= whole && last >= tile {
			return per * tile
		}
	}
	return 0
}

// underCap reports whether extra bytes of GPU buffers (a split's or
// stream-K's workspace) fit MulOptions.MaxGPUMemory beside the product's
// A, B, C and A's transpose: the cap counts every buffer a product uses.
func (h *hostProduct) underCap(extra int64) bool {
	if h.o.MaxGPUMemory <= 0 {
		return true
	}
	used := 4 * (int64(h.m)*int64(h.lda) + int64(h.k)*int64(h.ldb) + int64(h.m)*int64(h.ldc))
	if h.tr != nil {
		used += 4 * int64(h.k) * int64(h.ldt)
	}
	return used+extra <= h.o.MaxGPUMemory
}

// kernelLda is the row stride of the A the kernel reads: A's, or its
// transpose's.
func (h *hostProduct) kernelLda() int {
	if h.tr != nil {
		return h.ldt
	}
	return h.lda
}

// planWorkspace makes the split-K workspace and compiles reduce.comp where
// a pass will run the product split.
func (h *hostProduct) planWorkspace() error {
	if h.splits == 1 || !h.runsWhole() {
		return nil // no pass runs the split: no workspace
	}
	var err error
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
// split-K workspace): the K split plan then decides is 1. Only for tiles
// of OneGroupPerSM accumulators, the 128×256 and 256×128 tiles the rule
// was measured with.
func (h *hostProduct) planEdges() error {
	ek, k := h.kernels.edge, h.p.kernel
	if h.slots == 0 || k.TileM*k.TileN < tuning.OneGroupPerSM || h.o.SplitK > 1 || ek.Name == "" || ek.Spec() == k.Spec() || !k.Strided {
		return nil
	}
	if ek.StepK == 0 || ek.Textures != k.Textures || h.d.kSlices(k, h.k) > 1 { // one set of bindings serves both; strips run unsplit
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
	var err error
	if h.edge, err = h.d.programOf(ek); err != nil {
		return err
	}
	h.chunks, h.edges = interior, edges
	return nil
}

// alloc takes the GPU buffers of A, B and C (and A's transpose) from the
// device's pool or creates them (takeBuffers).
func (h *hostProduct) alloc() error {
	bufs := []wanted{{&h.bufA, 4 * h.m * h.lda, "A"}, {&h.bufB, 4 * h.k * h.ldb, "B"}, {&h.bufC, 4 * h.m * h.ldc, "C"}}
	if h.tr != nil {
		bufs = append(bufs, wanted{&h.bufT, 4 * h.k * h.ldt, "A's transpose"})
	}
	return h.d.takeBuffers(h.o.MaxGPUMemory > 0, &h.held, bufs...)
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
			hm.copyIn(staging.View{Buf: x.buf}, 0, hm.Rows)
		} else if err := st.Upload(staging.View{Buf: x.buf, Stride: x.ld}, x.g); err != nil {
			return 0, err
		}
	}
	if err := h.d.poison(h.bufC, 4*h.m*h.ldc); err != nil {
		return 0, err
	}
	glw.Finish()
	return time.Since(start), h.d.checkError("uploading A and B")
}

// readBack copies C into c through the staging buffers and returns how
// long that took.
func (h *hostProduct) readBack(c blas32.General) (time.Duration, error) {
	start := time.Now()
	if hm := h.d.hostMatrix(c, h.ldc); hm != nil {
		f := hm.copyOut(staging.View{Buf: h.bufC}, 0, hm.Rows)
		f.Signaled(^uint64(0))
		f.Release()
	} else if err := h.d.stage().Download(c, staging.View{Buf: h.bufC, Stride: h.ldc}); err != nil {
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
