package glcompute

import (
	"fmt"
	"time"
	"unsafe"

	"gonum.org/v1/gonum/blas/blas32"

	"github.com/glmul/glmul/glcompute/internal/glw"
	"github.com/glmul/glmul/glcompute/internal/link"
	"github.com/glmul/glmul/glcompute/internal/staging"
	"github.com/glmul/glmul/glcompute/internal/trace"
	"github.com/glmul/glmul/shaders"
)

// A device of a group (devgroup) runs the column panels of C it takes as
// one streamed pass where it can, and so does Mul with a product in
// panels (mulUnitsAlone), with the technique of a streamed product
// (hoststream.go): every copy a compute pass queued beside a
// kernel, none a copy command, which on NVIDIA would wait for the kernel
// queued before it. In a panel product (panels.go) a device's copies and
// kernels took turns, and two H200s reached 1.4× one at 32768³
// (docs/PERFORMANCE.md, "A group of GPUs"; "Streamed units").
//
// The pass runs in steps, each one band of rows of one column panel:
// the kernel over the band and, beside it with no barrier between, the
// transpose of the next band of A (the first panel only: A's transpose
// stays on the GPU, a K×rows block a band, for every later panel), one
// piece of the next panel's B (through staging buffers of the pass's
// own) and the copy of the band before into a staging buffer, which the
// host empties into C. A barrier and a fence end each step. The next
// panel is taken as the one before starts, so that its B is up when its
// first band runs.

// unitLayout is how a streamed panel pass runs: its kernel (Name "":
// none, the product runs in panels), the widest panel it takes, a row of
// A in staging (K padded, lda) and of B's panel and C's bands on the GPU
// and in staging (ldb), a band's rows of C (whole tiles; the last band
// may have fewer) and their count, the rows of the next panel's B a step
// brings up, and the size of its staging buffers.
type unitLayout struct {
	kern                          shaders.Kernel
	widest, lda, ldb              int
	rows, bands, pieceRows, stage int
}

// String describes the pass as Timings.Panels does.
func (ul unitLayout) String() string {
	return fmt.Sprintf("column panels of up to %d streamed in bands of %d rows (%d), A kept transposed", ul.widest, ul.rows, ul.bands)
}

// planUnitStream lays out a streamed pass over m×k by k×w column panels
// (or narrower) with kern, or reports false where none can run: a kernel
// that does not read A transposed with row offsets, staging buffers not
// mapped persistently, K over the driver's loop budget, one tile's rows
// of A or of C over a staging buffer (unitStages), the next panel's B in
// more pieces than a panel has bands, a block over one binding, or the
// blocks over MaxGPUMemory. It makes no GL call.
func (d *Device) planUnitStream(kern shaders.Kernel, o *MulOptions, m, k, w int) (unitLayout, bool) {
	ul := unitLayout{kern: kern, widest: w, lda: roundUp(k, kern.Align), ldb: roundUp(w, kern.Align), stage: d.opts.StagingBytes}
	if ul.stage == 0 {
		ul.stage = unitStagingBytes
	}
	if !kern.TransposeA || !kern.Strided || kern.Float64 || !d.persistent() || d.kSlices(kern, k) > 1 {
		return ul, false
	}
	binding := d.streamBinding(o.MaxBinding)
	if kern.Textures && d.texBlock > 0 {
		binding = min(binding, d.texBlock)
	}
	tile := kern.TileM
	fit := min(ul.stage/(4*max(ul.lda, ul.ldb)), int(min(binding/int64(4*max(k, ul.ldb)), 1<<30))) / tile * tile // a band of A and of C in staging, its block of the transpose and C in a binding
	if fit == 0 {
		return ul, false
	}
	ul.rows = min(fit, roundUp(m, tile))
	if slots := d.slots(kern); slots > 0 { // whole waves of work groups a band
		if wave := slots / ((w + kern.TileN - 1) / kern.TileN) * tile; wave > 0 && ul.rows >= wave {
			ul.rows = ul.rows / wave * wave
		}
	}
	ul.bands = (m + ul.rows - 1) / ul.rows
	ul.pieceRows = (k + ul.bands - 1) / ul.bands
	if 4*ul.pieceRows*ul.ldb > ul.stage {
		return ul, false
	}
	if int64(4*k)*int64(ul.ldb) > binding {
		return ul, false
	}
	if gpu := 4 * (int64(k)*int64(ul.rows)*int64(ul.bands) + 2*int64(k)*int64(ul.ldb) + 2*int64(ul.rows)*int64(ul.ldb)); o.MaxGPUMemory > 0 && gpu > o.MaxGPUMemory {
		return ul, false
	}
	return ul, true
}

