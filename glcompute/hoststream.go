package glcompute

import (
	"time"
	"unsafe"

	"gonum.org/v1/gonum/blas/blas32"

	"github.com/glmul/glmul/glcompute/internal/glw"
	"github.com/glmul/glmul/glcompute/internal/staging"
	"github.com/glmul/glmul/glcompute/internal/trace"
	"github.com/glmul/glmul/glcompute/tuning"
	"github.com/glmul/glmul/shaders"
)

// A streamed pass moves A and C between host memory and the GPU with
// compute passes issued beside the kernel's, instead of copy commands.
// glCopyBufferSubData does not overlap the kernel on NVIDIA: one context
// runs its copies and dispatches in order, and a second context's copies
// of 32 MiB or less did not overlap either (docs/PERFORMANCE.md).
// Dispatches without a barrier between them do run together where their
// work groups find room. So while the kernel computes band i of C, the
// GPU transposes band i+1 of A straight out of host memory
// (TransposeStream) and copies band i−1 of C into it (Copy). Host memory
// is the mapped host matrices themselves (mappedEnds), or, for Go slices,
// the staging buffers (stagedEnds), which the host fills and empties a
// band at a time while the GPU works on the others. Measured:
// docs/PERFORMANCE.md, "Streamed passes".

// streams reports whether the pipelined pass runs streamed: A, B and C
// all mapped host matrices, or A and C both Go slices with persistently
// mapped staging buffers (B either), a kernel that reads A transposed (the
// transpose is what reads A from host memory; a kernel reading A as it is
// would read it from there once per column of tiles) without edge strips
// (the edge kernel reads A as it is), bands that run unsplit, and at least
// two bands of a wave of work groups each (waveRows, else tuning.Wave): a
// band of fewer leaves most of the GPU idle (docs/PERFORMANCE.md,
// "Streamed passes"). With
// Go slices a band's rows of A and of C must also fit a staging buffer
// (K and N up to 32768 at the default 32 MiB and 256-row tiles).
func (h *hostProduct) streams() bool {
	if !h.mapped && !h.plainAC || h.tr == nil || h.edge != nil || !h.p.kernel.Strided || h.splits > 1 && !h.waveSplit {
		return false
	}
	rows := h.bandSize()
	if rows >= h.m || !h.mapped && 4*rows*max(h.lda, h.ldc) > h.d.stage().Bytes {
		return false // one band, or bands larger than a staging buffer (bandRows keeps whole tiles)
	}
	tileRows := rows / h.p.kernel.TileM
	if streamAnyBands {
		return true
	}
	if w := h.waveRows(); w > 0 {
		return tileRows >= w
	}
	return tileRows*h.chunks.GroupsX >= tuning.Wave(h.d.tuningDriver())
}

// streamGroups is how many work groups each streaming pass runs, of
// streamThreads invocations. Such a group cannot share a multiprocessor
// with one of the kernel's (256 invocations of about 230 registers on
// NVIDIA), so the streaming runs on the multiprocessors a band leaves idle
// (4096³ with 132: 128 groups a band, 4 idle) and, where it has not
// finished with the band, on all of them after it. Groups small enough to
// sit beside the kernel's slow it down. The transpose beside the kernel is
// hidden by a few groups of 1024; the copy out is not, as writing C to
// host memory from the kernel was not (docs/PERFORMANCE.md, "Streamed
// passes").
func (d *Device) streamGroups() int {
	if n := d.info.SMCount; n > 0 {
		return max(4, n/4)
	}
	return 32
}

// streamAnyBands makes streams accept bands of any size (tests: small
// products then run streamed on any device).
var streamAnyBands bool

// streamThreads is the invocations of a streaming pass's work group:
// 1024 (a multiprocessor the kernel leaves idle takes two such groups),
// or what the driver allows (OpenGL ES 3.1 promises only 128), a multiple
// of 16 (transpose.comp's rows of vec4s).
func (d *Device) streamThreads() int {
	return min(1024, d.info.MaxWorkGroupInvocations, d.info.MaxWorkGroupSize[0]) / 16 * 16
}

