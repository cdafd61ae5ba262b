package glcompute

import (
	"math/rand/v2"
	"path/filepath"
	"strings"
	"testing"

	"github.com/glmul/glmul/cpu"
	"github.com/glmul/glmul/glcompute/internal/glw"
	"github.com/glmul/glmul/glcompute/tuning"
	"github.com/glmul/glmul/internal/conformance"
	"github.com/glmul/glmul/validate"
	"gonum.org/v1/gonum/blas/blas32"
)

// TestBufferReuse: a product reuses the buffers the last one left where
// they are large enough (stale contents included: the results stay
// right), a larger one replaces them, the pool never holds more than one
// product's buffers, and a product in panels empties it.
func TestBufferReuse(t *testing.T) {
	d := openDevice(t, BackendEGL)
	rng := rand.New(rand.NewPCG(7, 8))
	mul := func(m, k, n int, o *MulOptions) {
		t.Helper()
		a, b, c := cpu.Random(m, k, rng), cpu.Random(k, n, rng), cpu.New(m, n)
		if _, err := d.Mul(c, a, b, o); err != nil {
			t.Fatal(err)
		}
		if r := validate.CheckFull(a, b, c); !r.OK {
			t.Fatalf("%d×%d×%d after reuse: %v", m, k, n, r.Err())
		}
	}
	held := func() []glwBufferName { return poolNames(d) }
	mul(200, 150, 100, nil)
	first := held()
	if len(first) != 3 {
		t.Fatalf("%d buffers kept after a product, want its 3", len(first))
	}
	mul(37, 53, 29, &MulOptions{Measure: func(s tuning.Stages) error { _, _, err := s.Run(false, nil); return err }}) // smaller: all three reused
	if again := held(); !sameSet(first, again) {
		t.Errorf("a smaller product kept %v, want the reused %v", again, first)
	}
	mul(300, 300, 300, nil) // larger: new buffers replace them
	if len(held()) != 3 || sameSet(first, held()) {
		t.Errorf("after a larger product the pool holds %v (before: %v)", held(), first)
	}
	// A kernel that reads A transposed holds a fourth buffer; the same
	// product again reuses all four.
	at := &MulOptions{Kernel: "fast:128x128x8_8x8_db_at"}
	mul(300, 300, 300, at)
	four := held()
	mul(300, 300, 300, at)
	if len(four) != 4 || !sameSet(four, held()) {
		t.Errorf("a transposed-A product kept %v, then %v; want the same 4", four, held())
	}
	mul(37, 53, 29, nil) // three of them reused, the pool back to three
	if n := len(held()); n != 3 {
		t.Errorf("after a product of 3 buffers the pool holds %d", n)
	}
	mul(1000, 16, 16, &MulOptions{Kernel: "fast:64x64x8_8x4", MaxBinding: 16 << 10}) // in panels
	if n := len(held()); n != 0 {
		t.Errorf("a product in panels left %d pooled buffers", n)
	}
}

type glwBufferName uint32

// poolNames lists the buffers d's pool keeps.
func poolNames(d *Device) []glwBufferName {
	var out []glwBufferName
	d.call(func() {
		for _, p := range d.pool {
			out = append(out, glwBufferName(p.buf))
		}
	})
	return out
}

func sameSet(a, b []glwBufferName) bool {
	if len(a) != len(b) {
		return false
	}
	seen := map[glwBufferName]bool{}
	for _, x := range a {
		seen[x] = true
	}
	for _, x := range b {
		if !seen[x] {
			return false
		}
	}
	return true
}

// TestSMCount: the multiprocessor count is read exactly where the driver
// has GL_NV_shader_thread_group (NVIDIA), and is 0 elsewhere (Mesa).
func TestSMCount(t *testing.T) {
	d := openDevice(t, BackendEGL)
	var has bool
	d.call(func() { has = glw.HasExtension("GL_NV_shader_thread_group") })
	if n := d.Info().SMCount; has != (n > 0) {
		t.Errorf("GL_NV_shader_thread_group %v, SMCount %d", has, n)
	}
	t.Logf("%s: %d multiprocessors", d.Info().Renderer, d.Info().SMCount)
}