// unitStream is a streamed panel pass over the column panels (unit) a
// claim function hands it.
// Every method runs on the device thread.
type unitStream struct {
	unitLayout
	d         *Device
	o         *MulOptions
	p, tr, cp *program // the kernel, TransposeStream, Copy
	m, k      int
	bufT      []glw.Buffer    // A's transpose: K×rows a band
	bufB      [2]glw.Buffer   // the panel's B and the next one's
	bufC      [2]glw.Buffer   // two bands of C, in turn
	held      []pooled        // those buffers, from the device's pool
	st, bst   *staging.Stager // A's bands and C's, and B's pieces (unitStages)
	c         blas32.General  // the product's C
	// report, if set, is called as each band of C arrives, with the
	// bands done and total (0: unknown).
	report func(done, total int)
	total  int
	// dispatches counts the kernel's dispatches (Timings.Dispatches).
	dispatches int
	// The pass in progress: its fences (stepFences), outs[s] step s's
	// band.
	stepFences
	outs    []unitBand
	timed   bool
	queries [][2]glw.Query
	calls   []time.Duration
}

// unit is the column panels of C that one claim handed the device: its
// columns from c0, the row stride of its B and of its bands of C on the
// GPU and in staging (cols padded: a single panel after a double one
// moves no padding), what to call once it is in host memory, the error
// it must fail with (tests), and the bufB holding its B.
type unit struct {
	c0, cols, ld int
	landed       func()
	fault        error
	buf          int
}

// unitBand is band i of unit u.
type unitBand struct {
	u *unit
	i int
}

// newUnitStream compiles the programs of a pass laid out as ul for an
// m×k A, with o.
func (d *Device) newUnitStream(ul unitLayout, o *MulOptions, m, k int) (*unitStream, error) {
	us := &unitStream{unitLayout: ul, d: d, o: o, m: m, k: k}
	var err error
	if us.p, err = d.programOf(ul.kern); err != nil {
		return nil, err
	}
	if us.tr, err = d.programOf(shaders.TransposeStream(d.streamThreads())); err != nil {
		return nil, err
	}
	if us.cp, err = d.programOf(shaders.Copy(d.streamThreads())); err != nil {
		return nil, err
	}
	return us, nil
}

// alloc takes the pass's GPU buffers from the device's pool (a group's
// next product of the same shape finds them there) or makes them, and
// writes each once: NVIDIA gives a new buffer its memory as it is first
// used, which in the pass cost a step about 7 ms a 128 MiB block of A's
// transpose (docs/PERFORMANCE.md, "Streamed units"), and makes its own
// staging buffers.
func (us *unitStream) alloc() error {
	d := us.d
	us.bufT = make([]glw.Buffer, us.bands)
	want := []wanted{{&us.bufB[0], 4 * us.k * us.ldb, "B's panel"}, {&us.bufB[1], 4 * us.k * us.ldb, "B's next panel"},
		{&us.bufC[0], 4 * us.rows * us.ldb, "a band of C"}, {&us.bufC[1], 4 * us.rows * us.ldb, "a band of C"}}
	for i := range us.bufT {
		want = append(want, wanted{&us.bufT[i], 4 * us.k * us.rows, "a block of A's transpose"})
	}
	if err := d.takeBuffers(us.o.MaxGPUMemory > 0, &us.held, want...); err != nil {
		return err
	}
	for _, w := range want {
		if err := d.poisonRange(*w.buf, 0, w.bytes/4); err != nil {
			return err
		}
	}
	us.st, us.bst = d.unitStages()
	st := us.st
	// Made now, not in the timed pass (making a mapped buffer is slow:
	// docs/PERFORMANCE.md, "Streamed units"): the pieces' buffers as large
	// as the first panel's B goes up in (prologue) too.
	first := min(st.Bytes, 4*us.k*us.ldb)
	for i := range 2 {
		if _, _, err := st.UpSlot(i, 4*us.rows*us.lda); err != nil {
			return err
		}
		if _, _, err := st.DownSlot(i, 4*us.rows*us.ldb); err != nil {
			return err
		}
		if _, _, err := us.bst.UpSlot(i, max(first, 4*us.pieceRows*us.ldb)); err != nil {
			return err
		}
	}
	glw.Finish()
	return d.checkError("making a streamed panel pass's buffers")
}