// streamEnds are where a streamed pass finds its bands of A and puts
// its bands of C: the host matrices themselves, or the staging buffers
// (Go slices: the host copies a band of A in before the GPU transposes
// it, and a band of C out after the GPU has copied it there).
type streamEnds struct {
	// a returns the buffer holding band i's rows of A (lda apart) and the
	// float offset of its first row, after any host copy.
	a func(i, r0, rows int) (glw.Buffer, int, error)
	// c returns the buffer band i's rows of C (ldc apart) go to and the
	// float offset of its first row.
	c func(i, r0, rows int) (glw.Buffer, int, error)
	// arrived, if set, is called in band order once band i's rows of C
	// are there (the host copies them out of staging).
	arrived func(i, r0, rows int)
}

// mappedEnds: A and C are host matrices the GPU reads and writes directly.
func (h *hostProduct) mappedEnds(ha, hc *hostMatrix) streamEnds {
	return streamEnds{
		a: func(_, r0, _ int) (glw.Buffer, int, error) { return ha.buf, r0 * h.lda, nil }, // padding is read, never written to T
		c: func(_, r0, _ int) (glw.Buffer, int, error) { return hc.buf, r0 * h.ldc, nil },
	}
}

// stagedEnds: A and C are Go slices, their bands moved through the
// staging buffers, band i through the buffers i%2 of each direction.
// streamed's waits keep a buffer from being reused before the GPU and the
// host are done with it.
func (h *hostProduct) stagedEnds(a, c blas32.General) streamEnds {
	st := h.d.stage()
	return streamEnds{
		a: func(i, r0, rows int) (glw.Buffer, int, error) {
			buf, ptr, err := st.UpSlot(i%2, 4*rows*h.lda)
			if err != nil {
				return 0, 0, err
			}
			st.CopyIn(unsafe.Slice((*float32)(ptr), rows*h.lda), a, r0, r0+rows, h.lda)
			return buf, 0, nil
		},
		c: func(i, _, rows int) (glw.Buffer, int, error) {
			buf, _, err := st.DownSlot(i%2, 4*rows*h.ldc)
			if err != nil {
				return 0, 0, err
			}
			return buf, 0, nil
		},
		arrived: func(i, r0, rows int) {
			st.CopyOut(c, unsafe.Slice((*float32)(st.DownMapping(i%2)), rows*h.ldc), r0, r0+rows, h.ldc)
		},
	}
}

// streamed runs the pipelined pass streamed (streams): B up and A's first
// band transposed, then for each band i of C the kernel, the transpose of
// band i+1 of A and the copy out of band i−1 of C, with no barrier between
// them; then the copy out of the final band. C's GPU buffer is poisoned
// first, so that an element no band writes reaches host memory as NaN.
func (h *hostProduct) streamed(b blas32.General, ends streamEnds, report func(done, total int)) (passTimes, error) {
	sp, err := h.newStreamPass(ends, report)
	if err != nil {
		return passTimes{}, err
	}
	defer sp.release()
	st := h.d.stage()
	in0, out0 := st.CopiedIn, st.CopiedOut
	start := time.Now()
	trace.Stage("stream: before the pass")
	if err := sp.prologue(b); err != nil {
		return passTimes{}, err
	}
	trace.Stage("stream: prologue (B up, band 0 of A transposed)")
	for i := range sp.bands {
		if err := h.o.stopped(); err != nil {
			return passTimes{}, err
		}
		if err := sp.step(i); err != nil {
			return passTimes{}, err
		}
	}
	sp.waitThrough(len(sp.bands)-1, ^uint64(0)) // the last copy is step len(bands): step's wait
	if err := sp.copyOut(len(sp.bands) - 1); err != nil {
		return passTimes{}, err
	}
	glw.BarrierClientMapped()
	sp.add()
	sp.waitThrough(len(sp.fences)-1, ^uint64(0))
	trace.Stage("stream: the last bands of C out")
	pt := passTimes{wall: time.Since(start), steps: len(sp.bands), streamed: true}
	pt.hostIn, pt.hostOut = st.CopiedIn-in0, st.CopiedOut-out0
	pt.upBytes = 4 * int64(h.k*h.ldb+h.m*h.lda)
	pt.downBytes = 4 * int64(h.m*h.ldc)
	pl := &pipeline{d: h.d, o: h.o}
	pt.compute, pt.gpuTimer = pl.computeTime(sp.queries, sp.calls)
	return pt, h.d.checkError("running the streamed product")
}

