package glcompute

import (
	"errors"
	"math"
	"math/rand/v2"
	"testing"

	"gonum.org/v1/gonum/blas"
	"gonum.org/v1/gonum/blas/blas64"
	"gonum.org/v1/gonum/blas/gonum"

	"github.com/glmul/glmul/cpu"
	"github.com/glmul/glmul/internal/conformance"
	"github.com/glmul/glmul/shaders"
)

// needFloat64 skips t where d's shaders lack double (OpenGL ES, or a
// desktop context under 4.0 without GL_ARB_gpu_shader_fp64), or fails it
// with GLMUL_REQUIRE_GL=1.
func needFloat64(t testing.TB, d *Device) {
	t.Helper()
	var err error
	d.call(func() { err = d.float64Support() })
	if errors.Is(err, errFloat64Refused) {
		t.Skip(err) // a driver glmul refuses float64 on: a context, and a clear error (TestFloat64Refused)
	}
	if err != nil {
		noGL(t, err.Error())
	}
}

// checkDgemm runs an m×k by k×n product with spec, A, B and C after off
// doubles of their buffers at row strides of their lengths plus pad
// (rounded up to even where even), C poisoned with NaN, and compares it
// with gonum's Dgemm (refFloat64), every double around C (its padding
// and the off before it) still NaN.
func checkDgemm(t *testing.T, d *Device, spec string, off, pad int, even bool, s [3]int, rng *rand.Rand) {
	t.Helper()
	m, k, n := s[0], s[1], s[2]
	ld := func(cols int) int {
		if even {
			return (cols + pad + 1) &^ 1
		}
		return cols + pad
	}
	a, b := conformance.Random64(m, k, ld(k), rng), conformance.Random64(k, n, ld(n), rng)
	c := conformance.Random64(m, n, n+pad, rng)
	for i := range c.Data {
		c.Data[i] = math.NaN()
	}
	got, err := d.mulFloat64(spec, off, c, a, b)
	if err != nil {
		t.Fatalf("%s %v: %v", spec, s, err)
	}
	want, tol := refFloat64(a, b)
	bad := 0
	for i, v := range got {
		e := i - off
		r, col := e/c.Stride, e%c.Stride
		if e < 0 || col >= n {
			if !math.IsNaN(v) && bad < 5 {
				t.Errorf("%s %v: double %d outside C (row %d, column %d) written: %v", spec, s, i, r, col, v)
				bad++
			}
			continue
		}
		w, tol := want[r*n+col], tol[r*n+col]
		if !(math.Abs(v-w) <= tol) && bad < 5 {
			t.Errorf("%s %v: C[%d,%d] = %v, want %v ± %.3g", spec, s, r, col, v, w, tol)
			bad++
		}
	}
}

// refFloat64 returns A·B by gonum's Dgemm, m×n compact, and each
// element's tolerance: 2γ_K·(|A||B|)ᵢⱼ/(1−γ_K) (each product is within
// γ_K of the exact one, γ_K = Ku/(1−Ku), u = 2⁻⁵³, whatever its order of
// summation).
func refFloat64(a, b blas64.General) (want, tol []float64) {
	m, k, n := a.Rows, a.Cols, b.Cols
	w, bound := blas64.General{Rows: m, Cols: n, Stride: n, Data: make([]float64, m*n)}, blas64.General{Rows: m, Cols: n, Stride: n, Data: make([]float64, m*n)}
	gemm := func(a, b, c blas64.General) { // gonum's own, whatever blas64.Use installed
		gonum.Implementation{}.Dgemm(blas.NoTrans, blas.NoTrans, m, n, k, 1, a.Data, a.Stride, b.Data, b.Stride, 0, c.Data, c.Stride)
	}
	gemm(a, b, w)
	gemm(absAll64(a), absAll64(b), bound)
	u := math.Ldexp(1, -53)
	gamma := float64(k) * u / (1 - float64(k)*u)
	for i := range bound.Data {
		bound.Data[i] *= 2 * gamma / (1 - gamma)
	}
	return w.Data, bound.Data
}

// absAll64 is x with each element's absolute value, in new memory.
func absAll64(x blas64.General) blas64.General {
	y := x
	y.Data = make([]float64, len(x.Data))
	for i, v := range x.Data {
		y.Data[i] = math.Abs(v)
	}
	return y
}

