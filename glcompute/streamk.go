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
	if h.slots == 0 || h.o.SplitK != 0 || h.edge != nil || h.p.pace != nil || k.Name != "fast" || !k.Strided || k.StepK == 0 {
		return nil
	}
	tilesX := (h.n + k.TileN - 1) / k.TileN
	tiles, steps := tilesX*((h.m+k.TileM-1)/k.TileM), (h.k+k.StepK-1)/k.StepK
	maxGroups := h.o.MaxGroups // planHost set it
	if !tuning.UseStreamK(tiles, steps, h.slots, h.splits) || tiles > maxGroups*maxGroups || h.slots > maxGroups*maxGroups ||
		tiles > h.d.info.MaxWorkGroupCount[0] {
		return nil // a dispatch's groups: the product's budget (the watchdog), the driver's axis
	}
	shared := tiles % h.slots
	tile4 := k.TileM * k.TileN / 4
	bytes := 4 * 4 * 2 * h.slots * tile4 // two tiles a shared group
	if uint64(shared)*uint64(steps)*uint64(h.slots+1) >= 1<<32 || h.d.checkBlock("the stream-K workspace is", int64(bytes)) != nil {
		return nil
	}
	splits, ksplit, waveSplit := h.splits, h.ksplit, h.waveSplit
	h.splits, h.ksplit, h.waveSplit = 1, h.k, false
	if h.o.Measure == nil && h.rowsPerBand() < h.m {
		return nil // the only pass runs in bands, unsplit
	}
	sk := &streamK{dp: tiles - shared, groups: h.slots, tiles: shared, steps: steps, tilesX: tilesX, rowLim: h.m}
	if k.TransposeA {
		sk.rowLim = roundUp(h.m, 4) // the transpose's zero columns (fast.comp's SHIFT)
	}
	var err error
	if sk.p, err = h.d.programOf(shaders.StreamK(k)); err != nil {
		return err
	}
	if sk.fix, err = h.d.programOf(shaders.StreamKFix(k.TileM, k.TileN)); err != nil {
		return err
	}
	sk.fixChunks = dispatch.Linear(shared*tile4, sk.fix.kernel.Threads)
	// From the device's pool, as A, B and C are (alloc), and back to it
	// with them (release): a next product of the size makes none.
	w, ok := h.d.takeBuffer(bytes, h.d.stage().bufferStorage)
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
	return h.d.poison(sk.work, bytes)
}

// run queues the stream-K product: A (or its transpose) and B bound as
// for the plain kernel, C at binding 2 for the whole tiles, the
// workspace for the shared ones, then the sum into C.
func (sk *streamK) run(h *hostProduct) {
	sk.p.prog.Use()
	h.d.bindStorage(sk.p, 0, h.kernelA(), 0, 0)
	h.d.bindStorage(sk.p, 1, h.bufB, 0, 0)
	sk.p.setUints(uniform{"M", h.m}, uniform{"K", h.k}, uniform{"N", h.n}, uniform{"lda", h.kernelLda()},
		uniform{"ldb", h.ldb}, uniform{"ldc", h.ldc}, uniform{"offA4", 0}, uniform{"offB4", 0}, uniform{"offC4", 0},
		uniform{"skDP", sk.dp}, uniform{"skGroups", sk.groups}, uniform{"skTiles", sk.tiles},
		uniform{"skSteps", sk.steps}, uniform{"tilesX", sk.tilesX})
	if sk.dp > 0 {
		h.cBuf().BindStorage(2)
		sk.p.setUint("skBase", 0)
		glw.Dispatch(sk.dp, 1)
	}
	sk.work.BindStorage(2)
	sk.p.setUint("skBase", uint32(sk.dp))
	glw.Dispatch(sk.groups, 1)
	glw.BarrierStorage()
	sk.fix.prog.Use()
	sk.work.BindStorage(0)
	h.cBuf().BindStorage(2)
	sk.fix.setUints(uniform{"skDP", sk.dp}, uniform{"skGroups", sk.groups}, uniform{"skTiles", sk.tiles},
		uniform{"skSteps", sk.steps}, uniform{"tilesX", sk.tilesX}, uniform{"M", h.m}, uniform{"rowLim", sk.rowLim},
		uniform{"colLim", h.ldb}, uniform{"ldc", h.ldc}, uniform{"offC4", 0})
	for _, ch := range sk.fixChunks {
		sk.fix.setUint("first", uint32(ch.First))
		glw.Dispatch(ch.GroupsX, ch.GroupsY)
	}
}