// streamPass is one streamed pass in progress.
type streamPass struct {
	h      *hostProduct
	ends   streamEnds
	tr, cp *program // TransposeStream, Copy
	bands  [][2]int // first row and rows of each band
	report func(done, total int)
	// Its fences (stepFences): [0] passes after the first band's
	// transpose, [i+1] after step i (band i computed, band i+1 of A
	// transposed, band i−1 of C copied out), [len(bands)+1] after the
	// last band's copy; done counts the bands of C delivered
	// (ends.arrived, report).
	stepFences
	// timed: each step between two GL_TIMESTAMP queries; calls: the wall
	// time of its dispatch calls (pipeline.computeTime).
	timed   bool
	queries [][2]glw.Query
	calls   []time.Duration
}

func (h *hostProduct) newStreamPass(ends streamEnds, report func(done, total int)) (*streamPass, error) {
	sp := &streamPass{h: h, ends: ends, report: report, timed: h.d.info.TimerBits > 0 && !glw.TimerBusy()}
	var err error
	if sp.tr, err = h.d.programOf(shaders.TransposeStream(h.d.streamThreads())); err != nil {
		return nil, err
	}
	if sp.cp, err = h.d.programOf(shaders.Copy(h.d.streamThreads())); err != nil {
		return nil, err
	}
	rowsPer := h.rowsPerBand()
	for r0 := 0; r0 < h.m; r0 += rowsPer {
		sp.bands = append(sp.bands, [2]int{r0, min(rowsPer, h.m-r0)})
	}
	return sp, nil
}

// release deletes the pass's queries and fences. A pass that stopped
// early (an error, a cancelled Context) first waits for the GPU: its
// queued passes still read and write the staging buffers and host
// matrices, which the next product or the caller may reuse at once.
func (sp *streamPass) release() {
	if sp.done < len(sp.bands) {
		glw.Finish()
	}
	for _, q := range sp.queries {
		q[0].Release()
		q[1].Release()
	}
	sp.stepFences.release()
}

// prologue queues B's upload (host copies through staging for a Go
// slice), C's poison and the first band's transpose.
func (sp *streamPass) prologue(b blas32.General) error {
	h := sp.h
	if hb := h.d.hostMatrix(b, h.ldb); hb != nil {
		hb.copyIn(staging.View{Buf: h.bufB}, 0, hb.Rows)
	} else if err := h.d.stage().Upload(staging.View{Buf: h.bufB, Stride: h.ldb}, b); err != nil {
		return err
	}
	if err := h.d.poison(h.bufC, 4*h.m*h.ldc); err != nil {
		return err
	}
	if err := sp.transpose(0); err != nil {
		return err
	}
	glw.BarrierStorage()
	sp.add()
	return nil
}

