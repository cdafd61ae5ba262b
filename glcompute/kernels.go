package glcompute

import (
	"errors"
	"fmt"
	"math"
	"strings"
	"unsafe"

	"github.com/glmul/glmul/glcompute/internal/dispatch"
	"github.com/glmul/glmul/glcompute/internal/glw"
	"github.com/glmul/glmul/glcompute/tuning"
	"github.com/glmul/glmul/shaders"
)

// This file is the one place that knows kernels: parsing a spec, the
// compiled programs and their uniforms, what fits the device, and which
// configuration runs by default (tuned, built-in, or the small-grid one).

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
	// pace, if set, sizes dispatches to a time budget (pacing.go).
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
// Every uniform of glmul's programs is set through setUint, setUints or
// setFloat, so the cache stays true; a uniform the kernel lacks (location
// −1) is ignored.
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
// K is not split (pacing.go: a split's slices are not paced).
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

// program returns the compiled kernel that spec names; on the device thread.
func (d *Device) program(spec string) (*program, error) {
	if p, ok := d.programs[spec]; ok {
		return p, nil
	}
	k, err := shaders.Lookup(spec)
	if err != nil {
		return nil, fmt.Errorf("glcompute: %w", err)
	}
	return d.programOf(k)
}

// programOf returns kernel k compiled, from the cache when it was before;
// on the device thread.
func (d *Device) programOf(k shaders.Kernel) (*program, error) {
	spec := k.Spec()
	if p, ok := d.programs[spec]; ok {
		return p, nil
	}
	if err := d.fits(k); err != nil {
		return nil, err
	}
	src := k.Source
	if d.info.ES {
		src = k.SourceES
	}
	prog, err := d.compile(k.File, src)
	if err != nil {
		return nil, err
	}
	p := &program{kernel: k, prog: prog}
	if b := maxDispatchTime(d.opts, d.borrowed); b > 0 {
		p.pace = &pacer{budget: b}
	}
	d.programs[spec] = p
	return p, nil
}

// compile returns the program of src (file's source): from
// Options.ProgramCache where the driver takes its binary, else compiled,
// linked and kept there; on the device thread.
func (d *Device) compile(file, src string) (glw.Program, error) {
	if prog, ok := d.loadProgram(src); ok {
		return prog, nil
	}
	prog, err := glw.NewComputeProgram(file, src)
	if err != nil {
		var ce *glw.CompileError
		if errors.As(err, &ce) && d.opts.Verbose {
			return 0, fmt.Errorf("%w: %w\n%s", ErrDriver, err, ce.NumberedSource())
		}
		return 0, fmt.Errorf("%w: %w", ErrDriver, err)
	}
	d.storeProgram(src, prog)
	return prog, nil
}

// fits reports whether the device can run kernel k at all.
func (d *Device) fits(k shaders.Kernel) error {
	switch {
	case k.SharedBytes > d.info.MaxSharedMemory:
		return fmt.Errorf("%w: kernel %s needs %d bytes of shared memory, the driver offers %d (GL_MAX_COMPUTE_SHARED_MEMORY_SIZE)",
			ErrUnsupported, k.Spec(), k.SharedBytes, d.info.MaxSharedMemory)
	case k.Threads > d.info.MaxWorkGroupInvocations:
		return fmt.Errorf("%w: kernel %s needs %d invocations per work group, the driver offers %d",
			ErrUnsupported, k.Spec(), k.Threads, d.info.MaxWorkGroupInvocations)
	case k.Textures && d.texBlock == 0:
		return fmt.Errorf("%w: kernel %s reads through buffer textures, which this OpenGL ES context lacks (OpenGL ES 3.2 or GL_OES_texture_buffer)",
			ErrUnsupported, k.Spec())
	}
	return nil
}

