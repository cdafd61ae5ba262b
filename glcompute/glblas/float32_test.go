package glblas

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"gonum.org/v1/gonum/blas"
	"gonum.org/v1/gonum/blas/blas32"
	"gonum.org/v1/gonum/blas/gonum"

	"github.com/glmul/glmul/glcompute/tuning"
	"github.com/glmul/glmul/internal/conformance"
	"github.com/glmul/glmul/internal/gltest"
)

// TestFloat32SgemmOnGPU forces every product onto the GPU (Threshold 1) and
// checks it against float64, for each transpose, α and β, with leading
// dimensions larger than the rows.
func TestFloat32SgemmOnGPU(t *testing.T) {
	d := gltest.Open(t)
	impl := Float32{Device: d, Threshold: 1}
	rng := rand.New(rand.NewPCG(41, 42))
	for _, s := range [][3]int{{1, 1, 1}, {70, 65, 33}, {5, 129, 64}} {
		m, n, k := s[0], s[1], s[2]
		for _, tA := range []blas.Transpose{blas.NoTrans, blas.Trans} {
			for _, tB := range []blas.Transpose{blas.NoTrans, blas.Trans} {
				for _, ab := range [][2]float32{{1, 0}, {-2, 0.5}, {0.5, 1}} {
					t.Run(fmt.Sprintf("%v/%v%v/%v", s, tA, tB, ab), func(t *testing.T) {
						ar, ac := m, k
						if tA == blas.Trans {
							ar, ac = k, m
						}
						br, bc := k, n
						if tB == blas.Trans {
							br, bc = n, k
						}
						a, b, c := conformance.RandomPadded(ar, ac, 2, rng), conformance.RandomPadded(br, bc, 5, rng), conformance.RandomPadded(m, n, 3, rng)
						if ab[1] == 0 {
							for i := range c.Data {
								c.Data[i] = float32(math.NaN())
							}
						}
						ref, bound := conformance.GemmRef(tA, tB, ab[0], a, b, ab[1], c)
						impl.Sgemm(tA, tB, m, n, k, ab[0], a.Data, a.Stride, b.Data, b.Stride, ab[1], c.Data, c.Stride)
						for i := 0; i < m; i++ {
							for j := 0; j < n; j++ {
								g, r := float64(c.Data[i*c.Stride+j]), ref[i*n+j]
								if e := math.Abs(g - r); !(e <= bound[i*n+j]) && e != 0 {
									t.Fatalf("C[%d][%d] = %v, want %v ± %.3g", i, j, g, r, bound[i*n+j])
								}
							}
						}
					})
				}
			}
		}
	}
}

// Below the threshold the CPU path is gonum's own: bitwise the same.
func TestFloat32BelowThresholdIsGonum(t *testing.T) {
	d := gltest.Open(t)
	rng := rand.New(rand.NewPCG(43, 44))
	a, b := conformance.RandomPadded(20, 30, 0, rng), conformance.RandomPadded(30, 10, 0, rng)
	c1, c2 := make([]float32, 200), make([]float32, 200)
	Float32{Device: d, Threshold: 1 << 40}.Sgemm(blas.NoTrans, blas.NoTrans, 20, 10, 30, 1, a.Data, 30, b.Data, 10, 0, c1, 10)
	gonum.Implementation{}.Sgemm(blas.NoTrans, blas.NoTrans, 20, 10, 30, 1, a.Data, 30, b.Data, 10, 0, c2, 10)
	for i := range c1 {
		if math.Float32bits(c1[i]) != math.Float32bits(c2[i]) {
			t.Fatalf("element %d: %v vs gonum %v", i, c1[i], c2[i])
		}
	}
}