// tileShapes are shapes straddling every tile boundary of kernel k: 1×1×1,
// then M, N and K each over 1, tile−1, tile, tile+1 and 2·tile+5 with the
// other two off the tiles' edges, and a K of 3001.
func tileShapes(k shaders.Kernel) [][3]int {
	bm, bn, bk := k.TileM, k.TileN, k.StepK
	out := [][3]int{{1, 1, 1}, {bm + 1, 3001, bn + 1}}
	for _, x := range []int{1, bm - 1, bm, bm + 1, 2*bm + 5} {
		out = append(out, [3]int{x, bk + 1, bn + 1})
	}
	for _, x := range []int{1, bn - 1, bn, bn + 1, 2*bn + 5} {
		out = append(out, [3]int{bm - 1, 2*bk + 5, x})
	}
	for _, x := range []int{1, bk - 1, bk, bk + 1, 2*bk + 5} {
		out = append(out, [3]int{2*bm + 5, x, bn - 1})
	}
	return out
}

// TestDFastTileEdges checks the float64 kernel against gonum's Dgemm on
// shapes straddling its tiles, for the default configuration (dvec2
// loads, double-buffered, at an even offset and strides with padding), a
// small single-buffered one, one reading double by double (_u, at an odd
// offset and odd compact strides), and small ones with each of the
// sweep's options: buffer textures (_tex, single- and double-buffered),
// warp tiles 8 and 4 wide over padded rows of A (_p2_w8, _p2_w4) and
// unpadded (_w8), 8×8 in a 64×64 block of 64 invocations, and fragments a
// step ahead (_ahead) with dvec2s, doubles (the shortest K step, 2) and
// textures.
func TestDFastTileEdges(t *testing.T) {
	d := openDevice(t, BackendEGL)
	needFloat64(t, d)
	rng := rand.New(rand.NewPCG(45, 64))
	for _, c := range []struct {
		spec     string
		off, pad int
		even     bool
	}{
		{"dfast", 2, 1, true},
		{"dfast:32x32x4_4x2", 4, 0, true},
		{"dfast:32x64x8_2x4_db_u", 3, 1, false},
		{"dfast:32x32x4_4x2_tex", 4, 1, true},
		{"dfast:32x64x8_2x4_p2_w8_db_tex", 2, 0, true},
		{"dfast:64x32x8_4x2_p2_w4_db", 6, 3, true},
		{"dfast:32x64x4_2x4_w8_db", 0, 1, true},
		{"dfast:64x64x8_8x8_db", 2, 1, true},
		{"dfast:64x64x8_8x8_db_ahead", 2, 1, true},
		{"dfast:32x64x4_2x4_db_u_ahead", 3, 1, false},
		{"dfast:64x32x2_4x2_w4_db_tex_ahead", 4, 0, true},
	} {
		t.Run(c.spec, func(t *testing.T) {
			k, err := shaders.LookupFloat64(c.spec)
			if err != nil {
				t.Fatal(err)
			}
			for _, s := range tileShapes(k) {
				checkDgemm(t, d, c.spec, c.off, c.pad, c.even, s, rng)
			}
		})
	}
}

// TestDFastCandidates: every candidate configuration that fits the
// device compiles and computes a product straddling its tiles in each
// dimension.
func TestDFastCandidates(t *testing.T) {
	d := openDevice(t, BackendEGL)
	needFloat64(t, d)
	rng := rand.New(rand.NewPCG(45, 7))
	for _, c := range shaders.DFastCandidates() {
		if k, _ := shaders.DFast(c); c == shaders.DefaultDFast || d.fits(k) != nil {
			continue // TestDFastTileEdges has the default; llvmpipe has 32 KiB of shared memory
		}
		checkDgemm(t, d, "dfast:"+c.String(), 0, 0, true, [3]int{c.BM + 1, 2*c.BK + 1, c.BN + 3}, rng)
	}
}

