package glcompute

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
	"time"

	"gonum.org/v1/gonum/blas"
	"gonum.org/v1/gonum/blas/blas32"
	"gonum.org/v1/gonum/blas/blas64"

	"github.com/glmul/glmul/internal/conformance"
)

// view64 is a float64 operand of a resident test product: a view of rows×cols
// at stride and offset into a buffer of its own, whose every double was
// written first (the poison: NaN in C, a random value in A and B), so
// that a read or a write past the view shows.
type view64 struct {
	m    *Matrix
	full blas64.General // the buffer as uploaded: its doubles as a 1×len matrix
}

// newView64 makes a view of r×c at stride and offset, its elements x (or
// random values), the rest of the buffer poison.
func newView64(t *testing.T, d *Device, r, c, stride, off int, poison float64, rng *rand.Rand) (*view64, blas64.General) {
	t.Helper()
	total := off + max(r-1, 0)*stride + c + 3 // 3 doubles past the view's last
	m, err := d.NewMatrix64(1, total)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(m.Release)
	full := blas64.General{Rows: 1, Cols: total, Stride: total, Data: make([]float64, total)}
	for i := range full.Data {
		full.Data[i] = poison
	}
	x := conformance.Random64(r, c, max(c, 1), rng)
	for i := range r {
		copy(full.Data[off+i*stride:off+i*stride+c], x.Data[i*x.Stride:i*x.Stride+c])
	}
	if err := m.Upload64(full); err != nil {
		t.Fatal(err)
	}
	m.Rows, m.Cols, m.Stride, m.Offset = r, c, max(stride, c), off
	return &view64{m, full}, x
}

// buffer downloads v's whole buffer.
func (v *view64) buffer(t *testing.T) []float64 {
	t.Helper()
	w := *v.m
	w.Rows, w.Cols, w.Stride, w.Offset = 1, v.full.Cols, v.full.Cols, 0
	out := blas64.General{Rows: 1, Cols: v.full.Cols, Stride: v.full.Cols, Data: make([]float64, v.full.Cols)}
	if err := w.Download64(out); err != nil {
		t.Fatal(err)
	}
	return out.Data
}

