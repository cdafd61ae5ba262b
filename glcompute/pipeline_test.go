package glcompute

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"gonum.org/v1/gonum/blas/blas32"

	"github.com/glmul/glmul/cpu"
	"github.com/glmul/glmul/glcompute/tuning"
	"github.com/glmul/glmul/internal/conformance"
)

// TestPipelined checks the pipelined pass: row bands of C for a kernel
// with row offsets (bands that end inside a tile, a last band shorter than
// the others), one band for tiled32, split-K and a product under four
// tiles high; staging buffers of 8 KiB, so that a band moves in several
// chunks and a download queues more than two, and so that narrow
// products' bands shrink to fit them; a step a panel;
// persistent mapping and glMapBufferRange; with and without Stages, and
// the timings and progress each reports.
func TestPipelined(t *testing.T) {
	const kern = "fast:64x64x8_8x4" // 64-row tiles: M ≥ 256 runs in bands
	// Bands of ⌈M/4⌉ rows rounded up to 64; 128 at most for 1000×16×16,
	// whose 64-byte rows fill an 8 KiB staging buffer in 128.
	steps := map[int]int{300: 3, 256: 4, 517: 3, 255: 1, 1000: 8}
	shapes := []conformance.Shape{{M: 300, K: 77, N: 130}, {M: 256, K: 40, N: 64}, {M: 517, K: 9, N: 33}, {M: 255, K: 77, N: 130}, {M: 1000, K: 16, N: 16}}
	t.Setenv("DISPLAY", "")
	for _, persistent := range []bool{true, false} {
		d, err := Open(&Options{Backend: onPlatform(BackendEGL), StagingBytes: 8 << 10, NoPersistentMapping: !persistent})
		if err != nil {
			noGL(t, err.Error())
		}
		defer d.Release()
		for _, o := range []MulOptions{{Kernel: kern, Measure: func(tuning.Stages) error { return nil }}, {Kernel: kern}, {Kernel: "tiled32"}, {Kernel: kern, SplitK: 3, Measure: func(tuning.Stages) error { return nil }}} {
			t.Run(fmt.Sprintf("persistent=%v/%s/measure=%v/split=%d", persistent, o.Kernel, o.Measure != nil, o.SplitK), func(t *testing.T) {
				conformance.Run(t, shapes, func(c, a, b blas32.General) error {
					want := steps[a.Rows]
					if o.Kernel != kern || o.SplitK > 1 {
						want = 1
					}
					var calls, last [2]int
					o := o
					o.Progress = func(done, total int) { calls[0]++; last = [2]int{done, total} }
					tm, err := d.Mul(c, a, b, &o)
					if err != nil {
						return err
					}
					// Compute ≥ 0, not > 0: under Wine the Go clock moves in
					// steps of about a millisecond, and a band's dispatch
					// calls can read 0.
					if tm.Steps != want || tm.EndToEnd <= 0 || len(tm.Compute) != 1 || tm.Compute[0] < 0 || tm.Compute[0] > tm.EndToEnd || tm.UploadBytes == 0 || tm.ReadbackBytes == 0 {
						return fmt.Errorf("steps %d (want %d), timings %+v", tm.Steps, want, tm)
					}
					if calls[0] != want || last != [2]int{want, want} {
						return fmt.Errorf("%d progress calls ending %v, want %d ending at %d of %d", calls[0], last, want, want, want)
					}
					return nil
				})
			})
		}
		// Panels of 256 rows (16 KiB bindings), a step each.
		conformance.Run(t, []conformance.Shape{{M: 1000, K: 16, N: 16}}, func(c, a, b blas32.General) error {
			tm, err := d.Mul(c, a, b, &MulOptions{Kernel: kern, MaxBinding: 16 << 10})
			if err == nil && (tm.Steps != 4 || !strings.HasPrefix(tm.Panels, "4×1 panels of 256×16")) {
				return fmt.Errorf("panels %q in %d steps, want 4×1 of 256×16 in 4", tm.Panels, tm.Steps)
			}
			return err
		})
	}
}