// bindStorage binds size bytes of buf from start (size 0: all of buf) to
// storage binding index for program p and, when p reads its inputs through
// buffer textures (Kernel.Textures) and index is 0 or 1 (A or B), views
// the same bytes as the texture at unit index; on the device thread. start
// is a multiple of d.bindAlign.
func (d *Device) bindStorage(p *program, index uint32, buf glw.Buffer, start, size int64) {
	if size > 0 {
		buf.BindStorageRange(index, start, size)
	} else {
		buf.BindStorage(index)
	}
	if !p.kernel.Textures || index > 1 {
		return
	}
	if d.saved != nil {
		d.saved.SaveTextures(len(d.texs))
	}
	if p.kernel.Float64 {
		// dfast's _tex reads RGBA32UI texels: not the pool's textures,
		// which are RGBA32F views made once (a float64 product binds
		// its two a band, so re-viewing hardly counts).
		if d.texs[index] == 0 {
			d.texs[index] = glw.NewTexture()
		}
		d.texs[index].BindBufferUint(index, buf, start, size)
		d.texBound = true
		glw.BarrierTextureFetch()
		return
	}
	if t, pooled := d.poolTex[buf]; pooled && start == 0 && size == 0 {
		// A buffer of the pool has a texture of its own, made once and
		// then only bound: giving a texture another buffer, and a fetch
		// barrier, cost a small product much of its time
		// (docs/PERFORMANCE.md, "Figures from the library's comments").
		// The barrier is not needed here: glmul writes a pool buffer by
		// copies, or by shaders followed by BarrierStorage, which orders
		// texel fetches too.
		if t == 0 {
			t = glw.NewTexture()
			t.BindBuffer(index, buf, 0, 0)
			d.poolTex[buf] = t
		} else {
			t.Bind(index)
		}
		d.texBound = true
		return
	}
	if d.texs[index] == 0 {
		d.texs[index] = glw.NewTexture()
	}
	d.texs[index].BindBuffer(index, buf, start, size)
	d.texBound = true
	// Shader writes (glmul's earlier products, inside a Scope followed by
	// a storage barrier only, or the host's own) reach texel fetches only
	// after a texture-fetch barrier.
	glw.BarrierTextureFetch()
}

// detachTextures makes the buffer textures of bindStorage view nothing, so
// that they keep no buffer alive; on the device thread.
func (d *Device) detachTextures() {
	if !d.texBound {
		return
	}
	for i, t := range d.texs {
		if t != 0 {
			t.BindBuffer(uint32(i), 0, 0, 0)
		}
	}
	d.texBound = false
}

// hostKernels are the kernels of one host product, chosen once, before
// it is planned: the kernel (kern), its stand-in reading A as it is where
// it reads A transposed (natural: kern itself otherwise), and the
// device's small-grid kernel for strips of C past whole tiles (edge; Name
// "" where there is none).
type hostKernels struct {
	kern, natural, edge shaders.Kernel
}

// chooseHost resolves spec (MulOptions.Kernel; "" or "fast": kernelFor's
// choice for an m×k by k×n product) into a host product's kernels.
func (d *Device) chooseHost(spec string, m, k, n int) (hk hostKernels, err error) {
	if spec == "" || spec == "fast" {
		spec = d.kernelFor(m, k, n)
	}
	if hk.kern, err = shaders.Lookup(spec); err != nil {
		return hk, fmt.Errorf("%w: %w", ErrUnsupported, err)
	}
	hk.natural = hk.kern
	if hk.kern.TransposeA {
		if hk.natural, err = shaders.Lookup(d.natural(spec, m, k, n)); err != nil {
			return hk, fmt.Errorf("%w: %w", ErrUnsupported, err)
		}
	}
	if spec := d.info.SmallGridKernel; spec != "" {
		if hk.edge, err = shaders.Lookup(shaders.WithTextures(spec, hk.kern.Textures)); err != nil {
			hk.edge = shaders.Kernel{} // none that this package knows
		}
	}
	return hk, nil
}

// natural returns the configuration that stands in for spec where A is
// read as it is, for an m×k by k×n product: spec itself unless it reads A
// transposed, then for the default Info.NaturalWideKernel where
// useWideNatural says so, else Info.NaturalKernel, and for another spec
// spec without its _at. A product falls back to it where A cannot be
// transposed (no room for the transpose, or panels).
func (d *Device) natural(spec string, m, k, n int) string {
	if kern, err := shaders.Lookup(spec); err != nil || !kern.TransposeA {
		return spec
	}
	if spec == d.info.DefaultKernel && d.info.NaturalKernel != "" {
		if d.useWideNatural(m, k, n) {
			return d.info.NaturalWideKernel
		}
		return d.info.NaturalKernel
	}
	return shaders.Natural(spec)
}

// kernelFor returns the fast configuration for an m×k by k×n product: the
// one glmul tune chose for its shape class where it did (Info.ClassKernels),
// else for at most tuning.ThinNMax columns tuning.ThinN's, else the default, or Info.SmallGridKernel where tuning.UseSmallGrid says
// the default's large tiles fit the product badly; a default that reads A
// transposed reads it as it is where B is narrow (tuning.UseTransposedA),
// large products through Info.NaturalWideKernel (tuning.UseWideNatural).
// A class's tuned configuration is kept as it is, _at or not: tune
// measured it, transpose included, on products of that class.
func (d *Device) kernelFor(m, kDim, n int) string {
	if spec, ok := d.info.ClassKernels[string(tuning.Classify(m, kDim, n))]; ok {
		return spec
	}
	if n <= tuning.ThinNMax {
		if spec := tuning.ThinN(d.tuningDriver()); spec != "" && d.fitsSpec(spec) == nil {
			return spec
		}
	}
	spec := d.info.DefaultKernel
	k, err := shaders.Lookup(spec)
	if err != nil {
		return spec
	}
	groups := ((m + k.TileM - 1) / k.TileM) * ((n + k.TileN - 1) / k.TileN)
	if d.info.SmallGridKernel != "" && tuning.UseSmallGrid(groups, kDim, tuning.Wave(d.tuningDriver())) {
		return d.info.SmallGridKernel
	}
	if k.TransposeA && !tuning.UseTransposedA(n) {
		return d.natural(spec, m, kDim, n)
	}
	return spec
}

