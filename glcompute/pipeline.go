package glcompute

import (
	"cmp"
	"slices"
	"time"

	"github.com/glmul/glmul/glcompute/internal/glw"
	"github.com/glmul/glmul/glcompute/internal/staging"
	"github.com/glmul/glmul/glcompute/tuning"
)

// A pipelined product runs as steps, one block of C each: while the GPU
// computes step i, the host copies step i+1's operands into the staging
// buffers and step i−1's block of C out of them. The GPU's queue keeps the
// order (copies in, dispatch, copies out) and fences tell the host when
// a staging buffer is free or full; nothing waits for the whole GPU.

// bandRows is how many rows of C a step computes when a product of m
// rows, in tiles tile rows high, runs in about bands row bands: a multiple
// of the tile, and no more than fit one staging buffer of stagingBytes at
// ld floats a row where a tile's rows fit one (else the staging path moves
// a band in several chunks, and a pass does not stream). A band larger
// than a staging buffer would stall the pipeline: the host fills both
// staging buffers, and the GPU frees them
// only after the dispatch queued before their copies. Where waveRows (the
// tile rows whose work groups the GPU runs in one wave; 0: unknown) is
// known, a band of at least a wave is cut to whole waves: 4097³'s 33 tile
// rows of 17 groups ran as 4 bands of 9 rows, each 153 groups on 132
// multiprocessors and so two waves; 5 bands of 7 take one each.
func bandRows(m, tile, bands, ld, stagingBytes, waveRows int) int {
	rows := m
	if bands > 1 && m >= bands*tile {
		per := ((m+tile-1)/tile + bands - 1) / bands // tile rows a band
		if waveRows > 0 && per >= waveRows {
			per = per / waveRows * waveRows
		}
		rows = per * tile
	}
	if fit := stagingBytes / (4 * ld) / tile * tile; fit >= tile && fit < rows {
		rows = fit
		if w := waveRows * tile; waveRows > 0 && fit >= w {
			rows = fit / w * w
		}
	}
	return rows
}

// upTransfer is one host block bound for the GPU before a step runs.
type upTransfer struct {
	dst staging.View
	src part
}

// pipeStep is one step: the uploads it needs, the dispatches that compute
// its block of C (c on the GPU, out in host memory: none, of no rows, for
// a step whose block is not done yet), and how many floats of c, from
// c.off, to poison with NaN first (0: none).
type pipeStep struct {
	up     []upTransfer
	c      staging.View
	out    part
	poison int
	run    func() error
	// landed, if set, is called once the step's block of C is in host
	// memory: a group's device marks its column panel done so.
	landed func()
}

// pipeline runs steps in order; report, if set, is called as each step's
// block of C arrives. more, if set, is called when the last step listed
// is about to run, for the steps after it (none: the pass ends there): a
// device of a group (devgroup) takes its next column panel of C so, just in time to
// upload its operands during the step before.
type pipeline struct {
	d      *Device
	o      *MulOptions
	steps  []pipeStep
	more   func() []pipeStep
	report func(done, total int)
	words  words // of an element of C (0: float32's 1), for o.Arrived
	// The pass in progress: its figures, whether the GL timer times the
	// steps, their queries (a GL_TIMESTAMP before and after each step's
	// dispatches) and the wall time of their dispatch calls.
	pt      passTimes
	timed   bool
	queries [][2]glw.Query
	calls   []time.Duration
}

// passTimes are one pipelined pass's figures. wall runs from the first
// upload to the last block of C in host memory; hostIn and hostOut are
// the host's busy time copying into and out of staging; compute is the
// GPU's time with the steps' dispatches in flight by the GL timer where it
// is usable (gpuTimer: each step between two GL_TIMESTAMP queries, the
// intervals merged where they overlap), else the wall time of the
// dispatch calls (a driver that computes within the call, as llvmpipe
// does). Either way compute ≤ wall.
type passTimes struct {
	wall, hostIn, hostOut, compute time.Duration
	gpuTimer                       bool
	upBytes, downBytes             int64
	steps                          int
	streamed                       bool
}