// TestESWideRows: on OpenGL ES (no glGetBufferSubData) a resident
// matrix's rows wider than a staging buffer go through it in pieces, both
// ways (an upload over directUploadBytes is staged), a view's stride gaps
// kept; the download was refused.
func TestESWideRows(t *testing.T) {
	if _, impossible := platformBackend(BackendGLES); impossible != "" {
		t.Skip(impossible)
	}
	t.Setenv("DISPLAY", "")
	d, err := Open(&Options{Backend: BackendGLES, StagingBytes: 4096})
	if err != nil {
		noGL(t, err.Error())
	}
	defer d.Release()
	const cols = 140001 // 560 KB a row, 1.1 MB in all
	m, err := d.NewMatrix(2, cols)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Release()
	want := cpu.Random(2, cols, rand.New(rand.NewPCG(3, 3)))
	inner, err := d.WrapBuffer(m.Buffer(), 1, 2, cols-3, cols) // all but a column before and two after
	if err != nil {
		t.Fatal(err)
	}
	defer inner.Release()
	got := cpu.New(2, cols)
	if err := errors.Join(m.Upload(want), inner.Upload(cpu.New(2, cols-3)), m.Download(got)); err != nil {
		t.Fatalf("wide rows on ES: %v", err)
	}
	for i := range 2 {
		for j := range cols {
			w := want.Data[i*cols+j]
			if j >= 1 && j < cols-2 {
				w = 0
			}
			if g := got.Data[i*cols+j]; g != w {
				t.Fatalf("wide rows on ES: element (%d, %d) is %v, want %v", i, j, g, w)
			}
		}
	}
}

// TestBandRows: bands of about a quarter of the tile rows, cut to the
// staging buffer, and to whole waves where the GPU's wave is known.
func TestBandRows(t *testing.T) {
	const mib = 1 << 20
	for _, c := range []struct {
		name                           string
		m, tile, ld, staging, waveRows int
		want                           int
	}{
		{"4096 unknown wave", 4096, 128, 4096, 32 * mib, 0, 1024},
		{"4097 unknown wave: 9 tile rows", 4097, 128, 4100, 32 * mib, 0, 1152},
		{"4097 on 132 SMs: 7 rows of 17 groups", 4097, 128, 4100, 32 * mib, 7, 896},
		{"4096 on 132 SMs: 8 rows of 16 groups", 4096, 128, 4096, 32 * mib, 8, 1024},
		{"2048: a band under a wave stays", 2048, 128, 2048, 32 * mib, 16, 512},
		{"8192: staging holds 8 rows, 2 waves of 4", 8192, 128, 8192, 32 * mib, 4, 1024},
		{"8192: staging holds 8 rows, waves of 3", 8192, 128, 8192, 32 * mib, 3, 768},
		{"under 4 tiles: one band", 300, 128, 300, 32 * mib, 0, 300},
	} {
		if got := bandRows(c.m, c.tile, 4, c.ld, c.staging, c.waveRows); got != c.want {
			t.Errorf("%s: bandRows = %d, want %d", c.name, got, c.want)
		}
	}
}

// TestWaveSplitBands: a product whose K split only fills its last wave
// (here 144 groups of 128×256 on a GPU of known multiprocessors) runs
// stream-K in its place when run whole (tuning.UseStreamK; split where
// that declines) and runs its pipelined bands unsplit; the results are
// right both ways. Only where the driver reports its multiprocessors
// (NVIDIA): elsewhere nothing is split past a wave.
func TestWaveSplitBands(t *testing.T) {
	d := openDevice(t, BackendEGL)
	const kern = "fast:128x256x8_8x8_db"
	if d.Info().SMCount == 0 || d.tuning().Fits(kern) != nil {
		t.Skipf("%s reports no multiprocessor count (or lacks the shared memory for %s)", d.Info().Renderer, kern)
	}
	// Rows of tiles enough for a wave and 10% more: 132 SMs take 18 rows
	// of 8 groups (2048 columns).
	rowsOfTiles := d.Info().SMCount/8 + 2
	conformance.Run(t, []conformance.Shape{{M: 128*rowsOfTiles - 5, K: 2048, N: 2048}}, func(c, a, b blas32.General) error {
		tm, err := stagedMul(d, c, a, b, MulOptions{Kernel: kern}, 2)
		if err == nil && (tm.Splits < 2 && tm.StreamKTiles == 0 || tm.Steps < 2) {
			return fmt.Errorf("%d slices of K, %d tiles stream-K and %d pipelined steps, want a split or stream-K kernel stage and unsplit bands", tm.Splits, tm.StreamKTiles, tm.Steps)
		}
		return err
	})
	// Mapped host matrices only, without the stages: one step, the whole
	// product split or stream-K (its workspace made: the step runs it, not
	// bands), the same C as unsplit bands from Go slices give.
	m := 128*rowsOfTiles - 5
	rng := rand.New(rand.NewPCG(5, 6))
	a, b := cpu.Random(m, 2048, rng), cpu.Random(2048, 2048, rng)
	plain := cpu.New(m, 2048)
	if _, err := d.Mul(plain, a, b, &MulOptions{Kernel: kern}); err != nil {
		t.Fatal(err)
	}
	hm := make([]*hostMatrix, 3)
	for i, g := range []blas32.General{a, b, plain} {
		var err error
		if hm[i], err = d.newHostMatrix(g.Rows, g.Cols); err != nil {
			t.Fatal(err)
		}
		defer hm[i].Release()
		if i < 2 {
			for r := 0; r < g.Rows; r++ {
				copy(hm[i].Data[r*hm[i].Stride:], g.Data[r*g.Stride:r*g.Stride+g.Cols])
			}
		}
	}
	tm, err := d.Mul(hm[2].General, hm[0].General, hm[1].General, &MulOptions{Kernel: kern})
	if err != nil || tm.Steps != 1 || tm.Splits < 2 && tm.StreamKTiles == 0 {
		t.Fatalf("mapped %d×2048×2048: %d steps, %d slices, %d tiles stream-K (%v), want 1 step split or stream-K", m, tm.Steps, tm.Splits, tm.StreamKTiles, err)
	}
	for r := 0; r < m; r++ {
		for j := 0; j < 2048; j++ {
			if g, w := hm[2].Data[r*hm[2].Stride+j], plain.Data[r*plain.Stride+j]; math.Abs(float64(g-w)) > 1e-3*(1+math.Abs(float64(w))) {
				t.Fatalf("mapped C[%d][%d] = %v, unsplit bands gave %v", r, j, g, w)
			}
		}
	}
	// Without the stages, only the unsplit bands run (and no workspace is
	// made for a split nothing runs).
	conformance.Run(t, []conformance.Shape{{M: 128*rowsOfTiles - 5, K: 2048, N: 2048}}, func(c, a, b blas32.General) error {
		tm, err := d.Mul(c, a, b, &MulOptions{Kernel: kern})
		if err == nil && (tm.Splits != 1 || tm.StreamKTiles != 0 || tm.Steps < 2) {
			return fmt.Errorf("%d slices of K and %d tiles stream-K reported and %d pipelined steps, want 1, none and bands", tm.Splits, tm.StreamKTiles, tm.Steps)
		}
		return err
	})
}

