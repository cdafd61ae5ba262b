package glcompute

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"gonum.org/v1/gonum/blas/blas32"

	"github.com/glmul/glmul/cpu"
	"github.com/glmul/glmul/glcompute/tuning"
	"github.com/glmul/glmul/internal/conformance"
	"github.com/glmul/glmul/shaders"
	"github.com/glmul/glmul/validate"
)

// TestOpenBackendNames: the zero Backend and "auto" (the command's flag)
// both let Open choose, reporting the backend chosen; an unknown name is
// an error that lists the names.
func TestOpenBackendNames(t *testing.T) {
	for _, b := range []Backend{"", "auto"} {
		d := openDevice(t, b)
		if got := d.Info().Backend; got != BackendEGL && got != BackendGLFW {
			t.Errorf("Backend %q: Info.Backend %q, want egl or glfw", b, got)
		}
		d.Release()
	}
	if _, err := Open(&Options{Backend: "vulkan"}); err == nil || !strings.Contains(err.Error(), "use auto, glfw, egl or gles") {
		t.Errorf("Backend vulkan: %v, want an error naming the backends", err)
	}
}

func TestOpenReportsDevice(t *testing.T) {
	for _, backend := range backends {
		t.Run(string(backend), func(t *testing.T) {
			d := openDevice(t, backend)
			i := d.Info()
			t.Logf("%s: %s | %s | %s | GLSL %s | %s", i.Backend, i.Vendor, i.Renderer, i.Version, i.GLSLVersion, i.BackendNote)
			if i.Backend != onPlatform(backend) {
				t.Errorf("backend %s, want %s", i.Backend, onPlatform(backend))
			}
			if i.ES != (backend == BackendGLES) {
				t.Errorf("ES %v on backend %s", i.ES, backend)
			}
			if !i.ES && (i.Major < 4 || i.Major == 4 && i.Minor < 3) || i.ES && (i.Major < 3 || i.Major == 3 && i.Minor < 1) {
				t.Errorf("version %d.%d below 4.3 (ES 3.1)", i.Major, i.Minor)
			}
			if i.Renderer == "" || i.Vendor == "" || i.GLSLVersion == "" {
				t.Errorf("empty device strings: %+v", i)
			}
			// EGLDevice names the EGL device exactly where the note does
			// (the device platform), as Options.Device counts it.
			if onDevice := strings.Contains(i.BackendNote, "EGL device "); onDevice != (i.EGLDevice > 0) ||
				onDevice && !strings.Contains(i.BackendNote, fmt.Sprintf("EGL device %d:", i.EGLDevice)) {
				t.Errorf("EGLDevice %d beside the note %q", i.EGLDevice, i.BackendNote)
			}
			// scripts/test-drivers.sh: a Mesa override that did not take
			// would test llvmpipe again under another name.
			if want := os.Getenv("GLMUL_EXPECT_RENDERER"); want != "" && !strings.Contains(i.Renderer, want) {
				t.Errorf("renderer %q, want %s (GLMUL_EXPECT_RENDERER)", i.Renderer, want)
			}
			// GL 4.3 guarantees these minimums; ES 3.1 smaller ones.
			invocations, shared := 1024, 32768
			if i.ES {
				invocations, shared = 128, 16384
			}
			if i.MaxWorkGroupCount[0] < 65535 || i.MaxWorkGroupInvocations < invocations ||
				i.MaxSharedMemory < shared || i.MaxSSBOBlockSize < 1<<24 {
				t.Errorf("limits below the minimums: %+v", i)
			}
		})
	}
}

// TestConformance runs the shared harness on every kernel, on both
// backends, with the paper's cap and with caps of 1 and 3 work groups per
// dispatch (many dispatches, chunk edges inside the matrix).
func TestConformance(t *testing.T) {
	for _, backend := range backends {
		t.Run(string(backend), func(t *testing.T) {
			d := openDevice(t, backend)
			for _, kernel := range shaders.Names() {
				for _, maxGroups := range []int{0, 1, 3} {
					t.Run(fmt.Sprintf("kernel=%s/max-groups=%d", kernel, maxGroups), func(t *testing.T) {
						conformance.Run(t, nil, func(c, a, b blas32.General) error {
							_, err := d.Mul(c, a, b, &MulOptions{Kernel: kernel, MaxGroups: maxGroups})
							return err
						})
					})
				}
			}
		})
	}
}