// release waits for the GPU where the pass failed or stopped early (its
// queued passes may still use the staging buffers, which the next
// product reuses), then returns its GPU buffers to the device's pool.
func (us *unitStream) release(failed bool) {
	if failed || us.done < len(us.outs) || !us.idle() {
		glw.Finish()
	}
	us.stepFences.release()
	for _, q := range us.queries {
		q[0].Release()
		q[1].Release()
	}
	if len(us.held) > 0 {
		us.d.keepBuffers(us.held)
	}
}

// run computes the panels claim hands out, until none is left, into c.
func (us *unitStream) run(c, a, b blas32.General, claim link.Claim) (passTimes, error) {
	d, st := us.d, us.st
	us.timed = d.info.TimerBits > 0 && !glw.TimerBusy()
	take := func(buf int) *unit {
		c0, cols, landed, fault, ok := claim(us.widest)
		if !ok {
			return nil
		}
		return &unit{c0: c0, cols: cols, ld: roundUp(cols, us.kern.Align), landed: landed, fault: fault, buf: buf}
	}
	us.c = c
	cur := take(0)
	if cur == nil {
		return passTimes{}, nil
	}
	in0, out0, pieces0, start := st.CopiedIn, st.CopiedOut, us.bst.CopiedIn, time.Now()
	pt := passTimes{streamed: true, upBytes: 4 * int64(us.m) * int64(us.lda)}
	if err := us.prologue(a, b, cur); err != nil {
		return pt, err
	}
	units := 0
	for s := 0; cur != nil; {
		if cur.fault != nil {
			return pt, cur.fault
		}
		next := take(1 - cur.buf)
		for i := range us.bands {
			if err := us.o.stopped(); err != nil {
				return pt, err
			}
			if err := us.step(s, a, b, cur, i, next, units == 0); err != nil {
				return pt, err
			}
			s++
		}
		units++
		pt.upBytes += 4 * int64(us.k) * int64(cur.ld)
		pt.downBytes += 4 * int64(us.m) * int64(cur.ld)
		cur = next
	}
	if err := us.finish(); err != nil {
		return pt, err
	}
	pt.wall, pt.steps = time.Since(start), len(us.outs)
	pt.hostIn = st.CopiedIn - in0 + us.bst.CopiedIn - pieces0
	pt.hostOut = st.CopiedOut - out0
	pl := &pipeline{d: d, o: us.o}
	pt.compute, pt.gpuTimer = pl.computeTime(us.queries, us.calls)
	if trace.On {
		us.traceSteps()
	}
	return pt, d.checkError("running a streamed panel pass")
}

