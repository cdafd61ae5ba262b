package glcompute

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"math"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"gonum.org/v1/gonum/blas/blas64"

	"github.com/glmul/glmul/glcompute/tuning"
	"github.com/glmul/glmul/internal/conformance"
	"github.com/glmul/glmul/shaders"
)

// checkMul64 runs Mul64 on an m×k by k×n product, A and B at row strides
// of their lengths plus pad (NaN in the padding), C at its length plus 3
// poisoned with NaN, and compares C with gonum's Dgemm within refFloat64's
// bound, its padding still NaN, A and B bit for bit as they were.
func checkMul64(t *testing.T, d *Device, opts *MulOptions, pad int, s [3]int, rng *rand.Rand) Timings {
	t.Helper()
	m, k, n := s[0], s[1], s[2]
	a, b := conformance.Random64(m, k, k+pad, rng), conformance.Random64(k, n, n+pad, rng)
	c := conformance.Random64(m, n, n+3, rng)
	for i := range c.Data {
		c.Data[i] = math.NaN()
	}
	a0, b0 := slices.Clone(a.Data), slices.Clone(b.Data)
	tm, err := d.Mul64(c, a, b, opts)
	if err != nil {
		t.Fatalf("%v: %v", s, err)
	}
	if !sameBits(a.Data, a0) || !sameBits(b.Data, b0) {
		t.Errorf("%v: A or B changed", s)
	}
	want, tol := refFloat64(a, b)
	bad := 0
	for i, v := range c.Data {
		r, col := i/c.Stride, i%c.Stride
		switch {
		case bad >= 5:
		case col >= n && !math.IsNaN(v):
			t.Errorf("%v: C's padding at row %d, column %d written: %v", s, r, col, v)
			bad++
		case col < n && !(math.Abs(v-want[r*n+col]) <= tol[r*n+col]):
			t.Errorf("%v: C[%d,%d] = %v, want %v ± %.3g", s, r, col, v, want[r*n+col], tol[r*n+col])
			bad++
		}
	}
	return tm
}

// TestMul64TileEdges: Mul64 against gonum's Dgemm on shapes straddling
// the default kernel's tiles (tileShapes), C poisoned with NaN, A and B
// at odd strides (packed before upload), at their own even strides
// (uploaded as they are) and compact.
func TestMul64TileEdges(t *testing.T) {
	d := openDevice(t, BackendEGL)
	needFloat64(t, d)
	rng := rand.New(rand.NewPCG(45, 164))
	k, err := shaders.LookupFloat64("dfast")
	if err != nil {
		t.Fatal(err)
	}
	before := d.runs64.Load()
	for i, s := range tileShapes(k) {
		checkMul64(t, d, nil, i%3, s, rng)
	}
	if got, want := d.runs64.Load()-before, int64(len(tileShapes(k))); got != want {
		t.Errorf("%d products ran on the GPU, want %d", got, want)
	}
}

// TestMul64LongK: on a driver whose shaders stop their loops after a
// budget (llvmpipe), a K over what one invocation may loop over runs in K
// panels within it, summed on the GPU (dfast cannot split K);
// 32x32x4_4x2's loop stopped at K = 262140 unsliced.
func TestMul64LongK(t *testing.T) {
	d := openDevice(t, BackendEGL)
	needFloat64(t, d)
	rng := rand.New(rand.NewPCG(45, 165))
	tm := checkMul64(t, d, &MulOptions{Kernel: "dfast:32x32x4_4x2"}, 1, [3]int{3, 270000, 5}, rng)
	if d.loopBudget > 0 && (!strings.Contains(tm.Panels, "K in") || tm.Steps < 2) {
		t.Errorf("K = 270000 ran as %q in %d steps on %s, whose loop budget is %d", tm.Panels, tm.Steps, d.info.Renderer, d.loopBudget)
	}
	if tm.Kernel != "dfast:32x32x4_4x2" || tm.Dispatches < tm.Steps || tm.EndToEnd <= 0 || tm.Splits != 1 {
		t.Errorf("Timings %+v", tm)
	}
}