// TestProgressCountsEveryStep: Progress is called as each block of C
// arrives, counting up to the pass's steps.
func TestProgressCountsEveryStep(t *testing.T) {
	d := openDevice(t, BackendEGL)
	rng := rand.New(rand.NewPCG(2, 2))
	a, b := cpu.Random(300, 20, rng), cpu.Random(20, 70, rng)
	var calls []int
	total := 0
	tm, err := d.Mul(cpu.New(300, 70), a, b, &MulOptions{Kernel: "fast:64x64x8_4x4", Progress: func(done, tot int) {
		calls = append(calls, done)
		total = tot
	}})
	if err != nil {
		t.Fatal(err)
	}
	if tm.Steps < 2 || total != tm.Steps || len(calls) != tm.Steps {
		t.Fatalf("progress calls %v with total %d over %d steps; want 1..steps of steps, in bands", calls, total, tm.Steps)
	}
	for i, v := range calls {
		if v != i+1 {
			t.Fatalf("progress calls %v not counting up", calls)
		}
	}
}

func TestTooLarge(t *testing.T) {
	d := openDevice(t, BackendEGL)
	limit := d.Info().MaxSSBOBlockSize
	// The largest n whose n×n matrix, rows padded to 4 floats as the
	// kernels hold them, fits one block (NVIDIA's 2³¹−1 bytes: 23168, not
	// the 23170 of an unpadded square root).
	largest := int(math.Sqrt(float64(limit / 4)))
	for int64(largest)*int64((largest+3)/4*4)*4 > limit {
		largest--
	}
	err := d.checkShape(largest+1, largest+1, largest+1)
	if !errors.Is(err, ErrTooLarge) {
		t.Fatalf("checkShape(%d³) = %v, want ErrTooLarge", largest+1, err)
	}
	if !strings.Contains(err.Error(), "GL_MAX_SHADER_STORAGE_BLOCK_SIZE") || !strings.Contains(err.Error(), fmt.Sprintf("n = %d", largest)) {
		t.Errorf("error %q should name the limit and the largest n (%d)", err, largest)
	}
	if err := d.checkShape(largest, largest, largest); err != nil {
		t.Errorf("checkShape(%d³) = %v, want nil", largest, err)
	}
	// A skinny product whose A alone is over the limit.
	if err := d.checkShape(2, int(limit/4), 2); !errors.Is(err, ErrTooLarge) || !strings.Contains(err.Error(), "A is 2×") {
		t.Errorf("skinny A: %v", err)
	}
}

func TestMaxGroupsAboveDriverLimit(t *testing.T) {
	d := openDevice(t, BackendEGL)
	a := cpu.Random(2, 2, rand.New(rand.NewPCG(3, 3)))
	c := cpu.New(2, 2)
	_, err := d.Mul(c, a, a, &MulOptions{MaxGroups: d.Info().MaxWorkGroupCount[0] + 1})
	if !errors.Is(err, ErrUnsupported) {
		t.Fatalf("err = %v, want ErrUnsupported", err)
	}
}

func TestConcurrentCallers(t *testing.T) {
	d := openDevice(t, BackendEGL)
	var wg sync.WaitGroup
	errs := make(chan error, 4)
	for g := 0; g < 4; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(g), 9))
			a, b := cpu.Random(40+g, 33, rng), cpu.Random(33, 35, rng)
			c := cpu.New(40+g, 35)
			if _, err := d.Mul(c, a, b, nil); err != nil {
				errs <- err
				return
			}
			errs <- validate.CheckFull(a, b, c).Err()
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Error(err)
		}
	}
}

func TestReleaseIsIdempotentAndUseAfterPanics(t *testing.T) {
	d := openDevice(t, BackendEGL)
	d.Release()
	d.Release()
	defer func() {
		if recover() == nil {
			t.Fatal("Mul on a released Device did not panic")
		}
	}()
	a := cpu.New(1, 1)
	d.Mul(a, a, a, nil)
}

func TestShapeMismatchPanics(t *testing.T) {
	d := openDevice(t, BackendEGL)
	defer func() {
		if recover() == nil {
			t.Fatal("no panic")
		}
	}()
	d.Mul(cpu.New(2, 2), cpu.New(2, 3), cpu.New(2, 2), nil)
}

