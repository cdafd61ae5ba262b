package glcompute

import (
	"errors"
	"fmt"
	"unsafe"

	"github.com/glmul/glmul/glcompute/internal/dispatch"
	"github.com/glmul/glmul/glcompute/internal/glw"
	"github.com/glmul/glmul/glcompute/tuning"
	"github.com/glmul/glmul/internal/cause"
	"github.com/glmul/glmul/shaders"
)

// This file is the one place that knows kernels: parsing a spec,
// compiling it, what fits the device, and which configuration runs by
// default (tuned, built-in, or the small-grid one). A compiled program,
// its uniforms and how its dispatches are issued are program.go's.

// programNamed returns the compiled kernel that spec names; on the
// device thread.
func (d *Device) programNamed(spec string) (*program, error) {
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
		return cause.Mark(fmt.Errorf("%w: kernel %s needs %d bytes of shared memory, the driver offers %d (GL_MAX_COMPUTE_SHARED_MEMORY_SIZE)",
			ErrUnsupported, k.Spec(), k.SharedBytes, d.info.MaxSharedMemory), cause.KernelOverLimits)
	case k.Threads > d.info.MaxWorkGroupInvocations:
		return cause.Mark(fmt.Errorf("%w: kernel %s needs %d invocations per work group, the driver offers %d",
			ErrUnsupported, k.Spec(), k.Threads, d.info.MaxWorkGroupInvocations), cause.KernelOverLimits)
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