// useWideNatural reports whether an m×k by k×n product that reads A as it
// is runs Info.NaturalWideKernel rather than NaturalKernel
// (tuning.UseWideNatural), with the slots of both kernels where they are
// the same (slots), else none.
func (d *Device) useWideNatural(m, k, n int) bool {
	if d.info.NaturalWideKernel == "" {
		return false
	}
	nat, err := shaders.Lookup(d.info.NaturalKernel)
	if err != nil {
		return false
	}
	wide, err := shaders.Lookup(d.info.NaturalWideKernel)
	if err != nil {
		return false
	}
	slots := d.slots(nat)
	if d.slots(wide) != slots {
		slots = 0
	}
	return tuning.UseWideNatural(m, k, n, tuning.Tile{M: nat.TileM, N: nat.TileN, K: nat.StepK},
		tuning.Tile{M: wide.TileM, N: wide.TileN, K: wide.StepK}, tuning.Wave(d.tuningDriver()), slots)
}

// slots is how many work groups of kern the device runs at once where
// that is known: its multiprocessors, for a kernel whose group fills one
// (tuning.FillsSM) on a device that reports them (Info.SMCount); else 0.
// AutoSplitK's and stream-K's wave model counts in these.
func (d *Device) slots(kern shaders.Kernel) int {
	if tuning.FillsSM(kern.Spec(), kern.TileM*kern.TileN) {
		return d.info.SMCount
	}
	return 0
}

// fitsSpec is fits for a kernel named by its spec.
func (d *Device) fitsSpec(spec string) error {
	k, err := shaders.Lookup(spec)
	if err != nil {
		return fmt.Errorf("glcompute: %w", err)
	}
	return d.fits(k)
}

// tuningDriver is the driver as the shape rules see it: none, as for an
// unknown vendor, with Options.Unseen.
func (d *Device) tuningDriver() tuning.Driver {
	if d.opts.Unseen {
		return tuning.Driver{}
	}
	return d.info.driver()
}

// querySMCount runs smcount.comp and returns gl_SMCountNV, or 0 if that
// fails (it is an optimization's input, never a reason to fail Open). On
// the device thread; a borrowed context's bindings are restored.
func (d *Device) querySMCount() int {
	if d.borrowed {
		s := glw.SaveState(stateBindings)
		defer s.Restore()
	}
	p, err := d.programOf(shaders.SMCount())
	if err != nil {
		return 0
	}
	buf, ok := glw.NewStorageBuffer(8, nil, glw.StaticRead)
	if !ok {
		return 0
	}
	defer buf.Release()
	p.prog.Use()
	buf.BindStorage(2)
	glw.Dispatch(1, 1)
	glw.BarrierBufferRead()
	var out [2]uint32
	buf.Read(0, 8, unsafe.Pointer(&out[0]))
	if d.checkError("querying the multiprocessor count") != nil || out[0] > 1<<16 {
		return 0
	}
	return int(out[0])
}

// poison sets the first bytes/4 words of buf to NaN (poisonWord) with
// fill.comp, leaving the program and binding 2 changed; on the device
// thread.
func (d *Device) poison(buf glw.Buffer, bytes int) error {
	return d.poisonRange(buf, 0, bytes/4)
}

// poisonWord is the word poison writes: a quiet NaN as a float32, and two
// of them a quiet NaN as a float64 (0x7ff800007ff80000), so that one fill
// poisons the results of either type (a float64 product's C is filled as
// words, twice as many).
const poisonWord = 0x7ff80000

// poisonRange sets words [off, off+n) of buf to NaN, as poison does.
func (d *Device) poisonRange(buf glw.Buffer, off, n int) error {
	p, err := d.programOf(shaders.Fill())
	if err != nil {
		return err
	}
	p.prog.Use()
	p.setUint("count", uint32(off+n))
	p.setUint("value", poisonWord)
	buf.BindStorage(2)
	p.dispatchLinear(dispatch.Linear(n, p.kernel.Threads), off)
	glw.BarrierStorage()
	return nil
}