// TestUnsupportedVersion runs Open in a child process where Mesa is told to
// offer OpenGL 4.1 only (MESA_GL_VERSION_OVERRIDE), as on macOS; Open must
// fail with ErrUnsupported naming the version found.
func TestUnsupportedVersion(t *testing.T) {
	if os.Getenv("GLMUL_TEST_CHILD") == "open" {
		_, err := Open(&Options{Backend: onPlatform(BackendEGL)})
		fmt.Printf("unsupported=%v\nerror=%v\n", errors.Is(err, ErrUnsupported), err)
		return
	}
	if runtime.GOOS == "windows" {
		t.Skip("MESA_GL_VERSION_OVERRIDE does not reach Mesa through Wine's child processes")
	}
	d := openDevice(t, BackendEGL) // a context must exist for the test to mean anything
	if !strings.Contains(d.Info().Version, "Mesa") {
		t.Skipf("needs Mesa (MESA_GL_VERSION_OVERRIDE); driver is %q", d.Info().Version)
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestUnsupportedVersion$")
	cmd.Env = append(os.Environ(), "GLMUL_TEST_CHILD=open", "MESA_GL_VERSION_OVERRIDE=4.1", "DISPLAY=")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("child: %v\n%s", err, out)
	}
	if !strings.Contains(string(out), "unsupported=true") || !strings.Contains(string(out), "4.1") || !strings.Contains(string(out), "4.3") {
		t.Fatalf("child output does not show ErrUnsupported naming 4.1 and 4.3:\n%s", out)
	}
}

// TestConformanceEveryCandidate runs every configuration glmul tune may
// choose on shapes that straddle all of their block sizes (up to 256), so a
// tuned default can never be one that was not tested.
func TestConformanceEveryCandidate(t *testing.T) {
	d := openDevice(t, BackendEGL)
	shapes := []conformance.Shape{{M: 1, K: 1, N: 1}, {M: 257, K: 33, N: 129}, {M: 65, K: 19, N: 255}, {M: 130, K: 7, N: 67}}
	ran := 0
	specs := []string{}
	for _, c := range shaders.FastCandidates() {
		if c.SharedBytes() <= d.Info().MaxSharedMemory {
			specs = append(specs, "fast:"+c.String())
		}
	}
	for _, c := range shaders.CPUCandidates() {
		specs = append(specs, "cpu:"+c.String())
	}
	for _, spec := range specs {
		ran++
		t.Run(spec, func(t *testing.T) {
			conformance.Run(t, shapes, func(c, a, b blas32.General) error {
				_, err := d.Mul(c, a, b, &MulOptions{Kernel: spec})
				return err
			})
		})
	}
	if ran == 0 {
		t.Fatal("no candidate fits this device")
	}
}

// TestConformanceOddRows: configurations whose rows of invocations are
// not a multiple of a 32-invocation warp (48 and 40 across) map every
// invocation once (a warp-tile mapping that assumed 32 lost columns).
func TestConformanceOddRows(t *testing.T) {
	d := openDevice(t, BackendEGL)
	for _, spec := range []string{"fast:64x192x8_4x4_db", "fast:32x160x8_4x4"} {
		if d.tuning().Fits(spec) != nil {
			continue
		}
		t.Run(spec, func(t *testing.T) {
			conformance.Run(t, []conformance.Shape{{M: 70, K: 19, N: 200}, {M: 130, K: 9, N: 383}}, func(c, a, b blas32.General) error {
				_, err := d.Mul(c, a, b, &MulOptions{Kernel: spec})
				return err
			})
		})
	}
}

// TestSplitK runs the conformance harness with K split 2, 3 and 7 ways, on
// shapes whose K does not divide evenly by the splits or the K step, for
// single- and double-buffered configurations, reading storage buffers or
// buffer textures (NVIDIA's built-ins), A as it is or transposed.
func TestSplitK(t *testing.T) {
	for _, backend := range []Backend{BackendEGL, BackendGLES} {
		t.Run(string(backend), func(t *testing.T) { splitK(t, openDevice(t, backend)) })
	}
}

