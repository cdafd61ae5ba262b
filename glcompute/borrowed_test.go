package glcompute

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"testing"
	"unsafe"

	"github.com/go-gl/gl/v4.3-core/gl"
	"gonum.org/v1/gonum/blas"
	"gonum.org/v1/gonum/blas/blas32"

	"github.com/glmul/glmul/cpu"
	"github.com/glmul/glmul/glcompute/internal/glw"
	"github.com/glmul/glmul/internal/conformance"
)

// TestScope chains dependent products inside one Scope, on a borrowed
// context (one save and restore: glmul's program stays current between
// the calls, the engine's state is back afterwards) and an owned one.
func TestScope(t *testing.T) {
	rng := rand.New(rand.NewPCG(101, 102))
	a, b := conformance.RandomPadded(20, 24, 0, rng), conformance.RandomPadded(24, 24, 0, rng)
	// C1 = A·B, C2 = 2·C1·B + 0 (gemm.comp), C3 = C2ᵀ... as a batch: each
	// reads the previous one's result.
	ab := cpu.New(20, 24)
	cpu.Sgemm(ab, a, b)
	want := cpu.New(20, 24)
	cpu.Sgemm(want, ab, b)
	check := func(t *testing.T, d *Device, inside func()) {
		ga, gb := resident(t, d, a, 4), resident(t, d, b, 8)
		c1, _ := d.NewMatrix(20, 24)
		c2, _ := d.NewMatrix(20, 24)
		defer c1.Release()
		defer c2.Release()
		err := d.Scope(func() error {
			if err := c1.Mul(ga, gb); err != nil {
				return err
			}
			if inside != nil {
				inside()
			}
			return c2.Gemm(blas.NoTrans, blas.NoTrans, 2, c1, gb, 0)
		})
		if err != nil {
			t.Fatal(err)
		}
		got := cpu.New(20, 24)
		c2.Download(got)
		for i := range got.Data {
			w := 2 * want.Data[i]
			if e := abs64(float64(got.Data[i] - w)); e > 1e-4*(1+abs64(float64(w))) {
				t.Fatalf("C2[%d] = %v, want %v", i, got.Data[i], w)
			}
		}
		conformance.MustPanic(t, "nested Scope", func() { d.Scope(func() error { return d.Scope(func() error { return nil }) }) })
		wantErr := errors.New("from f")
		if err := d.Scope(func() error { return wantErr }); err != wantErr {
			t.Errorf("Scope returned %v, want f's error", err)
		}
	}
	t.Run("owned", func(t *testing.T) { check(t, openDevice(t, BackendEGL), nil) })
	t.Run("borrowed", func(t *testing.T) {
		withBorrowedEGL(t, func(d *Device) {
			setUpEngine(t)
			before := readEngineState()
			check(t, d, func() {
				if s := readEngineState(); s.program == before.program {
					t.Error("inside a Scope the engine's program was restored after a call: want one restore, at the end")
				}
			})
			if after := readEngineState(); after != before {
				t.Errorf("after Scope the engine's state changed:\n before %+v\n after  %+v", before, after)
			}
		})
	})
}

