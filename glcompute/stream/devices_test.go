package stream

import (
	"errors"
	"math/rand/v2"
	"strings"
	"sync"
	"testing"
	"time"

	"gonum.org/v1/gonum/blas/blas32"

	"github.com/glmul/glmul/cpu"
	"github.com/glmul/glmul/glcompute"
	"github.com/glmul/glmul/internal/conformance"
	"github.com/glmul/glmul/internal/gltest"
	"github.com/glmul/glmul/internal/streamhook"
	"github.com/glmul/glmul/validate"
)

// withFault sets the devices' fault hook for one test.
func withFault(t *testing.T, f func(dev, i int) error) {
	streamhook.Fault = f
	t.Cleanup(func() { streamhook.Fault = nil })
}

// groupChecked runs MulDevices of a by b over devs with o, within a
// minute (a scheduling deadlock fails rather than hangs), and checks
// what Mul's tests check: each panel checked once, in order, before its
// rows are written (checkRecorder), C against float64, and every panel
// counted to one device.
func groupChecked(t *testing.T, devs []*glcompute.Device, a, b blas32.General, o *Options) Result {
	t.Helper()
	cr := &checkRecorder{t: t, a: a, n: b.Cols}
	w := &memWriter{failAfter: -1, checked: cr.rows}
	oc := *o
	oc.Check = cr.prepare
	type out struct {
		r   Result
		err error
	}
	done := make(chan out, 1)
	go func() {
		r, err := MulDevices(devs, w, &memReader{m: a, failAt: -1}, &memReader{m: b, failAt: -1}, &oc)
		done <- out{r, err}
	}()
	var res out
	select {
	case res = <-done:
	case <-time.After(time.Minute):
		t.Fatalf("%d×%d×%d over %d devices: no result after a minute", a.Rows, a.Cols, b.Cols, len(devs))
	}
	if res.err != nil {
		t.Fatalf("%d×%d×%d: %v", a.Rows, a.Cols, b.Cols, res.err)
	}
	r := res.r
	if len(w.rows) != a.Rows || cr.rows() != a.Rows {
		t.Fatalf("%d×%d×%d: %d rows written, %d checked", a.Rows, a.Cols, b.Cols, len(w.rows), cr.rows())
	}
	if v := validate.CheckFull(a, b, w.written(b.Cols)); v.Err() != nil {
		t.Fatalf("%d×%d×%d in %d panels of %d rows: %v", a.Rows, a.Cols, b.Cols, r.Panels, r.PanelRows, v.Err())
	}
	panels := 0
	for _, sh := range r.Devices {
		panels += sh.Panels
	}
	if len(r.Devices) != len(devs) || panels != r.Panels {
		t.Errorf("%d×%d×%d: shares %+v of %d panels", a.Rows, a.Cols, b.Cols, r.Devices, r.Panels)
	}
	return r
}

// TestMulDevices streams products over two devices (two contexts of one
// Mesa device here) whose panels straddle the boundaries Mul's tests do,
// also with B in column panels and K in panels (MaxBinding lowered).
// Device 0 is slowed on every other panel so that panels finish out of
// order and device 1 runs ahead of a panel device 0 holds: the check
// must still see them in order, and device 0 must read back what it
// holds when nothing else is waiting (it waited for a panel the reader
// could not read, with every host panel behind the one it held).
func TestMulDevices(t *testing.T) {
	devs := []*glcompute.Device{gltest.Open(t), gltest.Open(t)}
	withFault(t, func(dev, i int) error {
		if dev == 0 && i%2 == 0 {
			time.Sleep(30 * time.Millisecond)
		}
		return nil
	})
	rng := rand.New(rand.NewPCG(21, 22))
	for _, c := range []struct {
		m, k, n    int
		panelBytes int64
		binding    int64
	}{
		{1, 1, 1, 0, 0}, {70, 33, 17, 0, 0}, {1000, 5, 3, 4 * 64 * (8 + 4), 0}, {641, 64, 64, 4 * 64 * 128, 0},
		{700, 33, 300, 4 * 64 * (36 + 300), 16 << 10}, {520, 130, 90, 0, 32 << 10},
	} {
		a, b := cpu.Random(c.m, c.k, rng), cpu.Random(c.k, c.n, rng)
		r := groupChecked(t, devs, a, b, &Options{PanelBytes: c.panelBytes, MaxBinding: c.binding, Kernel: []string{"", "fast:64x64x8_4x4"}[c.m%2]})
		if r.Panels >= 8 && (r.Devices[0].Panels == 0 || r.Devices[1].Panels == 0) {
			t.Errorf("%d×%d×%d: %d panels, shared %d and %d: want both devices to take some", c.m, c.k, c.n, r.Panels, r.Devices[0].Panels, r.Devices[1].Panels)
		}
		if r.Devices[0].Kernel == "" || r.Kernel != r.Devices[0].Kernel {
			t.Errorf("%d×%d×%d: kernel %q, devices' %+v", c.m, c.k, c.n, r.Kernel, r.Devices)
		}
	}
}

