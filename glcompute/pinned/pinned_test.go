package pinned

import (
	"errors"
	"math"
	"testing"

	"gonum.org/v1/gonum/blas/blas32"

	"github.com/glmul/glmul/glcompute"
	"github.com/glmul/glmul/internal/conformance"
	"github.com/glmul/glmul/internal/gltest"
)

// TestConformance runs the conformance shapes with A, B and C in pinned
// matrices (their rows padded, C poisoned with NaN before each product),
// so that Mul takes its mapped paths: the GPU's copies, and the kernel
// writing C straight into mapped memory.
func TestConformance(t *testing.T) {
	d := gltest.Open(t)
	conformance.Run(t, nil, func(c, a, b blas32.General) error {
		pa, pb, pc := alloc(t, d, a.Rows, a.Cols), alloc(t, d, b.Rows, b.Cols), alloc(t, d, c.Rows, c.Cols)
		copyRows(pa.General, a)
		copyRows(pb.General, b)
		for i := range pc.Data {
			pc.Data[i] = float32(math.NaN())
		}
		if _, err := d.Mul(pc.General, pa.General, pb.General, nil); err != nil {
			return err
		}
		copyRows(c, pc.General)
		return nil
	})
}

// TestReleaseAndES: Release is idempotent and empties Data, also after
// the Device's Release; OpenGL ES, which has no persistent mappings here,
// refuses with ErrUnsupported.
func TestReleaseAndES(t *testing.T) {
	d := gltest.Open(t)
	m := alloc(t, d, 3, 5)
	if m.Stride != 8 || len(m.Data) != 24 {
		t.Errorf("a 3×5 pinned matrix: stride %d, %d floats; want 8 and 24", m.Stride, len(m.Data))
	}
	m.Release()
	m.Release()
	if m.Data != nil {
		t.Error("Data kept after Release")
	}
	late := alloc(t, d, 2, 2)
	d.Release()
	late.Release()
	conformance.MustPanic(t, "dimension below 1", func() { New(gltest.Open(t), 0, 4) })
	if _, err := New(gltest.OpenES(t), 2, 2); !errors.Is(err, glcompute.ErrUnsupported) {
		t.Errorf("New on OpenGL ES: %v, want ErrUnsupported", err)
	}
}

func alloc(t *testing.T, d *glcompute.Device, rows, cols int) *Matrix {
	t.Helper()
	m, err := New(d, rows, cols)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(m.Release)
	return m
}

func copyRows(dst, src blas32.General) {
	for i := range src.Rows {
		copy(dst.Data[i*dst.Stride:i*dst.Stride+src.Cols], src.Data[i*src.Stride:])
	}
}