// TestScopeRebindsWhatChanged: inside one Scope resident products skip
// binding what the previous one left bound; a sequence that changes
// matrices, offsets and programs (fast, gemm.comp, a fence between) must
// still read the right operands every time.
func TestScopeRebindsWhatChanged(t *testing.T) {
	rng := rand.New(rand.NewPCG(103, 104))
	a, a2 := conformance.RandomPadded(20, 24, 0, rng), conformance.RandomPadded(20, 24, 0, rng)
	b, b2 := conformance.RandomPadded(24, 24, 0, rng), conformance.RandomPadded(24, 24, 0, rng)
	run := func(t *testing.T, d *Device) {
		// a and a2 in one buffer, b and b2 in another: ranges of the same
		// buffer that differ only in where they start.
		pair := func(x, y blas32.General, offX, offY int) (*Matrix, *Matrix) {
			holder, err := d.NewMatrix(1, offY+y.Rows*y.Stride+64)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(holder.Release)
			var gs [2]*Matrix
			for i, m := range []struct {
				g   blas32.General
				off int
			}{{x, offX}, {y, offY}} {
				if gs[i], err = d.WrapBuffer(holder.Buffer(), m.off, m.g.Rows, m.g.Cols, m.g.Stride); err == nil {
					err = gs[i].Upload(m.g)
				}
				if err != nil {
					t.Fatal(err)
				}
			}
			return gs[0], gs[1]
		}
		ga, ga2 := pair(a, a2, 4, 4+20*24+4096)
		gb, gb2 := pair(b, b2, 0, 24*24+8192)
		steps := []struct {
			x, y   blas32.General
			gx, gy *Matrix
			transB bool
		}{{a, b, ga, gb, false}, {a2, b2, ga2, gb2, false}, {a, b2, ga, gb2, false}, {a, b, ga, gb, false},
			{a, b2, ga, gb2, true}, {a, b2, ga, gb2, false}, {a2, b, ga2, gb, false}, {a2, b, ga2, gb, false}}
		cs := make([]*Matrix, len(steps))
		for i := range cs {
			cs[i] = resident(t, d, cpu.New(20, 24), 4*i)
		}
		// Last, a product that reads step 0's result, written inside the
		// same Scope (only a storage barrier between).
		chain := resident(t, d, cpu.New(20, 24), 0)
		err := d.Scope(func() error {
			for i, s := range steps {
				tB := blas.NoTrans
				if s.transB {
					tB = blas.Trans
				}
				if err := cs[i].Gemm(blas.NoTrans, tB, 1, s.gx, s.gy, 0); err != nil {
					return err
				}
				if i == 2 {
					d.Fence().Release()
				}
			}
			return chain.Mul(cs[0], gb)
		})
		if err != nil {
			t.Fatal(err)
		}
		for i, s := range steps {
			tB := blas.NoTrans
			if s.transB {
				tB = blas.Trans
			}
			got := cpu.New(20, 24)
			if err := cs[i].Download(got); err != nil {
				t.Fatal(err)
			}
			ref, bound := conformance.GemmRef(blas.NoTrans, tB, 1, s.x, s.y, 0, got)
			for j := range ref {
				if e := math.Abs(float64(got.Data[j]) - ref[j]); !(e <= bound[j]) && e != 0 {
					t.Fatalf("step %d: C[%d] = %v, want %v", i, j, got.Data[j], ref[j])
				}
			}
		}
		c0, got := cpu.New(20, 24), cpu.New(20, 24)
		if err := errors.Join(cs[0].Download(c0), chain.Download(got)); err != nil {
			t.Fatal(err)
		}
		ref, bound := conformance.GemmRef(blas.NoTrans, blas.NoTrans, 1, c0, b, 0, got)
		for j := range ref {
			if e := math.Abs(float64(got.Data[j]) - ref[j]); !(e <= bound[j]) && e != 0 {
				t.Fatalf("the product of step 0's result: C[%d] = %v, want %v", j, got.Data[j], ref[j])
			}
		}
	}
	// The device's choice, a storage-buffer kernel and the cpu kernel
	// (which binds its textures every time, and reads step 0's result
	// through a texel fetch).
	for _, kernel := range []string{"", "fast:64x64x8_4x4", "cpu"} {
		force := func(d *Device) *Device {
			if kernel != "" {
				d.info.DefaultKernel, d.info.SmallGridKernel, d.info.ClassKernels = kernel, "", nil
			}
			return d
		}
		t.Run("owned/kernel="+kernel, func(t *testing.T) { run(t, force(openDevice(t, BackendEGL))) })
		t.Run("borrowed/kernel="+kernel, func(t *testing.T) { withBorrowedEGL(t, func(d *Device) { run(t, force(d)) }) })
	}
}

// TestBorrowedOutOfMemory asks a borrowed context for a 16 TiB buffer: the
// error must match ErrOutOfMemory, and the GL error flag must still hold
// GL_OUT_OF_MEMORY for the host (glmul never reads it).
func TestBorrowedOutOfMemory(t *testing.T) {
	withBorrowedEGL(t, func(d *Device) {
		for gl.GetError() != gl.NO_ERROR {
		}
		var err error
		var b glw.Buffer
		d.call(func() { b, err = d.newBuffer(1<<44, nil, glw.StaticDraw, "a 16 TiB buffer") })
		if err == nil {
			// NVIDIA 580 accepts a 16 TiB glBufferData with no error and
			// the full GL_BUFFER_SIZE (it allocates lazily); there is
			// nothing to detect at allocation time.
			d.call(b.Release)
			t.Skipf("the driver (%s) allocated 16 TiB without an error: it commits memory lazily", d.Info().Version)
		}
		if !errors.Is(err, ErrOutOfMemory) {
			t.Fatalf("err = %v, want ErrOutOfMemory", err)
		}
		if e := gl.GetError(); e != gl.OUT_OF_MEMORY {
			t.Errorf("the host's GL error flag reads 0x%x, want GL_OUT_OF_MEMORY left for it", e)
		}
	})
}