// TestMul64Empty: empty products run nothing; K = 0 gives zeros, leaving
// C's padding.
func TestMul64Empty(t *testing.T) {
	d := openDevice(t, BackendEGL)
	c := blas64.General{Rows: 2, Cols: 2, Stride: 3, Data: []float64{1, 2, 9, 3, 4}}
	if _, err := d.Mul64(c, blas64.General{Rows: 2, Stride: 0}, blas64.General{Cols: 2, Stride: 2}, nil); err != nil {
		t.Fatal(err)
	}
	if want := []float64{0, 0, 9, 0, 0}; !equalFloat64s(c.Data, want) {
		t.Errorf("K = 0: C = %v, want %v", c.Data, want)
	}
	if _, err := d.Mul64(blas64.General{Cols: 3, Stride: 3}, blas64.General{Cols: 4, Stride: 4}, blas64.General{Rows: 4, Cols: 3, Stride: 3, Data: make([]float64, 12)}, nil); err != nil {
		t.Errorf("M = 0: %v", err)
	}
}

// sameBits reports whether a and b hold the same bits (NaNs included).
func sameBits(a, b []float64) bool {
	return slices.EqualFunc(a, b, func(x, y float64) bool { return math.Float64bits(x) == math.Float64bits(y) })
}

func equalFloat64s(a, b []float64) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// TestMul64Refusals: SplitK and Measure are ErrUnsupported, panels
// smaller than one tile's over MaxBinding ErrTooLarge, and C is left as
// it was; mismatched shapes panic as Mul's do.
func TestMul64Refusals(t *testing.T) {
	d := openDevice(t, BackendEGL)
	needFloat64(t, d)
	rng := rand.New(rand.NewPCG(45, 166))
	a, b := conformance.Random64(40, 30, 30, rng), conformance.Random64(30, 20, 20, rng)
	c := conformance.Random64(40, 20, 20, rng)
	c0 := append([]float64(nil), c.Data...)
	for _, o := range []MulOptions{{SplitK: 2}, {Measure: func(tuning.Stages) error { return nil }}} {
		if _, err := d.Mul64(c, a, b, &o); !errors.Is(err, ErrUnsupported) {
			t.Errorf("SplitK %d, Measure %v: %v, want ErrUnsupported", o.SplitK, o.Measure != nil, err)
		}
	}
	if _, err := d.Mul64(c, a, b, &MulOptions{MaxBinding: 1 << 10}); !errors.Is(err, ErrTooLarge) || !strings.Contains(err.Error(), "smallest panels") {
		t.Errorf("one tile's panels over a 1 KiB binding: %v, want ErrTooLarge", err)
	}
	if !equalFloat64s(c.Data, c0) {
		t.Error("a refused product changed C")
	}
	defer func() {
		if r := recover(); r != "glcompute: inner dimensions of A and B differ" {
			t.Errorf("recovered %v, want Mul's panic", r)
		}
	}()
	d.Mul64(c, a, a, nil)
}

