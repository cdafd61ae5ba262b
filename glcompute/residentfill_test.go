package glcompute

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"gonum.org/v1/gonum/blas"
	"gonum.org/v1/gonum/blas/blas32"

	"github.com/glmul/glmul/cpu"
	"github.com/glmul/glmul/internal/conformance"
	"github.com/glmul/glmul/validate"
)

// TestResidentFill runs resident products (Matrix.Mul) on a device told
// it has a few multiprocessors and a default kernel of 128×256 tiles,
// which fill one (tuning.FillsSM), in shapes where the tiles leave some
// idle: stream-K (7 tiles on 4, 3 shared, K not a multiple of the step;
// 8 on 5 with A transposed; 9 on 4 with 333 rows, tiles moved back at the
// edge), K split past a wave (6 tiles on 4, in 2) and under one (2 tiles
// on 4, in 2; 8 on 5 with A transposed and K too short for stream-K, in
// 3), through storage buffers and buffer textures. Each runs on a fresh
// device: the workspace it makes must be the size its fill needs
// (NaN-poisoned when made, so a piece or slice summed but never written
// fails), and C, poisoned before each run, must match the float64
// reference: alone, again (the workspace reused), twice in a Scope, and
// after a wider product (which grows the workspace of a split: the sum
// must count the slices from the bound range, not the buffer); one that
// needs no workspace leaves it. A paced device (Windows) runs them all
// unsplit, with no workspace. One stream-K case and one split run on
// OpenGL ES too.
func TestResidentFill(t *testing.T) {
	type tc struct {
		kernel  string
		slots   int
		m, k, n int
		want    int64 // workspace bytes: 2·slots tiles (stream-K) or splits·m·n floats
	}
	tile := int64(4 * 128 * 256)
	cases := []tc{
		{"fast:128x256x8_8x8_db", 4, 896, 1028, 256, 2 * 4 * tile},
		{"fast:128x256x8_16x8_db_at", 5, 128, 1024, 2048, 2 * 5 * tile},
		{"fast:128x256x8_8x8_db_tex", 4, 333, 1024, 768, 2 * 4 * tile},
		{"fast:128x256x8_8x8_db", 4, 256, 1024, 768, 4 * 2 * 256 * 768},
		{"fast:128x256x8_8x8_db_tex", 4, 128, 2048, 512, 4 * 2 * 128 * 512},
		{"fast:128x256x8_16x8_db_at_tex", 5, 128, 768, 2048, 4 * 3 * 128 * 2048},
	}
	if strings.Contains(openDevice(t, BackendEGL).info.Renderer, "softpipe") {
		cases = []tc{cases[0], cases[5]} // about 100× slower than llvmpipe: stream-K and a split
	}
	type run struct {
		backend Backend
		tc
	}
	var runs []run
	for i, c := range cases {
		runs = append(runs, run{BackendEGL, c})
		if i == 0 || i == 3 {
			runs = append(runs, run{BackendGLES, c}) // stream-K and a split on OpenGL ES
		}
	}
	rng := rand.New(rand.NewPCG(71, 72))
	for _, r := range runs {
		c := r.tc
		t.Run(fmt.Sprintf("%s/%s/%d/%dx%dx%d", r.backend, c.kernel, c.slots, c.m, c.k, c.n), func(t *testing.T) {
			d := openDevice(t, r.backend)
			d.info.DefaultKernel, d.info.NaturalKernel, d.info.NaturalWideKernel, d.info.SmallGridKernel, d.info.ClassKernels = c.kernel, "fast:128x256x8_8x8_db", "", "", nil
			d.info.SMCount = c.slots
			d.residentTextures = true // the _tex cases through textures, small as they are
			a, b := conformance.RandomPadded(c.m, c.k, 0, rng), conformance.RandomPadded(c.k, c.n, 0, rng)
			ga, gb, gc := resident(t, d, a, 4), resident(t, d, b, 8), resident(t, d, cpu.New(c.m, c.n), 12)
			ref, bound := conformance.GemmRef(blas.NoTrans, blas.NoTrans, 1, a, b, 0, blas32.General{Rows: c.m, Cols: c.n, Stride: c.n})
			poisoned := cpu.New(c.m, c.n)
			for i := range poisoned.Data {
				poisoned.Data[i] = float32(math.NaN())
			}
			run := func(what string, mul func() error) {
				t.Helper()
				if err := gc.Upload(poisoned); err != nil {
					t.Fatal(err)
				}
				if err := mul(); err != nil {
					t.Fatalf("%s: %v", what, err)
				}
				got := cpu.New(c.m, c.n)
				if err := gc.Download(got); err != nil {
					t.Fatal(err)
				}
				for i := range ref {
					if e := math.Abs(float64(got.Data[i]) - ref[i]); !(e <= bound[i]) {
						t.Fatalf("%s: C[%d][%d] = %v, want %v", what, i/c.n, i%c.n, got.Data[i], ref[i])
					}
				}
			}
			mul := func() error { return gc.Mul(ga, gb) }
			run("alone", mul)
			want := c.want
			if maxDispatchTime(d.opts, d.borrowed) > 0 {
				want = 0 // paced (Windows): each dispatch budgeted unsplit
			}
			if d.workBytes != want {
				t.Fatalf("workspace of %d bytes, want %d", d.workBytes, want)
			}
			run("again", mul)
			run("in a Scope, twice", func() error { return d.Scope(func() error { return errors.Join(mul(), mul()) }) })

			// Twice as many columns: a larger workspace for a split, the
			// same for stream-K (two tiles a multiprocessor).
			b2 := conformance.RandomPadded(c.k, 2*c.n, 0, rng)
			gb2, gc2 := resident(t, d, b2, 0), resident(t, d, cpu.New(c.m, 2*c.n), 0)
			if err := gc2.Mul(ga, gb2); err != nil {
				t.Fatal(err)
			}
			got := cpu.New(c.m, 2*c.n)
			gc2.Download(got)
			ref2, bound2 := conformance.GemmRef(blas.NoTrans, blas.NoTrans, 1, a, b2, 0, blas32.General{Rows: c.m, Cols: 2 * c.n, Stride: 2 * c.n})
			for i := range ref2 {
				if e := math.Abs(float64(got.Data[i]) - ref2[i]); !(e <= bound2[i]) {
					t.Fatalf("twice as wide: C[%d] = %v, want %v", i, got.Data[i], ref2[i])
				}
			}
			if d.workBytes < want {
				t.Errorf("workspace shrank to %d bytes from %d", d.workBytes, want)
			}
			run("after the wider one", mul) // a workspace larger than it needs
			// A product that fills the device (slots whole tiles) needs none.
			before := d.workBytes
			d.info.SMCount = 1
			run("on one multiprocessor", mul)
			if d.workBytes != before {
				t.Errorf("a product without a split changed the workspace: %d bytes, then %d", before, d.workBytes)
			}
		})
	}
}

// TestResidentTexturesBySize: with a default that reads through buffer
// textures, a resident product under tuning.ResidentTexturesMin runs the
// same configuration through storage buffers (compiling only that), and
// the result is right.
func TestResidentTexturesBySize(t *testing.T) {
	const tex, ssbo = "fast:64x64x8_8x4_db_tex", "fast:64x64x8_8x4_db"
	d := openDevice(t, BackendEGL)
	d.info.DefaultKernel, d.info.NaturalKernel, d.info.NaturalWideKernel, d.info.SmallGridKernel, d.info.ClassKernels = tex, tex, "", "", nil
	rng := rand.New(rand.NewPCG(91, 92))
	a, b := cpu.Random(70, 36, rng), cpu.Random(36, 132, rng)
	if err := validate.CheckFull(a, b, residentProduct(t, d, a, b)).Err(); err != nil {
		t.Error(err)
	}
	d.call(func() {
		_, ranTex := d.programs[tex]
		_, ranSSBO := d.programs[ssbo]
		if ranTex || !ranSSBO {
			t.Errorf("a 70×36×132 resident product compiled %s: %v, %s: %v; want only the second", tex, ranTex, ssbo, ranSSBO)
		}
	})
}
