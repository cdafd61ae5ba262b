package glcompute

import (
	"runtime"
	"time"

	"github.com/glmul/glmul/glcompute/internal/dispatch"
	"github.com/glmul/glmul/glcompute/internal/glw"
)

// Windows resets a GPU whose work runs longer than TdrDelay (2 s by
// default; HKLM\System\CurrentControlSet\Control\GraphicsDrivers\TdrDelay;
// docs/SUPPORT.md, "Windows")
// without a pause: the program's context is lost, and on some systems the
// desktop flickers. The paper capped every dispatch at 64×64 work groups
// against it, which is far under the limit on a fast GPU and can be far
// over it on a slow one (llvmpipe runs a 64×64-group tiled32 dispatch of
// K = 4096 for minutes). A pacer measures instead: on a program's first
// dispatches it times growing dispatches (one work group, then twice as
// many each time, glFinish before and after) and, from the measured rate,
// sizes each dispatch to half the budget (never under one work group: a
// group that alone outlasts the budget runs alone); once a dispatch as large as a
// whole chunk has run in under a quarter of it, dispatches up to that size
// and depth run unmeasured. Not paced: the slices of a K split (a small
// grid, each group a slice of K; Dispatch3's z) and the one-dimensional
// helper passes (transpose, fill, reduce, batched), which do little per
// work group.

// defaultMaxDispatchTimeWindows is Options.MaxDispatchTime's zero value on
// Windows: a quarter of the default TdrDelay.
const defaultMaxDispatchTimeWindows = 500 * time.Millisecond

// maxDispatchTime is the budget of one dispatch on a device with options
// o: o's, or for an owned device on Windows defaultMaxDispatchTimeWindows;
// 0 for no pacing. A borrowed device paces only when asked: measuring
// takes glFinish calls, which an engine's frame must not meet unasked.
func maxDispatchTime(o Options, borrowed bool) time.Duration {
	if o.MaxDispatchTime == 0 && runtime.GOOS == "windows" && !borrowed {
		return defaultMaxDispatchTimeWindows
	}
	return o.MaxDispatchTime
}

// pacer sizes one program's dispatches to a time budget.
type pacer struct {
	budget time.Duration
	// perUnit is the latest measured time of one unit of work (a work
	// group times the program's K), 0 before any measurement; largest is
	// the most units a measured dispatch had; trusted is the most units
	// a dispatch may have and run unmeasured (one that large ran in under
	// budget/4).
	perUnit          time.Duration
	largest, trusted int
	// times are the measured dispatches' durations, and slowestCall the
	// longest glDispatchCompute call among the unmeasured ones (on a
	// driver that computes within the call, as llvmpipe does, its run),
	// for tests.
	times       []time.Duration
	groups      []int
	slowestCall time.Duration
}

// units is a dispatch's work for the pacer: groups × the program's K (its
// last value of uniform K, 1 for programs without one): a work group's
// time grows with K.
func (p *program) units(groups int) int {
	k := 1
	if l, ok := p.locs["K"]; ok && l >= 0 {
		k = max(1, int(p.set[l]))
	}
	return groups * k
}

// next returns how many units the next dispatch may have: one group's
// worth at first, then at most twice the largest measured and what half
// the budget allows at the measured rate.
func (pc *pacer) next(unit int) int {
	if pc.perUnit == 0 {
		return unit
	}
	fit := int(pc.budget / 2 / pc.perUnit)
	return max(unit, min(fit, 2*pc.largest))
}

// observe records a measured dispatch of groups work groups, units of
// work, that took t.
func (pc *pacer) observe(groups, units int, t time.Duration) {
	pc.times, pc.groups = append(pc.times, t), append(pc.groups, groups)
	pc.perUnit = max(t/time.Duration(units), 1)
	pc.largest = max(pc.largest, units)
	if t < pc.budget/4 {
		pc.trusted = max(pc.trusted, units)
	}
}

// dispatchPaced queues chunk ch of p's plan in dispatches the pacer
// expects to finish within its budget: rows of work groups, or part of
// one row, measured until trusted.
func (p *program) dispatchPaced(ch dispatch.Chunk) {
	pc := p.pace
	unit := p.units(1)
	total := ch.GroupsX * ch.GroupsY
	if p.units(total) <= pc.trusted {
		start := time.Now()
		p.dispatchAt(ch, 0, 0, ch.GroupsX, ch.GroupsY)
		pc.slowestCall = max(pc.slowestCall, time.Since(start))
		return
	}
	for done := 0; done < total; {
		n := max(1, pc.next(unit)/unit)
		gx, gy := done%ch.GroupsX, done/ch.GroupsX
		w, h := min(n, ch.GroupsX-gx), 1
		if gx == 0 && n >= ch.GroupsX {
			w, h = ch.GroupsX, min(n/ch.GroupsX, ch.GroupsY-gy)
		}
		u := p.units(w * h)
		if u <= pc.trusted {
			start := time.Now()
			p.dispatchAt(ch, gx, gy, w, h)
			pc.slowestCall = max(pc.slowestCall, time.Since(start))
		} else {
			glw.Finish() // time this dispatch alone
			start := time.Now()
			p.dispatchAt(ch, gx, gy, w, h)
			glw.Finish()
			pc.observe(w*h, u, time.Since(start))
		}
		done += w * h
	}
}

// dispatchAt queues w×h work groups of chunk ch from its group (gx, gy).
func (p *program) dispatchAt(ch dispatch.Chunk, gx, gy, w, h int) {
	p.setUint("x0", uint32(ch.X0+gx*p.kernel.TileN))
	p.setUint("y0", uint32(ch.Y0+gy*p.kernel.TileM))
	glw.Dispatch(w, h)
}