// fill records the pass in t.
func (pt passTimes) fill(t *Timings) {
	t.EndToEnd, t.Steps, t.Streamed = pt.wall, pt.steps, pt.streamed
	t.Upload, t.Compute, t.Readback = pt.hostIn, []time.Duration{pt.compute}, pt.hostOut
	if pt.gpuTimer {
		t.GPU = []time.Duration{pt.compute}
	}
	t.UploadBytes, t.ReadbackBytes = pt.upBytes, pt.downBytes
}

// run runs the pass; on the device thread.
func (pl *pipeline) run() (passTimes, error) {
	d, st := pl.d, pl.d.stage()
	in0, out0 := st.CopiedIn, st.CopiedOut
	pl.pt, pl.timed = passTimes{}, d.info.TimerBits > 0 && !glw.TimerBusy()
	pl.queries, pl.calls = nil, make([]time.Duration, 0, len(pl.steps))
	defer func() {
		for i := range pl.queries {
			pl.queries[i][0].Release()
			pl.queries[i][1].Release()
		}
	}()
	start := time.Now()
	if err := pl.upload(&pl.steps[0]); err != nil {
		return pl.pt, err
	}
	for i := 0; i < len(pl.steps); i++ { // more may add steps
		if err := pl.step(i); err != nil {
			return pl.pt, err
		}
	}
	finish, err := pl.startDownload(&pl.steps[len(pl.steps)-1])
	if err != nil {
		return pl.pt, err
	}
	if err := pl.arrived(finish, len(pl.steps)-1); err != nil {
		return pl.pt, err
	}
	pt := &pl.pt
	pt.wall, pt.steps = time.Since(start), len(pl.steps)
	pt.hostIn, pt.hostOut = st.CopiedIn-in0, st.CopiedOut-out0
	pt.compute, pt.gpuTimer = pl.computeTime(pl.queries, pl.calls)
	return *pt, d.checkError("running the pipelined product")
}

// step runs step i: its dispatches and the readback of step i−1 queued,
// step i+1's operands uploaded, step i−1's block of C copied out.
func (pl *pipeline) step(i int) error {
	if err := pl.o.stopped(); err != nil {
		return err
	}
	if i+1 == len(pl.steps) && pl.more != nil {
		pl.steps = append(pl.steps, pl.more()...)
	}
	// The GPU runs one context's commands in order: the last step's
	// copies are queued first, else they would wait for this step's
	// dispatches.
	var finish func() error
	if i > 0 {
		var err error
		if finish, err = pl.startDownload(&pl.steps[i-1]); err != nil {
			return err
		}
	}
	if err := pl.compute(&pl.steps[i]); err != nil {
		return err
	}
	if i+1 < len(pl.steps) {
		if err := pl.upload(&pl.steps[i+1]); err != nil {
			return err
		}
	}
	if finish == nil {
		return nil
	}
	return pl.arrived(finish, i-1)
}

// compute poisons a step's block of C and queues its dispatches, timed.
func (pl *pipeline) compute(s *pipeStep) error {
	if s.poison > 0 {
		if err := pl.d.poisonRange(s.c.Buf, s.c.Off, s.poison); err != nil {
			return err
		}
	}
	var q *[2]glw.Query
	if pl.timed {
		pl.queries = append(pl.queries, [2]glw.Query{glw.NewQuery(), glw.NewQuery()})
		q = &pl.queries[len(pl.queries)-1]
	}
	call, err := pl.dispatch(s, q)
	pl.calls = append(pl.calls, call)
	return err
}

// dispatch queues a step's dispatches after its uploads, between the
// timestamps q if not nil, and returns the wall time of the calls.
func (pl *pipeline) dispatch(s *pipeStep, q *[2]glw.Query) (time.Duration, error) {
	start := time.Now()
	if q != nil {
		q[0].Timestamp()
	}
	err := s.run()
	if q != nil {
		q[1].Timestamp()
	}
	glw.Flush()
	return time.Since(start), err
}

// arrived finishes step i's download and reports the steps done.
func (pl *pipeline) arrived(finish func() error, i int) error {
	if err := finish(); err != nil {
		return err
	}
	s := &pl.steps[i]
	if s.landed != nil {
		s.landed()
	}
	if pl.o.Arrived != nil && s.out.rows > 0 && s.out.cols > 0 {
		w := max(1, int(pl.words))
		pl.o.Arrived(s.out.r0, s.out.c0/w, s.out.rows, s.out.cols/w)
	}
	if pl.report != nil {
		pl.report(i+1, len(pl.steps))
	}
	return nil
}