// TestMul64Pipelined: Mul64's pipelined pass in row bands of C, checked
// against gonum: several bands (M four tiles or more), bands shrunk to
// fit 8 KiB staging buffers, rows of A longer than a 4 KiB staging buffer
// (moved in pieces), a product under four tiles high in one step;
// persistent mapping and glMapBufferRange. The Timings are filled as
// Mul's (steps, bytes each way, progress once a step) and the buffers
// are kept for the next product.
func TestMul64Pipelined(t *testing.T) {
	const kern = "dfast:32x32x4_4x2" // 32-row tiles: M ≥ 128 runs in bands
	for _, c := range []struct {
		staging    int
		persistent bool
		shapes     [][3]int
		steps      []int
	}{
		// Four bands of ⌈M/4⌉ rows rounded up to 32.
		{0, true, [][3]int{{300, 77, 130}, {256, 40, 64}, {517, 9, 33}, {97, 50, 40}, {1, 1, 1}}, []int{4, 4, 4, 1, 1}},
		// 1000×16×16's 128-byte rows fill 8 KiB in 64: 16 bands.
		{8 << 10, true, [][3]int{{1000, 16, 16}, {300, 77, 130}}, []int{16, 4}},
		{8 << 10, false, [][3]int{{1000, 16, 16}}, []int{16}},
		// A's 5600-byte rows go through 4 KiB in pieces, and C's back: 5
		// tile rows in bands of 2.
		{4 << 10, true, [][3]int{{130, 700, 5}, {40, 3, 700}}, []int{3, 1}},
		{4 << 10, false, [][3]int{{130, 700, 5}}, []int{3}},
	} {
		t.Run(fmt.Sprintf("staging=%d/persistent=%v", c.staging, c.persistent), func(t *testing.T) {
			d := openDeviceWith(t, &Options{Backend: BackendEGL, StagingBytes: c.staging, NoPersistentMapping: !c.persistent})
			needFloat64(t, d)
			rng := rand.New(rand.NewPCG(45, 168))
			for i, s := range c.shapes {
				var calls, last [2]int
				o := &MulOptions{Kernel: kern, Progress: func(done, total int) { calls[0]++; last = [2]int{done, total} }}
				tm := checkMul64(t, d, o, i%3, s, rng)
				m, k, n := s[0], s[1], s[2]
				up, down := int64(8*(m*roundUp(k, 2)+k*roundUp(n, 2))), int64(8*m*n)
				if tm.Steps != c.steps[i] || tm.Panels != "" || tm.Splits != 1 || tm.Kernel != kern || tm.Dispatches < tm.Steps ||
					tm.Groups != [2]int{(n + 31) / 32, (m + 31) / 32} || tm.UploadBytes != up || tm.ReadbackBytes != down {
					t.Errorf("%v: steps %d (want %d), timings %+v; want %d bytes up, %d down", s, tm.Steps, c.steps[i], tm, up, down)
				}
				// EndToEnd may read 0 for a tiny product where the clock moves
				// in steps (about 1 ms under Wine); never less, never under
				// the compute time.
				if tm.EndToEnd < 0 || len(tm.Compute) != 1 || tm.Compute[0] < 0 || tm.Compute[0] > tm.EndToEnd {
					t.Errorf("%v: times %+v", s, tm)
				}
				if want := tm.Steps; calls[0] != want || last != [2]int{want, want} {
					t.Errorf("%v: %d progress calls ending %v, want %d ending at %d of %d", s, calls[0], last, want, want, want)
				}
			}
			var kept int
			d.call(func() { kept = len(d.pool) })
			if kept != 3 {
				t.Errorf("%d buffers kept for the next product, want A's, B's and C's", kept)
			}
		})
	}
}

// TestMul64Panels: products over a lowered binding or MaxGPUMemory run
// in panels, and K too long for one tile's panels in K panels summed on
// the GPU by Reduce64: A kept on the GPU and streamed per column panel,
// through the pipelined pass, each C against gonum's.
func TestMul64Panels(t *testing.T) {
	d := openDevice(t, BackendEGL)
	needFloat64(t, d)
	rng := rand.New(rand.NewPCG(45, 169))
	const kern = "dfast:32x32x4_4x2"
	for _, c := range []struct {
		s    [3]int
		o    MulOptions
		want string
	}{
		{[3]int{300, 77, 310}, MulOptions{MaxBinding: 64 << 10}, "5×4 panels of 64×96 (A kept"},
		{[3]int{300, 77, 310}, MulOptions{MaxBinding: 64 << 10, MaxGPUMemory: 300 << 10}, "A streamed"},
		{[3]int{300, 77, 310}, MulOptions{MaxGPUMemory: 600 << 10}, "A streamed"},
		{[3]int{257, 33, 700}, MulOptions{MaxBinding: 64 << 10}, "A kept"},
		{[3]int{129, 130, 65}, MulOptions{MaxBinding: 32 << 10}, "panels of"},
		{[3]int{3, 20001, 5}, MulOptions{MaxBinding: 64 << 10}, "1×1 panels of 3×5, K in 15 panels of 1344"},
		{[3]int{130, 3000, 150}, MulOptions{MaxBinding: 64 << 10}, "5×5 panels of 32×32, K in 12 panels of 256"},
		{[3]int{130, 3000, 150}, MulOptions{MaxBinding: 64 << 10, MaxGPUMemory: 1200 << 10}, "A streamed"},
	} {
		o := c.o
		o.Kernel = kern
		tm := checkMul64(t, d, &o, 1, c.s, rng)
		if !strings.Contains(tm.Panels, c.want) || tm.Steps < 2 || tm.Splits != 1 || tm.EndToEnd <= 0 || tm.ReadbackBytes < int64(8*c.s[0]*c.s[2]) {
			t.Errorf("%v %+v: panels %q in %d steps, want %q; timings %+v", c.s, c.o, tm.Panels, tm.Steps, c.want, tm)
		}
	}
}

