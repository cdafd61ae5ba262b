package glcompute

import (
	"errors"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"gonum.org/v1/gonum/blas/blas64"

	"github.com/glmul/glmul/shaders"
)

// checkMul64 runs Mul64 on an m×k by k×n product, A and B at row strides
// of their lengths plus pad (NaN in the padding), C at its length plus 3
// poisoned with NaN, and compares C with gonum's Dgemm within refFloat64's
// bound, its padding still NaN.
func checkMul64(t *testing.T, d *Device, opts *MulOptions, pad int, s [3]int, rng *rand.Rand) Timings {
	t.Helper()
	m, k, n := s[0], s[1], s[2]
	a, b := randomFloat64(m, k, k+pad, rng), randomFloat64(k, n, n+pad, rng)
	c := randomFloat64(m, n, n+3, rng)
	for i := range c.Data {
		c.Data[i] = math.NaN()
	}
	tm, err := d.Mul64(c, a, b, opts)
	if err != nil {
		t.Fatalf("%v: %v", s, err)
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
// budget (llvmpipe), a K over what one invocation may loop over runs in
// slices added up on the host; 32x32x4_4x2's loop stopped at K = 262140
// unsliced.
func TestMul64LongK(t *testing.T) {
	d := openDevice(t, BackendEGL)
	needFloat64(t, d)
	rng := rand.New(rand.NewPCG(45, 165))
	tm := checkMul64(t, d, &MulOptions{Kernel: "dfast:32x32x4_4x2"}, 1, [3]int{3, 270000, 5}, rng)
	if d.loopBudget > 0 && tm.Splits < 2 {
		t.Errorf("K = 270000 ran in %d slice on %s, whose loop budget is %d", tm.Splits, d.info.Renderer, d.loopBudget)
	}
	if tm.Kernel != "dfast:32x32x4_4x2" || tm.Dispatches < tm.Splits || tm.EndToEnd <= 0 {
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

// TestMul64Refusals: a matrix over one binding (MaxBinding) or the three
// over MaxGPUMemory is ErrTooLarge saying that float64 has no panels yet,
// SplitK is ErrUnsupported, and C is left as it was; mismatched shapes
// panic as Mul's do.
func TestMul64Refusals(t *testing.T) {
	d := openDevice(t, BackendEGL)
	needFloat64(t, d)
	rng := rand.New(rand.NewPCG(45, 166))
	a, b := randomFloat64(40, 30, 30, rng), randomFloat64(30, 20, 20, rng)
	c := randomFloat64(40, 20, 20, rng)
	c0 := append([]float64(nil), c.Data...)
	for _, o := range []MulOptions{{MaxBinding: 8 * 40 * 30 / 2}, {MaxGPUMemory: 8 * (40*30 + 30*20)}} {
		if _, err := d.Mul64(c, a, b, &o); !errors.Is(err, ErrTooLarge) || !strings.Contains(err.Error(), "panels") {
			t.Errorf("%+v: %v, want ErrTooLarge saying float64 has no panels", o, err)
		}
	}
	if _, err := d.Mul64(c, a, b, &MulOptions{SplitK: 2}); !errors.Is(err, ErrUnsupported) {
		t.Errorf("SplitK 2: %v, want ErrUnsupported", err)
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

// TestMul64NotOnES: OpenGL ES, which has no double, is refused with
// ErrUnsupported naming it, before anything is compiled.
func TestMul64NotOnES(t *testing.T) {
	d := openDevice(t, BackendGLES)
	rng := rand.New(rand.NewPCG(45, 167))
	a, b, c := randomFloat64(3, 2, 2, rng), randomFloat64(2, 4, 4, rng), randomFloat64(3, 4, 4, rng)
	if _, err := d.Mul64(c, a, b, nil); !errors.Is(err, ErrUnsupported) || !strings.Contains(err.Error(), "OpenGL ES") {
		t.Errorf("Mul64 on OpenGL ES: %v, want ErrUnsupported naming OpenGL ES", err)
	}
}
