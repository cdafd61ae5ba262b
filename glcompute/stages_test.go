package glcompute

import (
	"fmt"
	"math"
	"runtime"
	"testing"
	"time"

	"gonum.org/v1/gonum/blas/blas32"

	"github.com/glmul/glmul/cpu"
	"github.com/glmul/glmul/glcompute/tuning"
	"github.com/glmul/glmul/internal/conformance"
)

// stagedMul runs Mul with a Measure hook that uploads A and B, runs the
// whole product reps times and reads C back, then hands back in c the C
// of those runs rather than the pass's (for a product in one piece), so
// that a conformance check of c checks the whole-product path
// (Stages.Run: one pass of the kernel over all of C, split-K and its
// reduction, A's transpose) where a plain Mul checks the pipelined bands.
func stagedMul(d *Device, c, a, b blas32.General, o MulOptions, reps int) (Timings, error) {
	var runs []float32
	o.Measure = func(s tuning.Stages) error {
		if _, _, err := s.Upload(); err != nil {
			return err
		}
		for i := 0; i < reps; i++ {
			if _, _, err := s.Run(i == 0, nil); err != nil {
				return err
			}
		}
		if _, _, err := s.ReadBack(); err != nil || s.Panels() {
			return err
		}
		runs = append(runs, c.Data...)
		for i := range c.Data { // the pass must write every element again
			c.Data[i] = float32(math.NaN())
		}
		return nil
	}
	tm, err := d.Mul(c, a, b, &o)
	if err == nil && runs != nil {
		if bad := firstNaNInside(c); bad >= 0 {
			return tm, fmt.Errorf("the pass after the runs left element %d unwritten", bad)
		}
		copy(c.Data, runs)
	}
	return tm, err
}

// mulStaged is stagedMul with two runs where staged, else Mul.
func mulStaged(d *Device, c, a, b blas32.General, o MulOptions, staged bool) (Timings, error) {
	if staged {
		return stagedMul(d, c, a, b, o, 2)
	}
	return d.Mul(c, a, b, &o)
}

// firstNaNInside is the index of c's first NaN element within its rows
// (not its stride padding), or -1.
func firstNaNInside(c blas32.General) int {
	for i := 0; i < c.Rows; i++ {
		for j := 0; j < c.Cols; j++ {
			if v := c.Data[i*c.Stride+j]; v != v {
				return i*c.Stride + j
			}
		}
	}
	return -1
}

// TestStages: the hook's stages on a 100×50 by 50×70 product in one
// dispatch a work group (tiled32, MaxGroups 1): what each returns, the
// progress of each dispatch, and C from the runs and from the pass.
func TestStages(t *testing.T) {
	d := openDevice(t, BackendEGL)
	// timed reports whether a stage's time is one: positive, or 0 under
	// Windows, where Wine's clock moves in steps of about a millisecond
	// (a stage of this product takes less).
	timed := func(d time.Duration) bool { return d > 0 || d == 0 && runtime.GOOS == "windows" }
	var log []string
	hook := func(s tuning.Stages) error {
		up, upBytes, err := s.Upload()
		log = append(log, fmt.Sprintf("upload %d bytes", upBytes))
		if err != nil || !timed(up) {
			return fmt.Errorf("upload %v: %v", up, err)
		}
		done := 0
		for i := 0; i < 3; i++ {
			wall, gpu, err := s.Run(true, func() { done++ })
			if err != nil || !timed(wall) || gpu < 0 || gpu > 0 && !s.TimerUsable() {
				return fmt.Errorf("run: wall %v, gpu %v: %v", wall, gpu, err)
			}
		}
		log = append(log, fmt.Sprintf("%d dispatches a run, %d done", s.Dispatches(), done))
		back, backBytes, err := s.ReadBack()
		log = append(log, fmt.Sprintf("readback %d bytes", backBytes))
		if err != nil || !timed(back) {
			return fmt.Errorf("readback %v: %v", back, err)
		}
		return nil
	}
	conformance.Run(t, []conformance.Shape{{M: 100, K: 50, N: 70}}, func(c, a, b blas32.General) error {
		log = nil
		tm, err := d.Mul(c, a, b, &MulOptions{Kernel: "tiled32", MaxGroups: 1, Measure: hook})
		if err != nil {
			return err
		}
		// 100 rows, 70 columns in 32×32 tiles: 4×3 groups, one per dispatch.
		want := fmt.Sprint([]string{"upload 34000 bytes", "12 dispatches a run, 36 done", "readback 28000 bytes"})
		if fmt.Sprint(log) != want || tm.Dispatches != 12 || tm.Groups != [2]int{3, 4} {
			return fmt.Errorf("stages %v, want %v; dispatches %d, groups %v, want 12 and [3 4]", log, want, tm.Dispatches, tm.Groups)
		}
		return nil
	})
}

// TestMeasureHookWaitsForInputs: a caller may still be making A and B,
// and C's poison, on another goroutine while the Measure hook runs, as
// long as the hook waits for them before it returns (or before Upload):
// Mul reads them only in the stages the hook runs and after it. A Mul
// that read A or B, or wrote C, earlier races with their making (caught
// under -race, as make test runs this test) and may give a wrong C. In one piece (the hook waits before Upload) and in panels
// (a warm-up run first, then the wait).
func TestMeasureHookWaitsForInputs(t *testing.T) {
	d := openDevice(t, BackendEGL)
	const m, k, n = 70, 50, 90
	want := cpu.New(m, n)
	ra, rb := cpu.Uniform(m, k, 7, 0), cpu.Uniform(k, n, 7, 1)
	cpu.Sgemm(want, ra, rb)
	for _, panels := range []bool{false, true} {
		a, b, c := cpu.New(m, k), cpu.New(k, n), cpu.New(m, n)
		made := make(chan struct{})
		go func() { // beside Mul from its start: any earlier read races
			defer close(made)
			copy(a.Data, ra.Data)
			copy(b.Data, rb.Data)
			for i := range c.Data {
				c.Data[i] = float32(math.NaN())
			}
		}()
		o := MulOptions{Kernel: "fast:64x64x8_8x4", Measure: func(s tuning.Stages) error {
			if s.Panels() {
				if _, _, err := s.Run(false, nil); err != nil {
					return err
				}
				<-made
				return nil
			}
			<-made
			_, _, err := s.Upload()
			return err
		}}
		if panels {
			o.MaxBinding = 16 << 10
		}
		tm, err := d.Mul(c, a, b, &o)
		if err != nil {
			t.Fatal(err)
		}
		if (tm.Panels != "") != panels {
			t.Fatalf("panels %q, want panels %v", tm.Panels, panels)
		}
		closeTo(t, fmt.Sprintf("panels %v", panels), c.Data, want.Data, 1e-5)
	}
}
