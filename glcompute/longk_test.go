package glcompute

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
	"unsafe"

	"gonum.org/v1/gonum/blas"
	"gonum.org/v1/gonum/blas/blas32"

	"github.com/glmul/glmul/cpu"
	"github.com/glmul/glmul/glcompute/internal/glw"
	"github.com/glmul/glmul/shaders"
)

// loopProbe counts the iterations two loops in one invocation run, n1
// and n2 asked for: a driver with a loop budget (loops.go) stops the
// second where both together reach it.
const loopProbe = `#version 430 core
layout(local_size_x = 1) in;
uniform uint n1;
uniform uint n2;
layout(std430, binding = 2) buffer ssbo_R { uint R[]; };
void main()
{
    uint c1 = 0u, c2 = 0u;
    for (uint i = 0u; i < n1; i++) {
        c1 += R[2u + (i & 1u)];
    }
    for (uint i = 0u; i < n2; i++) {
        c2 += R[2u + (i & 1u)];
    }
    R[0] = c1;
    R[1] = c2;
}
`

// TestLoopBudget measures how many loop iterations one invocation runs
// (two loops of 40000 each): all of them on a driver without a loop
// budget, the budget in all on one with (Mesa 22.3.6's llvmpipe: 65535,
// the first loop whole and the second cut to 25535); glmul's budget
// (loopBudget) must be what the driver does.
func TestLoopBudget(t *testing.T) {
	d := openDevice(t, BackendEGL)
	const n = 40000
	var got [4]uint32
	var err error
	d.call(func() {
		var p glw.Program
		if p, err = glw.NewComputeProgram("loopprobe", loopProbe); err != nil {
			return
		}
		defer p.Release()
		init := [4]uint32{0, 0, 1, 1}
		buf, ok := glw.NewStorageBuffer(16, unsafe.Pointer(&init[0]), glw.StaticRead)
		if !ok {
			err = errors.New("no buffer")
			return
		}
		defer buf.Release()
		p.Use()
		glw.SetUint(p.Uniform("n1"), n)
		glw.SetUint(p.Uniform("n2"), n)
		buf.BindStorage(2)
		glw.Dispatch(1, 1)
		glw.BarrierBufferRead()
		buf.Read(0, 16, unsafe.Pointer(&got[0]))
		glw.Buffer(0).BindStorage(2)
		glw.Program(0).Use()
	})
	if err != nil {
		t.Fatal(err)
	}
	want := [2]uint32{n, n}
	if b := d.loopBudget; b > 0 {
		want[1] = uint32(min(n, b-n-1))
	}
	t.Logf("%s: loops of %d and %d ran %d and %d iterations (glmul's budget: %d)", d.info.Renderer, n, n, got[0], got[1], d.loopBudget)
	if got[0] != want[0] || got[1] != want[1] {
		t.Errorf("%s: loops of %d and %d ran %d and %d iterations; with glmul's loop budget %d, want %d and %d",
			d.info.Renderer, n, n, got[0], got[1], d.loopBudget, want[0], want[1])
	}
}

// relFrobenius is ‖C − A·B‖_F / ‖A·B‖_F, A·B in float64.
func relFrobenius(c, a, b blas32.General) float64 {
	var num, den float64
	for i := 0; i < c.Rows; i++ {
		for j := 0; j < c.Cols; j++ {
			s := 0.0
			for k := 0; k < a.Cols; k++ {
				s += float64(a.Data[i*a.Stride+k]) * float64(b.Data[k*b.Stride+j])
			}
			e := float64(c.Data[i*c.Stride+j]) - s
			num += e * e
			den += s * s
		}
	}
	return math.Sqrt(num / den)
}

// longKTol is the relative Frobenius error a long-K product may have.
// TestLongK's products of zero-mean inputs (uniform on [-1, 1)), K from
// 64000 to 1048600, measured 2.7e-6 to 1.2e-5 on llvmpipe; before the
// fix, 0.0087 to 0.90 (one step of 4 lost in 262148 alone is 3e-3).
const longKTol = 1e-4