// TestGemm64 checks Gemm64 (and Mul on float64 matrices) against gonum's
// Dgemm on shapes straddling dfast's and gemm.comp's tiles and reaching
// far in K (past llvmpipe's loop limit), every transpose, α and β of 0, 1 and others, operands that are
// views at odd and even strides and offsets (dfast by dvec2s, dfast
// double by double, GEMM64): C's elements within the float64 bound, every
// double around them as it was, A and B unchanged bit for bit, and with
// β = 0 a NaN C overwritten, with α = 0 NaN A and B not read.
func TestGemm64(t *testing.T) {
	d := openDevice(t, BackendEGL)
	needFloat64(t, d)
	rng := rand.New(rand.NewPCG(45, 64064))
	nan := math.NaN()
	type layout struct{ pad, off int }
	even, odd := layout{2, 2}, layout{1, 3}
	for _, c := range []struct {
		tA, tB      blas.Transpose
		alpha, beta float64
		m, k, n     int
		lay         layout
	}{
		{blas.NoTrans, blas.NoTrans, 1, 0, 129, 16, 130, even}, // dfast, dvec2s: A's and B's rows even
		{blas.NoTrans, blas.NoTrans, 1, 0, 2, 2, 2, even},
		{blas.NoTrans, blas.NoTrans, 1, 0, 257, 3002, 66, even},
		{blas.NoTrans, blas.NoTrans, 1, 0, 129, 17, 131, even}, // dfast, double by double: odd rows
		{blas.NoTrans, blas.NoTrans, 1, 0, 1, 1, 1, even},
		{blas.NoTrans, blas.NoTrans, 1, 0, 130, 40, 128, odd}, // odd strides and offsets
		{blas.NoTrans, blas.NoTrans, 1, 0, 65, 9, 3, odd},
		{blas.NoTrans, blas.NoTrans, 1, 0, 3, 40000, 4, even}, // over llvmpipe's loop limit for dfast: GEMM64 there
		{blas.Trans, blas.NoTrans, 0.5, 0, 65, 33, 63, even},  // GEMM64
		{blas.NoTrans, blas.Trans, -1.25, 0.75, 64, 17, 129, odd},
		{blas.Trans, blas.Trans, 2, 1, 127, 2049, 66, odd},
		{blas.ConjTrans, blas.NoTrans, 1, -3, 3, 70, 5, even},
		{blas.NoTrans, blas.NoTrans, 1, 0.5, 70, 20, 65, even},
		{blas.NoTrans, blas.NoTrans, 0, 0.5, 33, 12, 34, odd}, // α = 0: c = β·c
		{blas.NoTrans, blas.NoTrans, 0, 0, 33, 12, 34, even},
		{blas.NoTrans, blas.NoTrans, 1, 2, 9, 0, 10, odd}, // K = 0: c = β·c
	} {
		name := fmt.Sprintf("%c%c/α=%g/β=%g/%dx%dx%d/pad%d_off%d", c.tA, c.tB, c.alpha, c.beta, c.m, c.k, c.n, c.lay.pad, c.lay.off)
		t.Run(name, func(t *testing.T) {
			ar, ac := c.m, c.k
			if c.tA != blas.NoTrans {
				ar, ac = c.k, c.m
			}
			br, bc := c.k, c.n
			if c.tB != blas.NoTrans {
				br, bc = c.n, c.k
			}
			fill := rng.Float64()
			if c.alpha == 0 {
				fill = nan // A and B's elements too: α = 0 reads neither
			}
			va, a := newView64(t, d, ar, ac, ac+c.lay.pad, c.lay.off, fill, rng)
			vb, b := newView64(t, d, br, bc, bc+c.lay.pad, c.lay.off, fill, rng)
			vc, cm := newView64(t, d, c.m, c.n, c.n+c.lay.pad+1, c.lay.off, nan, rng)
			if c.alpha == 0 {
				va, a = nanView(t, d, ar, ac, rng)
				vb, b = nanView(t, d, br, bc, rng)
			}
			if c.beta == 0 { // β = 0 does not read C: NaN there is overwritten
				vc, cm = nanView(t, d, c.m, c.n, rng)
			}
			before := [][]float64{va.buffer(t), vb.buffer(t), vc.buffer(t)}
			var err error
			if c.tA == blas.NoTrans && c.tB == blas.NoTrans && c.alpha == 1 && c.beta == 0 {
				err = vc.m.Mul(va.m, vb.m)
			} else {
				err = vc.m.Gemm64(c.tA, c.tB, c.alpha, va.m, vb.m, c.beta)
			}
			if err != nil {
				t.Fatal(err)
			}
			want, tol := conformance.GemmRef64(c.tA, c.tB, c.alpha, a, b, c.beta, cm)
			got := vc.buffer(t)
			bad := 0
			for i, v := range got {
				r, col := (i-vc.m.Offset)/vc.m.Stride, (i-vc.m.Offset)%vc.m.Stride
				in := i >= vc.m.Offset && r < c.m && col < c.n
				switch {
				case bad >= 5:
				case !in && math.Float64bits(v) != math.Float64bits(before[2][i]):
					t.Errorf("double %d of C's buffer, outside C, is %v, was %v", i, v, before[2][i])
					bad++
				case in && !(math.Abs(v-want[r*c.n+col]) <= tol[r*c.n+col]):
					t.Errorf("C[%d,%d] = %v, want %v ± %.3g", r, col, v, want[r*c.n+col], tol[r*c.n+col])
					bad++
				}
			}
			if !sameBits(va.buffer(t), before[0]) || !sameBits(vb.buffer(t), before[1]) {
				t.Error("A's or B's buffer changed")
			}
		})
	}
}

