package glcompute

import (
	"errors"
	"math"
	"math/rand/v2"
	"testing"

	"gonum.org/v1/gonum/blas/blas32"

	"github.com/glmul/glmul/cpu"
	"github.com/glmul/glmul/glcompute/tuning"
	"github.com/glmul/glmul/internal/conformance"
	"github.com/glmul/glmul/shaders"
	"github.com/glmul/glmul/validate"
)

// TestMisspeltUniformPanics: a uniform name the kernel does not declare
// panics (it would otherwise be set nowhere), while a declared one that
// the compiler may drop is accepted.
func TestMisspeltUniformPanics(t *testing.T) {
	d := openDevice(t, BackendEGL)
	d.call(func() {
		p, err := d.programOf(shaders.GEMM())
		if err != nil {
			t.Fatal(err)
		}
		p.prog.Use()
		conformance.MustPanic(t, "has no uniform lda2", func() { p.setUint("lda2", 1) })
		conformance.MustPanic(t, "has no uniform Alpha", func() { p.setFloat("Alpha", 1) })
		p.setUint("lda", 3)
	})
	if !declaresUniform("uniform uint first; // a comment\n", "first") || declaresUniform("uniform uint firsts;", "first") {
		t.Error("declaresUniform misreads a declaration")
	}
}

func TestKernelChoiceAPI(t *testing.T) {
	if err := tuning.CheckKernel("fast:128x128x8_8x8"); err != nil {
		t.Error(err)
	}
	if err := tuning.CheckKernel("fastest"); err == nil {
		t.Error("tuning.CheckKernel(fastest): no error")
	}
	if len(tuning.FastCandidates()) < 10 {
		t.Errorf("%d fast candidates", len(tuning.FastCandidates()))
	}
	d := openDevice(t, BackendEGL)
	if err := d.tuning().Fits(d.Info().DefaultKernel); err != nil {
		t.Errorf("the default kernel does not fit: %v", err)
	}
	huge := "fast:256x256x32_16x16" // 2·256·32·4 bytes of shared memory at least
	k, err := shaders.Lookup(huge)
	if err != nil || k.SharedBytes <= d.Info().MaxSharedMemory {
		t.Fatalf("%s should parse and need more shared memory than %d bytes: %v, %d", huge, d.Info().MaxSharedMemory, err, k.SharedBytes)
	}
	if err := d.tuning().Fits(huge); !errors.Is(err, ErrUnsupported) {
		t.Errorf("Fits(%s) = %v, want ErrUnsupported", huge, err)
	}
}

// TestPoison checks fill.comp's NaN poison: every word of the range, and
// nothing after it; and that its words, two by two, are float64 NaNs
// (Mul64's C is poisoned by the same fill).
func TestPoison(t *testing.T) {
	d := openDevice(t, BackendEGL)
	m := newMatrix(t, d, 1, 1000)
	m.Upload(blas32.General{Rows: 1, Cols: 1000, Stride: 1000, Data: make([]float32, 1000)})
	d.call(func() {
		if err := d.poison(m.buf, 4*999); err != nil {
			t.Fatal(err)
		}
	})
	got := cpu.New(1, 1000)
	m.Download(got)
	for i, v := range got.Data {
		if (i < 999) != math.IsNaN(float64(v)) {
			t.Fatalf("word %d = %v after poisoning 999 words", i, v)
		}
	}
	for i := 0; i+1 < 999; i += 2 {
		lo, hi := math.Float32bits(got.Data[i]), math.Float32bits(got.Data[i+1])
		if v := math.Float64frombits(uint64(hi)<<32 | uint64(lo)); !math.IsNaN(v) {
			t.Fatalf("words %d and %d as a float64: %v, not NaN", i, i+1, v)
		}
	}
}

// TestPlanRefusesOverflowingSizes: dimensions whose byte counts overflow
// int64 are refused, not planned as one piece.
func TestPlanRefusesOverflowingSizes(t *testing.T) {
	d := openDevice(t, BackendEGL)
	for _, s := range [][3]int{{1 << 31, 1 << 31, 1 << 31}, {1<<31 + 1, 1, 1}} {
		if plan, err := d.Plan(s[0], s[1], s[2], nil); !errors.Is(err, ErrTooLarge) {
			t.Errorf("Plan(%v) = %+v, %v; want ErrTooLarge", s, plan, err)
		}
	}
}

