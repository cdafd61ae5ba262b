package glcompute

import (
	"fmt"
	"strings"
	"testing"

	"gonum.org/v1/gonum/blas/blas32"

	"github.com/glmul/glmul/glcompute/tuning"
	"github.com/glmul/glmul/internal/conformance"
)

// TestMulStreamedPanels runs products over a lowered binding with a
// kernel that reads A transposed: Mul runs them as one streamed panel
// pass (unitstream.go), in panels of 16 columns and more (aloneMinCols
// lowered), bands of 64 rows and more (64 KiB staging buffers), the first
// two panels taken at once. Every element is checked against float64
// (conformance), Plan must name what Mul ran, the marked shapes must
// stream and the others not, and Arrived must cover each element of C
// once, in blocks of whole bands, with Progress counting to its total.
func TestMulStreamedPanels(t *testing.T) {
	const kern = "fast:64x64x8_8x4_db_at"
	d := openDeviceWith(t, &Options{Backend: BackendEGL, StagingBytes: 64 << 10})
	if d.tuning().Fits(kern) != nil {
		t.Skipf("%s does not fit %s", kern, d.Info().Renderer)
	}
	aloneMinCols = 16
	defer func() { aloneMinCols = 512 }()
	o := MulOptions{Kernel: kern, MaxBinding: 64 << 10}
	for _, sc := range []struct {
		conformance.Shape
		stream bool
	}{
		{conformance.Shape{M: 300, K: 77, N: 310}, true},   // 4 panels of 80, the first two at once
		{conformance.Shape{M: 1000, K: 61, N: 130}, true},  // 16 bands of 64 rows, the last 40
		{conformance.Shape{M: 257, K: 33, N: 700}, true},   // a band of 1 row
		{conformance.Shape{M: 2000, K: 1, N: 97}, true},    // K = 1
		{conformance.Shape{M: 100, K: 4000, N: 50}, false}, // a row of A over a staging buffer
	} {
		var arrived []int
		var done, total int
		o.Arrived = func(r0, c0, rows, cols int) { arrived = append(arrived, r0, c0, rows, cols) }
		o.Progress = func(d, n int) { done, total = d, n }
		conformance.Run(t, []conformance.Shape{sc.Shape}, func(c, a, b blas32.General) error {
			arrived, done, total = nil, 0, 0
			plan, err := d.Plan(a.Rows, a.Cols, b.Cols, &o)
			if err != nil {
				return err
			}
			tm, err := d.Mul(c, a, b, &o)
			if err != nil {
				return err
			}
			if plan.Kernel != tm.Kernel || plan.Panels != tm.Panels {
				return fmt.Errorf("Plan says %q in %q; Mul ran %q in %q", plan.Kernel, plan.Panels, tm.Kernel, tm.Panels)
			}
			if tm.Streamed != sc.stream || strings.Contains(tm.Panels, "streamed") != sc.stream {
				return fmt.Errorf("streamed %v (%q), want %v", tm.Streamed, tm.Panels, sc.stream)
			}
			if !sc.stream {
				return nil
			}
			if done == 0 || done != total || done != tm.Steps {
				return fmt.Errorf("Progress ended at %d of %d, %d steps", done, total, tm.Steps)
			}
			return coversOnce(arrived, c.Rows, c.Cols)
		})
	}
	// A Measure hook sees a product in panels and runs its first band.
	o.Arrived, o.Progress = nil, nil
	runs := 0
	o.Measure = func(s tuning.Stages) error {
		if !s.Panels() {
			return fmt.Errorf("stages of a streamed panel pass: Panels false")
		}
		runs++
		_, _, err := s.Run(false, nil)
		return err
	}
	conformance.Run(t, []conformance.Shape{{M: 300, K: 77, N: 310}}, func(c, a, b blas32.General) error {
		tm, err := d.Mul(c, a, b, &o)
		if err == nil && !tm.Streamed {
			err = fmt.Errorf("with a Measure hook: not streamed (%q)", tm.Panels)
		}
		return err
	})
	if runs != 2 {
		t.Errorf("the Measure hook ran %d times, want 2", runs)
	}
}

// coversOnce checks that blocks (r0, c0, rows, cols, in fours) cover an
// m×n matrix, each element once.
func coversOnce(blocks []int, m, n int) error {
	seen := make([]int, m*n)
	for i := 0; i < len(blocks); i += 4 {
		r0, c0, rows, cols := blocks[i], blocks[i+1], blocks[i+2], blocks[i+3]
		if r0 < 0 || c0 < 0 || r0+rows > m || c0+cols > n {
			return fmt.Errorf("block %v outside the %d×%d C", blocks[i:i+4], m, n)
		}
		for r := r0; r < r0+rows; r++ {
			for c := c0; c < c0+cols; c++ {
				seen[r*n+c]++
			}
		}
	}
	for i, s := range seen {
		if s != 1 {
			return fmt.Errorf("C[%d][%d] arrived %d times", i/n, i%n, s)
		}
	}
	return nil
}