// TestBorrowedWrongThread calls a borrowed Device from a goroutine whose
// thread does not have the context current: a clear panic, not a silent
// no-op.
func TestBorrowedWrongThread(t *testing.T) {
	withBorrowedEGL(t, func(d *Device) {
		m, c := newMatrix(t, d, 4, 4), newMatrix(t, d, 4, 4)
		done := make(chan struct{})
		go func() {
			defer close(done)
			runtime.LockOSThread() // a thread that never had the context
			defer runtime.UnlockOSThread()
			conformance.MustPanic(t, "context is not current", func() { c.Mul(m, m) })
			conformance.MustPanic(t, "context is not current", func() { d.NewMatrix(2, 2) })
		}()
		<-done
	})
}

// onDevice runs body on a Device of its own context (borrowed false) or
// borrowing a host's (withBorrowedEGL).
func onDevice(t *testing.T, borrowed bool, body func(d *Device)) {
	t.Helper()
	if borrowed {
		withBorrowedEGL(t, body)
	} else {
		body(openDevice(t, BackendEGL))
	}
}

// closeTo fails t unless got and want agree within tol, element by element.
func closeTo(t *testing.T, what string, got, want []float32, tol float64) {
	t.Helper()
	for i := range want {
		if abs64(float64(got[i]-want[i])) > tol {
			t.Fatalf("%s: C[%d] = %v, want %v", what, i, got[i], want[i])
		}
	}
}

// TestMisuseMatchesDocs covers API misuse the docs describe: a bad
// transpose panics as gonum's does; a released Fence cannot be waited on;
// Matrix and Fence Release after the Device's is harmless (glblas's tests
// cover its Sgemm after the Device's Release).
func TestMisuseMatchesDocs(t *testing.T) {
	for _, borrowed := range []bool{false, true} {
		t.Run(fmt.Sprintf("borrowed=%v", borrowed), func(t *testing.T) {
			body := func(d *Device) {
				m, _ := d.NewMatrix(4, 4)
				w, _ := d.WrapBuffer(m.Buffer(), 0, 4, 4, 4)
				conformance.MustPanic(t, "bad transpose", func() { m.Gemm('X', blas.NoTrans, 1, w, w, 0) })
				f := d.Fence()
				f.Release()
				f.Release()
				conformance.MustPanic(t, "released Fence", func() { f.Wait(0) })
				live := d.Fence()
				d.Release()
				m.Release()
				w.Release()
				m.Release()
				live.Release()
			}
			onDevice(t, borrowed, body)
		})
	}
}