// TestLongK multiplies at K past what one invocation may loop over on
// Mesa's llvmpipe (loops.go: 65535 iterations, K = 262140 for a loop
// of 4 a step) with every kernel family llvmpipe runs, host and
// resident: each must split K or refuse, never stop its loop early. On
// other drivers the same products must simply be right.
func TestLongK(t *testing.T) {
	d := openDevice(t, BackendEGL)
	rng := rand.New(rand.NewPCG(20, 26))
	check := func(name string, c, a, b blas32.General, err error) {
		t.Helper()
		if err != nil {
			t.Errorf("%s: %v", name, err)
		} else if e := relFrobenius(c, a, b); !(e < longKTol) {
			t.Errorf("%s: relative Frobenius error %.3g, want under %g", name, e, longKTol)
		}
	}
	host := func(m, k, n int, o MulOptions) {
		a, b, c := cpu.Random(m, k, rng), cpu.Random(k, n, rng), cpu.New(m, n)
		tm, err := d.Mul(c, a, b, &o)
		name := fmt.Sprintf("Mul %d×%d×%d %+v (ran %s, %d slices, panels %q)", m, k, n, o, tm.Kernel, tm.Splits, tm.Panels)
		check(name, c, a, b, err)
		if err == nil && (o.MaxBinding > 0) != (tm.Panels != "") {
			t.Errorf("%s: panels not as planned", name)
		}
	}
	host(2, 1048600, 3, MulOptions{Kernel: "cpu:8x1_1x4", SplitK: 1}) // SplitK 1 raised to what the driver needs
	host(2, 1048600, 3, MulOptions{Kernel: "cpu:8x1_1x4"})
	host(2, 262200, 3, MulOptions{SplitK: 1})                                    // the device's own choice
	host(2, 262200, 3, MulOptions{Kernel: "fast:32x16x4_4x4_db_tex", SplitK: 1}) // fast, buffer textures
	host(2, 262200, 3, MulOptions{Kernel: "fast:32x16x4_4x4_at", SplitK: 1})     // fast, A transposed
	host(2, 1048600, 8, MulOptions{Kernel: "cpu:1x1_1x4", MaxBinding: 20 << 20}) // in panels of 4 columns
	if r := d.maxKRange(mustLookup(t, "tiled32")); r > 0 {
		_, err := d.Mul(cpu.New(1, 1), cpu.New(1, r+1), cpu.New(r+1, 1), &MulOptions{Kernel: "tiled32"})
		if !errors.Is(err, ErrUnsupported) {
			t.Errorf("tiled32 at K = %d, over its %d on %s: %v, want an error matching ErrUnsupported", r+1, r, d.info.Renderer, err)
		}
	}
	residentLongK(t, d, rng, check)
}

// residentLongK is TestLongK's resident products: Matrix.Mul (the
// device's kernel), mulKernel with cpu and fast configurations, and
// Gemm's general kernel (A transposed, β ≠ 0: its chunks of K add up).
func residentLongK(t *testing.T, d *Device, rng *rand.Rand, check func(string, blas32.General, blas32.General, blas32.General, error)) {
	t.Helper()
	mul := func(name string, m, k, n int, run func(gc, ga, gb *Matrix) error) {
		a, b, c := cpu.Random(m, k, rng), cpu.Random(k, n, rng), cpu.New(m, n)
		gc, ga, gb := resident(t, d, c, 0), resident(t, d, a, 0), resident(t, d, b, 0)
		err := run(gc, ga, gb)
		if err == nil {
			err = gc.Download(c)
		}
		check(fmt.Sprintf("resident %s %d×%d×%d", name, m, k, n), c, a, b, err)
	}
	mul("Matrix.Mul", 2, 262200, 4, func(gc, ga, gb *Matrix) error { return gc.Mul(ga, gb) })
	for _, spec := range []string{"cpu:8x1_1x4", "fast:32x16x4_4x4_db_tex"} {
		mul("mulKernel "+spec, 4, 262200, 4, func(gc, ga, gb *Matrix) error { return gc.mulKernel(spec, ga, gb) })
	}
	// Gemm's general kernel: Aᵀ stored K×M, C = 1·Aᵀᵀ·B + 0.5·C0.
	const m, k, n = 2, 64000, 3
	at, b, c0 := cpu.Random(k, m, rng), cpu.Random(k, n, rng), cpu.Random(m, n, rng)
	a := cpu.New(m, k)
	for i := 0; i < k; i++ {
		for j := 0; j < m; j++ {
			a.Data[j*k+i] = at.Data[i*m+j]
		}
	}
	gc := resident(t, d, c0, 0)
	err := gc.Gemm(blas.Trans, blas.NoTrans, 1, resident(t, d, at, 0), resident(t, d, b, 0), 0.5)
	c := cpu.New(m, n)
	if err == nil {
		err = gc.Download(c)
	}
	for i := range c.Data { // C − 0.5·C0 is A·B
		c.Data[i] -= 0.5 * c0.Data[i]
	}
	check(fmt.Sprintf("resident Gemm(Trans, NoTrans, β 0.5) %d×%d×%d", m, k, n), c, a, b, err)
}

func mustLookup(t *testing.T, spec string) shaders.Kernel {
	t.Helper()
	k, err := shaders.Lookup(spec)
	if err != nil {
		t.Fatal(err)
	}
	return k
}