// TestMul64Context: a done Context stops Mul64 before it starts, and one
// cancelled during the pass after the step in progress, with its error.
func TestMul64Context(t *testing.T) {
	d := openDevice(t, BackendEGL)
	needFloat64(t, d)
	rng := rand.New(rand.NewPCG(45, 170))
	a, b, c := conformance.Random64(300, 20, 20, rng), conformance.Random64(20, 30, 30, rng), conformance.Random64(300, 30, 30, rng)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := d.Mul64(c, a, b, &MulOptions{Context: ctx}); !errors.Is(err, context.Canceled) {
		t.Errorf("a done Context: %v", err)
	}
	ctx, cancel = context.WithCancel(context.Background())
	defer cancel()
	steps := 0
	o := &MulOptions{Kernel: "dfast:32x32x4_4x2", Context: ctx, Progress: func(int, int) { steps++; cancel() }}
	if _, err := d.Mul64(c, a, b, o); !errors.Is(err, context.Canceled) || steps != 1 {
		t.Errorf("cancelled after the first of 4 steps: %v after %d", err, steps)
	}
}

// TestMul64NotOnES: OpenGL ES, which has no double, is refused with
// ErrUnsupported naming it, before anything is compiled.
func TestMul64NotOnES(t *testing.T) {
	d := openDevice(t, BackendGLES)
	rng := rand.New(rand.NewPCG(45, 167))
	a, b, c := conformance.Random64(3, 2, 2, rng), conformance.Random64(2, 4, 4, rng), conformance.Random64(3, 4, 4, rng)
	if _, err := d.Mul64(c, a, b, nil); !errors.Is(err, ErrUnsupported) || !strings.Contains(err.Error(), "OpenGL ES") {
		t.Errorf("Mul64 on OpenGL ES: %v, want ErrUnsupported naming OpenGL ES", err)
	}
}

// TestMul64SameKAfterNarrowN runs the sequence that came out wrong on
// Mesa's zink (every element of the last product; docs/DRIVERS.md, "zink
// and float64"), padded strides as TestMul64TileEdges has them, on one
// Device.
func TestMul64SameKAfterNarrowN(t *testing.T) {
	d := openDevice(t, BackendEGL)
	needFloat64(t, d)
	rng := rand.New(rand.NewPCG(1, 2))
	for i, s := range [][3]int{{1, 1, 1}, {1, 1, 1}, {127, 21, 1}, {127, 21, 127}, {5, 21, 1}, {5, 21, 127}} {
		checkMul64(t, d, nil, i%3, s, rng)
	}
}

// TestFloat64Refused: where zink's inlined-uniform fault shows (zinkProbe),
// Mul64 refuses with ErrUnsupported and says why; on any other desktop
// OpenGL 4 context, zink with its inlining off included, float64 runs.
func TestFloat64Refused(t *testing.T) {
	d := openDevice(t, BackendEGL)
	c, a, b := blas64.General{Rows: 1, Cols: 1, Stride: 1, Data: []float64{0}}, blas64.General{Rows: 1, Cols: 1, Stride: 1, Data: []float64{2}}, blas64.General{Rows: 1, Cols: 1, Stride: 1, Data: []float64{3}}
	_, err := d.Mul64(c, a, b, nil)
	if errors.Is(d.float64Support(), errFloat64Refused) { // zink with its inlined-uniform fault
		if !errors.Is(err, ErrUnsupported) || !strings.Contains(err.Error(), "zink and float64") {
			t.Errorf("%s: Mul64 gave %v, want the refusal", d.Info().Renderer, err)
		}
		return
	}
	if err != nil || c.Data[0] != 6 {
		t.Errorf("%s: Mul64 of 2·3 gave %v, %v", d.Info().Renderer, c.Data[0], err)
	}
}

