package glcompute

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"gonum.org/v1/gonum/blas"
	"gonum.org/v1/gonum/blas/blas64"
	"gonum.org/v1/gonum/blas/gonum"

	"github.com/glmul/glmul/glcompute/tuning"
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

// TestBLAS64DgemmOnGPU forces every product onto the GPU (Threshold 1)
// and checks it against float64 sums, for each transpose, α and β, with
// leading dimensions larger than the rows and, for β = 0, C poisoned
// with NaN (β = 0 must not read it); every product ran on the GPU.
func TestBLAS64DgemmOnGPU(t *testing.T) {
	d := openDevice(t, BackendEGL)
	needFloat64(t, d)
	impl := BLAS64{Device: d, Threshold: 1, Fallback: func(err error) { t.Errorf("fell back to gonum: %v", err) }}
	rng := rand.New(rand.NewPCG(45, 41))
	before, runs := d.runs64.Load(), 0
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
				a, b, c := randomFloat64(ar, ac, ac+2, rng), randomFloat64(br, bc, bc+5, rng), randomFloat64(m, n, n+3, rng)
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
	if got := d.runs64.Load() - before; got != int64(runs) {
		t.Errorf("%d of %d products ran on the GPU", got, runs)
	}
}

// Below the threshold, and with α = 0, the CPU path is gonum's own:
// bitwise the same, nothing run on the GPU.
func TestBLAS64BelowThresholdIsGonum(t *testing.T) {
	d := openDevice(t, BackendEGL)
	rng := rand.New(rand.NewPCG(45, 43))
	a, b := randomFloat64(20, 30, 30, rng), randomFloat64(30, 10, 10, rng)
	before := d.runs64.Load()
	for _, c := range []struct {
		impl  BLAS64
		alpha float64
	}{{BLAS64{Device: d, Threshold: 20*30*10 + 1}, 1}, {BLAS64{Device: d, Threshold: 1}, 0}} {
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
	if got := d.runs64.Load() - before; got != 0 {
		t.Errorf("%d products ran on the GPU", got)
	}
}

// TestBLAS64FallbackOnES: on OpenGL ES (no double) Dgemm runs on gonum,
// bitwise its result, and Fallback hears why once, however many calls.
func TestBLAS64FallbackOnES(t *testing.T) {
	d := openDevice(t, BackendGLES)
	var told []error
	impl := BLAS64{Device: d, Threshold: 1, Fallback: func(err error) { told = append(told, err) }}
	rng := rand.New(rand.NewPCG(45, 44))
	a, b := randomFloat64(9, 7, 7, rng), randomFloat64(7, 5, 5, rng)
	for range 3 {
		c1, c2 := make([]float64, 45), make([]float64, 45)
		impl.Dgemm(blas.NoTrans, blas.Trans, 9, 5, 7, 1, a.Data, 7, b.Data, 7, 0, c1, 5)
		gonum.Implementation{}.Dgemm(blas.NoTrans, blas.Trans, 9, 5, 7, 1, a.Data, 7, b.Data, 7, 0, c2, 5)
		if fmt.Sprint(c1) != fmt.Sprint(c2) {
			t.Fatalf("OpenGL ES: %v, gonum %v", c1, c2)
		}
	}
	if len(told) != 1 || !errors.Is(told[0], ErrUnsupported) {
		t.Errorf("Fallback heard %v, want one ErrUnsupported", told)
	}
}

func TestBLAS64PanicsLikeGonum(t *testing.T) {
	d := openDevice(t, BackendEGL)
	defer func() {
		if r := recover(); r == nil || fmt.Sprint(r)[:5] != "blas:" {
			t.Fatalf("recovered %v, want gonum's blas: panic", r)
		}
	}()
	BLAS64{Device: d, Threshold: 1}.Dgemm(blas.NoTrans, blas.NoTrans, 4, 4, 4, 1, make([]float64, 16), 2, make([]float64, 16), 4, 0, make([]float64, 16), 4)
}

// TestBLAS64DefaultOnCPUDriver: on OpenGL on a CPU (llvmpipe) the zero
// Threshold never sends a product to the device (dfast there lost to
// gonum at every size measured), not even one over float32's crossover
// (512³ there); the result is gonum's, bitwise.
func TestBLAS64DefaultOnCPUDriver(t *testing.T) {
	d := openDevice(t, BackendEGL)
	if !tuning.OnCPU(d.tuningDriver()) {
		t.Skipf("a rule for OpenGL on a CPU; this device is %s", d.Info().Renderer)
	}
	const n = 512
	rng := rand.New(rand.NewPCG(45, 45))
	a, b := randomFloat64(n, n, n, rng), randomFloat64(n, n, n, rng)
	c1, c2 := make([]float64, n*n), make([]float64, n*n)
	before := d.runs64.Load()
	BLAS64{Device: d}.Dgemm(blas.NoTrans, blas.NoTrans, n, n, n, 1, a.Data, n, b.Data, n, 0, c1, n)
	gonum.Implementation{}.Dgemm(blas.NoTrans, blas.NoTrans, n, n, n, 1, a.Data, n, b.Data, n, 0, c2, n)
	if got := d.runs64.Load() - before; got != 0 {
		t.Errorf("a 512³ Dgemm with the default threshold ran on %s", d.Info().Renderer)
	}
	for i := range c1 {
		if math.Float64bits(c1[i]) != math.Float64bits(c2[i]) {
			t.Fatalf("element %d: %v vs gonum %v", i, c1[i], c2[i])
		}
	}
}