// TestClassKernels: a kernel cached for a shape class runs that class's
// products (not others), and Options.IgnoreTuned ignores it.
func TestClassKernels(t *testing.T) {
	info := openDevice(t, BackendEGL).Info()
	const spec = "fast:64x64x8_4x4"
	path := filepath.Join(tempDir(t), "tuned.json")
	t.Setenv("GLMUL_TUNE_CACHE", path)
	c := tuning.Cache{}
	c.Put(tuning.Entry{Driver: info.driver(), Class: tuning.LongK, Kernel: spec})
	if err := c.Save(path); err != nil {
		t.Fatal(err)
	}
	for _, ignore := range []bool{false, true} {
		d, err := Open(&Options{Backend: onPlatform(BackendEGL), IgnoreTuned: ignore})
		if err != nil {
			t.Fatal(err)
		}
		long, square := d.tuning().KernelFor(8, 100, 8), d.tuning().KernelFor(64, 64, 64)
		d.Release()
		if (long == spec) == ignore || square == spec {
			t.Errorf("IgnoreTuned %v: long-k product runs %s, square %s; the cached long-k kernel is %s", ignore, long, square, spec)
		}
	}
}

// TestUnseen: a device opened Unseen runs the device model's choice for
// what OpenGL reports, whatever its vendor and a tuning cache say (here
// llvmpipe's cpu built-in, its thin-B rule and a cached square winner),
// and its products are right: the model's default (A transposed on this
// context's limits), its stand-in and its small grid over shapes that
// straddle their tiles.
func TestUnseen(t *testing.T) {
	info := openDevice(t, BackendEGL).Info()
	path := filepath.Join(tempDir(t), "tuned.json")
	t.Setenv("GLMUL_TUNE_CACHE", path)
	c := tuning.Cache{}
	c.Put(tuning.Entry{Driver: info.driver(), Class: tuning.Square, Kernel: "fast:64x64x8_4x4"})
	if err := c.Save(path); err != nil {
		t.Fatal(err)
	}
	d := openDeviceWith(t, &Options{Backend: onPlatform(BackendEGL), Unseen: true})
	want := tuning.Model(d.Info().facts())
	got := d.Info()
	if got.DefaultKernel != want.Default || got.NaturalKernel != want.Natural || got.NaturalWideKernel != want.NaturalWide || got.SmallGridKernel != want.SmallGrid ||
		!strings.Contains(got.DefaultKernelSource, "device model") || !strings.Contains(got.DefaultKernelSource, "Unseen") {
		t.Fatalf("Unseen device chose %s, %s, %s, %s (%s); the model says %+v", got.DefaultKernel, got.NaturalKernel, got.NaturalWideKernel, got.SmallGridKernel, got.DefaultKernelSource, want)
	}
	for _, s := range [][3]int{{4096, 4096, 4096}, {2048, 64, 2}, {1024, 1024, 1024}, {64, 64, 64}} {
		k := d.tuning().KernelFor(s[0], s[1], s[2])
		if k != want.Default && k != want.Natural && k != want.SmallGrid {
			t.Errorf("Unseen: %v runs %s, none of the model's %+v", s, k, want)
		}
	}
	shapes := []conformance.Shape{{M: 257, K: 33, N: 2049}, {M: 130, K: 520, N: 67}, {M: 65, K: 19, N: 255}, {M: 1, K: 9, N: 1}}
	for _, kernel := range []string{"fast", want.Natural, want.SmallGrid} {
		t.Run(kernel, func(t *testing.T) {
			conformance.Run(t, shapes, func(c, a, b blas32.General) error {
				_, err := stagedMul(d, c, a, b, MulOptions{Kernel: kernel}, 2)
				return err
			})
		})
	}
}

