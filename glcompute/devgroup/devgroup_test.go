package devgroup

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"gonum.org/v1/gonum/blas/blas32"

	"github.com/glmul/glmul/cpu"
	"github.com/glmul/glmul/glcompute"
	"github.com/glmul/glmul/glcompute/tuning"
	"github.com/glmul/glmul/internal/conformance"
	"github.com/glmul/glmul/internal/gltest"
	"github.com/glmul/glmul/validate"
)

// openGroup opens two Devices on EGL (two contexts of one Mesa device
// here) and groups them, with column panels as narrow as 16 columns so
// that small products are shared out in several.
func openGroup(t *testing.T) *Group {
	t.Helper()
	g := New(gltest.Open(t), gltest.Open(t))
	g.minCols = 16
	return g
}

// groupShapes straddle the panels' and the kernels' tiles; 300 columns
// make several column panels, the last one narrower.
var groupShapes = append([]conformance.Shape{{M: 300, K: 77, N: 310}, {M: 257, K: 33, N: 700}, {M: 129, K: 130, N: 65}, {M: 1100, K: 40, N: 70}}, conformance.Shapes...)

// TestGroupConformance runs the conformance shapes over a group of two
// devices: as they fit, in K panels and with A streamed (MaxBinding and
// MaxGPUMemory lowered), and checks that every panel was computed once and
// both devices took some of a product of several panels.
func TestGroupConformance(t *testing.T) {
	g := openGroup(t)
	for _, lim := range []struct {
		name            string
		binding, memory int64
		m, k            int    // the shape whose plan says
		want            string // this
	}{
		{"fit", 0, 0, 300, 77, "A kept"},
		{"kpanels", 32 << 10, 0, 129, 130, "K in 2 panels"},
		{"streamed", 0, 96 << 10, 300, 77, "A streamed"},
	} {
		t.Run(lim.name, func(t *testing.T) {
			o := &glcompute.MulOptions{Kernel: "fast:64x64x8_8x4", MaxBinding: lim.binding, MaxGPUMemory: lim.memory}
			conformance.Run(t, groupShapes, func(c, a, b blas32.General) error {
				gt, err := g.Mul(c, a, b, o)
				if err != nil {
					return err
				}
				total := 0
				for _, sh := range gt.Devices {
					total += sh.Panels
					if sh.Err != nil {
						t.Errorf("%d×%d×%d: a device failed: %v", a.Rows, a.Cols, b.Cols, sh.Err)
					}
				}
				if plan := gt.Devices[0].Timings.Panels; a.Rows == lim.m && a.Cols == lim.k && !strings.Contains(plan, lim.want) {
					t.Errorf("%d×%d×%d: plan %q, want %q", a.Rows, a.Cols, b.Cols, plan, lim.want)
				}
				if total != gt.Panels {
					t.Errorf("%d×%d×%d: the devices computed %d panels of %d", a.Rows, a.Cols, b.Cols, total, gt.Panels)
				}
				return nil
			})
		})
	}
}

// streamKernel reads A transposed, so that a group's devices run their
// column panels as one streamed pass each (glcompute's unitstream.go).
const streamKernel = "fast:64x64x8_8x4_db_at"

// openStreamGroup groups two devices whose staging buffers hold 64 KiB,
// so that small products stream in bands of a tile's rows or a few, with
// column panels as narrow as 16 columns.
func openStreamGroup(t *testing.T) *Group {
	t.Helper()
	o := glcompute.Options{StagingBytes: 64 << 10}
	g := New(gltest.OpenWith(t, o), gltest.OpenWith(t, o))
	g.minCols = 16
	return g
}