// TestMergedSpan: the pipelined pass's compute time from per-step GPU
// timestamps. Where steps overlap on the GPU, a sum of per-step times
// counts the shared time twice and can exceed the pass; merged, the
// intervals never exceed the span from the first start to the last end.
func TestMergedSpan(t *testing.T) {
	ms := func(a, b int) [2]uint64 { return [2]uint64{uint64(a) * 1e6, uint64(b) * 1e6} }
	for _, c := range []struct {
		name  string
		spans [][2]uint64
		want  time.Duration
	}{
		{"apart", [][2]uint64{ms(0, 10), ms(20, 30)}, 20 * time.Millisecond},
		{"each starting halfway through the last", [][2]uint64{ms(0, 100), ms(50, 150), ms(100, 200), ms(150, 250)}, 250 * time.Millisecond},
		{"out of order, one inside another", [][2]uint64{ms(40, 60), ms(0, 100), ms(90, 120)}, 120 * time.Millisecond},
		{"touching", [][2]uint64{ms(0, 10), ms(10, 20)}, 20 * time.Millisecond},
		{"a backwards one ignored", [][2]uint64{ms(30, 5), ms(0, 10)}, 10 * time.Millisecond},
		{"none", nil, 0},
	} {
		got := mergedSpan(c.spans)
		if got != c.want {
			t.Errorf("%s: %v, want %v", c.name, got, c.want)
		}
		var first, last uint64 = ^uint64(0), 0
		for _, s := range c.spans {
			if s[1] >= s[0] {
				first, last = min(first, s[0]), max(last, s[1])
			}
		}
		if len(c.spans) > 0 && got > time.Duration(last-first) {
			t.Errorf("%s: %v exceeds the span from the first start to the last end, %v", c.name, got, time.Duration(last-first))
		}
	}
}