// Through blas32.Use, a Go program's blas32.Gemm reaches the GPU.
func TestFloat32ThroughBlas32Use(t *testing.T) {
	d := gltest.Open(t)
	blas32.Use(Float32{Device: d, Threshold: 1})
	defer blas32.Use(gonum.Implementation{})
	rng := rand.New(rand.NewPCG(45, 46))
	a, b := conformance.RandomPadded(33, 17, 0, rng), conformance.RandomPadded(17, 40, 0, rng)
	c := blas32.General{Rows: 33, Cols: 40, Stride: 40, Data: make([]float32, 33*40)}
	blas32.Gemm(blas.NoTrans, blas.NoTrans, 1, a, b, 0, c)
	ref, bound := conformance.GemmRef(blas.NoTrans, blas.NoTrans, 1, a, b, 0, c)
	for i := range ref {
		if e := math.Abs(float64(c.Data[i]) - ref[i]); !(e <= bound[i]) && e != 0 {
			t.Fatalf("element %d: %v, want %v", i, c.Data[i], ref[i])
		}
	}
}

func TestFloat32PanicsLikeGonum(t *testing.T) {
	d := gltest.Open(t)
	defer func() {
		if r := recover(); r == nil || fmt.Sprint(r)[:5] != "blas:" {
			t.Fatalf("recovered %v, want gonum's blas: panic", r)
		}
	}()
	Float32{Device: d, Threshold: 1}.Sgemm(blas.NoTrans, blas.NoTrans, 4, 4, 4, 1, make([]float32, 16), 2, make([]float32, 16), 4, 0, make([]float32, 16), 4)
}

// TestFloat32OnCPUDriver: on OpenGL on a CPU (llvmpipe) only products the cpu
// kernel runs go to the device; a transposed or scaled product, or one
// whose K or N is not a multiple of 4, stays on gonum (gemm.comp there is
// many times slower than gonum), bitwise gonum's.
func TestFloat32OnCPUDriver(t *testing.T) {
	d := gltest.Open(t)
	if !tuning.OnCPU(driver(d)) {
		t.Skipf("a rule for OpenGL on a CPU; this device is %s", d.Info().Renderer)
	}
	impl := Float32{Device: d}
	for _, c := range []struct {
		tA, tB      blas.Transpose
		m, n, k     int
		alpha, beta float32
		want        bool
	}{
		{blas.NoTrans, blas.NoTrans, 512, 512, 512, 1, 0, true},
		{blas.NoTrans, blas.NoTrans, 256, 256, 256, 1, 0, false}, // under the threshold
		{blas.Trans, blas.NoTrans, 512, 512, 512, 1, 0, false},
		{blas.NoTrans, blas.Trans, 512, 512, 512, 1, 0, false},
		{blas.NoTrans, blas.NoTrans, 512, 512, 512, 2, 0, false},
		{blas.NoTrans, blas.NoTrans, 512, 512, 512, 1, 1, false},
		{blas.NoTrans, blas.NoTrans, 512, 513, 512, 1, 0, false},
		{blas.NoTrans, blas.NoTrans, 512, 512, 513, 1, 0, false},
	} {
		if got := impl.gpuPays(c.tA, c.tB, c.m, c.n, c.k, c.alpha, c.beta); got != c.want {
			t.Errorf("%+v: gpuPays = %v", c, got)
		}
	}
	if !(Float32{Device: d, Threshold: 1}).gpuPays(blas.Trans, blas.NoTrans, 8, 8, 8, 2, 1) {
		t.Error("an explicit Threshold is not obeyed")
	}
	const n = 512
	rng := rand.New(rand.NewPCG(47, 48))
	a, b := conformance.RandomPadded(n, n, 0, rng), conformance.RandomPadded(n, n, 0, rng)
	c1, c2 := make([]float32, n*n), make([]float32, n*n)
	impl.Sgemm(blas.Trans, blas.NoTrans, n, n, n, 1, a.Data, n, b.Data, n, 0, c1, n)
	gonum.Implementation{}.Sgemm(blas.Trans, blas.NoTrans, n, n, n, 1, a.Data, n, b.Data, n, 0, c2, n)
	for i := range c1 {
		if math.Float32bits(c1[i]) != math.Float32bits(c2[i]) {
			t.Fatalf("a transposed 512³ product, element %d: %v vs gonum %v", i, c1[i], c2[i])
		}
	}
}