func splitK(t *testing.T, d *Device) {
	// Automatic: a one-group grid with a long K is split (how many ways
	// depends on the device: tuning.AutoSplitK); SplitK 1 is not.
	rng := rand.New(rand.NewPCG(3, 4))
	a, b := cpu.Random(64, 4096, rng), cpu.Random(4096, 64, rng)
	for _, opt := range []int{0, 1} {
		tm, err := d.Mul(cpu.New(64, 64), a, b, &MulOptions{Kernel: "fast:64x64x8_4x4", SplitK: opt})
		if err != nil || (tm.Splits > 1) != (opt == 0) {
			t.Errorf("64×4096×64 with SplitK %d: %d splits (%v)", opt, tm.Splits, err)
		}
	}
	shapes := append([]conformance.Shape{{M: 64, K: 1000, N: 64}, {M: 7, K: 333, N: 65}, {M: 1, K: 9, N: 1}}, conformance.Shapes...)
	for _, kernel := range []string{"fast", "fast:64x64x8_4x4", "fast:128x128x16_8x4_db", "cpu:8x4_4x8", "fast:64x64x8_8x4_db_tex", "fast:128x128x16_8x8_db_at_tex"} {
		for _, splits := range []int{0, 2, 3, 7} { // 0: automatic
			t.Run(fmt.Sprintf("%s/split=%d", kernel, splits), func(t *testing.T) {
				conformance.Run(t, shapes, func(c, a, b blas32.General) error {
					_, err := stagedMul(d, c, a, b, MulOptions{Kernel: kernel, SplitK: splits}, 2)
					return err
				})
			})
		}
	}
}

// TestEdges runs products whose large tiles leave strips, on a device told
// it has 132 multiprocessors and a small-grid kernel (as the H100), so the
// interior runs with 128×256 tiles and the strips with 64×64 ones
// (tuning.UseEdges): once, and pipelined, where products of 512 rows or
// more run in bands with strips of their own (600 rows: bands of 256, 256
// and 88, the last too short for an interior; 700: 256, 256 and 188, the
// last with an interior of 128 rows and a strip of 60 below it).
func TestEdges(t *testing.T) {
	shapes := []conformance.Shape{{M: 129, K: 33, N: 257}, {M: 300, K: 70, N: 600}, {M: 257, K: 9, N: 513}, {M: 128, K: 20, N: 260},
		{M: 600, K: 20, N: 300}, {M: 700, K: 12, N: 300}}
	d := openDevice(t, BackendEGL)
	d.info.SMCount, d.info.SmallGridKernel = 132, "fast:64x64x8_8x4_db"
	for _, stages := range []bool{false, true} {
		t.Run(fmt.Sprintf("stages=%v", stages), func(t *testing.T) {
			conformance.Run(t, shapes, func(c, a, b blas32.General) error {
				tm, err := mulStaged(d, c, a, b, MulOptions{Kernel: "fast:128x256x8_8x8_db", SplitK: 1}, stages)
				if err == nil && tm.EdgeKernel != "fast:64x64x8_8x4_db" {
					t.Errorf("%dx%dx%d: edge kernel %q, want the small-grid one", a.Rows, a.Cols, b.Cols, tm.EdgeKernel)
				}
				return err
			})
		})
	}
	// A small-grid kernel that reads through textures cannot share the
	// main kernel's bindings: no edges then.
	d.info.SmallGridKernel = "cpu:8x8_8x8"
	tm, err := d.Mul(cpu.New(129, 257), cpu.New(129, 33), cpu.New(33, 257), &MulOptions{Kernel: "fast:128x256x8_8x8_db", SplitK: 1})
	if err != nil || tm.EdgeKernel != "" {
		t.Errorf("edges with a texture-reading edge kernel: %q, %v", tm.EdgeKernel, err)
	}
}