// TestTransposedADefault: where the default reads A transposed (as
// NVIDIA's), wide products run it, narrow ones (N under
// tuning.TransposedAMinN) and resident ones its stand-in that reads A as
// it is (the wide one by the wave model, as for products that cannot
// transpose A); a default that reads A as it is is never replaced.
func TestTransposedADefault(t *testing.T) {
	d := openDevice(t, BackendEGL)
	const at, natural = "fast:128x128x8_8x8_db_at", "fast:64x64x8_4x4"
	d.info.DefaultKernel, d.info.NaturalKernel, d.info.NaturalWideKernel, d.info.SmallGridKernel, d.info.ClassKernels = at, natural, "", "", nil
	if got := d.tuning().KernelFor(4096, 4096, 4096); got != at {
		t.Errorf("4096³ runs %s, want %s", got, at)
	}
	if got := d.tuning().KernelFor(8192, 8192, 256); got != natural {
		t.Errorf("8192×8192×256 runs %s, want %s", got, natural)
	}
	// With a stand-in for large products: from tuning.WideNaturalMinMACs
	// multiply-adds on, narrow products only.
	const wide = "fast:128x128x8_8x8_db"
	d.info.NaturalWideKernel = wide
	for _, c := range []struct {
		m, k, n int
		want    string
	}{
		{8192, 8192, 256, wide}, {2048, 8192, 1024, wide}, {1000, 4096, 1000, natural}, {1024, 1024, 1024, natural},
		{8192, 8192, tuning.TransposedAMinN, at}, {4096, 4096, 4096, at},
	} {
		if got := d.tuning().KernelFor(c.m, c.k, c.n); got != c.want {
			t.Errorf("%d×%d×%d with a wide stand-in runs %s, want %s", c.m, c.k, c.n, got, c.want)
		}
	}
	// Where the device reports its multiprocessors and both tiles fill one,
	// the wave model decides: NVIDIA's two natural tiles on 132.
	sm := d.info.SMCount
	d.info.SMCount, d.info.NaturalKernel, d.info.NaturalWideKernel = 132, "fast:128x128x16_8x8_db", "fast:128x256x16_16x8_db"
	if got := d.tuning().KernelFor(8192, 8192, 256); got != d.info.NaturalWideKernel {
		t.Errorf("8192×8192×256 on 132 multiprocessors runs %s, want %s", got, d.info.NaturalWideKernel)
	}
	if got := d.tuning().KernelFor(1536, 4096, 1536); got != d.info.NaturalKernel {
		t.Errorf("1536×4096×1536 on 132 multiprocessors runs %s, want %s (stream-K's 144 tiles)", got, d.info.NaturalKernel)
	}
	// A product that cannot transpose A (no room, panels) takes the
	// default's stand-in by the same rule, wide B or not.
	for _, c := range []struct {
		m, k, n int
		want    string
	}{
		{8192, 8192, 8192, d.info.NaturalWideKernel}, {8192, 8192, 256, d.info.NaturalWideKernel},
		{1536, 4096, 1536, d.info.NaturalKernel}, {1024, 1024, 4096, d.info.NaturalKernel},
	} {
		if got := d.natural(at, c.m, c.k, c.n); got != c.want {
			t.Errorf("stand-in for %d×%d×%d on 132 multiprocessors: %s, want %s", c.m, c.k, c.n, got, c.want)
		}
	}
	d.info.SMCount, d.info.NaturalKernel, d.info.NaturalWideKernel = sm, natural, ""
	d.info.DefaultKernel = "fast:64x64x8_4x4_db" // reads A as it is: no stand-in
	if got := d.tuning().KernelFor(64, 64, 64); got != d.info.DefaultKernel {
		t.Errorf("a default reading A as it is was replaced by %s", got)
	}
	d.info.DefaultKernel = at
	if got := d.natural("fast:256x128x16_16x8_db_at", 8192, 8192, 8192); got != "fast:256x128x16_16x8_db" {
		t.Errorf("natural of a spec not the default: %s", got)
	}
	// Wide enough that kernelFor keeps the _at default: a resident product
	// keeps it too (TestResidentTransposedA tries more).
	rng := rand.New(rand.NewPCG(9, 9))
	a, b := cpu.Random(8, 12, rng), cpu.Random(12, 2048, rng) // rows of multiples of 4: the fast kernel
	if got := d.tuning().KernelFor(8, 12, 2048); got != at {
		t.Fatalf("8×12×2048 runs %s, want %s", got, at)
	}
	if err := validate.CheckFull(a, b, residentProduct(t, d, a, b)).Err(); err != nil {
		t.Error(err)
	}
	d.call(func() {
		if _, ok := d.programs[at]; !ok {
			t.Errorf("a resident product did not run %s", at)
		}
		if _, ok := d.programs[natural]; ok {
			t.Errorf("a resident product compiled %s", natural)
		}
	})
}
