package devgroup

import (
	"errors"
	"math"
	"math/rand/v2"
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
// device failing, Mul fails and names each.
func TestGroupDeviceFails(t *testing.T) {
	g := openGroup(t)
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
	gt, err := g.Mul(c, a, b, nil)
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

	g.fault = func(dev, panel int) error { return lost }
	c, a, b = groupOperands(64, 16, 200, 3)
	_, err = g.Mul(c, a, b, nil)
	if !errors.Is(err, lost) || !strings.Contains(err.Error(), "device 1") || !strings.Contains(err.Error(), "device 2") {
		t.Errorf("every device failing: %v", err)
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
