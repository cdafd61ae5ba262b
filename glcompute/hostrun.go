package glcompute

import (
	"time"

	"gonum.org/v1/gonum/blas/blas32"

	"github.com/glmul/glmul/glcompute/internal/dispatch"
	"github.com/glmul/glmul/glcompute/internal/glw"
	"github.com/glmul/glmul/glcompute/internal/staging"
)

// pipelineBands is how many row bands of C a product in one piece is
// pipelined in (fewer when M is under that many tiles).
const pipelineBands = 4

// pipelined runs the product once in row bands of C (bandRows): B and
// A's first band up, then, while the GPU computes band i, the host uploads
// band i+1 of A and reads back band i−1 of C. A kernel without row offsets
// (tiled32), a product split along K to fill the GPU and one of mapped
// host matrices that does not stream only run as one band (rowsPerBand);
// one split only to fill its last wave (waveSplit) runs its bands
// unsplit, the bands cut to whole waves instead. Where streams says so,
// the pass runs streamed instead (streamed).
//
// Where C is a mapped host matrix and the pass does not stream, the kernel
// writes C there directly (outC; not on zink: lateMappedWrites) and nothing is copied back: a small gain,
// the kernel's writes over PCIe, a wave's all at once at its end, costing
// back most of the copy's time (docs/PERFORMANCE.md, "Streamed passes",
// step 1). C is then not
// poisoned on the GPU step by step (a NaN fill of host memory costs what
// the copy did); under Measure, whose readback has already written C, it
// is poisoned once before the pass.
func (h *hostProduct) pipelined(c, a, b blas32.General, report func(done, total int)) (passTimes, error) {
	hc := h.d.hostMatrix(c, h.ldc)
	if h.streams() {
		if h.mapped {
			return h.streamed(b, h.mappedEnds(h.d.hostMatrix(a, h.lda), hc), report)
		}
		return h.streamed(b, h.stagedEnds(a, c), report)
	}
	if hc != nil && !h.d.lateMappedWrites() {
		h.outC = hc.buf
		defer func() { h.outC = 0 }()
		if h.o.Measure != nil {
			if err := h.d.poison(hc.buf, 4*h.m*h.ldc); err != nil {
				return passTimes{}, err
			}
			glw.Finish()
		}
	}
	rowsPer := h.rowsPerBand()
	var steps []pipeStep
	for r0 := 0; r0 < h.m; r0 += rowsPer {
		rows := min(rowsPer, h.m-r0)
		s := pipeStep{
			up:     []upTransfer{{dst: staging.View{Buf: h.bufA, Off: r0 * h.lda, Stride: h.lda}, src: part{m: a, r0: r0, rows: rows, cols: h.k}}},
			c:      staging.View{Buf: h.cBuf(), Off: r0 * h.ldc, Stride: h.ldc},
			out:    part{m: c, r0: r0, rows: rows, cols: h.n},
			poison: rows * h.ldc,
			run:    h.band(r0, rows),
		}
		if h.outC != 0 {
			s.poison = 0
		}
		if r0 == 0 {
			s.up = append([]upTransfer{{dst: staging.View{Buf: h.bufB, Stride: h.ldb}, src: part{m: b, rows: h.k, cols: h.n}}}, s.up...)
		}
		if rows == h.m {
			s.run = func() error { h.bind(); h.run(); return nil }
		}
		steps = append(steps, s)
	}
	pl := &pipeline{d: h.d, o: h.o, steps: steps, report: report}
	return pl.run()
}

// allMapped reports whether A, B and C are all pinned matrices' memory at the
// planned row strides, which the GPU copies with no host copy through
// staging (hostProduct.mapped).
func (h *hostProduct) allMapped(c, a, b blas32.General) bool {
	return h.d.hostMatrix(a, h.lda) != nil && h.d.hostMatrix(b, h.ldb) != nil && h.d.hostMatrix(c, h.ldc) != nil
}

// rowsPerBand is how many rows of C a step of the pipelined pass
// computes: h.m (one step) for a kernel without row offsets, for a
// product split along K to fill the GPU and for one whose A, B and C are
// all mapped host matrices (hostProduct.mapped) unless it runs streamed;
// else bandSize.
func (h *hostProduct) rowsPerBand() int {
	k := h.p.kernel
	if !k.Strided || h.splits > 1 && !h.waveSplit || h.mapped && !h.streams() {
		return h.m
	}
	return h.bandSize()
}

// runsWhole reports whether a pass of the product runs it whole (run),
// where a split, stream-K or bands of the transpose apply: under Measure
// (stages.Run), or a pipelined pass in one step (rowsPerBand); else its
// only pass runs in bands of C, unsplit.
func (h *hostProduct) runsWhole() bool {
	return h.o.Measure != nil || h.rowsPerBand() >= h.m
}

// bandSize is the rows of C of a band of the pipelined pass (bandRows).
func (h *hostProduct) bandSize() int {
	return bandRows(h.m, h.p.kernel.TileM, pipelineBands, max(h.lda, h.ldc), h.d.stage().Bytes, h.waveRows())
}

// waveRows is how many rows of the kernel's tiles the GPU runs in one
// wave, where known (h.slots); 0 where not.
func (h *hostProduct) waveRows() int {
	if h.slots == 0 {
		return 0
	}
	return h.slots / h.chunks.GroupsX
}