// nanView is a view whose buffer holds NaN everywhere, its elements too,
// and those elements as a host matrix.
func nanView(t *testing.T, d *Device, r, c int, rng *rand.Rand) (*view64, blas64.General) {
	v, x := newView64(t, d, r, c, c+1, 1, math.NaN(), rng)
	for i := range x.Data {
		x.Data[i] = math.NaN()
	}
	if r > 0 && c > 0 {
		if err := v.m.Upload64(x); err != nil {
			t.Fatal(err)
		}
	}
	v.full.Data = v.buffer(t)
	return v, x
}

// TestMatrix64Transfers: Upload64 and Download64 move doubles bit for bit
// (NaN payloads, signed zeros, denormals) into and out of a view at a
// stride with gaps, through glBufferSubData and through the staging
// buffers, leaving the gaps and the host's stride gaps as they were.
func TestMatrix64Transfers(t *testing.T) {
	d := openDevice(t, BackendEGL)
	needFloat64(t, d)
	rng := rand.New(rand.NewPCG(45, 64065))
	for _, s := range [][2]int{{3, 5}, {700, 301}} { // the second over directUploadBytes
		r, c := s[0], s[1]
		v, _ := newView64(t, d, r, c, c+3, 5, math.Float64frombits(0x7ff8dead0000beef), rng)
		src := conformance.Random64(r, c, c+2, rng)
		src.Data[0], src.Data[1], src.Data[len(src.Data)-1] = math.Copysign(0, -1), math.Float64frombits(0x7ff0000000000001), 5e-324
		if err := v.m.Upload64(src); err != nil {
			t.Fatal(err)
		}
		dst := blas64.General{Rows: r, Cols: c, Stride: c + 4, Data: make([]float64, (r-1)*(c+4)+c)}
		for i := range dst.Data {
			dst.Data[i] = 7
		}
		if err := v.m.Download64(dst); err != nil {
			t.Fatal(err)
		}
		buf := v.buffer(t)
		for i := range r {
			for j := range c {
				if x, y := math.Float64bits(dst.Data[i*dst.Stride+j]), math.Float64bits(src.Data[i*src.Stride+j]); x != y {
					t.Fatalf("%v: element (%d, %d) came back %#x, went up %#x", s, i, j, x, y)
				}
			}
			for j := c; j < dst.Stride && i*dst.Stride+j < len(dst.Data); j++ {
				if dst.Data[i*dst.Stride+j] != 7 {
					t.Fatalf("%v: Download64 wrote the host's stride gap at (%d, %d)", s, i, j)
				}
			}
			for j := c; j < c+3 && 5+i*(c+3)+j < len(buf); j++ {
				if math.Float64bits(buf[5+i*(c+3)+j]) != 0x7ff8dead0000beef {
					t.Fatalf("%v: Upload64 wrote the buffer's stride gap at (%d, %d)", s, i, j)
				}
			}
		}
	}
}

