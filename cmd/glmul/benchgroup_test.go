package main

import (
	"encoding/csv"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"strings"
	"testing"
	"time"

	"gonum.org/v1/gonum/blas/blas32"

	"github.com/glmul/glmul/glcompute"
	"github.com/glmul/glmul/glcompute/devgroup"
)

// TestBenchDevices runs glmul bench -devices over a group of one device
// (the only one llvmpipe's EGL lists) in JSON: a row of the group and one
// of its first device alone a shape, each validated, end to end, its
// devices' panels adding up to its own and their shares to the whole;
// the group's ratio against one device from their medians. Then the
// text, CSV and Go benchmark outputs carry the rows.
func TestBenchDevices(t *testing.T) {
	needGL(t)
	args := []string{"bench", "-devices", "all", "-shapes", "200,300x130x700", "-reps", "2", "-progress", "off"}
	code, out, errs := glmul(append(args, "-format", "json")...)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	var js struct{ Results []benchRow }
	if err := json.Unmarshal([]byte(out), &js); err != nil || len(js.Results) != 4 {
		t.Fatalf("%v, %d rows: %s", err, len(js.Results), out)
	}
	for i, r := range js.Results {
		want := []string{groupKernel, groupOneKernel}[i%2]
		panels, share := 0, 0.0
		for _, d := range r.Devices {
			panels += d.Panels
			share += d.Share
		}
		if r.Kernel != want || !r.Valid || r.Validation != "full" || r.Source != groupSource || len(r.Times) != 2 || r.GFLOPS <= 0 ||
			r.Spec == "" || len(r.Devices) == 0 || r.Panels < 1 || panels != r.Panels || math.Abs(share-1) > 1e-3 {
			t.Errorf("row %d: want %s, measured, valid, its devices' panels and shares adding up: %+v", i, want, r)
		}
	}
	for i := 0; i+1 < len(js.Results); i += 2 {
		g, one := js.Results[i], js.Results[i+1]
		if len(one.Devices) != 1 || len(g.Devices) == 0 || one.Devices[0].Index != g.Devices[0].Index {
			t.Errorf("%s: one-device should be the group's first device alone: %+v, %+v", g.Shape, g.Devices, one.Devices)
		}
		if want := one.MedianMS / g.MedianMS; math.Abs(g.VsOneDevice/want-1) > 1e-9 || one.VsOneDevice != 0 {
			t.Errorf("%s: vs_one_device %v, want %v (one device's median over the group's) on the group's row alone (%v)", g.Shape, g.VsOneDevice, want, one.VsOneDevice)
		}
	}
	testBenchDevicesFormats(t, args)
}

// testBenchDevicesFormats checks bench -devices' text, CSV and Go
// benchmark outputs (args: the command but -format).
func testBenchDevicesFormats(t *testing.T, args []string) {
	code, out, errs := glmul(args...)
	if code != 0 || !strings.Contains(out, "vs one device") || !strings.Contains(out, "one-device ") || !strings.Contains(out, "1×") || !strings.Contains(out, groupSource) {
		t.Errorf("text (exit %d, %s):\n%s", code, errs, out)
	}
	code, out, errs = glmul(append(args, "-format", "csv")...)
	recs, err := csv.NewReader(strings.NewReader(out)).ReadAll()
	if code != 0 || err != nil || len(recs) != 5 || recs[0][len(recs[0])-2] != "devices" || recs[1][3] != groupKernel || recs[1][len(recs[1])-1] == "" || recs[2][len(recs[2])-1] != "" {
		t.Errorf("CSV (exit %d, %v, %s):\n%s", code, err, errs, out)
	}
	code, out, errs = glmul(append(args, "-format", "bench")...)
	if code != 0 || strings.Count(out, "BenchmarkGEMM/kernel=group/shape=200x200x200 ") != 2 || strings.Count(out, "BenchmarkGEMM/kernel=one-device/shape=300x130x700 ") != 2 {
		t.Errorf("Go benchmark lines (exit %d, %s):\n%s", code, errs, out)
	}
}