// TestDFastSweep: every configuration of the sweep (shaders.DFastSweep)
// that fits the device compiles and computes a product straddling its
// tiles in each dimension, from an even offset; one that does not fit
// (llvmpipe's 32 KiB of shared memory) is refused as unsupported, before
// anything runs, and the device still computes afterwards.
func TestDFastSweep(t *testing.T) {
	d := openDevice(t, BackendEGL)
	needFloat64(t, d)
	rng := rand.New(rand.NewPCG(45, 8))
	cands := map[shaders.DFastConfig]bool{}
	for _, c := range shaders.DFastCandidates() {
		cands[c] = true
	}
	refused := 0
	for _, c := range shaders.DFastSweep() {
		spec := "dfast:" + c.String()
		k, err := shaders.DFast(c)
		if err != nil {
			t.Fatal(err)
		}
		if d.fits(k) != nil {
			a, b, cm := conformance.Random64(2, 2, 2, rng), conformance.Random64(2, 2, 2, rng), conformance.Random64(2, 2, 2, rng)
			if _, err := d.mulFloat64(spec, 0, cm, a, b); !errors.Is(err, ErrUnsupported) {
				t.Errorf("%s, over the device's limits: %v, want ErrUnsupported", spec, err)
			}
			refused++
			continue
		}
		if cands[c] {
			continue // TestDFastCandidates
		}
		checkDgemm(t, d, spec, 2, 1, true, [3]int{c.BM + 3, 2*c.BK + 3, c.BN + 1}, rng)
	}
	t.Logf("%d of %d configurations over the device's limits, refused", refused, len(shaders.DFastSweep()))
	checkDgemm(t, d, "dfast:32x32x4_4x2", 0, 0, true, [3]int{33, 9, 35}, rng)
}

// TestDFastTexturesMul64: Mul64 with _tex configurations, each after a
// float32 product that read the pool's buffers through buffer textures
// of RGBA32F: the float64 one views its own as RGBA32UI (bindStorage),
// and the float32 ones after it still read floats.
func TestDFastTexturesMul64(t *testing.T) {
	d := openDevice(t, BackendEGL)
	needFloat64(t, d)
	rng := rand.New(rand.NewPCG(45, 9))
	mul32 := func() {
		t.Helper()
		a, b, c := cpu.Random(70, 45, rng), cpu.Random(45, 67, rng), cpu.New(70, 67)
		if _, err := d.Mul(c, a, b, &MulOptions{Kernel: "fast:64x64x8_8x4_db_tex"}); err != nil {
			t.Fatal(err)
		}
		want := cpu.New(70, 67)
		cpu.Naive(want, a, b)
		for i, v := range c.Data {
			if math.Abs(float64(v-want.Data[i])) > 1e-3 {
				t.Fatalf("float32 through textures: C[%d] = %v, want %v", i, v, want.Data[i])
			}
		}
	}
	for _, spec := range []string{"dfast:32x32x4_4x2_tex", "dfast:32x64x8_2x4_p2_w8_db_tex"} {
		mul32()
		m, k, n := 70, 45, 67
		a, b := conformance.Random64(m, k, k, rng), conformance.Random64(k, n, n, rng)
		c := conformance.Random64(m, n, n, rng)
		if _, err := d.Mul64(c, a, b, &MulOptions{Kernel: spec}); err != nil {
			t.Fatalf("Mul64 %s: %v", spec, err)
		}
		want, tol := refFloat64(a, b)
		for i := range m {
			for j := range n {
				if v, w := c.Data[i*n+j], want[i*n+j]; !(math.Abs(v-w) <= tol[i*n+j]) {
					t.Fatalf("Mul64 %s: C[%d,%d] = %v, want %v", spec, i, j, v, w)
				}
			}
		}
	}
	mul32()
}

// TestDFastAlignment: a configuration reading dvec2s refuses odd strides
// or offsets, naming the _u configuration; the _u one takes them.
func TestDFastAlignment(t *testing.T) {
	d := openDevice(t, BackendEGL)
	needFloat64(t, d)
	rng := rand.New(rand.NewPCG(45, 2))
	a, b := conformance.Random64(3, 5, 5, rng), conformance.Random64(5, 4, 4, rng)
	c := conformance.Random64(3, 4, 4, rng)
	if _, err := d.mulFloat64("dfast:32x32x4_4x2", 0, c, a, b); !errors.Is(err, ErrUnsupported) {
		t.Errorf("odd lda: %v, want ErrUnsupported", err)
	}
	if _, err := d.mulFloat64("dfast:32x32x4_4x2_u", 1, c, a, b); err != nil {
		t.Errorf("_u with odd lda and offset: %v", err)
	}
}

// TestDFastNotOnES: on OpenGL ES, which has no double, the float64 kernel
// is refused as unsupported before anything is compiled.
func TestDFastNotOnES(t *testing.T) {
	d := openDevice(t, BackendGLES)
	rng := rand.New(rand.NewPCG(45, 3))
	a, b, c := conformance.Random64(2, 2, 2, rng), conformance.Random64(2, 2, 2, rng), conformance.Random64(2, 2, 2, rng)
	if _, err := d.mulFloat64("dfast", 0, c, a, b); !errors.Is(err, ErrUnsupported) {
		t.Errorf("dfast on OpenGL ES: %v, want ErrUnsupported", err)
	}
}