// TestMulDevicesSharesFollowSpeed: a device slowed by 100 ms a panel
// takes fewer of them than the other.
func TestMulDevicesSharesFollowSpeed(t *testing.T) {
	devs := []*glcompute.Device{gltest.Open(t), gltest.Open(t)}
	withFault(t, func(dev, i int) error {
		if dev == 0 {
			time.Sleep(100 * time.Millisecond)
		}
		return nil
	})
	rng := rand.New(rand.NewPCG(23, 24))
	a, b := cpu.Random(64*16, 32, rng), cpu.Random(32, 32, rng)
	r := groupChecked(t, devs, a, b, &Options{PanelBytes: 4 * 64 * (32 + 32)})
	if r.Panels != 16 || r.Devices[0].Panels >= r.Devices[1].Panels {
		t.Errorf("%d panels: the slowed device took %d, the other %d; want the other to take more", r.Panels, r.Devices[0].Panels, r.Devices[1].Panels)
	}
}

// TestMulDevicesDeviceFails makes the device that takes the product's
// third panel fail (which one depends on the goroutines' timing): the
// panels it held run on the other, C is right, and the shares say so.
// With every device failing, MulDevices fails and names each.
func TestMulDevicesDeviceFails(t *testing.T) {
	devs := []*glcompute.Device{gltest.Open(t), gltest.Open(t)}
	lost := errors.New("context lost (test)")
	var mu sync.Mutex
	taken, faulty := 0, -1
	withFault(t, func(dev, i int) error {
		mu.Lock()
		defer mu.Unlock()
		if taken++; taken == 3 {
			faulty = dev
			return lost
		}
		return nil
	})
	rng := rand.New(rand.NewPCG(25, 26))
	a, b := cpu.Random(64*10, 40, rng), cpu.Random(40, 24, rng)
	o := &Options{PanelBytes: 4 * 64 * (40 + 24)}
	r := groupChecked(t, devs, a, b, o)
	if faulty < 0 {
		t.Fatalf("%d panels taken: none failed", taken)
	}
	other := 1 - faulty
	if !errors.Is(r.Devices[faulty].Err, lost) || r.Devices[other].Err != nil || r.Devices[other].Reruns == 0 {
		t.Errorf("shares %+v: want device %d lost and its panels rerun by device %d", r.Devices, faulty, other)
	}

	withFault(t, func(dev, i int) error { return lost })
	_, err := MulDevices(devs, &memWriter{failAfter: -1}, &memReader{m: a, failAt: -1}, &memReader{m: b, failAt: -1}, o)
	if !errors.Is(err, lost) || !strings.Contains(err.Error(), "device 1 of 2") || !strings.Contains(err.Error(), "device 2 of 2") {
		t.Errorf("every device failing: %v", err)
	}
}

// TestMulDevicesPanics: no devices, or one listed twice, is a programming
// error.
func TestMulDevicesPanics(t *testing.T) {
	d := gltest.Open(t)
	rng := rand.New(rand.NewPCG(27, 28))
	a := &memReader{m: cpu.Random(4, 4, rng), failAt: -1}
	conformance.MustPanic(t, "no devices", func() { MulDevices(nil, &memWriter{failAfter: -1}, a, a, nil) })
	conformance.MustPanic(t, "listed twice", func() { MulDevices([]*glcompute.Device{d, d}, &memWriter{failAfter: -1}, a, a, nil) })
}

// TestMulDevicesConformance runs the conformance shapes, and taller ones
// in several panels of 4 to 64 rows, over two devices, one slowed on
// every third panel: C right, A and B untouched, C's padding unwritten,
// as every product path of the library.
func TestMulDevicesConformance(t *testing.T) {
	devs := []*glcompute.Device{gltest.Open(t), gltest.Open(t)}
	withFault(t, func(dev, i int) error {
		if dev == 0 && i%3 == 0 {
			time.Sleep(5 * time.Millisecond)
		}
		return nil
	})
	shapes := append([]conformance.Shape{{M: 700, K: 33, N: 65}, {M: 257, K: 130, N: 31}, {M: 129, K: 1, N: 300}}, conformance.Shapes...)
	conformance.Run(t, shapes, func(c, a, b blas32.General) error {
		row := 4 * int64((a.Cols+3)/4*4+(b.Cols+3)/4*4)
		o := &Options{PanelBytes: row * int64(max(4, min(64, a.Rows/5)))}
		_, err := MulDevices(devs, &conformance.RowsInto{C: c}, conformance.Rows{M: a}, conformance.Rows{M: b}, o)
		return err
	})
}