// TestStreamed: a product whose kernel reads A transposed runs streamed
// (hostProduct.streamed: A's bands transposed from host memory and C's
// copied into it beside the kernel), from mapped host matrices and from Go
// slices through the staging buffers (padded rows, and rows end to end
// that the host copies as blocks), in 3 and 4 bands, with and without the
// stages, on shapes past whole tiles and bands (K unsplit: a product split
// to fill the GPU runs in one step). It does not stream where bands are
// larger than a staging buffer, without persistent mappings, or with a
// mapped C but Go-slice A; those products must come out right too. An
// element no band copies out stays NaN (mulStaged poisons C after the
// stages' readback), and conformance compares every element against
// float64 within K's bound. On the GPU, bands of a wave of the default
// kernel's groups stream without streamAnyBands.
func TestStreamed(t *testing.T) {
	const kern = "fast:64x64x8_8x4_db_at"
	d := openDevice(t, BackendEGL)
	if d.tuning().Fits(kern) != nil {
		t.Skipf("%s does not fit %s", kern, d.Info().Renderer)
	}
	small := []conformance.Shape{{M: 4*64 + 37, K: 301, N: 203}, {M: 9 * 64, K: 64, N: 128}, {M: 257, K: 5, N: 66}}
	type streamCase struct {
		name     string
		o        *Options // nil: d
		kern     string
		anyBands bool   // streamAnyBands: bands under a wave stream too
		ends     string // "mapped" (A, B, C), "slices", "mapped C"
		stream   bool   // streams where the kernel reads A transposed (on NVIDIA small N runs A as it is)
		shapes   []conformance.Shape
	}
	cases := []streamCase{
		{"mapped", nil, kern, true, "mapped", true, small},
		{"slices", nil, kern, true, "slices", true, small},
		{"slices in 4 bands", &Options{StagingBytes: 64 << 10}, kern, true, "slices", true, []conformance.Shape{{M: 581, K: 61, N: 60}}},
		{"bands over a staging buffer", &Options{StagingBytes: 8 << 10}, kern, true, "slices", false, small[:1]},
		{"no persistent mapping", &Options{NoPersistentMapping: true}, kern, true, "slices", false, small[:1]},
		{"mapped C only", nil, kern, true, "mapped C", false, small},
	}
	if d.Info().SMCount > 0 { // bands of a wave of the default kernel's groups, too slow for llvmpipe
		big := []conformance.Shape{{M: 13 * 256, K: 300, N: 4096}} // 4 bands, no edge strips
		cases = append(cases, streamCase{"GPU mapped", nil, "fast:256x128x16_16x8_db_at", false, "mapped", true, big},
			streamCase{"GPU slices", nil, "fast:256x128x16_16x8_db_at", false, "slices", true, big})
	}
	defer func() { streamAnyBands = false }()
	for _, sc := range cases {
		dev := d
		if sc.o != nil {
			sc.o.Backend = onPlatform(BackendEGL)
			dev = openDeviceWith(t, sc.o)
		}
		streamAnyBands = sc.anyBands
		for _, staged := range []bool{false, true} {
			mul := func(c, a, b blas32.General) error {
				tm, err := mulStaged(dev, c, a, b, MulOptions{Kernel: sc.kern, SplitK: 1}, staged)
				if want := sc.stream && strings.HasSuffix(tm.Kernel, "_at"); err == nil && tm.Streamed != want {
					return fmt.Errorf("%s in %d steps: streamed %v, want %v", tm.Kernel, tm.Steps, tm.Streamed, want)
				}
				return err
			}
			t.Run(fmt.Sprintf("%s/staged=%v", sc.name, staged), func(t *testing.T) {
				conformance.Run(t, sc.shapes, func(c, a, b blas32.General) error {
					switch sc.ends {
					case "mapped":
						return viaHostMatrices(dev, c, a, b, mul)
					case "mapped C":
						return viaHostMatrices(dev, c, a, b, func(hc, _, _ blas32.General) error { return mul(hc, a, b) })
					}
					return mul(c, a, b)
				})
			})
		}
	}
	t.Run("cancelled", func(t *testing.T) {
		streamAnyBands = true
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		rng := rand.New(rand.NewPCG(3, 4))
		a, b, c := cpu.Random(293, 301, rng), cpu.Random(301, 203, rng), cpu.New(293, 203)
		if _, err := d.Mul(c, a, b, &MulOptions{Kernel: kern, SplitK: 1, Context: ctx}); !errors.Is(err, context.Canceled) {
			t.Errorf("Mul with a cancelled context: %v, want context.Canceled", err)
		}
	})
}

// viaHostMatrices runs mul on copies of a and b in host matrices, into a
// host matrix for c, and copies the result (and any NaN left in it) to c.
func viaHostMatrices(d *Device, c, a, b blas32.General, mul func(hc, ha, hb blas32.General) error) error {
	var hm [3]*hostMatrix
	for i, g := range []blas32.General{a, b, c} {
		var err error
		if hm[i], err = d.newHostMatrix(g.Rows, g.Cols); err != nil {
			return err
		}
		defer hm[i].Release()
		for r := 0; r < g.Rows; r++ {
			copy(hm[i].Data[r*hm[i].Stride:(r+1)*hm[i].Stride], g.Data[r*g.Stride:r*g.Stride+g.Cols])
		}
	}
	if err := mul(hm[2].General, hm[0].General, hm[1].General); err != nil {
		return err
	}
	for r := 0; r < c.Rows; r++ {
		copy(c.Data[r*c.Stride:r*c.Stride+c.Cols], hm[2].Data[r*hm[2].Stride:])
	}
	return nil
}