// TestMatrix64Refusals: each element type's methods panic on the other's
// matrices, naming what to use, and NewMatrix64 on OpenGL ES returns an
// error matching ErrUnsupported.
func TestMatrix64Refusals(t *testing.T) {
	d := openDevice(t, BackendEGL)
	needFloat64(t, d)
	m64, err := d.NewMatrix64(2, 2)
	if err != nil {
		t.Fatal(err)
	}
	defer m64.Release()
	m32, err := d.NewMatrix(2, 2)
	if err != nil {
		t.Fatal(err)
	}
	defer m32.Release()
	g32 := blas32.General{Rows: 2, Cols: 2, Stride: 2, Data: make([]float32, 4)}
	g64 := blas64.General{Rows: 2, Cols: 2, Stride: 2, Data: make([]float64, 4)}
	for _, c := range []struct {
		name, want string
		f          func()
	}{
		{"Upload on float64", "Upload64", func() { m64.Upload(g32) }},
		{"Download on float64", "Download64", func() { m64.Download(g32) }},
		{"Gemm on float64", "Gemm64", func() { m64.Gemm(blas.NoTrans, blas.NoTrans, 1, m64, m64, 0) }},
		{"Gemm with a float64 A", "Gemm64", func() { m32.Gemm(blas.NoTrans, blas.NoTrans, 1, m64, m32, 0) }},
		{"GemmBatched on float64", "float64 Matrix", func() { d.GemmBatched(m64, 1, m64, m64, 0, Batch{Count: 1, M: 2, K: 2, N: 2}) }},
		{"GemmBatched64 on float32", "NewMatrix64", func() { d.GemmBatched64(m32, 1, m32, m32, 0, Batch{Count: 1, M: 2, K: 2, N: 2}) }},
		{"Upload64 on float32", "NewMatrix64", func() { m32.Upload64(g64) }},
		{"Download64 on float32", "NewMatrix64", func() { m32.Download64(g64) }},
		{"Gemm64 with a float32 B", "NewMatrix64", func() { m64.Gemm64(blas.NoTrans, blas.NoTrans, 1, m64, m32, 0) }},
		{"Mul of mixed types", "NewMatrix64", func() { m64.Mul(m64, m32) }},
		{"Gemm64 with NaN α", "NaN", func() { m64.Gemm64(blas.NoTrans, blas.NoTrans, math.NaN(), m64, m64, 0) }},
		{"Gemm64 into its own A", "Gemm64: C overlaps A or B", func() { m64.Gemm64(blas.NoTrans, blas.NoTrans, 1, m64, m64, 0) }},
		{"Upload64 of another shape", "shapes differ", func() { m64.Upload64(blas64.General{Rows: 1, Cols: 2, Stride: 2, Data: make([]float64, 2)}) }},
	} {
		t.Run(c.name, func(t *testing.T) { conformance.MustPanic(t, c.want, c.f) })
	}
	es := openDevice(t, BackendGLES)
	if _, err := es.NewMatrix64(2, 2); !errors.Is(err, ErrUnsupported) {
		t.Errorf("NewMatrix64 on OpenGL ES: %v, want ErrUnsupported", err)
	}
}