// TestTexturesDetached: after products with the cpu kernel (host and
// resident), the buffer textures of bindStorage view no buffer, so that
// they keep none alive after the product's buffers are released; a host
// product's pool buffers have textures of their own, each viewing its
// buffer, deleted with it.
func TestTexturesDetached(t *testing.T) {
	d := openDevice(t, BackendEGL)
	a, b := cpu.New(40, 32), cpu.New(32, 20)
	d.info.DefaultKernel, d.info.SmallGridKernel, d.info.ClassKernels = "cpu", "", nil
	ga, _ := d.NewMatrix(40, 32)
	gb, _ := d.NewMatrix(32, 20)
	gc, err := d.NewMatrix(40, 20)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := d.Mul(cpu.New(40, 20), a, b, nil); err != nil {
		t.Fatal(err)
	}
	d.call(func() {
		made := 0
		for buf, tex := range d.poolTex {
			if tex == 0 {
				continue
			}
			made++
			if got := tex.ViewedBuffer(0); got != buf {
				t.Errorf("pool buffer %d's texture views buffer %d", buf, got)
			}
		}
		if made != 2 { // A and B
			t.Errorf("%d pool buffers have textures, want 2", made)
		}
		d.drainPool()
		if len(d.poolTex) != 0 {
			t.Errorf("after the pool is drained: %d buffers left in poolTex", len(d.poolTex))
		}
	})
	if err := gc.Mul(ga, gb); err != nil {
		t.Fatal(err)
	}
	d.call(func() {
		for i, tex := range d.texs {
			if tex == 0 {
				t.Errorf("after Matrix.Mul: texture %d never made", i)
			} else if buf := tex.ViewedBuffer(uint32(i)); buf != 0 {
				t.Errorf("after Matrix.Mul: texture %d still views buffer %d", i, buf)
			}
		}
	})
}

// TestSmallTextureBuffers: where buffer textures view less than a storage
// block (OpenGL 4.3 guarantees 65536 texels, 1 MiB; softpipe has no more),
// host products with the cpu kernel run in panels that fit them, and
// resident ones too large for them run the generic fast kernel.
func TestSmallTextureBuffers(t *testing.T) {
	d := openDevice(t, BackendEGL)
	d.texBlock = 64 << 10
	conformance.Run(t, []conformance.Shape{{M: 300, K: 77, N: 260}, {M: 130, K: 150, N: 140}, {M: 20, K: 20, N: 20}}, func(c, a, b blas32.General) error {
		tm, err := d.Mul(c, a, b, &MulOptions{Kernel: "cpu"})
		if big := 4*a.Rows*((a.Cols+3)/4*4) > int(d.texBlock) || 4*b.Rows*((b.Cols+3)/4*4) > int(d.texBlock); err == nil && big != (tm.Panels != "") {
			t.Errorf("%dx%dx%d: panels %q", a.Rows, a.Cols, b.Cols, tm.Panels)
		}
		return err
	})
	d.info.DefaultKernel, d.info.SmallGridKernel, d.info.ClassKernels = "cpu", "", nil
	rng := rand.New(rand.NewPCG(61, 62))
	a, b := cpu.Random(128, 160, rng), cpu.Random(160, 32, rng) // A: 80 KiB
	got := residentProduct(t, d, a, b)
	ref := cpu.New(128, 32)
	cpu.Sgemm(ref, a, b)
	for i := range ref.Data {
		if e := math.Abs(float64(got.Data[i] - ref.Data[i])); e > 1e-4*(1+math.Abs(float64(ref.Data[i]))) {
			t.Fatalf("C[%d] = %v, want %v", i, got.Data[i], ref.Data[i])
		}
	}
	if _, ok := d.programs[tuning.GenericDefault]; !ok {
		t.Errorf("a resident product over an 80 KiB A with 64 KiB buffer textures did not run %s", tuning.GenericDefault)
	}
}

// residentProduct returns a·b computed by Matrix.Mul on new matrices
// (newResident), downloaded.
func residentProduct(t *testing.T, d *Device, a, b blas32.General) blas32.General {
	t.Helper()
	gc := newResident(t, d, cpu.New(a.Rows, b.Cols))
	if err := gc.Mul(newResident(t, d, a), newResident(t, d, b)); err != nil {
		t.Fatal(err)
	}
	got := cpu.New(a.Rows, b.Cols)
	if err := gc.Download(got); err != nil {
		t.Fatal(err)
	}
	return got
}