// traceSteps prints each step's span on the GPU's clock, from the first
// step's start, and the gap before it (the diagnostic build).
func (us *unitStream) traceSteps() {
	var t0, end uint64
	for s, q := range us.queries {
		a, b := q[0].Nanoseconds(), q[1].Nanoseconds()
		if s == 0 {
			t0, end = a, a
		}
		trace.Stage(fmt.Sprintf("units GPU: step %d band %d cols %d: %.2f-%.2f ms, %.2f ms, gap %.2f ms",
			s, us.outs[s].i, us.outs[s].u.cols, float64(a-t0)/1e6, float64(b-t0)/1e6, float64(b-a)/1e6, (float64(a)-float64(end))/1e6))
		end = b
	}
}

// runFirst runs the kernel over the first band of a panel of the widest
// columns and waits for it (stages.Run of a product in panels): the
// inputs are whatever the buffers hold.
func (us *unitStream) runFirst() error {
	if err := us.kernel(&unit{cols: us.widest, ld: us.ldb}, 0, 0); err != nil {
		return err
	}
	glw.Finish()
	us.dispatches = 0 // not the pass's
	return us.d.checkError("running the first band")
}

// bandRows is band i's rows.
func (us *unitStream) bandRows(i int) int { return min(us.rows, us.m-i*us.rows) }

// prologue queues the first panel's B (copies through the pass's own
// staging buffers) and the transpose of A's first band.
func (us *unitStream) prologue(a, b blas32.General, u *unit) error {
	bv := blockView(b, 0, us.k, u.c0, u.cols)
	if err := us.bst.Upload(staging.View{Buf: us.bufB[u.buf], Stride: u.ld}, bv); err != nil {
		return err
	}
	if err := us.transpose(a, 0); err != nil {
		return err
	}
	glw.BarrierStorage()
	us.add()
	trace.Stage("units: prologue (B up, A's first band transposed)")
	return nil
}

// step queues step s, band i of unit u, after waiting for step s−2,
// whose staging buffers it reuses: the kernel, and beside it the
// transpose of band i+1 of A (the first unit's steps), the piece of the
// next unit's B and the copy of step s−1's band of C into staging.
func (us *unitStream) step(s int, a, b blas32.General, u *unit, i int, next *unit, first bool) error {
	if err := us.waitThrough(s-1, ^uint64(0)); err != nil {
		return err
	}
	trace.Stage("units step: waited for step s−2, bands of C delivered")
	d := us.d
	rows := us.bandRows(i)
	if err := d.poisonRange(us.bufC[s%2], 0, rows*u.ld); err != nil {
		return err
	}
	t0 := time.Now()
	var q [2]glw.Query
	if us.timed {
		q = [2]glw.Query{glw.NewQuery(), glw.NewQuery()}
		us.queries = append(us.queries, q)
		q[0].Timestamp()
	}
	if err := us.kernel(u, i, s%2); err != nil {
		return err
	}
	if first && i+1 < us.bands {
		if err := us.transpose(a, i+1); err != nil {
			return err
		}
		trace.Stage("units step: kernel queued, A's next band copied")
	}
	if next != nil {
		if err := us.piece(b, next, i, s%2); err != nil {
			return err
		}
		trace.Stage("units step: a piece of the next B copied")
	}
	if s > 0 {
		if err := us.copyOut(s - 1); err != nil {
			return err
		}
	}
	if us.timed {
		q[1].Timestamp()
	}
	us.outs = append(us.outs, unitBand{u, i})
	glw.BarrierStorageClientMapped()
	us.add()
	us.calls = append(us.calls, time.Since(t0))
	trace.Stage("units step: host copies made, step queued")
	return us.waitThrough(-1, 0)
}

// finish queues the copy of the last band of C, then waits for it and
// delivers every band.
func (us *unitStream) finish() error {
	s := len(us.outs)
	if err := us.waitThrough(s-1, ^uint64(0)); err != nil {
		return err
	}
	if err := us.copyOut(s - 1); err != nil {
		return err
	}
	glw.BarrierClientMapped()
	us.add()
	if err := us.waitThrough(len(us.fences)-1, ^uint64(0)); err != nil {
		return err
	}
	trace.Stage("units: the last band of C out")
	return nil
}

