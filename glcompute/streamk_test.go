package glcompute

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"gonum.org/v1/gonum/blas/blas32"

	"github.com/glmul/glmul/cpu"
	"github.com/glmul/glmul/internal/conformance"
	"github.com/glmul/glmul/validate"
)

// TestStreamK runs products on a device told it has 4 or 5
// multiprocessors, with 128×256 tiles (kernels that fill one, FillsSM)
// and K long enough (tuning.StreamKMinSteps), where the last wave is
// partly idle: tuning.UseStreamK takes stream-K where its model beats
// AutoSplitK's split. 5 tiles on 4: one shared, 32 steps a piece; 7 on 4:
// three shared, 96.75 steps a group of 129 a tile (K not a multiple of
// the step), so groups hold the end of one tile and the start of the
// next; 9 on 4: two waves of whole tiles first; tiles past the edges of
// C, moved back (SHIFT) whole or shared: 12 on 5 (700×300), 9 on 4
// (333×515, M not a multiple of 4), 6 on 5 (100×1300: fewer rows than a
// tile); 10 on 4, where a group starts on a tile's first step; 133 on 132
// with 128 steps, fewer than the groups, so that some shares are empty.
// The workspace is NaN from the start: a slot read but never written
// fails validation. 6 tiles on 4 split in 2 (the model's choice, 1.54 tile times
// against 1.55) and 3 tiles (under a wave) run plain. A transposed and
// natural; C validated against float64 after poisoning, under Measure
// (the runs and the pass after them) and as a plain Mul (its pass in
// bands: plain kernel); on OpenGL ES too.
func TestStreamK(t *testing.T) {
	d := openDevice(t, BackendEGL)
	type want struct {
		shape         conformance.Shape
		slots, shared int // multiprocessors; tiles shared, 0: none
	}
	cases := []want{
		{conformance.Shape{M: 640, K: 1024, N: 256}, 4, 1},
		{conformance.Shape{M: 896, K: 1029, N: 256}, 4, 3},
		{conformance.Shape{M: 384, K: 1024, N: 768}, 4, 1},
		{conformance.Shape{M: 700, K: 1030, N: 300}, 5, 2},
		{conformance.Shape{M: 333, K: 1024, N: 515}, 4, 1},
		{conformance.Shape{M: 100, K: 1031, N: 1300}, 5, 1},
		{conformance.Shape{M: 640, K: 1024, N: 512}, 4, 2},    // 10 on 4: a group starts on a tile's first step
		{conformance.Shape{M: 896, K: 1024, N: 4864}, 132, 1}, // 133 on 132: 128 steps for 132 groups, 4 shares empty
		{conformance.Shape{M: 256, K: 1024, N: 768}, 4, 0},
		{conformance.Shape{M: 384, K: 1024, N: 256}, 4, 0},
	}
	specs := []string{"fast:128x256x8_8x8_db", "fast:128x256x8_16x8_db_at", "fast:128x256x8_16x8_db_at_tex", "gles/fast:128x256x8_16x8_db_at"}
	if strings.Contains(d.info.Renderer, "softpipe") {
		// About 100× slower than llvmpipe (12 s a shape here): the case
		// with pieces in two tiles, on one backend.
		cases, specs = []want{cases[1], cases[3]}, specs[:2]
	}
	gles := openDevice(t, BackendGLES)
	for _, spec := range specs {
		d := d
		if s, ok := strings.CutPrefix(spec, "gles/"); ok {
			d, spec = gles, s
		}
		for _, c := range cases {
			if c.slots > 100 && (spec != specs[0] || strings.Contains(d.info.Renderer, "zink")) {
				continue // 9 GFLOP a product: one kernel on llvmpipe is enough (index arithmetic)
			}
			t.Run(fmt.Sprintf("%s/%s/%v", d.info.Backend, spec, c.shape), func(t *testing.T) {
				d.info.SMCount = c.slots
				for _, staged := range []bool{true, false} {
					if c.slots > 100 && !staged {
						continue // its pass runs in bands: no stream-K
					}
					conformance.Run(t, []conformance.Shape{c.shape}, func(cm, a, b blas32.General) error {
						tm, err := mulStaged(d, cm, a, b, MulOptions{Kernel: spec}, staged)
						want := c.shared
						if !staged && tm.Steps > 1 {
							want = 0
						}
						if err == nil && (tm.StreamKTiles != want || want > 0 && tm.StreamKGroups != c.slots) {
							t.Errorf("staged %v: stream-K tiles %d in %d groups, want %d in %d", staged, tm.StreamKTiles, tm.StreamKGroups, want, c.slots)
						}
						return err
					})
				}
			})
		}
	}
	// The workspace comes from the device's pool and goes back to it with
	// A, B and C: the same product again makes no new buffer.
	d.info.SMCount = 4
	pool := func() []glwBufferName { return poolNames(d) }
	rng := rand.New(rand.NewPCG(3, 4))
	a, b := cpu.Random(640, 1024, rng), cpu.Random(1024, 256, rng)
	var kept []glwBufferName
	for i := 0; i < 2; i++ {
		c := cpu.New(640, 256)
		tm, err := stagedMul(d, c, a, b, MulOptions{Kernel: specs[0]}, 1)
		if err != nil || tm.StreamKTiles != 1 {
			t.Fatalf("stream-K tiles %d (%v), want 1", tm.StreamKTiles, err)
		}
		if r := validate.CheckFull(a, b, c); !r.OK {
			t.Fatal(r.Err())
		}
		if i == 0 {
			kept = pool()
		}
	}
	if len(kept) != 4 || !sameSet(kept, pool()) {
		t.Errorf("pool after a stream-K product %v, after the same again %v: want A, B, C and the workspace, reused", kept, pool())
	}
}

