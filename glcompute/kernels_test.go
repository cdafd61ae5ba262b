package glcompute

import (
	"errors"
	"math"
	"testing"

	"github.com/glmul/glmul/cpu"
	"github.com/glmul/glmul/shaders"
	"gonum.org/v1/gonum/blas/blas32"
)

// TestMisspeltUniformPanics: a uniform name the kernel does not declare
// panics (it would otherwise be set nowhere), while a declared one that
// the compiler may drop is accepted.
func TestMisspeltUniformPanics(t *testing.T) {
	d := openDevice(t, BackendEGL)
	d.call(func() {
		p, err := d.programOf(shaders.GEMM())
		if err != nil {
			t.Fatal(err)
		}
		p.prog.Use()
		mustPanic(t, "has no uniform lda2", func() { p.setUint("lda2", 1) })
		mustPanic(t, "has no uniform Alpha", func() { p.setFloat("Alpha", 1) })
		p.setUint("lda", 3)
	})
	if !declaresUniform("uniform uint first; // a comment\n", "first") || declaresUniform("uniform uint firsts;", "first") {
		t.Error("declaresUniform misreads a declaration")
	}
}

func TestKernelChoiceAPI(t *testing.T) {
	if err := CheckKernel("fast:128x128x8_8x8"); err != nil {
		t.Error(err)
	}
	if err := CheckKernel("fastest"); err == nil {
		t.Error("CheckKernel(fastest): no error")
	}
	if len(FastCandidates()) < 10 {
		t.Errorf("%d fast candidates", len(FastCandidates()))
	}
	d := openDevice(t, BackendEGL)
	if err := d.Fits(d.DefaultKernel()); err != nil {
		t.Errorf("the default kernel does not fit: %v", err)
	}
	huge := "fast:256x256x32_16x16" // 2·256·32·4 bytes of shared memory at least
	k, err := shaders.Lookup(huge)
	if err != nil || k.SharedBytes <= d.Info().MaxSharedMemory {
		t.Fatalf("%s should parse and need more shared memory than %d bytes: %v, %d", huge, d.Info().MaxSharedMemory, err, k.SharedBytes)
	}
	if err := d.Fits(huge); !errors.Is(err, ErrUnsupported) {
		t.Errorf("Fits(%s) = %v, want ErrUnsupported", huge, err)
	}
}

// TestPoison checks fill.comp's NaN poison: every word of the range, and
// nothing after it.
func TestPoison(t *testing.T) {
	d := openDevice(t, BackendEGL)
	m := newMatrix(t, d, 1, 1000)
	m.Upload(blas32.General{Rows: 1, Cols: 1000, Stride: 1000, Data: make([]float32, 1000)})
	d.call(func() {
		if err := d.poison(m.buf, 4*999); err != nil {
			t.Fatal(err)
		}
	})
	got := cpu.New(1, 1000)
	m.Download(got)
	for i, v := range got.Data {
		if (i < 999) != math.IsNaN(float64(v)) {
			t.Fatalf("word %d = %v after poisoning 999 words", i, v)
		}
	}
}

// TestPlanRefusesOverflowingSizes: dimensions whose byte counts overflow
// int64 are refused, not planned as one piece.
func TestPlanRefusesOverflowingSizes(t *testing.T) {
	d := openDevice(t, BackendEGL)
	for _, s := range [][3]int{{1 << 31, 1 << 31, 1 << 31}, {1<<31 + 1, 1, 1}} {
		if plan, err := d.Plan(s[0], s[1], s[2], nil); !errors.Is(err, ErrTooLarge) {
			t.Errorf("Plan(%v) = %q, %v; want ErrTooLarge", s, plan, err)
		}
	}
}

// TestTexturesDetached: after products with the cpu kernel (host and
// resident), its buffer textures view no buffer, so that they keep none
// alive after the product's buffers are released.
func TestTexturesDetached(t *testing.T) {
	d := openDevice(t, BackendEGL)
	a, b := cpu.New(40, 32), cpu.New(32, 20)
	d.info.DefaultKernel, d.info.SmallGridKernel, d.info.ClassKernels = "cpu", "", nil
	ga, _ := d.NewMatrix(40, 32)
	gb, _ := d.NewMatrix(32, 20)
	gc, err := d.NewMatrix(40, 20)
	if err != nil {
		t.Fatal(err)
	}
	for _, step := range []struct {
		name string
		run  func() error
	}{
		{"Mul of host matrices", func() error { _, err := d.Mul(cpu.New(40, 20), a, b, nil); return err }},
		{"Matrix.Mul", func() error { return gc.Mul(ga, gb) }},
	} {
		if err := step.run(); err != nil {
			t.Fatal(err)
		}
		d.call(func() {
			for i, tex := range d.texs {
				if tex == 0 {
					t.Errorf("after %s: texture %d never made", step.name, i)
				} else if buf := tex.ViewedBuffer(uint32(i)); buf != 0 {
					t.Errorf("after %s: texture %d still views buffer %d", step.name, i, buf)
				}
			}
		})
	}
}