// TestTransposedA runs a kernel that reads A transposed (_at: a transpose
// pass before each product or band) once and pipelined in bands, split
// along K (automatically, 3 ways, not at all), in chunks of one work group,
// on OpenGL ES, beside edge strips computed from A as it is; and checks
// that without room for the transpose the same configuration runs with A
// as it is, and in panels as a streamed panel pass (unitstream.go). (Eight runs of the shapes, not every
// combination: softpipe in CI takes about 9 s a run.)
func TestTransposedA(t *testing.T) {
	const spec = "fast:128x128x8_8x8_db_at"
	shapes := append([]conformance.Shape{{M: 600, K: 20, N: 300}, {M: 700, K: 12, N: 300}, {M: 601, K: 21, N: 130}, {M: 1023, K: 9, N: 68},
		{M: 129, K: 33, N: 257}, {M: 3, K: 41, N: 5}}, conformance.Shapes...)
	type run struct {
		backend           Backend
		stages            bool
		splits, maxGroups int // splits 0: automatic
	}
	runs := []run{{BackendGLES, false, 0, 0}, {BackendEGL, true, 1, 1}}
	for _, stages := range []bool{false, true} {
		for _, splits := range []int{0, 1, 3} {
			runs = append(runs, run{BackendEGL, stages, splits, 0})
		}
	}
	devs := map[Backend]*Device{}
	for _, r := range runs {
		d := devs[r.backend]
		if d == nil {
			d = openDevice(t, r.backend)
			devs[r.backend] = d
		}
		t.Run(fmt.Sprintf("%s/stages=%v/split=%d/max-groups=%d", r.backend, r.stages, r.splits, r.maxGroups), func(t *testing.T) {
			conformance.Run(t, shapes, func(c, a, b blas32.General) error {
				tm, err := mulStaged(d, c, a, b, MulOptions{Kernel: spec, SplitK: r.splits, MaxGroups: r.maxGroups}, r.stages)
				if err == nil && tm.Kernel != spec {
					t.Errorf("ran %q, want %q", tm.Kernel, spec)
				}
				return err
			})
		})
	}
	d := devs[BackendEGL]
	t.Run("edges", func(t *testing.T) {
		d := openDevice(t, BackendEGL)
		d.info.SMCount, d.info.SmallGridKernel = 132, "fast:64x64x8_8x4_db"
		const wide = "fast:128x256x8_16x8_db_at"
		for _, stages := range []bool{false, true} {
			conformance.Run(t, []conformance.Shape{{M: 129, K: 33, N: 257}, {M: 700, K: 12, N: 300}}, func(c, a, b blas32.General) error {
				tm, err := mulStaged(d, c, a, b, MulOptions{Kernel: wide, SplitK: 1}, stages)
				if err == nil && (tm.EdgeKernel == "" || tm.Kernel != wide) {
					t.Errorf("%dx%dx%d: kernel %q, edge kernel %q", a.Rows, a.Cols, b.Cols, tm.Kernel, tm.EdgeKernel)
				}
				return err
			})
		}
	})
	rng := rand.New(rand.NewPCG(7, 7))
	a, b := cpu.Random(300, 200, rng), cpu.Random(200, 100, rng)
	bytes := int64(4 * (300*200 + 200*100 + 300*100))
	for _, o := range []MulOptions{
		{Kernel: spec, MaxGPUMemory: bytes + 4*200*300 - 4}, // A, B and C fit; the transpose does not: A as it is
		{Kernel: spec, MaxBinding: 128 << 10},               // panels: a streamed panel pass, A's transpose a block a band
	} {
		c := cpu.New(300, 100)
		tm, err := d.Mul(c, a, b, &o)
		want := "fast:128x128x8_8x8_db"
		if o.MaxBinding > 0 {
			want = spec
		}
		if err != nil || tm.Kernel != want || (o.MaxBinding > 0) != (tm.Panels != "") || (o.MaxBinding > 0) != tm.Streamed {
			t.Errorf("%+v: kernel %q, panels %q, streamed %v, %v", o, tm.Kernel, tm.Panels, tm.Streamed, err)
			continue
		}
		if err := validate.CheckFull(a, b, c).Err(); err != nil {
			t.Errorf("%+v: %v", o, err)
		}
	}
}

// TestStagingPaths runs the harness with staging buffers of 4 KiB (many
// chunks of a few rows, the last one partial), through persistent mappings
// and through glMapBufferRange per chunk (a 4.3 driver's path); rows
// larger than a staging buffer: TestStagingLongRows.
func TestStagingPaths(t *testing.T) {
	for _, mapOnce := range []bool{false, true} {
		t.Run(fmt.Sprintf("persistent=%v", !mapOnce), func(t *testing.T) {
			t.Setenv("DISPLAY", "")
			d, err := Open(&Options{Backend: onPlatform(BackendEGL), StagingBytes: 4096, NoPersistentMapping: mapOnce})
			if err != nil {
				noGL(t, err.Error())
			}
			defer d.Release()
			d.tuning().PrepareStaging()
			if got := d.tuning().Staging(); strings.Contains(got, "persistent") == mapOnce {
				t.Fatalf("Staging() = %q with NoPersistentMapping %v", got, mapOnce)
			}
			conformance.Run(t, nil, func(c, a, b blas32.General) error {
				_, err := d.Mul(c, a, b, nil)
				return err
			})
		})
	}
}

