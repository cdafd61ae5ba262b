package glcompute

import (
	"github.com/glmul/glmul/glcompute/internal/dispatch"
	"github.com/glmul/glmul/glcompute/internal/glw"
	"github.com/glmul/glmul/glcompute/tuning"
	"github.com/glmul/glmul/shaders"
)

// streamK is a host product's stream-K plan (tuning.UseStreamK): its
// kernel built with SK (shaders.StreamK) computes the first dp tiles of C
// whole in one dispatch, then, in a second, groups work groups share the
// K steps of the remaining tiles, writing their pieces to work; after a
// storage barrier skfix.comp (fix) adds the pieces up into those tiles of
// C. Only bindings 0–2 are used, as by every product: the second dispatch
// writes its pieces through binding 2, then bound to work.
type streamK struct {
	kern              shaders.Kernel // the fast kernel it runs as stream-K
	bytes             int64          // of the workspace: two tiles a shared group
	p, fix            *program
	dp, groups, tiles int // skDP, skGroups, skTiles: tiles shared
	steps, tilesX     int // K steps a tile, tiles a row of C
	rowLim            int // the rows a tile may reach: M, or M rounded up to 4 for A transposed
	work              glw.Buffer
	fixChunks         []dispatch.LinearChunk
}

// planStreamK sets h.sk where the product qualifies (and then runs
// unsplit): a fast kernel that fills a multiprocessor (h.slots known), an
// automatic K split, no edge strips, no pacing, both dispatches within
// the product's group budget and the shaders' 32-bit step arithmetic, and tuning.UseStreamK
// against the split AutoSplitK chose. Where the only pass then runs in
// bands (not under Measure), it runs them unsplit with the plain kernel,
// as an unsplit product does.
func (h *hostProduct) planStreamK() error {
	k := h.p.kernel
	if h.o.SplitK != 0 || h.edge != nil || h.p.pace != nil {
		return nil
	}
	sk := newStreamK(k, h.m, h.k, h.n, h.slots, h.splits, h.o.MaxGroups, h.d.info.MaxWorkGroupCount[0]) // planHost set MaxGroups
	if sk == nil || h.d.checkBlock("the stream-K workspace is", sk.bytes) != nil || !h.underCap(sk.bytes) {
		return nil
	}
	splits, ksplit, waveSplit := h.splits, h.ksplit, h.waveSplit
	h.splits, h.ksplit, h.waveSplit = 1, h.k, false
	if !h.runsWhole() {
		return nil // the only pass runs in bands, unsplit
	}
	if err := h.d.streamKPrograms(sk); err != nil {
		return err
	}
	// From the device's pool, as A, B and C are (alloc), and back to it
	// with them (release): a next product of the size makes none.
	w, ok := h.d.takeBuffer(int(sk.bytes), h.d.stage().Storage)
	if !ok {
		// The split it replaces needs a larger workspace still, but a
		// product may fit without either (planWorkspace): keep the split.
		h.d.clearErrors()
		h.splits, h.ksplit, h.waveSplit = splits, ksplit, waveSplit
		return nil
	}
	h.held = append(h.held, w)
	sk.work = w.buf
	h.sk = sk
	// NaN in every slot: a piece the sum read but no group wrote would
	// reach C as NaN and fail validation, not pass as stale sums.
	return h.d.poison(sk.work, int(sk.bytes))
}