// kernel queues the product of band i of unit u into bufC[slot].
func (us *unitStream) kernel(u *unit, i, slot int) error {
	p, rows := us.p, us.bandRows(i)
	p.prog.Use()
	us.d.bindStorage(p, 0, us.bufT[i], 0, 0)
	us.d.bindStorage(p, 1, us.bufB[u.buf], 0, 0)
	us.bufC[slot].BindStorage(2)
	p.setLayout(rows, us.k, u.cols, us.rows, u.ld, u.ld, 0, 0, 0)
	p.setUints(uniform{"ksplit", us.k})
	plan, err := p.plan(rows, u.cols, us.o.MaxGroups)
	if err != nil {
		return err
	}
	p.dispatchChunks(plan)
	us.dispatches += len(plan.Chunks)
	return nil
}

// transpose copies band i of A into upload staging buffer i%2 and queues
// its streamed transpose into bufT[i] (its columns past the band's rows
// zero).
func (us *unitStream) transpose(a blas32.General, i int) error {
	st, rows := us.st, us.bandRows(i)
	buf, ptr, err := st.UpSlot(i%2, 4*rows*us.lda)
	if err != nil {
		return err
	}
	st.CopyIn(unsafe.Slice((*float32)(ptr), rows*us.lda), a, i*us.rows, i*us.rows+rows, us.lda)
	us.d.streamTranspose(us.tr, buf, 0, us.bufT[i], rows, us.rows, us.k, us.lda, us.rows, 0)
	return nil
}

// piece copies piece i of unit u's B (its rows i·pieceRows…) into the
// pass's upload staging buffer slot and queues its copy into u's bufB.
func (us *unitStream) piece(b blas32.General, u *unit, i, slot int) error {
	k0 := i * us.pieceRows
	n := min(us.pieceRows, us.k-k0)
	if n <= 0 {
		return nil
	}
	buf, ptr, err := us.bst.UpSlot(slot, 4*n*u.ld)
	if err != nil {
		return err
	}
	us.bst.CopyIn(unsafe.Slice((*float32)(ptr), n*u.ld), blockView(b, 0, us.k, u.c0, u.cols), k0, k0+n, u.ld)
	us.d.streamCopy(us.cp, buf, 0, us.bufB[u.buf], k0*u.ld, n*u.ld)
	return nil
}

// copyOut queues the copy of step s's band of C (bufC[s%2]) into
// download staging buffer s%2.
func (us *unitStream) copyOut(s int) error {
	ob := us.outs[s]
	rows := us.bandRows(ob.i)
	buf, _, err := us.st.DownSlot(s%2, 4*rows*ob.u.ld)
	if err != nil {
		return err
	}
	us.d.streamCopy(us.cp, us.bufC[s%2], 0, buf, 0, rows*ob.u.ld)
	return nil
}

// waitThrough waits up to timeout for fences[k] (none for k < 0), then
// delivers the bands of C whose copies out have passed, calling a unit's
// landed after its last band once the context reports no error.
func (us *unitStream) waitThrough(k int, timeout uint64) error {
	_, err := us.stepFences.waitThrough(k, timeout, func(j int) error {
		ob, st := us.outs[j], us.st
		rows := us.bandRows(ob.i)
		if ob.i == us.bands-1 {
			if err := us.d.checkError("streaming panels of C"); err != nil {
				return err // the unit is not landed: it runs again
			}
		}
		dst := blockView(us.c, 0, us.m, ob.u.c0, ob.u.cols)
		st.CopyOut(dst, unsafe.Slice((*float32)(st.DownMapping(j%2)), rows*ob.u.ld), ob.i*us.rows, ob.i*us.rows+rows, ob.u.ld)
		if f := us.o.Arrived; f != nil {
			f(ob.i*us.rows, ob.u.c0, rows, ob.u.cols)
		}
		trace.Stage("units: a band of C copied out")
		if us.report != nil {
			us.report(j+1, us.total)
		}
		if ob.i == us.bands-1 && ob.u.landed != nil {
			ob.u.landed()
		}
		return nil
	})
	return err
}
