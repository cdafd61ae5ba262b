package glcompute

import (
	"errors"
	"fmt"
	"math"
	"path/filepath"
	"strings"
	"testing"

	"gonum.org/v1/gonum/blas/blas32"

	"github.com/glmul/glmul/glcompute/tuning"
	"github.com/glmul/glmul/internal/conformance"
)

// TestSizesBeyondAnyBuffer: shapes whose element count overflows int64
// bytes are ErrTooLarge with words that say so (issue 23: NewMatrix with
// rows×cols overflowing reported "could not allocate -16 bytes",
// ErrOutOfMemory).
func TestSizesBeyondAnyBuffer(t *testing.T) {
	d := openDevice(t, BackendEGL)
	for _, s := range [][2]int{{1 << 40, 1 << 40}, {math.MaxInt / 2, 3}, {1 << 62, 4}, {3, math.MaxInt}} {
		_, err := d.NewMatrix(s[0], s[1])
		if !errors.Is(err, ErrTooLarge) || !strings.Contains(err.Error(), "more elements than any buffer") {
			t.Errorf("NewMatrix(%d, %d): %v, want ErrTooLarge saying the matrix is beyond any buffer", s[0], s[1], err)
		}
		if _, err := d.newHostMatrix(s[0], s[1]); !errors.Is(err, ErrTooLarge) && !errors.Is(err, ErrUnsupported) {
			t.Errorf("newHostMatrix(%d, %d): %v, want ErrTooLarge", s[0], s[1], err)
		}
	}
	m := newMatrix(t, d, 4, 4)
	for _, w := range [][4]int{{0, 1 << 40, 4, 1 << 40}, {math.MaxInt - 3, 1, 1, 1}, {0, 3, 1, math.MaxInt}} {
		_, err := d.WrapBuffer(m.Buffer(), w[0], w[1], w[2], w[3])
		if !errors.Is(err, ErrTooLarge) {
			t.Errorf("WrapBuffer(offset %d, %d×%d, stride %d): %v, want ErrTooLarge", w[0], w[1], w[2], w[3], err)
		}
	}
}

// TestNegativeOptionsPanic: negative option fields are programmer errors
// (issue 23: they were accepted and treated as defaults).
func TestNegativeOptionsPanic(t *testing.T) {
	conformance.MustPanic(t, "Options.StagingBytes is negative", func() { Open(&Options{Backend: onPlatform(BackendEGL), StagingBytes: -1}) })
	conformance.MustPanic(t, "Options.Device is negative", func() { Open(&Options{Backend: onPlatform(BackendEGL), Device: -2}) })
	conformance.MustPanic(t, "Options.MaxDispatchTime is negative", func() { Open(&Options{Backend: onPlatform(BackendEGL), MaxDispatchTime: -1}) })
	conformance.MustPanic(t, "Options.StagingBytes is negative", func() { NewDeviceFromCurrent(&Options{StagingBytes: -1}) })
	d := openDevice(t, BackendEGL)
	g := blas32.General{Rows: 4, Cols: 4, Stride: 4, Data: make([]float32, 16)}
	for name, o := range map[string]MulOptions{
		"MaxGroups": {MaxGroups: -64}, "SplitK": {SplitK: -2}, "MaxBinding": {MaxBinding: -1}, "MaxGPUMemory": {MaxGPUMemory: -1},
	} {
		conformance.MustPanic(t, "MulOptions."+name+" is negative", func() { d.Mul(g, g, g, &o) })
	}
}

// TestInfoAfterRelease: Info keeps describing a released Device, as its
// documentation says; other methods panic.
func TestInfoAfterRelease(t *testing.T) {
	d := openDevice(t, BackendEGL)
	want := d.Info()
	d.Release()
	if got := d.Info(); got.Renderer != want.Renderer || got.Version != want.Version {
		t.Errorf("Info after Release: %q %q, want %q %q", got.Renderer, got.Version, want.Renderer, want.Version)
	}
	conformance.MustPanic(t, "use of a released Device", func() { d.NewMatrix(2, 2) })
}

// TestCacheKernelOutsideFamily: a tuning cache entry naming a kernel glmul
// tune never caches (tiled32, an internal kernel, a name of no kernel) is
// not used, and the kernel source says so (issue 23: it ran silently).
func TestCacheKernelOutsideFamily(t *testing.T) {
	info := openDevice(t, BackendEGL).Info()
	drv := info.driver()
	for _, bad := range []string{"tiled32", "gemm", "fast:1x2x3"} {
		path := filepath.Join(tempDir(t), "tuned.json")
		t.Setenv("GLMUL_TUNE_CACHE", path)
		c := tuning.Cache{}
		c.Put(tuning.Entry{Driver: drv, Class: tuning.Square, Kernel: bad})
		c.Put(tuning.Entry{Driver: drv, Class: tuning.LongK, Kernel: bad})
		if err := c.Save(path); err != nil {
			t.Fatal(err)
		}
		d, err := Open(&Options{Backend: onPlatform(BackendEGL)})
		if err != nil {
			t.Fatal(err)
		}
		got := d.Info()
		long := d.tuning().KernelFor(8, 100, 8)
		d.Release()
		if got.DefaultKernel == bad || long == bad || got.ClassKernels[string(tuning.LongK)] != "" {
			t.Errorf("cache naming %q: default %s, long-k %s, class kernels %v", bad, got.DefaultKernel, long, got.ClassKernels)
		}
		if !strings.Contains(got.DefaultKernelSource, fmt.Sprintf("%q in %s", bad, path)) || !strings.Contains(got.DefaultKernelSource, "ignored") {
			t.Errorf("cache naming %q: the kernel source does not say it was ignored: %s", bad, got.DefaultKernelSource)
		}
	}
}

// TestWideNaturalBuiltinOnly: the stand-in for large narrow products
// (Info.NaturalWideKernel, NVIDIA's built-in choice) is kept only beside
// the built-in default: with a default glmul tune cached, a narrow product
// runs that default's natural stand-in.
func TestWideNaturalBuiltinOnly(t *testing.T) {
	builtin := openDevice(t, BackendEGL)
	info := builtin.Info()
	if info.NaturalWideKernel == "" {
		t.Skipf("%s has no wide natural stand-in (NVIDIA's built-in choice only)", info.Renderer)
	}
	if got := builtin.tuning().KernelFor(8192, 8192, 256); got != info.NaturalWideKernel {
		t.Errorf("8192×8192×256 with the built-in default runs %s, want %s", got, info.NaturalWideKernel)
	}
	path := filepath.Join(tempDir(t), "tuned.json")
	t.Setenv("GLMUL_TUNE_CACHE", path)
	const tuned = "fast:128x128x16_8x8_db_at"
	c := tuning.Cache{}
	c.Put(tuning.Entry{Driver: info.driver(), Class: tuning.Square, Kernel: tuned})
	if err := c.Save(path); err != nil {
		t.Fatal(err)
	}
	d, err := Open(&Options{Backend: onPlatform(BackendEGL)})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Release()
	got := d.Info()
	if got.DefaultKernel != tuned || got.NaturalWideKernel != "" || got.NaturalKernel == "" {
		t.Fatalf("tuned default %s: default %s, natural %q, wide natural %q", tuned, got.DefaultKernel, got.NaturalKernel, got.NaturalWideKernel)
	}
	if k := d.tuning().KernelFor(8192, 8192, 256); k != got.NaturalKernel {
		t.Errorf("8192×8192×256 beside a tuned default runs %s, want %s", k, got.NaturalKernel)
	}
}