// newStreamK returns the stream-K plan of an m×k×n product of kernel
// kern, on a device that runs slots of its groups at once, where
// tuning.UseStreamK takes it in place of a K split of split slices: a
// fast kernel that fills a multiprocessor (slots known), both dispatches
// within maxGroups² groups and maxX along one axis, and the shaders'
// 32-bit step arithmetic; nil otherwise. Its programs and workspace are
// the caller's to add.
func newStreamK(kern shaders.Kernel, m, k, n, slots, split, maxGroups, maxX int) *streamK {
	if slots == 0 || kern.Name != "fast" || !kern.Strided || kern.StepK == 0 {
		return nil
	}
	tilesX := (n + kern.TileN - 1) / kern.TileN
	tiles, steps := tilesX*((m+kern.TileM-1)/kern.TileM), (k+kern.StepK-1)/kern.StepK
	if !tuning.UseStreamK(tiles, steps, slots, split) || tiles > maxGroups*maxGroups || slots > maxGroups*maxGroups || tiles > maxX {
		return nil // a dispatch's groups: the product's budget (the watchdog), the driver's axis
	}
	shared := tiles % slots
	if uint64(shared)*uint64(steps)*uint64(slots+1) >= 1<<32 {
		return nil
	}
	sk := &streamK{dp: tiles - shared, groups: slots, tiles: shared, steps: steps, tilesX: tilesX, rowLim: m}
	if kern.TransposeA {
		sk.rowLim = roundUp(m, 4) // the transpose's zero columns (fast.comp's SHIFT)
	}
	sk.bytes = 4 * 2 * int64(slots) * int64(kern.TileM*kern.TileN) // two tiles a shared group
	sk.kern = kern
	return sk
}

// streamKPrograms compiles sk's kernel and sum; on the device thread.
func (d *Device) streamKPrograms(sk *streamK) (err error) {
	if sk.p, err = d.programOf(shaders.StreamK(sk.kern)); err != nil {
		return err
	}
	if sk.fix, err = d.programOf(shaders.StreamKFix(sk.kern.TileM, sk.kern.TileN)); err != nil {
		return err
	}
	sk.fixChunks = dispatch.Linear(sk.tiles*sk.kern.TileM*sk.kern.TileN/4, sk.fix.kernel.Threads)
	return nil
}

// run queues the stream-K product: A (or its transpose) and B bound as
// for the plain kernel, C at binding 2 for the whole tiles, the
// workspace for the shared ones, then the sum into C.
func (sk *streamK) run(h *hostProduct) {
	sk.p.prog.Use()
	h.d.bindStorage(sk.p, 0, h.kernelA(), 0, 0)
	h.d.bindStorage(sk.p, 1, h.bufB, 0, 0)
	sk.queue(h.m, h.k, h.n, h.kernelLda(), h.ldb, h.ldc, 0, 0, func(*program) int {
		h.cBuf().BindStorage(2)
		return 0
	})
}

// queue queues a stream-K product of m×k×n (lda, ldb and ldc the row
// strides) with sk.p in use and A and B bound for it at vec4 offsets
// offA4 and offB4: the whole tiles into C, the shared groups' pieces
// into the workspace through binding 2, a storage barrier, then the sum
// into C. bindC binds C to binding 2 for a program and returns its vec4
// offset there.
func (sk *streamK) queue(m, k, n, lda, ldb, ldc, offA4, offB4 int, bindC func(*program) int) {
	sk.p.setUints(uniform{"M", m}, uniform{"K", k}, uniform{"N", n}, uniform{"lda", lda},
		uniform{"ldb", ldb}, uniform{"ldc", ldc}, uniform{"offA4", offA4}, uniform{"offB4", offB4},
		uniform{"skDP", sk.dp}, uniform{"skGroups", sk.groups}, uniform{"skTiles", sk.tiles},
		uniform{"skSteps", sk.steps}, uniform{"tilesX", sk.tilesX})
	if sk.dp > 0 {
		sk.p.setUint("offC4", uint32(bindC(sk.p)))
		sk.p.setUint("skBase", 0)
		glw.Dispatch(sk.dp, 1)
	}
	sk.work.BindStorage(2)
	sk.p.setUint("skBase", uint32(sk.dp))
	glw.Dispatch(sk.groups, 1)
	glw.BarrierStorage()
	sk.fix.prog.Use()
	sk.work.BindStorage(0)
	sk.fix.setUints(uniform{"skDP", sk.dp}, uniform{"skGroups", sk.groups}, uniform{"skTiles", sk.tiles},
		uniform{"skSteps", sk.steps}, uniform{"tilesX", sk.tilesX}, uniform{"M", m}, uniform{"rowLim", sk.rowLim},
		uniform{"colLim", ldb}, uniform{"ldc", ldc}, uniform{"offC4", bindC(sk.fix)})
	sk.fix.dispatchLinear(sk.fixChunks, 0)
}
