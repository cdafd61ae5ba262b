package glcompute

import (
	"fmt"
	"strings"
	"testing"

	"gonum.org/v1/gonum/blas/blas32"

	"github.com/glmul/glmul/internal/conformance"
)

// TestStreamK runs products on a device told it has 4 multiprocessors,
// with 128×256 tiles (kernels that fill one, FillsSM) and K long enough
// (tuning.StreamKMinSteps), where the last wave is partly idle:
// tuning.UseStreamK takes stream-K where its model beats AutoSplitK's
// split. 5 tiles: one shared by 4 groups, 32 steps a piece; 7: three
// shared, 96.75 steps a group of 129 a tile (K not a multiple of the
// step), so groups hold the end of one tile and the start of the next;
// 9: two waves of whole tiles first. 6 tiles split in 2 (the model's
// choice, 1.54 tile times against 1.55) and 3 tiles (under a wave) run
// plain. A transposed and natural; C validated against float64 after
// poisoning, under Measure (the runs and the pass after them) and as a
// plain Mul (its pass in bands: plain kernel); on OpenGL ES too.
func TestStreamK(t *testing.T) {
	d := openDevice(t, BackendEGL)
	d.info.SMCount = 4
	type want struct {
		shape  conformance.Shape
		shared int // tiles shared, 0: none
	}
	cases := []want{
		{conformance.Shape{M: 640, K: 1024, N: 256}, 1},
		{conformance.Shape{M: 896, K: 1029, N: 256}, 3},
		{conformance.Shape{M: 384, K: 1024, N: 768}, 1},
		{conformance.Shape{M: 256, K: 1024, N: 768}, 0},
		{conformance.Shape{M: 384, K: 1024, N: 256}, 0},
	}
	specs := []string{"fast:128x256x8_8x8_db", "fast:128x256x8_16x8_db_at", "gles/fast:128x256x8_16x8_db_at"}
	if strings.Contains(d.info.Renderer, "softpipe") {
		// About 100× slower than llvmpipe (12 s a shape here): the case
		// with pieces in two tiles, on one backend.
		cases, specs = cases[1:2], specs[:2]
	}
	gles := openDevice(t, BackendGLES)
	gles.info.SMCount = 4
	for _, spec := range specs {
		d := d
		if s, ok := strings.CutPrefix(spec, "gles/"); ok {
			d, spec = gles, s
		}
		for _, c := range cases {
			t.Run(fmt.Sprintf("%s/%s/%v", d.info.Backend, spec, c.shape), func(t *testing.T) {
				for _, staged := range []bool{true, false} {
					conformance.Run(t, []conformance.Shape{c.shape}, func(cm, a, b blas32.General) error {
						tm, err := mulStaged(d, cm, a, b, MulOptions{Kernel: spec}, staged)
						want := c.shared
						if !staged && tm.Steps > 1 {
							want = 0
						}
						if err == nil && (tm.StreamKTiles != want || want > 0 && tm.StreamKGroups != 4) {
							t.Errorf("staged %v: stream-K tiles %d in %d groups, want %d in 4", staged, tm.StreamKTiles, tm.StreamKGroups, want)
						}
						return err
					})
				}
			})
		}
	}
}
