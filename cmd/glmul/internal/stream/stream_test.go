package stream

import (
	"context"
	"errors"
	"math"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/glmul/glmul/cmd/glmul/internal/gltest"

	"gonum.org/v1/gonum/blas/blas32"

	"github.com/glmul/glmul/cpu"
	"github.com/glmul/glmul/glcompute"
	"github.com/glmul/glmul/validate"
)

// memReader reads rows of an in-memory matrix, failing at row failAt (-1:
// never) as a truncated file would.
type memReader struct {
	m      blas32.General
	failAt int
	calls  int
}

func (r *memReader) Rows() int { return r.m.Rows }
func (r *memReader) Cols() int { return r.m.Cols }
func (r *memReader) ReadRows(dst blas32.General, r0 int) error {
	r.calls++
	if dst.Cols != r.m.Cols || r0+dst.Rows > r.m.Rows {
		panic("memReader: bad block")
	}
	if r.failAt >= 0 && r0+dst.Rows > r.failAt {
		return errTruncated
	}
	for i := 0; i < dst.Rows; i++ {
		copy(dst.Data[i*dst.Stride:i*dst.Stride+dst.Cols], r.m.Data[(r0+i)*r.m.Stride:])
	}
	return nil
}

var errTruncated = errors.New("the file ended early")

// memWriter collects the rows written, failing after failAfter rows (-1:
// never).
type memWriter struct {
	rows      [][]float32
	failAfter int
}

func (w *memWriter) WriteRows(m blas32.General) error {
	if w.failAfter >= 0 && len(w.rows)+m.Rows > w.failAfter {
		return errors.New("disk full")
	}
	for i := 0; i < m.Rows; i++ {
		w.rows = append(w.rows, append([]float32(nil), m.Data[i*m.Stride:i*m.Stride+m.Cols]...))
	}
	return nil
}

// TestProduct streams products whose panels straddle every boundary: one
// panel, a last panel of one row, k and n off multiples of 4 (padding),
// one row, one column; each C against float64 with γ_K tolerances, every
// row written once, in order, and validated.
func TestProduct(t *testing.T) {
	d := gltest.Open(t)
	rng := rand.New(rand.NewPCG(3, 4))
	for _, c := range []struct {
		m, k, n    int
		panelBytes int64
	}{
		{1, 1, 1, 0}, {70, 33, 17, 0}, {129, 5, 3, 4 * 64 * (8 + 4)}, {65, 64, 64, 4 * 64 * 128}, {300, 130, 1, 4 * 100 * (132 + 4)}, {7, 1, 300, 1},
	} {
		a, b := cpu.Random(c.m, c.k, rng), cpu.Random(c.k, c.n, rng)
		w := &memWriter{failAfter: -1}
		r, err := Product(d, &memReader{m: a, failAt: -1}, &memReader{m: b, failAt: -1}, w, Options{PanelBytes: c.panelBytes, Validate: validate.Freivalds, Seed: 1, Kernel: []string{"", "tiled32", "fast:64x64x8_4x4"}[c.m%3]})
		if err != nil {
			t.Fatalf("%d×%d×%d: %v", c.m, c.k, c.n, err)
		}
		if len(w.rows) != c.m || !r.Validation.OK || r.Validation.Mode != validate.Freivalds {
			t.Fatalf("%d×%d×%d: %d rows written, validation %v", c.m, c.k, c.n, len(w.rows), r.Validation)
		}
		ref := cpu.Reference(a, b, false)
		mag := cpu.Reference(a, b, true)
		g := float64(c.k) * math.Ldexp(1, -24) * 1.01
		for i, row := range w.rows {
			for j, v := range row {
				if want := ref.Data[i*ref.Stride+j]; math.Abs(float64(v)-want) > g*mag.Data[i*mag.Stride+j]+1e-30 {
					t.Fatalf("%d×%d×%d in %d panels of %d: C[%d][%d] = %v, want %v", c.m, c.k, c.n, r.Panels, r.PanelRows, i, j, v, want)
				}
			}
		}
		if c.panelBytes > 0 && c.m > 64 && r.Panels < 2 {
			t.Errorf("%d×%d×%d: %d panel(s) of %d rows for %d panel bytes", c.m, c.k, c.n, r.Panels, r.PanelRows, c.panelBytes)
		}
	}
}

