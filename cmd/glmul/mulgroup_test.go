package main

import (
	"bytes"
	"encoding/json"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/glmul/glmul/cmd/glmul/internal/matfile"
	"github.com/glmul/glmul/cpu"
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