// TestGroupStreamed runs shapes over a group of two devices streaming
// their column panels: A's bands transposed beside the first panel's
// kernels and kept, the next panel's B brought up in pieces, bands of C
// copied out beside the next band's kernel; bands of 64 rows and more,
// the last one short, panels whose last is narrower, and K to 4000 (a
// row of A over a staging buffer: those run as panel products). Every
// product must be right; the shapes marked must stream on both devices,
// and the others must not.
func TestGroupStreamed(t *testing.T) {
	g := openStreamGroup(t)
	for _, sc := range []struct {
		m, k, n int
		stream  bool
	}{
		{300, 77, 310, true},    // 2 bands of 192 rows, 8 panels of 40 (the last 30)
		{1000, 250, 300, true},  // 16 bands of 64 rows, pieces of 16 rows of B
		{257, 33, 700, true},    // a band of 1 row at the end
		{65, 1, 97, true},       // K = 1
		{129, 130, 65, true},    // panels under a tile's width
		{100, 4000, 50, false},  // a row of A over a staging buffer
		{64, 3000, 2000, false}, // and of B's panel
	} {
		for _, pad := range []int{0, 3} {
			c, a, b := groupOperands(sc.m, sc.k, sc.n, uint64(sc.m+pad))
			if pad > 0 {
				c, a, b = padded(c, pad), padded(a, pad), padded(b, pad)
			}
			gt, err := g.Mul(c, a, b, &glcompute.MulOptions{Kernel: streamKernel})
			if err != nil {
				t.Fatalf("%d×%d×%d: %v", sc.m, sc.k, sc.n, err)
			}
			checkGroupProduct(t, c, a, b)
			for r := range c.Rows {
				for _, v := range c.Data[r*c.Stride+c.Cols : min(len(c.Data), (r+1)*c.Stride)] {
					if !math.IsNaN(float64(v)) {
						t.Fatalf("%d×%d×%d: row %d's padding written: %v", sc.m, sc.k, sc.n, r, v)
					}
				}
			}
			for i, sh := range gt.Devices {
				if sh.Err != nil {
					t.Errorf("%d×%d×%d: device %d failed: %v", sc.m, sc.k, sc.n, i+1, sh.Err)
				}
				if sh.Panels > 0 && sh.Timings.Streamed != sc.stream {
					t.Errorf("%d×%d×%d: device %d streamed %v (%q), want %v", sc.m, sc.k, sc.n, i+1, sh.Timings.Streamed, sh.Timings.Panels, sc.stream)
				}
			}
			if gt.Devices[0].Panels == 0 || gt.Devices[1].Panels == 0 {
				t.Errorf("%d×%d×%d: shares %d and %d of %d panels: want both devices to take some", sc.m, sc.k, sc.n, gt.Devices[0].Panels, gt.Devices[1].Panels, gt.Panels)
			}
		}
	}
}

// padded copies m into a matrix whose rows are pad elements longer (the
// padding NaN, which no product may read into C).
func padded(m blas32.General, pad int) blas32.General {
	out := blas32.General{Rows: m.Rows, Cols: m.Cols, Stride: m.Cols + pad, Data: make([]float32, m.Rows*(m.Cols+pad))}
	for i := range out.Data {
		out.Data[i] = float32(math.NaN())
	}
	for r := range m.Rows {
		copy(out.Data[r*out.Stride:r*out.Stride+m.Cols], m.Data[r*m.Stride:r*m.Stride+m.Cols])
	}
	return out
}

// TestGroupSharesFollowSpeed slows one device down (each of its panels
// waits 250 ms as it is taken, longer than a panel takes on zink under
// load): the other takes most of the panels.
func TestGroupSharesFollowSpeed(t *testing.T) {
	g := openGroup(t)
	g.fault = func(dev, panel int) error {
		if dev == 0 {
			time.Sleep(250 * time.Millisecond)
		}
		return nil
	}
	c, a, b := groupOperands(256, 64, 512, 1)
	gt, err := g.Mul(c, a, b, nil)
	if err != nil {
		t.Fatal(err)
	}
	checkGroupProduct(t, c, a, b)
	slow, fast := gt.Devices[0].Panels, gt.Devices[1].Panels
	if gt.Panels != 8 || slow+fast != 8 || fast <= slow {
		t.Errorf("panels: %d; the slowed device took %d, the other %d: want the other to take more", gt.Panels, slow, fast)
	}
}

// TestGroupDeviceFails makes the device that takes the product's third
// panel fail (which one depends on the threads' timing): its unfinished
// panels run on the other, C is right, and the shares say so. With every
// device failing, Mul fails and names each. Once with panel products,
// once with streamed passes.
func TestGroupDeviceFails(t *testing.T) {
	for _, streamed := range []bool{false, true} {
		t.Run(fmt.Sprintf("streamed=%v", streamed), func(t *testing.T) {
			var o *glcompute.MulOptions
			open := openGroup
			if streamed {
				open, o = openStreamGroup, &glcompute.MulOptions{Kernel: streamKernel}
			}
			g := open(t)
			lost := errors.New("context lost (test)")
			var mu sync.Mutex
			taken, faulty := 0, -1
			g.fault = func(dev, panel int) error { // the third panel taken fails, whichever device took it
				mu.Lock()
				defer mu.Unlock()
				if taken++; taken == 3 {
					faulty = dev
					return lost
				}
				return nil
			}
			c, a, b := groupOperands(200, 90, 520, 2)
			gt, err := g.Mul(c, a, b, o)
			if err != nil {
				t.Fatal(err)
			}
			checkGroupProduct(t, c, a, b)
			if faulty < 0 {
				t.Fatalf("%d panels taken: none failed", taken)
			}
			other := 1 - faulty
			if !errors.Is(gt.Devices[faulty].Err, lost) || gt.Devices[other].Err != nil {
				t.Errorf("device errors: %v, %v; want device %d's lost, the other's none", gt.Devices[0].Err, gt.Devices[1].Err, faulty+1)
			}
			if gt.Devices[other].Reruns == 0 || gt.Devices[0].Panels+gt.Devices[1].Panels != gt.Panels {
				t.Errorf("shares %+v, %+v of %d panels: want device %d to rerun device %d's", gt.Devices[0], gt.Devices[1], gt.Panels, other+1, faulty+1)
			}
			if gt.Devices[other].Timings.Streamed != streamed {
				t.Errorf("device %d streamed %v, want %v", other+1, gt.Devices[other].Timings.Streamed, streamed)
			}

			g.fault = func(dev, panel int) error { return lost }
			c, a, b = groupOperands(64, 16, 200, 3)
			_, err = g.Mul(c, a, b, o)
			if !errors.Is(err, lost) || !strings.Contains(err.Error(), "device 1") || !strings.Contains(err.Error(), "device 2") {
				t.Errorf("every device failing: %v", err)
			}
		})
	}
}