// TestPanels runs the harness, and shapes several panels wide and tall,
// with bindings and GPU memory lowered so that products run in panels: A
// kept on the GPU, A streamed per column panel, and memory alone short.
func TestPanels(t *testing.T) {
	d := openDevice(t, BackendEGL)
	const kern = "fast:64x64x8_8x4"
	shapes := append([]conformance.Shape{{M: 300, K: 77, N: 310}, {M: 257, K: 33, N: 700}, {M: 129, K: 130, N: 65}}, conformance.Shapes...)
	for _, lim := range []struct {
		name            string
		binding, memory int64
		wantA           string
	}{
		{"binding", 64 << 10, 0, "A kept"},
		{"binding+memory", 64 << 10, 200 << 10, "A streamed"},
		{"memory", 0, 160 << 10, "streamed"},
	} {
		t.Run(lim.name, func(t *testing.T) {
			o := &MulOptions{Kernel: kern, MaxBinding: lim.binding, MaxGPUMemory: lim.memory}
			conformance.Run(t, shapes, func(c, a, b blas32.General) error {
				tm, err := d.Mul(c, a, b, o)
				if err == nil && a.Rows == 300 && !strings.Contains(tm.Panels, lim.wantA) {
					t.Errorf("300×77×310: panels %q, want %q", tm.Panels, lim.wantA)
				}
				return err
			})
		})
	}
	if _, err := d.Mul(cpu.New(64, 64), cpu.Random(64, 4000, rand.New(rand.NewPCG(1, 1))), cpu.Random(4000, 64, rand.New(rand.NewPCG(2, 2))),
		&MulOptions{Kernel: kern, MaxBinding: 16 << 10}); !errors.Is(err, ErrTooLarge) || !strings.Contains(err.Error(), "smallest panels") {
		t.Errorf("one tile's panels over the binding, K cut or not: %v", err)
	}
}

// TestHostMatrix multiplies mapped host matrices (the GPU copies them, no
// staging), alone and mixed with ordinary slices, with garbage in an
// operand's padding, in one band and in several (the pipelined pass copies
// a band's rows), and checks the refusal without persistent mapping.
func TestHostMatrix(t *testing.T) {
	d := openDevice(t, BackendEGL)
	for _, s := range []conformance.Shape{{M: 67, K: 45, N: 90}, {M: 300, K: 77, N: 130}} {
		t.Run(s.String(), func(t *testing.T) { hostMatrices(t, d, s.M, s.K, s.N) })
	}
	t.Setenv("DISPLAY", "")
	d2, err := Open(&Options{Backend: onPlatform(BackendEGL), NoPersistentMapping: true})
	if err != nil {
		t.Fatal(err)
	}
	defer d2.Release()
	if _, err := d2.newHostMatrix(2, 2); !errors.Is(err, ErrUnsupported) {
		t.Errorf("newHostMatrix without persistent mapping: %v", err)
	}
}

