package glcompute

import (
	"fmt"
	"math"
	"runtime"
	"strings"
	"time"

	"github.com/glmul/glmul/glcompute/internal/dispatch"
	"github.com/glmul/glmul/glcompute/internal/glw"
	"github.com/glmul/glmul/shaders"
)

// This file is a compiled program: its uniforms, its dispatches in
// chunks, and the pacing that sizes them to a time budget.

// program is a compiled kernel and its uniform locations.
type program struct {
	kernel shaders.Kernel
	prog   glw.Program
	locs   map[string]int32 // uniform locations, looked up once
	set    map[int32]uint32 // the last value set per uniform (a float's bits)
	// planned is the last dispatch plan and its rows, columns and group
	// cap: a resident product re-plans the same shape every call.
	planned    dispatch.Plan
	plannedFor [3]int
	// pace, if set, sizes dispatches to a time budget (program.go).
	pace *pacer
}

// plan returns the dispatch plan of a rows×cols result in chunks of at
// most maxGroups work groups an axis (dispatch.New), reusing the last one
// for the same arguments. The plan is shared: read it, do not change it.
func (p *program) plan(rows, cols, maxGroups int) (dispatch.Plan, error) {
	key := [3]int{rows, cols, maxGroups}
	if p.planned.Chunks != nil && p.plannedFor == key {
		return p.planned, nil
	}
	plan, err := dispatch.New(rows, cols, p.kernel.TileM, p.kernel.TileN, maxGroups)
	if err != nil {
		return plan, fmt.Errorf("glcompute: %w", err)
	}
	p.planned, p.plannedFor = plan, key
	return plan, nil
}

// setUint sets the uint uniform name of p, the current program, unless it
// already holds v (a resident product re-sets the same values every call).
// Every 32-bit uniform of glmul's programs is set through setUint,
// setUints or setFloat, so the cache stays true (doubles through
// setDouble, uncached); a uniform the kernel lacks (location −1) is
// ignored.
func (p *program) setUint(name string, v uint32) {
	if l, ok := p.changed(name, v); ok {
		glw.SetUint(l, v)
	}
}

// setFloat sets the float uniform name of p, as setUint does.
func (p *program) setFloat(name string, v float32) {
	if l, ok := p.changed(name, math.Float32bits(v)); ok {
		glw.SetFloat(l, v)
	}
}

// setDouble sets the double uniform name of p (GEMM64's α and β) every
// time: the cache holds 32-bit values, and a double uniform is in no
// other setter's way.
func (p *program) setDouble(name string, v float64) { glw.SetDouble(p.loc(name), v) }

// dispatchTiles queues p, the current program with its other uniforms
// set, over a rows×cols result in chunks of at most maxGroups work groups
// an axis (x0 and y0 say where each starts), and returns how many
// dispatches it made.
func (p *program) dispatchTiles(rows, cols, maxGroups int) (int, error) {
	plan, err := p.plan(rows, cols, maxGroups)
	if err != nil {
		return 0, err
	}
	p.dispatchChunks(plan)
	return len(plan.Chunks), nil
}

// dispatchChunks queues p, the current program, over plan's chunks (each
// in dispatches sized to the budget, with a pacer).
func (p *program) dispatchChunks(plan dispatch.Plan) {
	for _, ch := range plan.Chunks {
		p.dispatchChunk(ch, 1)
	}
}

// dispatchChunk queues p, the current program, over one chunk of a plan
// in splits slices of K (the dispatch's z): paced where p has a pacer and
// K is not split (program.go: a split's slices are not paced).
func (p *program) dispatchChunk(ch dispatch.Chunk, splits int) {
	if p.pace != nil && splits == 1 {
		p.dispatchPaced(ch)
		return
	}
	p.setUint("x0", uint32(ch.X0))
	p.setUint("y0", uint32(ch.Y0))
	glw.Dispatch3(ch.GroupsX, ch.GroupsY, splits)
}

// dispatchLinear runs chunks, a one-dimensional plan (dispatch.Linear),
// with p in use: each chunk's first index, plus off, in uniform first.
func (p *program) dispatchLinear(chunks []dispatch.LinearChunk, off int) {
	for _, ch := range chunks {
		p.setUint("first", uint32(off+ch.First))
		glw.Dispatch(ch.GroupsX, ch.GroupsY)
	}
}

// uniform is a uint uniform's name and value, for setUints.
type uniform struct {
	name string
	v    int
}

// setUints sets several uint uniforms with setUint.
func (p *program) setUints(us ...uniform) {
	for _, u := range us {
		p.setUint(u.name, uint32(u.v))
	}
}

// setLayout sets the shape of a product for p, the current program (M,
// K, N), and the row strides and offsets of A, B and C in elements, in
// the units of the kernel's uniforms: a strided float32 kernel's offsets
// in vec4s (offA4, offB4, offC4; each a multiple of 4 floats), a float64
// kernel's in doubles (offA, offB, offC).
func (p *program) setLayout(m, k, n, lda, ldb, ldc, offA, offB, offC int) {
	if p.kernel.Float64 {
		p.setUints(uniform{"M", m}, uniform{"K", k}, uniform{"N", n}, uniform{"lda", lda}, uniform{"ldb", ldb},
			uniform{"ldc", ldc}, uniform{"offA", offA}, uniform{"offB", offB}, uniform{"offC", offC})
		return
	}
	p.setUints(uniform{"M", m}, uniform{"K", k}, uniform{"N", n}, uniform{"lda", lda}, uniform{"ldb", ldb},
		uniform{"ldc", ldc}, uniform{"offA4", offA / 4}, uniform{"offB4", offB / 4}, uniform{"offC4", offC / 4})
}

// changed returns the location of uniform name and whether its cached
// value differs from bits, recording bits as its value.
func (p *program) changed(name string, bits uint32) (int32, bool) {
	l := p.loc(name)
	if old, ok := p.set[l]; ok && old == bits {
		return l, false
	}
	if p.set == nil {
		p.set = map[int32]uint32{}
	}
	p.set[l] = bits
	return l, true
}

func (p *program) release() { p.prog.Release() }

// loc returns the location of a uniform, looked up once. It panics on a
// name the kernel's source does not declare: a misspelt uniform would
// otherwise be set nowhere, silently (location −1 is also what a declared
// uniform that the compiler removed gets, which is harmless).
func (p *program) loc(name string) int32 {
	if l, ok := p.locs[name]; ok {
		return l
	}
	if p.locs == nil {
		p.locs = map[string]int32{}
	}
	l := p.prog.Uniform(name)
	if l < 0 && !declaresUniform(p.kernel.Source, name) {
		panic("glcompute: kernel " + p.kernel.File + " has no uniform " + name)
	}
	p.locs[name] = l
	return l
}

// declaresUniform reports whether GLSL source declares a uniform name.
func declaresUniform(source, name string) bool {
	for _, line := range strings.Split(source, "\n") {
		f := strings.Fields(strings.TrimSuffix(strings.TrimSpace(line), ";"))
		if len(f) >= 3 && f[0] == "uniform" && strings.TrimSuffix(f[2], ";") == name {
			return true
		}
	}
	return false
}

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