// TestGroupOfOneIsMul: a group of one device computes what its Mul does,
// and refuses what a panel product cannot take.
func TestGroupOfOneIsMul(t *testing.T) {
	d := gltest.Open(t)
	g := New(d)
	c, a, b := groupOperands(333, 200, 1100, 4)
	gt, err := g.Mul(c, a, b, nil)
	if err != nil {
		t.Fatal(err)
	}
	checkGroupProduct(t, c, a, b)
	if gt.Devices[0].Panels != gt.Panels || gt.Devices[0].Flop != 2*333*200*1100 {
		t.Errorf("share %+v of %d panels", gt.Devices[0], gt.Panels)
	}
	for name, o := range map[string]*glcompute.MulOptions{
		"SplitK 2": {SplitK: 2},
		"Measure":  {Measure: func(tuning.Stages) error { return nil }},
		"Arrived":  {Arrived: func(r0, c0, rows, cols int) {}},
	} {
		if _, err := g.Mul(c, a, b, o); !errors.Is(err, glcompute.ErrUnsupported) {
			t.Errorf("%s: %v, want glcompute.ErrUnsupported", name, err)
		}
	}
	g.Release() // New's devices stay open
	if _, err := d.Mul(c, a, b, nil); err != nil {
		t.Errorf("Mul after the group's Release: %v", err)
	}
}

// groupOperands returns seeded random A (m×k) and B (k×n) and a C
// poisoned with NaN.
func groupOperands(m, k, n int, seed uint64) (c, a, b blas32.General) {
	rng := rand.New(rand.NewPCG(seed, 7))
	c = cpu.New(m, n)
	for i := range c.Data {
		c.Data[i] = float32(math.NaN())
	}
	return c, cpu.Random(m, k, rng), cpu.Random(k, n, rng)
}

// checkGroupProduct checks C = A·B element by element (validate's full
// check, float64 reference).
func checkGroupProduct(t *testing.T, c, a, b blas32.General) {
	t.Helper()
	if r := validate.CheckFull(a, b, c); !r.OK {
		t.Errorf("%d×%d×%d: %s", a.Rows, a.Cols, b.Cols, r)
	}
}

// TestRunClaims: a device's first claim takes two panels where the run
// has enough for every device's two and two more and the device takes
// their width; later claims, reruns and a device that takes one panel's
// width get one; every panel is handed out once.
func TestRunClaims(t *testing.T) {
	g := &Group{devs: make([]*glcompute.Device, 2), minCols: 16}
	type claim struct{ c0, cols int }
	take := func(r *run, dev, widest int) (claim, bool) {
		c0, cols, landed, _, ok := r.claimer(dev)(widest)
		if ok {
			landed()
		}
		return claim{c0, cols}, ok
	}
	r := g.newRun(1000, nil) // 8 panels of 128 columns, the last 104
	if r.panels != 8 || r.cols != 128 || !r.doubles || r.widest() != 256 {
		t.Fatalf("run of %d panels of %d, doubles %v, widest %d", r.panels, r.cols, r.doubles, r.widest())
	}
	var got []claim
	for _, dw := range [][2]int{{0, 256}, {1, 128}, {1, 256}, {0, 256}, {0, 256}, {1, 256}, {0, 256}} {
		c, ok := take(r, dw[0], dw[1])
		if !ok {
			t.Fatalf("claim %d: none left", len(got)+1)
		}
		got = append(got, c)
	}
	want := []claim{{0, 256}, {256, 128}, {384, 128}, {512, 128}, {640, 128}, {768, 128}, {896, 104}}
	if !slices.Equal(got, want) {
		t.Errorf("claims %v, want %v", got, want)
	}
	if _, ok := take(r, 0, 256); ok || r.left() != 0 {
		t.Errorf("a claim after the last panel, or %d panels left", r.left())
	}
	if g.devs = make([]*glcompute.Device, 4); g.newRun(150, nil).doubles { // 8 panels of 20
		t.Error("doubles in a run of 8 panels over 4 devices")
	}
	g.devs = g.devs[:2]
	r = g.newRun(1000, nil)
	take(r, 0, 256)
	if _, _, _, _, ok := r.claimer(0)(256); !ok { // panel 2, lost with device 1
		t.Fatal("no second claim")
	}
	r.requeue(0)
	if c, _ := take(r, 1, 256); c != (claim{256, 128}) || r.reruns[1] != 1 {
		t.Errorf("device 2's first claim after device 1 failed: %v, reruns %d; want the rerun panel alone", c, r.reruns[1])
	}
}