// step queues step i, timed, after waiting for step i−2: the buffers that
// band i+1 of A and band i−1 of C go through (stagedEnds) were last used
// then. The kernel, the transpose and the copy out go to the GPU in one
// flush: with the kernel flushed alone first (so that the GPU had it
// while the host waited and copied), the passes beside it no longer
// overlapped it (docs/PERFORMANCE.md, "Streamed passes").
func (sp *streamPass) step(i int) error {
	sp.waitThrough(i-1, ^uint64(0))
	trace.Stage("stream step: waited for the step before the last")
	t0 := time.Now()
	var q [2]glw.Query
	if sp.timed {
		q = [2]glw.Query{glw.NewQuery(), glw.NewQuery()}
		sp.queries = append(sp.queries, q)
		q[0].Timestamp()
	}
	if err := sp.h.bandKernel(sp.bands[i][0], sp.bands[i][1]); err != nil {
		return err
	}
	if i+1 < len(sp.bands) {
		if err := sp.transpose(i + 1); err != nil {
			return err
		}
	}
	if i > 0 {
		if err := sp.copyOut(i - 1); err != nil {
			return err
		}
	}
	if sp.timed {
		q[1].Timestamp()
	}
	glw.BarrierStorageClientMapped()
	sp.add()
	sp.calls = append(sp.calls, time.Since(t0))
	trace.Stage("stream step: queued (the next band of A in)")
	sp.waitThrough(-1, 0)
	trace.Stage("stream step: bands of C delivered")
	return nil
}

// waitThrough waits up to timeout for fences[k] (none for k < 0), then
// delivers the bands of C whose fences have passed.
func (sp *streamPass) waitThrough(k int, timeout uint64) {
	sp.stepFences.waitThrough(k, timeout, func(j int) error {
		b := sp.bands[j]
		if sp.ends.arrived != nil {
			sp.ends.arrived(j, b[0], b[1])
		}
		if f := sp.h.o.Arrived; f != nil {
			f(b[0], 0, b[1], sp.h.n)
		}
		if sp.report != nil {
			sp.report(j+1, len(sp.bands))
		}
		return nil
	})
}

// transpose queues the transpose of band i of A from where ends has it.
func (sp *streamPass) transpose(i int) error {
	b := sp.bands[i]
	buf, off, err := sp.ends.a(i, b[0], b[1])
	if err == nil {
		sp.h.streamTranspose(sp.tr, buf, off, b[0], b[1])
	}
	return err
}

// copyOut queues the copy of band i of C (from bufC) to where ends puts it.
func (sp *streamPass) copyOut(i int) error {
	h, b := sp.h, sp.bands[i]
	buf, off, err := sp.ends.c(i, b[0], b[1])
	if err != nil {
		return err
	}
	h.d.streamCopy(sp.cp, h.bufC, b[0]*h.ldc, buf, off, b[1]*h.ldc)
	return nil
}

// streamCopy queues cp (Copy) over n floats of src from float offS into
// dst from float offD (each a multiple of 4), in streamGroups work groups,
// with no barrier: beside the dispatches queued before it.
func (d *Device) streamCopy(cp *program, src glw.Buffer, offS int, dst glw.Buffer, offD, n int) {
	cp.prog.Use()
	src.BindStorage(0)
	dst.BindStorage(2)
	cp.setUints(uniform{"count", n / 4}, uniform{"offS4", offS / 4}, uniform{"offD4", offD / 4})
	glw.Dispatch(d.streamGroups(), 1)
}

// streamTranspose queues the streamed transpose of A's rows [r0, r0+rows),
// held in buf from float off, lda apart, into bufT (the last band also
// writes the zero columns up to ldt).
func (h *hostProduct) streamTranspose(tr *program, buf glw.Buffer, off, r0, rows int) {
	h.d.streamTranspose(tr, buf, off, h.bufT, rows, h.transposeCols(r0, rows), h.k, h.lda, h.ldt, r0)
}

// streamTranspose queues tr (TransposeStream) over rows rows of A in src
// from float off, lda apart, into columns offT… of dst (k rows, ldt
// apart), cols of them (those past rows zero), in streamGroups work
// groups, with no barrier: beside the dispatches queued before it.
func (d *Device) streamTranspose(tr *program, src glw.Buffer, off int, dst glw.Buffer, rows, cols, k, lda, ldt, offT int) {
	tr.prog.Use()
	src.BindStorage(0)
	dst.BindStorage(2)
	tr.setTranspose(rows, cols, k, lda, ldt, off, offT)
	tr.setUints(uniform{"x0", 0}, uniform{"y0", 0}, uniform{"tilesX", (cols + 63) / 64})
	glw.Dispatch(d.streamGroups(), 1)
}