// TestFloat64Choice: without a tuning cache the device's float64 kernel
// is its vendor's measured one (NVIDIA's), else the first of dfast's
// candidates that fits it (on llvmpipe the default); glmul tune -type f64's cached square and long-k choices are
// what Mul64 runs untold, each for its class, and right; a cached entry
// that cannot run here is ignored and named; a float32 entry is never
// taken for float64's, nor a float64 one for float32's; IgnoreTuned
// leaves the cache unread.
func TestFloat64Choice(t *testing.T) {
	info := openDevice(t, BackendEGL).Info()
	if info.Float64Kernel == "" {
		t.Skipf("no float64 on %s", info.Renderer) // needFloat64's case, on a device from openDevice's cache
	}
	path := filepath.Join(tempDir(t), "tuned.json")
	t.Setenv("GLMUL_TUNE_CACHE", path)
	open := func(o Options) *Device {
		o.Backend = onPlatform(BackendEGL)
		return openDeviceWith(t, &o)
	}
	d := open(Options{})
	// The vendor's measured configuration where it has one (NVIDIA's),
	// else the first candidate that fits (llvmpipe's: the default).
	want, source := "dfast:"+shaders.DefaultDFast.String(), "first of dfast's candidates"
	if ch := tuning.Choose(info.driver(), info.facts()); ch.Float64 != "" {
		want, source = ch.Float64, ch.Source
	}
	if got := d.Info(); got.Float64Kernel != want || !strings.Contains(got.Float64KernelSource, source) || got.Float64ClassKernels != nil {
		t.Fatalf("no cache: float64 %s (%s), classes %v; want %s (%s)", got.Float64Kernel, got.Float64KernelSource, got.Float64ClassKernels, want, source)
	}
	d.Release()

	const square, long = "dfast:32x64x8_2x4_db", "dfast:64x32x8_4x2_p2_w4_db"
	drv := info.driver()
	c := tuning.Cache{}
	c.Put(tuning.Entry{Driver: drv, Class: tuning.Square, Kernel: square, Float64: true})
	c.Put(tuning.Entry{Driver: drv, Class: tuning.LongK, Kernel: long, Float64: true})
	c.Put(tuning.Entry{Driver: drv, Class: tuning.ThinK, Kernel: "dfast:512x512x8_8x8_db", Float64: true}) // 1024 invocations, 128 KiB
	c.Put(tuning.Entry{Driver: drv, Class: tuning.Square, Kernel: "fast:64x64x8_4x4"})
	if err := c.Save(path); err != nil {
		t.Fatal(err)
	}
	d = open(Options{})
	got := d.Info()
	if got.Float64Kernel != square || !strings.Contains(got.Float64KernelSource, "glmul tune -type f64") ||
		!strings.Contains(got.Float64KernelSource, "thin-k class's tuned \"dfast:512x512x8_8x8_db\"") ||
		!maps.Equal(got.Float64ClassKernels, map[string]string{"long-k": long}) || got.DefaultKernel != "fast:64x64x8_4x4" {
		t.Fatalf("with a cache: float64 %s (%s), classes %v, float32 %s", got.Float64Kernel, got.Float64KernelSource, got.Float64ClassKernels, got.DefaultKernel)
	}
	rng := rand.New(rand.NewPCG(45, 168))
	for _, s := range []struct {
		shape [3]int
		want  string
	}{{[3]int{67, 45, 70}, square}, {[3]int{9, 300, 11}, long}, {[3]int{300, 20, 301}, square}} {
		if tm := checkMul64(t, d, nil, 1, s.shape, rng); tm.Kernel != s.want {
			t.Errorf("%v ran %s, want %s", s.shape, tm.Kernel, s.want)
		}
	}
	if tm := checkMul64(t, d, &MulOptions{Kernel: "dfast"}, 0, [3]int{40, 41, 42}, rng); tm.Kernel != square {
		t.Errorf("MulOptions.Kernel dfast ran %s, want the device's %s", tm.Kernel, square)
	}
	if tm := checkMul64(t, d, &MulOptions{Kernel: "dfast:32x32x4_4x2"}, 0, [3]int{40, 41, 42}, rng); tm.Kernel != "dfast:32x32x4_4x2" {
		t.Errorf("MulOptions.Kernel dfast:32x32x4_4x2 ran %s", tm.Kernel)
	}
	d.Release()
	if got := open(Options{IgnoreTuned: true}).Info(); got.Float64Kernel != want || got.Float64ClassKernels != nil {
		t.Errorf("IgnoreTuned: float64 %s, classes %v; want %s", got.Float64Kernel, got.Float64ClassKernels, want)
	}
}
