package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/glmul/glmul/cmd/glmul/internal/matfile"
	"github.com/glmul/glmul/cpu"
	"github.com/glmul/glmul/glcompute/devgroup"
	"github.com/glmul/glmul/internal/streamhook"
)

// TestMulDevicesFlag multiplies files over a group (of the one device
// llvmpipe's EGL lists here) in several panels: the report has a row a
// device whose panels add up to the product's, C validates in full, and
// C is the one device's C bit for bit (the same kernel on the same rows).
func TestMulDevicesFlag(t *testing.T) {
	needGL(t)
	dir := t.TempDir()
	rng := rand.New(rand.NewPCG(31, 32))
	a, b := filepath.Join(dir, "a.npy"), filepath.Join(dir, "b.npy")
	for _, in := range []struct {
		path       string
		rows, cols int
	}{{a, 5000, 250}, {b, 250, 258}} { // 2 KiB rows of A and C: 3 panels of 4 MiB
		if err := matfile.Write(in.path, cpu.Random(in.rows, in.cols, rng)); err != nil {
			t.Fatal(err)
		}
	}
	one, group := filepath.Join(dir, "one.npy"), filepath.Join(dir, "group.npy")
	if code, _, stderr := glmul("mul", a, b, "-o", one, "-backend", "egl"); code != 0 {
		t.Fatalf("one device: exit %d\n%s", code, stderr)
	}
	code, stdout, stderr := glmul("mul", a, b, "-o", group, "-devices", "all", "-validate", "full", "-format", "json")
	if code != 0 {
		t.Fatalf("-devices all: exit %d\n%s", code, stderr)
	}
	var r struct {
		Panels     int
		Validation struct{ OK bool }
		Devices    []struct {
			Index, Panels int
			Renderer      string
			Busy          int64 `json:"busy_ns"`
		}
	}
	if err := json.Unmarshal([]byte(stdout), &r); err != nil {
		t.Fatalf("%v: %s", err, stdout)
	}
	panels := 0
	for _, d := range r.Devices {
		panels += d.Panels
		if d.Index < 1 || d.Renderer == "" || d.Busy <= 0 {
			t.Errorf("device row %+v", d)
		}
	}
	if r.Panels < 3 || len(r.Devices) == 0 || panels != r.Panels || !r.Validation.OK {
		t.Errorf("report: %+v", r)
	}
	c1, _ := os.ReadFile(one)
	c2, _ := os.ReadFile(group)
	if len(c1) == 0 || !bytes.Equal(c1, c2) {
		t.Errorf("C over the group (%d bytes) differs from one device's (%d bytes)", len(c2), len(c1))
	}
	if code, _, stderr := glmul("mul", a, b, "-o", group, "-devices", "1"); code != 0 || !strings.Contains(stderr, "device 1 ") || !strings.Contains(stderr, "group      1 device") {
		t.Errorf("text report (exit %d):\n%s", code, stderr)
	}
}

// TestMulDevicesUsage: what a group cannot take is a usage error naming
// the flags, before any file is read or written.
func TestMulDevicesUsage(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"-devices", ""}, `mul: -devices "": want all`},
		{[]string{"-devices", "0"}, "want all, or EGL device indices from 1"},
		{[]string{"-devices", "1,1"}, "device 1 listed twice"},
		{[]string{"-devices", "all", "-type", "f64"}, "-devices and -type f64"},
		{[]string{"-devices", "all", "-device", "1"}, "-devices and -device"},
		{[]string{"-devices", "all", "-backend", "gles"}, "headless EGL"},
	} {
		args := append([]string{"mul", "a.npy", "b.npy", "-o", filepath.Join(t.TempDir(), "c.npy")}, c.args...)
		code, _, errs := glmul(args...)
		if code != 2 || !strings.Contains(errs, c.want) {
			t.Errorf("glmul %s: exit %d, %q; want 2 and %q", strings.Join(args, " "), code, errs, c.want)
		}
	}
}

// TestMulDevicesDeviceFails makes the first device of glmul mul -devices
// all fail at the product's second panel (a test switch, as a lost context
// would). With another device C is still written, whole and validated,
// and the report says which device failed and who reran its panels; with
// none (llvmpipe's EGL lists one device), glmul exits 1 naming the
// failure, and -o is left as it was: never a partial C.
func TestMulDevicesDeviceFails(t *testing.T) {
	needGL(t)
	lost := errors.New("context lost (test)")
	streamhook.Fault = func(dev, i int) error {
		if dev == 0 && i == 1 {
			return lost
		}
		return nil
	}
	t.Cleanup(func() { streamhook.Fault = nil })
	dir := t.TempDir()
	rng := rand.New(rand.NewPCG(33, 34))
	a, b := filepath.Join(dir, "a.npy"), filepath.Join(dir, "b.npy")
	if err := matfile.Write(a, cpu.Random(5000, 250, rng)); err != nil { // 3 panels
		t.Fatal(err)
	}
	if err := matfile.Write(b, cpu.Random(250, 258, rng)); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "c.npy")
	os.WriteFile(out, []byte("before"), 0o644)
	code, stdout, stderr := glmul("mul", a, b, "-o", out, "-devices", "all", "-format", "json")
	if allDevices() < 2 {
		if before, _ := os.ReadFile(out); code != 1 || !strings.Contains(stderr, "context lost (test)") || !strings.Contains(stderr, "panel 2 of 3): context lost (test); "+out+" was left as it was") || string(before) != "before" {
			t.Errorf("one device failing: exit %d, -o %q, stderr:\n%s", code, before, stderr)
		}
		return
	}
	var r struct {
		Validation struct{ OK bool }
		Devices    []struct {
			Panels, Reruns int
			Error          string
		}
	}
	if err := json.Unmarshal([]byte(stdout), &r); code != 0 || err != nil || !r.Validation.OK || len(r.Devices) < 2 {
		t.Fatalf("a device of the group failing: exit %d, %v, %s\n%s", code, err, stdout, stderr)
	}
	reruns := 0
	for _, d := range r.Devices[1:] {
		reruns += d.Reruns
	}
	if !strings.Contains(r.Devices[0].Error, "context lost (test)") || reruns == 0 {
		t.Errorf("device rows %+v: want device 1's error and its panel rerun by another", r.Devices)
	}
}

// allDevices is how many devices -devices all opens here: the hardware
// ones EGL lists, else its software one.
func allDevices() int {
	hw := 0
	for _, d := range devgroup.Devices() {
		if !strings.Contains(d, "software (Mesa)") {
			hw++
		}
	}
	return max(hw, 1)
}
