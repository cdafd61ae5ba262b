package glcompute

import (
	"fmt"
	"math"
	"strings"
	"testing"

	"gonum.org/v1/gonum/blas/blas32"

	"github.com/glmul/glmul/glcompute/tuning"
	"github.com/glmul/glmul/internal/conformance"
	"github.com/glmul/glmul/validate"
)

// TestTransposeBandRows: the bands of a whole product whose kernel reads
// A transposed add no wave to the product's and run at least
// minBandWaves each, on the H100's 132 multiprocessors with 256×128
// tiles and on small counts.
func TestTransposeBandRows(t *testing.T) {
	cases := []struct {
		m, tile, groupsX, slots int
		want                    int
	}{
		{4096, 256, 32, 132, 2048}, // 16 rows of 32 tiles, 3.88 waves whole: 2 bands of 1.94 (4 of one wave each are too short)
		{8192, 256, 64, 132, 2048}, // 15.5 waves whole, 4 bands of 3.88
		{6144, 256, 48, 132, 2048}, // 9 waves whole: 4 bands would take 12, 3 take 9
		{2048, 256, 16, 132, 0},    // one wave: nothing beside it
		{5120, 256, 16, 132, 0},    // 20 rows of 16 (3 waves whole): 2 bands take 4, more are under 2 waves each
		{1024, 128, 2, 4, 512},     // 16 tiles on 4: 2 bands of 2 waves
		{1024, 128, 2, 3, 384},     // 16 tiles on 3 (6 waves): 3 bands of 6, 6 and 4 tiles
		{1000, 128, 2, 3, 384},     // rows past the last whole tile count as a tile row
		{778, 128, 2, 3, 512},      // 3 bands would leave 10 rows last: 2 of 512 and 266
		{2048, 128, 2, 4, 512},     // 32 tiles on 4: 4 bands of 2 waves
		{256, 128, 2, 4, 0},        // 4 tiles on 4: one wave
	}
	for _, c := range cases {
		if got := transposeBandRows(c.m, c.tile, c.groupsX, c.slots); got != c.want {
			t.Errorf("transposeBandRows(%d, %d, %d, %d) = %d, want %d", c.m, c.tile, c.groupsX, c.slots, got, c.want)
		}
	}
	// Whatever it returns, the bands' waves add up to no more than the
	// whole product's, and there are 2 to transposeBands of them.
	for _, slots := range []int{3, 4, 5, 7, 132} {
		for _, groupsX := range []int{1, 2, 3, 16, 32, 48, 96} {
			for m := 128; m <= 12288; m += 128 * 7 {
				rows := transposeBandRows(m, 128, groupsX, slots)
				if rows == 0 {
					continue
				}
				tileRows, per := (m+127)/128, rows/128
				waves := func(r int) int { return (r*groupsX + slots - 1) / slots }
				sum, bands := 0, 0
				for r := 0; r < tileRows; r += per {
					sum += waves(min(per, tileRows-r))
					bands++
				}
				if last := m - (bands-1)*rows; rows%128 != 0 || bands < 2 || bands > transposeBands || sum > waves(tileRows) || waves(per) < minBandWaves || last < 128 {
					t.Errorf("m %d, %d tiles across, %d slots: bands of %d rows: %d bands, %d waves against %d whole", m, groupsX, slots, rows, bands, sum, waves(tileRows))
				}
			}
		}
	}
}