// TestBenchDevicesUsage: what bench -devices cannot take is a usage
// error naming the flags, before any context.
func TestBenchDevicesUsage(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"-devices", "0"}, "bench: -devices \"0\": want all, or EGL device indices from 1"},
		{[]string{"-devices", ""}, `-devices "": want all`},
		{[]string{"-devices", "2,2"}, "device 2 listed twice"},
		{[]string{"-devices", "all", "-kernels", "tiled32,fast"}, "bench: -devices and -kernels tiled32,fast: a group measures its fast kernel"},
		{[]string{"-devices", "all", "-kernels", "cpu:8x8_8x8"}, "-devices and -kernels cpu:8x8_8x8"},
		{[]string{"-devices", "all", "-split-k", "4"}, "bench: -devices and -split-k"},
		{[]string{"-devices", "all", "-type", "f64"}, "bench: -devices and -type f64"},
		{[]string{"-devices", "all", "-device", "1"}, "bench: -devices and -device"},
		{[]string{"-devices", "all", "-backend", "gles"}, "bench: -devices opens one headless EGL context a GPU"},
		{[]string{"-devices", "all", "-backend", "glfw"}, "headless EGL"},
	} {
		args := append([]string{"bench", "-shapes", "64"}, c.args...)
		code, out, errs := glmul(args...)
		if code != 2 || out != "" || !strings.Contains(errs, c.want) {
			t.Errorf("glmul %s: exit %d, stdout %q, stderr %q; want 2 and %q", strings.Join(args, " "), code, out, errs, c.want)
		}
	}
	if n := len(devgroup.Devices()); n > 0 {
		args := []string{"bench", "-shapes", "64", "-devices", fmt.Sprintf("1,%d", n+1)}
		if code, _, errs := glmul(args...); code != 2 || !strings.Contains(errs, fmt.Sprintf("bench: -devices \"1,%d\": EGL lists", n+1)) {
			t.Errorf("glmul %s: exit %d, %q", strings.Join(args, " "), code, errs)
		}
	}
	// -kernels fast is the default said aloud, and -split-k 1 no split.
	needGL(t)
	if code, _, errs := glmul("bench", "-shapes", "64", "-devices", "all", "-kernels", "fast", "-split-k", "1", "-reps", "1", "-format", "csv"); code != 0 {
		t.Errorf("-kernels fast -split-k 1: exit %d: %s", code, errs)
	}
}

// TestBenchDevicesCtrlC interrupts glmul bench -devices after the first
// shape's two rows (on llvmpipe, inside the second shape's timed runs
// over the group): the rows finished by then must be printed, in CSV, in
// order, and no other. A GPU may finish the second shape's group row
// too before the signal (an H200 did, in 0.12 s).
func TestBenchDevicesCtrlC(t *testing.T) {
	if os.Getenv("GLMUL_TEST_CHILD") == "bench-devices" {
		os.Exit(exitCode(run([]string{"bench", "-devices", "all", "-shapes", "64,1024", "-reps", "100", "-format", "csv"}, os.Stdout, os.Stderr), os.Stderr))
	}
	needGL(t)
	c := startChild(t, "TestBenchDevicesCtrlC", "bench-devices", "bench 64x64x64 one-device:")
	time.Sleep(time.Second) // into 1024³'s 101 products over the group (about 60 ms each on llvmpipe)
	if !c.interrupt(t) {
		t.Skip("the device finished 1024³ before Ctrl-C; the test needs a slow one (llvmpipe in CI)")
	}
	out := c.stdout.String()
	lines := strings.Split(strings.TrimSpace(out), "\n")
	order := []string{"64,64,64,group,", "64,64,64,one-device,", "1024,1024,1024,group,", "1024,1024,1024,one-device,"}
	rows := lines[1:]
	if !strings.HasPrefix(lines[0], "m,k,n,kernel,") || len(rows) < 2 || len(rows) >= len(order) {
		t.Fatalf("stdout should hold the CSV rows finished, 64³'s at least, not all four:\n%s", out)
	}
	for i, r := range rows {
		if !strings.HasPrefix(r, order[i]) {
			t.Errorf("row %d is %q, want %s…", i+1, r, order[i])
		}
	}
	if want := fmt.Sprintf("glmul: interrupted by Ctrl-C: the rows above are the %d of 4 products that finished\n", len(rows)); !strings.Contains(c.stderr.String(), want) {
		t.Errorf("stderr:\n%s\nwant %q", c.stderr.String(), want)
	}
}

// TestBenchDevicesLastRunChecked makes every product of bench -devices
// after the first write nothing: C, poisoned with NaN before the last
// run, must then fail its check (it validated with the warm-up's C when
// poisoned only before the first).
func TestBenchDevicesLastRunChecked(t *testing.T) {
	needGL(t)
	calls := 0
	groupMul = func(g *devgroup.Group, c, a, b blas32.General, o *glcompute.MulOptions) (devgroup.Timings, error) {
		if calls++; calls == 1 {
			return g.Mul(c, a, b, o)
		}
		return devgroup.Timings{Devices: make([]devgroup.Share, len(g.Devices()))}, nil
	}
	t.Cleanup(func() { groupMul = (*devgroup.Group).Mul })
	code, out, errs := glmul("bench", "-devices", "1", "-shapes", "64", "-reps", "2", "-format", "csv")
	var group string // the group's row: its warm-up wrote C, its timed runs nothing
	for _, l := range strings.Split(out, "\n") {
		if strings.HasPrefix(l, "64,64,64,group,") {
			group = l
		}
	}
	if code != 1 || !strings.Contains(group, ",full,false,") {
		t.Errorf("runs after the first writing nothing: exit %d, stdout:\n%s\nstderr:\n%s", code, out, errs)
	}
}