// TestGroupEndToEndCoversDevices: a group's EndToEnd runs from before any
// device starts its panels to after the last ends, so it is at least
// each device's busy time. It was stamped on the caller's goroutine after
// the devices were released to work, so a caller scheduled late (two
// cores, llvmpipe computing on them) measured a few hundred nanoseconds
// for a product of a millisecond. 200 products, or as many as 2 s hold
// past 20.
func TestGroupEndToEndCoversDevices(t *testing.T) {
	g := openGroup(t)
	c, a, b := groupOperands(64, 64, 64, 4)
	t0 := time.Now()
	for i := 0; i < 200 && (i < 20 || time.Since(t0) < 2*time.Second); i++ { // softpipe takes 0.2 s a product
		gt, err := g.Mul(c, a, b, nil)
		if err != nil {
			t.Fatal(err)
		}
		for j, sh := range gt.Devices {
			if sh.Timings.EndToEnd > gt.EndToEnd {
				t.Fatalf("product %d: the group's end to end %v, device %d busy %v", i, gt.EndToEnd, j+1, sh.Timings.EndToEnd)
			}
		}
	}
	checkGroupProduct(t, c, a, b)
}

// TestOpenRelease opens a group of two contexts on EGL device 1 (the
// first the host lists), multiplies over it and releases it, the two
// devices at once: both are released (a Device's use after Release
// panics), and a second Release is a no-op.
func TestOpenRelease(t *testing.T) {
	if len(Devices()) == 0 {
		t.Skip("EGL cannot enumerate devices here")
	}
	g, err := Open([]int{1, 1}, nil)
	if err != nil {
		t.Fatal(err)
	}
	c, a, b := groupOperands(100, 30, 70, 5)
	if _, err := g.Mul(c, a, b, nil); err != nil {
		t.Fatal(err)
	}
	checkGroupProduct(t, c, a, b)
	g.Release()
	g.Release()
	for _, d := range g.Devices() {
		conformance.MustPanic(t, "released", func() { d.Mul(c, a, b, nil) })
	}
}

// TestGroupMulReady gives MulReady A and B still wrong (NaN) and C
// written: ready makes them, after 200 ms. C must be the product of what
// ready made (no device read A or B, or wrote C, before it returned), and
// EndToEnd must leave the wait out. An empty product calls ready too,
// before it writes C's zeros.
func TestGroupMulReady(t *testing.T) {
	g := openGroup(t)
	c, a, b := groupOperands(300, 77, 310, 6)
	want := [2][]float32{slices.Clone(a.Data), slices.Clone(b.Data)}
	for _, m := range []blas32.General{a, b} {
		for i := range m.Data {
			m.Data[i] = float32(math.NaN())
		}
	}
	calls := 0
	t0 := time.Now()
	gt, err := g.MulReady(c, a, b, nil, func() {
		calls++
		time.Sleep(200 * time.Millisecond)
		copy(a.Data, want[0])
		copy(b.Data, want[1])
		for i := range c.Data {
			c.Data[i] = float32(math.NaN())
		}
	})
	whole := time.Since(t0)
	if err != nil {
		t.Fatal(err)
	}
	checkGroupProduct(t, c, a, b)
	// The wait is in MulReady's whole time, not in EndToEnd (a slow
	// device, softpipe, takes longer than the wait to multiply).
	if calls != 1 || gt.EndToEnd > whole-200*time.Millisecond {
		t.Errorf("ready called %d times, end to end %v of MulReady's %v: want once, and its 200 ms wait left out", calls, gt.EndToEnd, whole)
	}
	e := blas32.General{Rows: 2, Cols: 3, Stride: 3, Data: make([]float32, 6)}
	calls = 0
	if _, err := g.MulReady(e, blas32.General{Rows: 2, Stride: 1}, blas32.General{Cols: 3, Stride: 3}, nil, func() { calls++; e.Data[0] = 7 }); err != nil || calls != 1 || e.Data[0] != 0 {
		t.Errorf("empty product: %v, ready called %d times, C[0] %v: want once, then C zeroed", err, calls, e.Data[0])
	}
}