// TestProductStops: a read error, a write error and a cancelled context
// each stop the product with that error, whatever stage it reached, and
// no row is written past the failure.
func TestProductStops(t *testing.T) {
	d := gltest.Open(t)
	rng := rand.New(rand.NewPCG(5, 6))
	a, b := cpu.Random(300, 40, rng), cpu.Random(40, 30, rng)
	o := Options{PanelBytes: 4 * 64 * (40 + 32)} // 64-row panels: 5 of them
	_, err := Product(d, &memReader{m: a, failAt: 200}, &memReader{m: b, failAt: -1}, &memWriter{failAfter: -1}, o)
	if !errors.Is(err, errTruncated) {
		t.Errorf("truncated A: %v", err)
	}
	w := &memWriter{failAfter: 100}
	if _, err := Product(d, &memReader{m: a, failAt: -1}, &memReader{m: b, failAt: -1}, w, o); err == nil || len(w.rows) > 100 {
		t.Errorf("disk full after 100 rows: %v, %d rows written", err, len(w.rows))
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	o.Context = ctx
	if _, err := Product(d, &memReader{m: a, failAt: -1}, &memReader{m: b, failAt: -1}, &memWriter{failAfter: -1}, o); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled: %v", err)
	}
	if _, err := Product(d, &memReader{m: a, failAt: -1}, &memReader{m: b, failAt: 10}, &memWriter{failAfter: -1}, Options{}); !errors.Is(err, errTruncated) {
		t.Errorf("truncated B: %v", err)
	}
}

// TestNonFiniteIsCheckedInFull: a NaN in A's rows sends its panel to the
// full check, which accepts the NaN it propagates into C.
func TestNonFiniteIsCheckedInFull(t *testing.T) {
	d := gltest.Open(t)
	rng := rand.New(rand.NewPCG(7, 8))
	a, b := cpu.Random(200, 16, rng), cpu.Random(16, 8, rng)
	a.Data[150*a.Stride+3] = float32(math.NaN())
	w := &memWriter{failAfter: -1}
	r, err := Product(d, &memReader{m: a, failAt: -1}, &memReader{m: b, failAt: -1}, w, Options{PanelBytes: 4 * 64 * (16 + 8), Validate: validate.Freivalds})
	if err != nil || !r.Validation.OK {
		t.Fatalf("%v %v", err, r.Validation)
	}
	if v := w.rows[150][0]; !math.IsNaN(float64(v)) {
		t.Errorf("C[150][0] = %v, want NaN", v)
	}
}

// TestBTooLarge: a B over one storage block fails the product with
// ErrTooLarge (no hang while the reader waits), on a device whose block
// is at most 256 MiB (llvmpipe: 128 MiB).
func TestBTooLarge(t *testing.T) {
	d := gltest.Open(t)
	limit := d.Info().MaxSSBOBlockSize
	if limit > 256<<20 {
		t.Skipf("a storage block of %d MiB: B would take too much memory here", limit>>20)
	}
	k := int(math.Sqrt(float64(limit/4))) + 64 // k×k floats: over the block
	rng := rand.New(rand.NewPCG(9, 9))
	a, b := cpu.Random(300, k, rng), cpu.Random(k, k, rng)
	done := make(chan error, 1)
	go func() {
		_, err := Product(d, &memReader{m: a, failAt: -1}, &memReader{m: b, failAt: -1}, &memWriter{failAfter: -1},
			Options{PanelBytes: int64(4 * 64 * (2*k + 8)), Validate: validate.None})
		done <- err
	}()
	select {
	case err := <-done:
		if !errors.Is(err, glcompute.ErrTooLarge) {
			t.Errorf("B of %d×%d over a %d-byte block: %v, want ErrTooLarge", k, k, limit, err)
		}
	case <-time.After(60 * time.Second):
		t.Fatal("no return within 60 s: the pipeline hangs")
	}
}