func hostMatrices(t *testing.T, d *Device, m, k, n int) {
	rng := rand.New(rand.NewPCG(uint64(m), 72))
	ha, err := d.newHostMatrix(m, k)
	if err != nil {
		t.Fatal(err)
	}
	defer ha.Release()
	hb, _ := d.newHostMatrix(k, n)
	defer hb.Release()
	hc, _ := d.newHostMatrix(m, n)
	defer hc.Release()
	if ha.Stride != roundUp(k, 4) || hc.Stride != roundUp(n, 4) {
		t.Fatalf("strides %d, %d: want rows padded to 4 floats", ha.Stride, hc.Stride)
	}
	a, b := cpu.Random(m, k, rng), cpu.Random(k, n, rng)
	for i := 0; i < m; i++ {
		copy(ha.Data[i*ha.Stride:], a.Data[i*k:(i+1)*k])
		ha.Data[i*ha.Stride+k] = float32(math.NaN()) // padding glmul must zero
	}
	for i := 0; i < k; i++ {
		copy(hb.Data[i*hb.Stride:], b.Data[i*n:(i+1)*n])
	}
	want := cpu.New(m, n)
	cpu.Sgemm(want, a, b)
	check := func(what string, c blas32.General) {
		t.Helper()
		for i := 0; i < m; i++ {
			for j := 0; j < n; j++ {
				if g, w := c.Data[i*c.Stride+j], want.Data[i*n+j]; math.Abs(float64(g-w)) > 1e-4 {
					t.Fatalf("%s: C[%d][%d] = %v, want %v", what, i, j, g, w)
				}
			}
		}
	}
	for _, kern := range []string{"fast:64x64x8_8x4", "tiled32"} {
		for _, once := range []bool{false, true} {
			what := fmt.Sprintf("%s, once %v", kern, once)
			for i := range hc.Data {
				hc.Data[i] = float32(math.NaN())
			}
			tm, err := mulStaged(d, hc.General, ha.General, hb.General, MulOptions{Kernel: kern}, !once)
			if err != nil {
				t.Fatal(err)
			}
			if tm.Steps != 1 {
				t.Errorf("%s, all mapped: %d pipelined steps, want 1 (no host copies to overlap)", what, tm.Steps)
			}
			check(what+", all mapped", hc.General)
			plain := cpu.New(m, n)
			if _, err := mulStaged(d, plain, ha.General, b, MulOptions{Kernel: kern}, !once); err != nil {
				t.Fatal(err)
			}
			check(what+", mapped A only", plain)
			for i := range hc.Data {
				hc.Data[i] = float32(math.NaN())
			}
			if _, err := mulStaged(d, hc.General, a, b, MulOptions{Kernel: kern}, !once); err != nil {
				t.Fatal(err)
			}
			check(what+", mapped C only", hc.General)
		}
	}
}

// TestTimerPlausible: a GL timer that reads about zero against the wall
// clock (llvmpipe) is not used; a real one is. Trusting llvmpipe's would
// report millions of GFLOPS.
func TestTimerPlausible(t *testing.T) {
	s, ms := time.Second, time.Millisecond
	for _, c := range []struct {
		gpu, wall []time.Duration
		want      bool
	}{
		{[]time.Duration{1, 1}, []time.Duration{s, s}, false},
		{[]time.Duration{0, 900 * ms}, []time.Duration{s, s}, false},
		{[]time.Duration{900 * ms, 950 * ms}, []time.Duration{s, s}, true},
		{[]time.Duration{60 * ms}, []time.Duration{s}, true},
		{[]time.Duration{40 * ms}, []time.Duration{s}, false},
		// Wine's clock: wall times of 0; llvmpipe's timer 56 ns a run.
		{[]time.Duration{56, 60}, []time.Duration{0, 0}, false},
		{[]time.Duration{5 * time.Microsecond}, []time.Duration{0}, true},
		// A 12 µs product's runs, one of whose wall times holds a 2 ms stall.
		{[]time.Duration{12e3, 12e3, 12e3, 12e3, 12e3, 12e3, 12e3, 12e3, 12e3, 12e3},
			[]time.Duration{60e3, 60e3, 60e3, 2e6, 60e3, 60e3, 60e3, 60e3, 60e3, 60e3}, true},
	} {
		if got := tuning.TimerPlausible(c.gpu, c.wall); got != c.want {
			t.Errorf("tuning.TimerPlausible(%v, %v) = %v, want %v", c.gpu, c.wall, got, c.want)
		}
	}
}

// TestMulStopsWhenCancelled: a cancelled Context stops Mul's pass, with
// the context's error, in one piece (after a Measure hook too) and in
// panels.
func TestMulStopsWhenCancelled(t *testing.T) {
	d := openDevice(t, BackendEGL)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	rng := rand.New(rand.NewPCG(9, 9))
	a, b := cpu.Random(70, 70, rng), cpu.Random(70, 70, rng)
	for _, o := range []*MulOptions{{Context: ctx, Measure: func(tuning.Stages) error { return nil }}, {Context: ctx}, {Kernel: "fast:64x64x8_8x4", MaxBinding: 24 << 10, Context: ctx}} {
		start := time.Now()
		if _, err := d.Mul(cpu.New(70, 70), a, b, o); !errors.Is(err, context.Canceled) {
			t.Errorf("%+v: err = %v, want context.Canceled", o, err)
		}
		if time.Since(start) > 5*time.Second {
			t.Errorf("a cancelled Mul took %v", time.Since(start))
		}
	}
}
