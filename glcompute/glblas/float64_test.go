package glblas

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"gonum.org/v1/gonum/blas"
	"gonum.org/v1/gonum/blas/blas64"
	"gonum.org/v1/gonum/blas/gonum"

	"github.com/glmul/glmul/glcompute"
	"github.com/glmul/glmul/glcompute/internal/link"
	"github.com/glmul/glmul/glcompute/tuning"
	"github.com/glmul/glmul/internal/conformance"
	"github.com/glmul/glmul/internal/gltest"
)

// dgemmRef returns α·op(A)·op(B) + β·C0 in float64 (β = 0: C0 not read)
// and each element's bound: γ_{K+2}·(|α|·(|op(A)||op(B)|)ᵢⱼ + |β·C0ᵢⱼ|)
// twice over, for the GPU's products and the host's α and β.
func dgemmRef(tA, tB blas.Transpose, alpha float64, a, b blas64.General, beta float64, c0 blas64.General) (ref, bound []float64) {
	m, n := c0.Rows, c0.Cols
	k := a.Cols
	if tA != blas.NoTrans {
		k = a.Rows
	}
	at := func(i, p int) float64 {
		if tA != blas.NoTrans {
			return a.Data[p*a.Stride+i]
		}
		return a.Data[i*a.Stride+p]
	}
	bt := func(p, j int) float64 {
		if tB != blas.NoTrans {
			return b.Data[j*b.Stride+p]
		}
		return b.Data[p*b.Stride+j]
	}
	u := math.Ldexp(1, -53)
	g := float64(k+2) * u / (1 - float64(k+2)*u)
	ref, bound = make([]float64, m*n), make([]float64, m*n)
	for i := range m {
		for j := range n {
			var s, abs float64
			for p := range k {
				s += at(i, p) * bt(p, j)
				abs += math.Abs(at(i, p) * bt(p, j))
			}
			ref[i*n+j], bound[i*n+j] = alpha*s, 2*g*math.Abs(alpha)*abs
			if beta != 0 {
				cv := c0.Data[i*c0.Stride+j]
				ref[i*n+j] += beta * cv
				bound[i*n+j] += 2 * g * math.Abs(beta*cv)
			}
		}
	}
	return ref, bound
}

// TestFloat64DgemmOnGPU forces every product onto the GPU (Threshold 1)
// and checks it against float64 sums, for each transpose, α and β, with
// leading dimensions larger than the rows and, for β = 0, C poisoned
// with NaN (β = 0 must not read it); every product ran on the GPU.
func TestFloat64DgemmOnGPU(t *testing.T) {
	d := gltest.Open(t)
	needFloat64(t, d)
	impl := Float64{Device: d, Threshold: 1, Fallback: func(err error) { t.Errorf("fell back to gonum: %v", err) }}
	rng := rand.New(rand.NewPCG(45, 41))
	before, runs := link.Runs64(d), 0
	for _, s := range [][3]int{{1, 1, 1}, {70, 65, 33}, {5, 129, 64}} {
		m, n, k := s[0], s[1], s[2]
		for _, tr := range [][2]blas.Transpose{{blas.NoTrans, blas.NoTrans}, {blas.Trans, blas.NoTrans}, {blas.NoTrans, blas.Trans}, {blas.ConjTrans, blas.Trans}} {
			tA, tB := tr[0], tr[1]
			for _, ab := range [][2]float64{{1, 0}, {-2, 0}, {-2, 0.5}, {0.5, 1}} {
				ar, ac := m, k
				if tA != blas.NoTrans {
					ar, ac = k, m
				}
				br, bc := k, n
				if tB != blas.NoTrans {
					br, bc = n, k
				}
				a, b, c := conformance.Random64(ar, ac, ac+2, rng), conformance.Random64(br, bc, bc+5, rng), conformance.Random64(m, n, n+3, rng)
				if ab[1] == 0 {
					for i := range c.Data {
						c.Data[i] = math.NaN()
					}
				}
				ref, bound := dgemmRef(tA, tB, ab[0], a, b, ab[1], c)
				impl.Dgemm(tA, tB, m, n, k, ab[0], a.Data, a.Stride, b.Data, b.Stride, ab[1], c.Data, c.Stride)
				runs++
				for i := range m {
					for j := range n {
						if g, r := c.Data[i*c.Stride+j], ref[i*n+j]; !(math.Abs(g-r) <= bound[i*n+j]) {
							t.Fatalf("%v %c%c α, β = %v: C[%d][%d] = %v, want %v ± %.3g", s, tA, tB, ab, i, j, g, r, bound[i*n+j])
						}
					}
				}
			}
		}
	}
	if got := link.Runs64(d) - before; got != int64(runs) {
		t.Errorf("%d of %d products ran on the GPU", got, runs)
	}
}