// TestGemmBatched64 checks GemmBatched64 (and MulBatched on float64
// matrices) against gonum's Dgemm product by product: sizes 1 to 32,
// padded rows and gaps between products, batches at odd offsets in
// poisoned buffers, α and β of 0, 1 and others. Each C within 2γ_{K+2},
// the gaps of C's buffer as they were, NaN in C overwritten where β = 0.
func TestGemmBatched64(t *testing.T) {
	d := openDevice(t, BackendEGL)
	needFloat64(t, d)
	rng := rand.New(rand.NewPCG(45, 64066))
	for _, c := range []struct {
		bt          Batch
		alpha, beta float64
	}{
		{Batch{Count: 37, M: 1, K: 1, N: 1}, 1, 0},
		{Batch{Count: 5, M: 3, K: 32, N: 5, LdA: 33, LdB: 6, LdC: 7, StrideA: 120, StrideB: 200, StrideC: 30}, 1, 0},
		{Batch{Count: 9, M: 32, K: 7, N: 32}, 0.5, -2},
		{Batch{Count: 4, M: 17, K: 17, N: 17, LdC: 19, StrideC: 19 * 17}, 0, 1.5},
		{Batch{Count: 3, M: 6, K: 5, N: 4}, -1, 1},
	} {
		bt := c.bt.normalized()
		t.Run(fmt.Sprintf("%dx%dx%dx%d/α=%g/β=%g", bt.Count, bt.M, bt.K, bt.N, c.alpha, c.beta), func(t *testing.T) {
			span := func(stride, one int) int { return batchExtent(bt.Count, stride, one) }
			poisonC := rng.Float64()
			if c.beta == 0 {
				poisonC = math.NaN()
			}
			va, a := newView64(t, d, 1, span(bt.StrideA, bt.spanA()), 0, 3, rng.Float64(), rng)
			vb, b := newView64(t, d, 1, span(bt.StrideB, bt.spanB()), 0, 1, rng.Float64(), rng)
			vc, cm := newView64(t, d, 1, span(bt.StrideC, bt.spanC()), 0, 5, poisonC, rng)
			if c.beta == 0 {
				vc, cm = nanView(t, d, 1, span(bt.StrideC, bt.spanC()), rng)
			}
			before := vc.buffer(t)
			var err error
			if c.alpha == 1 && c.beta == 0 {
				err = d.MulBatched(vc.m, va.m, vb.m, c.bt)
			} else {
				err = d.GemmBatched64(vc.m, c.alpha, va.m, vb.m, c.beta, c.bt)
			}
			if err != nil {
				t.Fatal(err)
			}
			got := vc.buffer(t)
			inC := make([]bool, len(got))
			for p := range bt.Count {
				at := func(x blas64.General, off, rows, cols, ld int) blas64.General {
					return blas64.General{Rows: rows, Cols: cols, Stride: ld, Data: x.Data[off:]}
				}
				am, bm := at(a, p*bt.StrideA, bt.M, bt.K, bt.LdA), at(b, p*bt.StrideB, bt.K, bt.N, bt.LdB)
				want, tol := conformance.GemmRef64(blas.NoTrans, blas.NoTrans, c.alpha, am, bm, c.beta, at(cm, p*bt.StrideC, bt.M, bt.N, bt.LdC))
				for i := range bt.M {
					for j := range bt.N {
						k := vc.m.Offset + p*bt.StrideC + i*bt.LdC + j
						inC[k] = true
						if g := got[k]; !(math.Abs(g-want[i*bt.N+j]) <= tol[i*bt.N+j]) {
							t.Fatalf("product %d (%d, %d): %v, want %v ± %.3g", p, i, j, g, want[i*bt.N+j], tol[i*bt.N+j])
						}
					}
				}
			}
			for k, v := range got {
				if !inC[k] && math.Float64bits(v) != math.Float64bits(before[k]) {
					t.Fatalf("double %d of C's buffer, in no product, is %v, was %v", k, v, before[k])
				}
			}
		})
	}
}

// BenchmarkGemm64 times resident float64 products of n×n (GLMUL_BENCH_N,
// default 256), queued and waited for with a fence: Mul (the device's
// float64 kernel, dfast) and Gemm64 with A transposed, α = 2 and β = 1
// (GEMM64, gemm.comp in doubles), each reporting flop/s and TFLOPS.
func BenchmarkGemm64(b *testing.B) {
	d := openDevice(b, BackendEGL)
	needFloat64(b, d)
	n := conformance.EnvSize("GLMUL_BENCH_N", 256)
	rng := rand.New(rand.NewPCG(5, 64))
	m := make([]*Matrix, 3)
	for i := range m {
		var err error
		if m[i], err = d.NewMatrix64(n, n); err != nil {
			b.Fatal(err)
		}
		defer m[i].Release()
		if err := m[i].Upload64(conformance.Random64(n, n, n, rng)); err != nil {
			b.Fatal(err)
		}
	}
	flop := 2 * float64(n) * float64(n) * float64(n)
	for _, c := range []struct {
		name string
		run  func() error
	}{
		{"Mul", func() error { return m[2].Mul(m[0], m[1]) }},
		{"Gemm64_TN", func() error { return m[2].Gemm64(blas.Trans, blas.NoTrans, 2, m[0], m[1], 1) }},
	} {
		b.Run(fmt.Sprintf("%s/n=%d", c.name, n), func(b *testing.B) {
			wait := func() {
				f := d.Fence()
				f.Wait(time.Minute)
				f.Release()
			}
			if err := c.run(); err != nil { // compiled before the timing
				b.Fatal(err)
			}
			wait()
			for b.Loop() {
				if err := c.run(); err != nil {
					b.Fatal(err)
				}
				wait()
			}
			rate := flop * float64(b.N) / b.Elapsed().Seconds()
			b.ReportMetric(rate, "flop/s")
			b.ReportMetric(rate/1e12, "TFLOPS")
		})
	}
}