// band returns the step that computes rows [r0, r0+rows) of C: the kernel
// with its row offsets moved to the band.
func (h *hostProduct) band(r0, rows int) func() error {
	return func() error {
		if h.tr != nil {
			h.transposeA(r0, rows)
		}
		return h.bandKernel(r0, rows)
	}
}

// bandKernel queues the kernel's dispatches over rows [r0, r0+rows) of C,
// A (or its transpose) and B as they are in their buffers.
func (h *hostProduct) bandKernel(r0, rows int) error {
	h.p.prog.Use()
	h.d.bindStorage(h.p, 0, h.kernelA(), 0, 0)
	h.d.bindStorage(h.p, 1, h.bufB, 0, 0)
	h.cBuf().BindStorage(2)
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

// transposeA writes rows [r0, r0+rows) of A as columns of bufT (the last
// rows also the zero columns up to ldt), then the storage barrier that
// makes them visible to the kernel. No barrier before it: no dispatch
// still queued reads what it writes (bands write disjoint columns, and the
// runs of a product and products follow a glFinish or a readback); one
// there cost the pipelined pass its overlap (docs/PERFORMANCE.md,
// "Figures from the library's comments").
// It leaves its own program and bindings: the kernel's are made again
// after it.
func (h *hostProduct) transposeA(r0, rows int) {
	h.tr.prog.Use()
	h.d.bindStorage(h.tr, 0, h.bufA, 0, 0)
	h.bufT.BindStorage(2)
	h.tr.transpose(rows, h.transposeCols(r0, rows), h.k, h.lda, h.ldt, r0*h.lda, r0, h.o.MaxGroups) // its plan was checked in plan
}

// transposeCols is how many columns of T the transpose of A's rows [r0,
// r0+rows) writes: rows, and for the last band also the zero columns up
// to ldt.
func (h *hostProduct) transposeCols(r0, rows int) int {
	if r0+rows == h.m {
		return h.ldt - r0
	}
	return rows
}

// transpose queues transpose.comp (tr, in use, with A bound at 0 and T at
// 2): rows rows of A (K floats each, lda apart, from element offA) become
// columns offT… of T (K rows, ldt apart), cols of them, those past rows
// written as zero; then the storage barrier that makes T visible to the
// kernel.
func (tr *program) transpose(rows, cols, k, lda, ldt, offA, offT, maxGroups int) error {
	tr.setTranspose(rows, cols, k, lda, ldt, offA, offT)
	if _, err := tr.dispatchTiles(k, cols, maxGroups); err != nil {
		return err
	}
	glw.BarrierStorage()
	return nil
}

// setTranspose sets the uniforms of transpose.comp (tr, in use, either
// variant) that transpose describes.
func (tr *program) setTranspose(rows, cols, k, lda, ldt, offA, offT int) {
	tr.setUints(uniform{"rows", rows}, uniform{"cols", cols}, uniform{"K", k}, uniform{"lda", lda},
		uniform{"ldt", ldt}, uniform{"offA", offA}, uniform{"offT", offT})
}

// bind binds A, B and C (or the split-K workspace) for the kernel.
func (h *hostProduct) bind() {
	h.d.bindStorage(h.p, 0, h.kernelA(), 0, 0)
	h.d.bindStorage(h.p, 1, h.bufB, 0, 0)
	if h.splits > 1 {
		h.work.BindStorage(2)
	} else {
		h.cBuf().BindStorage(2)
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
	if h.bandRows > 0 {
		h.runBands()
		return
	}
	if h.tr != nil {
		h.transposeA(0, h.m)
	}
	if h.sk != nil {
		h.sk.run(h)
		h.progress.dispatched()
		h.progress.drain()
		return
	}
	h.p.prog.Use()
	if h.splits > 1 || h.tr != nil {
		h.bind()
	}
	if h.p.kernel.Strided { // a pipelined pass's bands change these
		h.p.setUints(uniform{"M", h.m}, uniform{"offA4", 0}, uniform{"offC4", 0}, uniform{"ksplit", h.ksplit})
	}
	for _, ch := range h.chunks.Chunks {
		h.p.dispatchChunk(ch, h.splits)
		h.progress.dispatched()
	}
	if h.edge != nil { // unsplit (plan): C is bound, not the workspace
		h.runEdges(h.edges, h.m, 0)
	}
	if h.splits > 1 {
		glw.BarrierStorage()
		h.red.prog.Use()
		h.work.BindStorage(0)
		h.cBuf().BindStorage(2)
		h.red.dispatchLinear(h.reduce, 0)
	}
	h.progress.drain()
}

// runBands queues one whole product in bands of bandRows rows of C
// (planBands): the first band's transpose of A, then each band's kernel
// with the next band's streamed transpose queued after it, no barrier
// between them (the transposes write columns of bufT that no queued
// kernel reads), and the storage barrier that makes it visible to the
// next band's kernel.
func (h *hostProduct) runBands() {
	h.transposeA(0, min(h.bandRows, h.m))
	for r0 := 0; r0 < h.m; r0 += h.bandRows {
		h.bandKernel(r0, min(h.bandRows, h.m-r0)) // its plan was checked in plan
		if next := r0 + h.bandRows; next < h.m {
			h.streamTranspose(h.trs, h.bufA, next*h.lda, next, min(h.bandRows, h.m-next))
			glw.BarrierStorage()
		}
		// After the transpose: progress flushes, and a kernel flushed
		// alone ran without the pass beside it (hoststream.go, step).
		h.progress.dispatched()
	}
	h.progress.drain()
}

// progress calls onDispatch as the dispatches of a run complete, through
// a fence after each (stages.Run).
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