// Below the threshold, and with α = 0, the CPU path is gonum's own:
// bitwise the same, nothing run on the GPU.
func TestFloat64BelowThresholdIsGonum(t *testing.T) {
	d := gltest.Open(t)
	rng := rand.New(rand.NewPCG(45, 43))
	a, b := conformance.Random64(20, 30, 30, rng), conformance.Random64(30, 10, 10, rng)
	before := link.Runs64(d)
	for _, c := range []struct {
		impl  Float64
		alpha float64
	}{{Float64{Device: d, Threshold: 20*30*10 + 1}, 1}, {Float64{Device: d, Threshold: 1}, 0}} {
		c1, c2 := make([]float64, 200), make([]float64, 200)
		for i := range c1 {
			c1[i], c2[i] = float64(i), float64(i)
		}
		c.impl.Dgemm(blas.NoTrans, blas.NoTrans, 20, 10, 30, c.alpha, a.Data, 30, b.Data, 10, 0.5, c1, 10)
		gonum.Implementation{}.Dgemm(blas.NoTrans, blas.NoTrans, 20, 10, 30, c.alpha, a.Data, 30, b.Data, 10, 0.5, c2, 10)
		for i := range c1 {
			if math.Float64bits(c1[i]) != math.Float64bits(c2[i]) {
				t.Fatalf("threshold %d, α = %v, element %d: %v vs gonum %v", c.impl.Threshold, c.alpha, i, c1[i], c2[i])
			}
		}
	}
	if got := link.Runs64(d) - before; got != 0 {
		t.Errorf("%d products ran on the GPU", got)
	}
}

// TestFloat64FallbackOnES: on OpenGL ES (no double) Dgemm runs on gonum,
// bitwise its result, and Fallback hears why once, however many calls.
func TestFloat64FallbackOnES(t *testing.T) {
	d := gltest.OpenES(t)
	var told []error
	impl := Float64{Device: d, Threshold: 1, Fallback: func(err error) { told = append(told, err) }}
	rng := rand.New(rand.NewPCG(45, 44))
	a, b := conformance.Random64(9, 7, 7, rng), conformance.Random64(7, 5, 5, rng)
	for range 3 {
		c1, c2 := make([]float64, 45), make([]float64, 45)
		impl.Dgemm(blas.NoTrans, blas.Trans, 9, 5, 7, 1, a.Data, 7, b.Data, 7, 0, c1, 5)
		gonum.Implementation{}.Dgemm(blas.NoTrans, blas.Trans, 9, 5, 7, 1, a.Data, 7, b.Data, 7, 0, c2, 5)
		if fmt.Sprint(c1) != fmt.Sprint(c2) {
			t.Fatalf("OpenGL ES: %v, gonum %v", c1, c2)
		}
	}
	if len(told) != 1 || !errors.Is(told[0], glcompute.ErrUnsupported) {
		t.Errorf("Fallback heard %v, want one glcompute.ErrUnsupported", told)
	}
}

func TestFloat64PanicsLikeGonum(t *testing.T) {
	d := gltest.Open(t)
	defer func() {
		if r := recover(); r == nil || fmt.Sprint(r)[:5] != "blas:" {
			t.Fatalf("recovered %v, want gonum's blas: panic", r)
		}
	}()
	Float64{Device: d, Threshold: 1}.Dgemm(blas.NoTrans, blas.NoTrans, 4, 4, 4, 1, make([]float64, 16), 2, make([]float64, 16), 4, 0, make([]float64, 16), 4)
}

// TestFloat64DefaultOnCPUDriver: on OpenGL on a CPU (llvmpipe) the zero
// Threshold never sends a product to the device (dfast there lost to
// gonum at every size measured), not even one over float32's crossover
// (512³ there); the result is gonum's, bitwise.
func TestFloat64DefaultOnCPUDriver(t *testing.T) {
	d := gltest.Open(t)
	if !tuning.OnCPU(driver(d)) {
		t.Skipf("a rule for OpenGL on a CPU; this device is %s", d.Info().Renderer)
	}
	const n = 512
	rng := rand.New(rand.NewPCG(45, 45))
	a, b := conformance.Random64(n, n, n, rng), conformance.Random64(n, n, n, rng)
	c1, c2 := make([]float64, n*n), make([]float64, n*n)
	before := link.Runs64(d)
	Float64{Device: d}.Dgemm(blas.NoTrans, blas.NoTrans, n, n, n, 1, a.Data, n, b.Data, n, 0, c1, n)
	gonum.Implementation{}.Dgemm(blas.NoTrans, blas.NoTrans, n, n, n, 1, a.Data, n, b.Data, n, 0, c2, n)
	if got := link.Runs64(d) - before; got != 0 {
		t.Errorf("a 512³ Dgemm with the default threshold ran on %s", d.Info().Renderer)
	}
	for i := range c1 {
		if math.Float64bits(c1[i]) != math.Float64bits(c2[i]) {
			t.Fatalf("element %d: %v vs gonum %v", i, c1[i], c2[i])
		}
	}
}

// needFloat64 skips t where d's shaders have no float64 (OpenGL ES; zink
// with its inlined-uniform fault): those devices' Float64 is gonum's.
func needFloat64(t testing.TB, d *glcompute.Device) {
	t.Helper()
	one := func() blas64.General { return blas64.General{Rows: 1, Cols: 1, Stride: 1, Data: []float64{1}} }
	if _, err := d.Mul64(one(), one(), one(), nil); errors.Is(err, glcompute.ErrUnsupported) {
		t.Skip(err)
	}
}
