package main

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/glmul/glmul/cmd/glmul/internal/report"
	"github.com/glmul/glmul/glcompute/devgroup"
)

// TestDevicesFlag runs a product over a group of one device (the only
// one llvmpipe's EGL lists) in JSON, and checks the report: every panel
// computed once, the whole product's flops shared out, C validated.
func TestDevicesFlag(t *testing.T) {
	code, out, errs := glmul("-shape", "300x130x700", "-devices", "all", "-reps", "2", "-format", "json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	var r groupRun
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	panels, share := 0, 0.0
	for _, d := range r.Devices {
		panels += d.Panels
		share += d.Share
	}
	if len(r.Runs) != 2 || r.Panels < 1 || panels != r.Panels || share < 0.999 || share > 1.001 || !r.Validation.OK || r.GFLOPS <= 0 {
		t.Errorf("report: %+v", r)
	}
	// A device's busy time has a key of its own: it was end_to_end_ns,
	// the group's median's key one level up.
	var raw struct{ Devices []map[string]any }
	if err := json.Unmarshal([]byte(out), &raw); err != nil || len(raw.Devices) == 0 || raw.Devices[0]["busy_ns"] == nil || raw.Devices[0]["end_to_end_ns"] != nil {
		t.Errorf("device row keys (%v): %s", err, out)
	}
	code, out, _ = glmul("-n", "200", "-devices", "1", "-reps", "1")
	if code != 0 || !strings.Contains(out, "device 1") || !strings.Contains(out, "validate   full: ok") {
		t.Errorf("text report (exit %d):\n%s", code, out)
	}
}

// TestDevicesUsage: what a group cannot take is a usage error naming the
// flags.
func TestDevicesUsage(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"-n", "64", "-devices", "0"}, "want all, or EGL device indices from 1"},
		{[]string{"-n", "64", "-devices", ""}, `-devices "": want all`}, // ran on one device before
		{[]string{"-n", "64", "-devices", "1,x"}, "want all"},
		{[]string{"-n", "64", "-devices", "2,2"}, "device 2 listed twice"},
		{[]string{"-n", "64", "-devices", "all", "-mapped"}, "-devices and -mapped"},
		{[]string{"-n", "64", "-devices", "all", "-device", "1"}, "-devices and -device"},
		{[]string{"-n", "64", "-devices", "all", "-split-k", "4"}, "-devices and -split-k"},
		{[]string{"-n", "64", "-devices", "all", "-kernel", "tiled32"}, "tiled32 cannot run in panels"},
		{[]string{"-n", "64", "-devices", "all", "-backend", "gles"}, "headless EGL"},
	} {
		code, _, errs := glmul(c.args...)
		if code != 2 || !strings.Contains(errs, c.want) {
			t.Errorf("glmul %s: exit %d, %q; want 2 and %q", strings.Join(c.args, " "), code, errs, c.want)
		}
	}
	// An index past EGL's devices is refused as -device's is, before any
	// context (it was exit 1 with a hint to install a driver).
	if n := len(devgroup.Devices()); n > 0 {
		args := []string{"-n", "64", "-devices", fmt.Sprintf("1,%d", n+1)}
		code, out, errs := glmul(args...)
		if want := fmt.Sprintf("-devices \"1,%d\": EGL lists %s; glmul -list-devices names them", n+1, report.Plural(n, "device")); code != 2 || out != "" || !strings.Contains(errs, want) {
			t.Errorf("glmul %s: exit %d, stdout %q, stderr %q; want 2, nothing and %q", strings.Join(args, " "), code, out, errs, want)
		}
	}
}