// computeTime is the GPU's time with the steps' dispatches in flight by
// the GL timestamps around them, where they look real, else the dispatch
// calls' wall time, summed.
//
// Not a sum of per-step GL_TIME_ELAPSED queries, as it was: where a GPU
// lets a step's work overlap the last one's, such a sum counts the shared
// time twice and can exceed the pass itself. Merged timestamp intervals
// cannot exceed the span from the first step's start to the last one's
// end. (Where the steps did not overlap the two agreed; issue 22's kernel
// slower than end to end came from the separate compute runs instead: see
// report's note and docs/PERFORMANCE.md, "glmul -n 16384: the kernel
// slower than end to end".)
func (pl *pipeline) computeTime(queries [][2]glw.Query, calls []time.Duration) (time.Duration, bool) {
	if len(queries) == len(calls) && len(queries) > 0 {
		spans := make([][2]uint64, len(queries))
		gpu := make([]time.Duration, len(queries))
		for i, q := range queries {
			spans[i] = [2]uint64{q[0].Nanoseconds(), q[1].Nanoseconds()}
			gpu[i] = time.Duration(spans[i][1] - spans[i][0])
			if spans[i][1] < spans[i][0] {
				gpu[i] = 0 // a timer that ran backwards is no timer (tuning.TimerPlausible refuses it)
			}
		}
		if tuning.TimerPlausible(gpu, calls) {
			return mergedSpan(spans), true
		}
	}
	var sum time.Duration
	for _, c := range calls {
		sum += c
	}
	return sum, false
}

// mergedSpan is the length of the union of the intervals [s[0], s[1]]
// (nanoseconds): time covered twice counts once.
func mergedSpan(spans [][2]uint64) time.Duration {
	s := slices.Clone(spans)
	slices.SortFunc(s, func(a, b [2]uint64) int { return cmp.Compare(a[0], b[0]) })
	var total, end uint64
	started := false
	for _, x := range s {
		if x[1] < x[0] {
			continue
		}
		switch {
		case !started || x[0] >= end:
			started = true
			total += x[1] - x[0]
			end = x[1]
		case x[1] > end:
			total += x[1] - end
			end = x[1]
		}
	}
	return time.Duration(total)
}

// hostPart returns the pinned matrix whose whole rows p is, held on the GPU
// with row stride ld, or nil: such a block needs no host copy, one GPU
// copy moves it.
func (pl *pipeline) hostPart(p part, ld int) *hostMatrix {
	if p.c0 != 0 || p.cols != p.m.Cols {
		return nil
	}
	return pl.d.hostMatrix(p.m, ld)
}

// upload queues a step's uploads: host copies into staging (or none for a
// pinned matrix) and the GPU copies from there.
func (pl *pipeline) upload(s *pipeStep) error {
	pt := &pl.pt
	st := pl.d.stage()
	for _, u := range s.up {
		pt.upBytes += 4 * int64(u.src.rows) * int64(u.dst.Stride)
		if hm := pl.hostPart(u.src, u.dst.Stride); hm != nil && !u.dst.KeepGaps {
			hm.copyIn(u.dst, u.src.r0, u.src.rows)
			continue
		}
		if err := st.Upload(u.dst, u.src.general()); err != nil {
			return err
		}
	}
	return nil
}

// startDownload queues the GPU copies of a step's block of C and returns
// the function that waits for them and copies the block out.
func (pl *pipeline) startDownload(s *pipeStep) (func() error, error) {
	if s.out.rows == 0 {
		return func() error { return nil }, nil
	}
	pt := &pl.pt
	pt.downBytes += 4 * int64(s.out.rows) * int64(s.c.Stride)
	st := pl.d.stage()
	if hm := pl.hostPart(s.out, s.c.Stride); hm != nil {
		f := hm.copyOut(s.c, s.out.r0, s.out.rows)
		return func() error {
			f.Signaled(^uint64(0))
			f.Release()
			return nil
		}, nil
	}
	pd, err := st.StartDownload(s.out.general(), s.c)
	if err != nil {
		return nil, err
	}
	return pd.Finish, nil
}

// minGPUTime is the least time a GL timer may give a run of dispatches:
// launching one takes microseconds on any GPU.
const minGPUTime = time.Microsecond