// TestMatrixFieldsChecked: a Matrix whose exported fields the caller
// changed to reach past its buffer panics in Gemm, Mul, Upload and Download
// (a product read zeros and stale staging data and returned nil, a borrowed
// call left GL_INVALID_VALUE in the host's error flag: a reviewer's
// finding), while a view inside the buffer works; a zero Device panics
// saying it was not opened (it said the driver allows 0 work groups).
func TestMatrixFieldsChecked(t *testing.T) {
	for _, borrowed := range []bool{false, true} {
		t.Run(fmt.Sprintf("borrowed=%v", borrowed), func(t *testing.T) {
			body := func(d *Device) {
				rng := rand.New(rand.NewPCG(11, 12))
				x := cpu.Random(8, 4, rng)
				a, b, c := newMatrix(t, d, 8, 4), newMatrix(t, d, 4, 4), newMatrix(t, d, 8, 4)
				if err := a.Upload(x); err != nil {
					t.Fatal(err)
				}
				b.Upload(cpu.Random(4, 4, rng))
				if borrowed {
					for gl.GetError() != gl.NO_ERROR {
					}
				}
				a.Rows = 16
				conformance.MustPanic(t, "runs past the end of its buffer", func() { c.Gemm(blas.NoTrans, blas.NoTrans, 1, a, b, 0) })
				conformance.MustPanic(t, "runs past the end of its buffer", func() { a.Download(cpu.New(16, 4)) })
				conformance.MustPanic(t, "runs past the end of its buffer", func() { a.Upload(cpu.New(16, 4)) })
				a.Rows, a.Offset = 8, 8
				conformance.MustPanic(t, "runs past the end of its buffer", func() { c.Mul(a, b) })
				a.Offset, a.Stride = 0, 3
				conformance.MustPanic(t, "Stride at least Cols", func() { c.Mul(a, b) })
				if borrowed {
					if e := gl.GetError(); e != gl.NO_ERROR {
						t.Errorf("the host's GL error flag reads 0x%x after the refused calls", e)
					}
				}
				// A view of rows 2..5 of A, inside its buffer: correct.
				a.Stride, a.Offset, a.Rows = 4, 8, 4
				v := newMatrix(t, d, 4, 4)
				if err := v.Mul(a, b); err != nil {
					t.Fatal(err)
				}
				got, bb := cpu.New(4, 4), cpu.New(4, 4)
				v.Download(got)
				b.Download(bb)
				want := cpu.New(4, 4)
				cpu.Sgemm(want, blas32.General{Rows: 4, Cols: 4, Stride: 4, Data: x.Data[8:]}, bb)
				closeTo(t, "the view's product", got.Data, want.Data, 1e-5)
			}
			onDevice(t, borrowed, body)
		})
	}
	var zero Device
	for name, call := range map[string]func(){
		"Mul":            func() { zero.Mul(cpu.New(2, 2), cpu.New(2, 2), cpu.New(2, 2), nil) },
		"NewMatrix":      func() { zero.NewMatrix(2, 2) },
		"Fits":           func() { zero.tuning().Fits("fast") },
		"Scope":          func() { zero.Scope(func() error { return nil }) },
		"PrepareStaging": func() { zero.tuning().PrepareStaging() },
		"Release":        func() { zero.Release() },
		"WrapBuffer":     func() { zero.WrapBuffer(1, 0, 1, 1, 1) },
		"KernelFor":      func() { zero.tuning().KernelFor(2, 2, 2) },
		"Plan":           func() { zero.Plan(2, 2, 2, nil) },
		"Fence":          func() { zero.Fence() },
	} {
		t.Run("zero "+name, func(t *testing.T) { conformance.MustPanic(t, "not made by Open or NewDeviceFromCurrent", call) })
	}
}

// TestBatchedIgnoresMatrixShapes: a batched product reads its shapes from
// the Batch, as its doc says, whatever the Matrix fields say: a batch
// inside the buffer runs even where Rows×Cols at that Offset would not fit
// (Matrix.check refused it, a reviewer found); past the end it panics.
func TestBatchedIgnoresMatrixShapes(t *testing.T) {
	d := openDevice(t, BackendEGL)
	a, c := newMatrix(t, d, 8, 4), newMatrix(t, d, 8, 4)
	x := cpu.Random(8, 4, rand.New(rand.NewPCG(3, 4)))
	a.Upload(x)
	a.Offset, c.Offset = 16, 16 // rows 4..7: floats 16..31 of 32
	if err := d.MulBatched(c, a, a, Batch{Count: 1, M: 4, K: 4, N: 4}); err != nil {
		t.Fatal(err)
	}
	c.Offset, c.Rows = 16, 4
	got := cpu.New(4, 4)
	c.Download(got)
	sub := blas32.General{Rows: 4, Cols: 4, Stride: 4, Data: x.Data[16:]}
	want := cpu.New(4, 4)
	cpu.Sgemm(want, sub, sub)
	closeTo(t, "the batch", got.Data, want.Data, 1e-4)
	a.Offset = 20
	conformance.MustPanic(t, "runs past the end of its buffer", func() { d.MulBatched(c, a, a, Batch{Count: 1, M: 4, K: 4, N: 4}) })
}