// TestTransposeBands runs whole products (under Measure, Stages.Run) of a
// kernel that reads A transposed on a device told it has 3 or 4
// multiprocessors, where the product runs in bands with each band's
// transpose after the first beside the kernel on the band before
// (planBands): 4 bands and 2 bands of 4 tile rows, 3 bands with a shorter
// last one, rows past the last whole tile, M not a multiple of 4 (the
// transpose's zero columns), and a product of one wave, which runs whole.
// Each band reports its dispatch (Stages.Dispatches); A's transpose and C
// are NaN on the GPU before each run, and C is validated against float64
// after each run and after the pass; on OpenGL ES too. A band transposed
// from the wrong rows of A, or not at all, fails validation; a missing
// barrier only where dispatches overlap (a GPU, not llvmpipe). A paced
// device (Windows) runs the products whole. Where the driver's buffer
// textures view too little for the product (softpipe), the kernels
// through them run in panels instead, which this checks only for C.
func TestTransposeBands(t *testing.T) {
	d := openDevice(t, BackendEGL)
	gles := openDevice(t, BackendGLES)
	cases := []struct {
		shape conformance.Shape
		slots int
		bands int // 1: whole
	}{
		{conformance.Shape{M: 2048, K: 64, N: 512}, 4, 4},
		{conformance.Shape{M: 1024, K: 160, N: 512}, 4, 2},
		{conformance.Shape{M: 1024, K: 96, N: 512}, 3, 3},
		{conformance.Shape{M: 1000, K: 72, N: 508}, 3, 3},
		{conformance.Shape{M: 778, K: 72, N: 508}, 3, 2}, // 3 bands would leave 10 rows last; transposed columns up to 780
		{conformance.Shape{M: 256, K: 64, N: 512}, 4, 1},
	}
	specs := []string{"fast:128x256x8_16x8_db_at", "fast:128x256x8_16x8_db_at_tex", "gles/fast:128x256x8_16x8_db_at"}
	if strings.Contains(d.info.Renderer, "softpipe") {
		// About 100× slower than llvmpipe (37 s for all of them): 3 and
		// 2 bands with a short last one, M not a multiple of 4, on one
		// backend (through buffer textures it runs in panels).
		cases, specs = cases[3:5], specs[:1]
	}
	for _, spec := range specs {
		d := d
		if s, ok := strings.CutPrefix(spec, "gles/"); ok {
			d, spec = gles, s
		}
		for _, c := range cases {
			t.Run(fmt.Sprintf("%s/%s/%v", d.info.Backend, spec, c.shape), func(t *testing.T) {
				saved := d.info.SMCount
				d.info.SMCount = c.slots
				defer func() { d.info.SMCount = saved }()
				want := c.bands
				if maxDispatchTime(d.opts, d.borrowed) > 0 {
					want = 1 // paced (Windows): no bands
				}
				conformance.Run(t, []conformance.Shape{c.shape}, func(cm, a, b blas32.General) error {
					var dispatches, reported int
					panels := false
					o := MulOptions{Kernel: spec, SplitK: 1, Measure: func(s tuning.Stages) error {
						if _, _, err := s.Upload(); err != nil {
							return err
						}
						if panels = s.Panels(); panels {
							return nil // validated as the pass's C below
						}
						dispatches = s.Dispatches()
						h := s.(*stages).h
						for i := 0; i < 2; i++ {
							// A's transpose and C NaN before each run: a band's
							// kernel that reads its transpose before it is
							// written, or an element left unwritten, fails.
							if err := d.poison(h.bufT, 4*h.k*h.ldt); err != nil {
								return err
							}
							if err := d.poison(h.bufC, 4*h.m*h.ldc); err != nil {
								return err
							}
							if _, _, err := s.Run(i == 0, func() { reported++ }); err != nil {
								return err
							}
							if _, _, err := s.ReadBack(); err != nil {
								return err
							}
							if r := validate.CheckFull(a, b, cm); !r.OK {
								return fmt.Errorf("run %d: %v", i+1, r.Err())
							}
						}
						for r := 0; r < cm.Rows; r++ { // the pass after the runs must write every element again
							for j := 0; j < cm.Cols; j++ {
								cm.Data[r*cm.Stride+j] = float32(math.NaN())
							}
						}
						return nil
					}}
					if _, err := d.Mul(cm, a, b, &o); err != nil {
						return err
					}
					if panels {
						// softpipe's buffer textures view less than these
						// products' matrices (Device.texBlock), so that its
						// products through them run in column panels,
						// which do not band.
						if !strings.HasSuffix(spec, "_tex") {
							t.Errorf("%s ran in panels", spec)
						}
						t.Logf("%s ran in panels on %s: bands not checked", spec, d.info.Renderer)
						return nil
					}
					if dispatches != want || reported != 2*want {
						t.Errorf("%d dispatches, reported %d times in 2 runs; want %d bands", dispatches, reported, want)
					}
					return nil
				})
			})
		}
	}
}