// TestMaxGPUMemoryCountsWorkspace: MulOptions.MaxGPUMemory counts a K
// split's and stream-K's workspace beside A, B and C. Uncapped, the
// product splits (one group of 64×64 tiles, K long) or runs stream-K (5
// tiles on 4 multiprocessors); a cap with room for A, B and C alone runs
// it whole, unsplit and without stream-K; one with room for the workspace
// too runs it as uncapped. Each C is validated. An explicit split that the
// cap leaves no room for is refused with ErrTooLarge.
func TestMaxGPUMemoryCountsWorkspace(t *testing.T) {
	d := openDevice(t, BackendEGL)
	rng := rand.New(rand.NewPCG(81, 82))
	type tc struct {
		name    string
		kernel  string
		slots   int
		m, k, n int
	}
	for _, c := range []tc{
		{"split", "fast:64x64x8_4x4", 0, 64, 4096, 64},
		{"stream-K", "fast:128x256x8_8x8_db", 4, 640, 1024, 256},
	} {
		t.Run(c.name, func(t *testing.T) {
			d.info.SMCount = c.slots
			a, b := cpu.Random(c.m, c.k, rng), cpu.Random(c.k, c.n, rng)
			run := func(limit int64) Timings {
				t.Helper()
				cm := cpu.New(c.m, c.n)
				tm, err := mulStaged(d, cm, a, b, MulOptions{Kernel: c.kernel, MaxGPUMemory: limit}, true)
				if err != nil {
					t.Fatalf("cap %d: %v", limit, err)
				}
				if err := validate.CheckFull(a, b, cm).Err(); err != nil {
					t.Errorf("cap %d: %v", limit, err)
				}
				if tm.Panels != "" {
					t.Errorf("cap %d: in panels (%s)", limit, tm.Panels)
				}
				return tm
			}
			free := run(0)
			var work int64
			switch {
			case free.StreamKTiles > 0:
				work = 4 * 2 * int64(c.slots) * 128 * 256
			case free.Splits > 1:
				work = 4 * int64(free.Splits) * int64(c.m) * int64(c.n)
			default:
				t.Fatalf("uncapped: neither a split nor stream-K (%d slices)", free.Splits)
			}
			bytes := 4 * int64(c.m*c.k+c.k*c.n+c.m*c.n)
			if tm := run(bytes); tm.Splits != 1 || tm.StreamKTiles != 0 {
				t.Errorf("cap of A, B and C: %d slices, %d tiles shared; want neither", tm.Splits, tm.StreamKTiles)
			}
			if tm := run(bytes + work); tm.Splits != free.Splits || tm.StreamKTiles != free.StreamKTiles {
				t.Errorf("cap with room for %d bytes of workspace: %d slices, %d tiles shared; want %d and %d",
					work, tm.Splits, tm.StreamKTiles, free.Splits, free.StreamKTiles)
			}
		})
	}
	a, b := cpu.Random(64, 4096, rng), cpu.Random(4096, 64, rng)
	o := MulOptions{Kernel: "fast:64x64x8_4x4", SplitK: 4, MaxGPUMemory: 4 * (64*4096 + 4096*64 + 64*64)}
	if _, err := d.Mul(cpu.New(64, 64), a, b, &o); !errors.Is(err, ErrTooLarge) || !strings.Contains(err.Error(), "MaxGPUMemory") {
		t.Errorf("split in 4 with no room for its workspace: %v, want ErrTooLarge naming MaxGPUMemory", err)
	}
}