// TestBorrowedLoader checks that NewDeviceFromCurrent loads go-gl through
// the host's GetProcAddress when given one, and loads nothing with
// GLLoaded.
func TestBorrowedLoader(t *testing.T) {
	defer hostEGL(t)()
	var lookups int
	var looked []string
	hostLoader := func(name string) unsafe.Pointer {
		lookups++
		looked = append(looked, name)
		return hostProc(name)
	}
	d, err := NewDeviceFromCurrent(&Options{GetProcAddress: hostLoader})
	if err != nil {
		t.Fatal(err)
	}
	d.Release()
	if lookups == 0 {
		t.Error("Options.GetProcAddress was not used")
	}
	lookups, looked = 0, nil
	d, err = NewDeviceFromCurrent(&Options{GetProcAddress: hostLoader, GLLoaded: true})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Release()
	// Only glmul's own entry point, none of go-gl's.
	if lookups > 1 || lookups == 1 && looked[0] != "glGetNamedBufferParameteri64v" {
		t.Errorf("with GLLoaded, %d functions were looked up: %v", lookups, looked)
	}
	m, err := d.NewMatrix(2, 2)
	if err != nil {
		t.Fatal(err)
	}
	m.Release()
}

// TestGemmBatchedEmpty: a batch of no products (an engine's empty scene)
// does nothing: nil, C as it was, a host's GL state untouched; it panicked
// ("Count ≥ 1 ... required", a new user's audit). A negative Count still
// panics.
func TestGemmBatchedEmpty(t *testing.T) {
	for _, borrowed := range []bool{false, true} {
		t.Run(fmt.Sprintf("borrowed=%v", borrowed), func(t *testing.T) {
			onDevice(t, borrowed, func(d *Device) {
				a, c := newMatrix(t, d, 4, 12), newMatrix(t, d, 4, 12)
				x := cpu.Random(4, 12, rand.New(rand.NewPCG(13, 14)))
				if err := c.Upload(x); err != nil {
					t.Fatal(err)
				}
				var before engineState
				if borrowed {
					setUpEngine(t)
					before = readEngineState()
				}
				bt := Batch{M: 3, K: 3, N: 3, LdA: 4, LdB: 4, LdC: 4, StrideA: 12, StrideB: 12, StrideC: 12}
				if err := d.GemmBatched(c, 2, a, a, 1, bt); err != nil {
					t.Fatalf("GemmBatched of no products: %v", err)
				}
				if err := d.MulBatched(c, a, a, bt); err != nil {
					t.Fatalf("MulBatched of no products: %v", err)
				}
				if borrowed {
					if after := readEngineState(); after != before {
						t.Errorf("the host's state changed: %+v, was %+v", after, before)
					}
				}
				got := cpu.New(4, 12)
				if err := c.Download(got); err != nil {
					t.Fatal(err)
				}
				closeTo(t, "C after an empty batch", got.Data, x.Data, 0)
				bt.Count = -1
				conformance.MustPanic(t, "Count", func() { d.GemmBatched(c, 1, a, a, 0, bt) })
			})
		})
	}
}

// TestGLLoadedWithoutInit runs, in a child process where go-gl was never
// loaded, README's engine snippet without the engine's gl.Init: a
// HeadlessContext and NewDeviceFromCurrent with Options.GLLoaded. It must
// fail with ErrNoContext saying so; the first GL call crashed the process
// with SIGSEGV inside cgo (a new user's audit).
func TestGLLoadedWithoutInit(t *testing.T) {
	if os.Getenv("GLMUL_TEST_CHILD") == "glloaded" {
		runtime.LockOSThread()
		h, err := NewHeadlessContext(0)
		if err != nil {
			fmt.Printf("nocontext=%v\n", err)
			return
		}
		defer h.Release()
		_, err = NewDeviceFromCurrent(&Options{GLLoaded: true})
		fmt.Printf("errnocontext=%v\nerror=%v\n", errors.Is(err, ErrNoContext), err)
		return
	}
	if runtime.GOOS == "windows" {
		t.Skip("no HeadlessContext: EGL is not part of Windows")
	}
	openDevice(t, BackendEGL) // a context must exist for the test to mean anything
	cmd := exec.Command(os.Args[0], "-test.run=^TestGLLoadedWithoutInit$")
	cmd.Env = append(os.Environ(), "GLMUL_TEST_CHILD=glloaded", "DISPLAY=", "WAYLAND_DISPLAY=")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("child: %v\n%s", err, out)
	}
	if !strings.Contains(string(out), "errnocontext=true") || !strings.Contains(string(out), "gl.Init") {
		t.Fatalf("child output does not show ErrNoContext naming gl.Init:\n%s", out)
	}
}