// newResident uploads m into a new matrix released with the test.
func newResident(t *testing.T, d *Device, m blas32.General) *Matrix {
	t.Helper()
	g, err := d.NewMatrix(m.Rows, m.Cols)
	if err == nil {
		err = g.Upload(m)
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(g.Release)
	return g
}

// TestTexturesLimitAtKernels: where a buffer texture views less than the
// operands (texBlock pinned to 512 KiB; softpipe's 65536 texels, GL 4.3's
// minimum, are near it), a kernel reading A transposed through textures
// gives way. A resident product runs neither the _at_tex kernel nor its
// _tex stand-in; a host product whose transpose does not fit and whose
// natural stand-in reads textures runs that stand-in in panels that its
// textures view whole (the default, reading storage buffers, had set the
// limit). Both ran whole and wrong on softpipe before (a review found
// them, 2026-11-27); llvmpipe views more than it is told, so the test
// checks the decisions as well as C.
func TestTexturesLimitAtKernels(t *testing.T) {
	d := openDevice(t, BackendEGL)
	d.texBlock = 512 << 10
	d.info.ClassKernels, d.info.SmallGridKernel = nil, ""
	rng := rand.New(rand.NewPCG(3, 3))

	d.info.DefaultKernel, d.info.NaturalKernel, d.info.NaturalWideKernel = "fast:64x64x8_8x4_db_at_tex", "fast:64x64x8_8x4_db_tex", ""
	m, k, n := 16, 80, 2048 // B: 640 KiB
	a, b := cpu.Random(m, k, rng), cpu.Random(k, n, rng)
	d.residentTextures = true // at any size: the limit on what a texture views decides here
	if err := validate.CheckFull(a, b, residentProduct(t, d, a, b)).Err(); err != nil {
		t.Errorf("resident product, B of %d bytes: %v", 4*k*n, err)
	}
	d.call(func() {
		for _, spec := range []string{d.info.DefaultKernel, d.info.NaturalKernel} {
			if _, ok := d.programs[spec]; ok {
				t.Errorf("resident product, B of %d bytes over the %d a texture views: %s compiled", 4*k*n, d.texBlock, spec)
			}
		}
	})

	d.info.DefaultKernel, d.info.NaturalKernel, d.info.NaturalWideKernel = "fast:128x128x8_8x8_db_at", "fast:128x128x8_8x8_db_tex", ""
	m, k, n = 300, 500, 40 // A: 600 KB
	a, b = cpu.Random(m, k, rng), cpu.Random(k, n, rng)
	c := cpu.New(m, n)
	bytes := int64(4 * (m*k + k*n + m*n))
	d.opts.NoPersistentMapping = true // no streamed panel pass (unitstream.go): the panel product's choice is under test
	tm, err := d.Mul(c, a, b, &MulOptions{Kernel: d.info.DefaultKernel, MaxGPUMemory: bytes + 4*int64(k*m) - 4})
	if err != nil {
		t.Fatal(err)
	}
	if tm.Kernel != d.info.NaturalKernel || tm.Panels == "" {
		t.Errorf("host product, A of %d bytes, no room for its transpose: ran %s, panels %q; want %s in panels", 4*m*k, tm.Kernel, tm.Panels, d.info.NaturalKernel)
	}
	if err := validate.CheckFull(a, b, c).Err(); err != nil {
		t.Errorf("host product: %v", err)
	}
}

// TestTexelsPastHalf: a kernel reading through buffer textures is right
// on every texel it may view (texBlock, up to 1 MiB here: GL 4.3's least):
// B from just under half of it to all of it. Mesa's softpipe fetched the
// texels past 32768 of the 65536 it reports wrong (a review found it,
// 2026-11-27); glmul views half as much there.
func TestTexelsPastHalf(t *testing.T) {
	d := openDevice(t, BackendEGL)
	rng := rand.New(rand.NewPCG(8, 8))
	texels := int(min(d.texBlock, 1<<20) / 16)
	for _, k := range []int{texels/32 - 4, texels/32 + 4, texels / 16} { // B: k rows of 64 floats, 16 texels
		a, b, c := cpu.Random(8, k, rng), cpu.Random(k, 64, rng), cpu.New(8, 64)
		if _, err := d.Mul(c, a, b, &MulOptions{Kernel: "fast:64x64x8_8x4_db_tex", SplitK: 1}); err != nil {
			t.Fatal(err)
		}
		if err := validate.CheckFull(a, b, c).Err(); err != nil {
			t.Errorf("B of %d texels (the device views %d): %v", 16*k, texels, err)
		}
	}
}
