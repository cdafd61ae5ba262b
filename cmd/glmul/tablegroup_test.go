package main

import (
	"encoding/csv"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/glmul/glmul/cmd/glmul/internal/table"
)

// TestTableDevices runs glmul table -devices 1, a group of one device
// whatever the host has (it ran -devices all, which a host of two GPUs
// made a group of EGL 1 and 2): the GPU columns are the group's and its
// first device's alone, each validated, timed end to end and carrying
// its devices, the speed-ups against the CPU from them; the JSON saved
// prints again with -from, as CSV with the columns named.
func TestTableDevices(t *testing.T) {
	needGL(t)
	code, out, errs := glmul("table", "-devices", "1", "-sizes", "128,200", "-reps", "2", "-progress", "off", "-format", "json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	var tab table.Table
	if err := json.Unmarshal([]byte(out), &tab); err != nil || len(tab.Rows) != 2 {
		t.Fatalf("%v: %s", err, out)
	}
	for _, r := range tab.Rows {
		if len(r.GPU) != 2 {
			t.Fatalf("N=%d: GPU columns %+v, want group and one-device", r.N, r.GPU)
		}
		for i, g := range r.GPU {
			want := []string{groupKernel, groupOneKernel}[i]
			if g.Kernel != want || g.Devices != "1" || g.TimingSource != groupSource || !g.Valid || g.Spec == "" ||
				g.MeanMS <= 0 || g.EndToEndMS != g.MedianMS || r.SpeedupNaive(g) <= 0 || r.SpeedupGonum(g) <= 0 {
				t.Errorf("N=%d column %d: want %s on EGL 1, end to end, valid: %+v", r.N, i, want, g)
			}
		}
	}
	if !strings.Contains(out, `"egl_devices"`) || strings.Contains(out, `"devices"`) { // elsewhere devices is a list of rows
		t.Errorf("a column's devices should be under egl_devices:\n%s", out)
	}
	if !strings.Contains(tab.Warmup, "-devices") {
		t.Errorf("warm-up rule %q should be the group's", tab.Warmup)
	}
	path := filepath.Join(t.TempDir(), "table.json")
	if err := os.WriteFile(path, []byte(out), 0o644); err != nil {
		t.Fatal(err)
	}
	code, out, errs = glmul("table", "-from", path, "-format", "csv")
	recs, err := csv.NewReader(strings.NewReader(out)).ReadAll()
	if code != 0 || err != nil || len(recs) != 3 {
		t.Fatalf("-from as CSV: exit %d, %v, %s:\n%s", code, err, errs, out)
	}
	for _, h := range []string{"group ms (mean)", "group end-to-end ms", "one-device GFLOPS", "speed-up vs naive"} {
		if !slices.Contains(recs[0], h) {
			t.Errorf("no column %q in %v", h, recs[0])
		}
	}
	if code, out, _ := glmul("table", "-from", path); code != 0 || !strings.Contains(out, "group on EGL 1, one-device on EGL 1") {
		t.Errorf("-from as text (exit %d):\n%s", code, out)
	}
}

// TestTableDevicesUsage: what table -devices cannot take is a usage
// error naming the flags.
func TestTableDevicesUsage(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"-devices", "x"}, "table: -devices \"x\": want all"},
		{[]string{"-devices", "all", "-kernels", "fast"}, "table: -devices and -kernels: a group's columns are its fast kernel"},
		{[]string{"-devices", "all", "-type", "f64"}, "table: -devices and -type f64"},
		{[]string{"-devices", "all", "-device", "1"}, "table: -devices and -device"},
		{[]string{"-devices", "all", "-backend", "glfw"}, "table: -devices opens one headless EGL context a GPU"},
		{[]string{"-devices", "all", "-from", "t.json"}, "table: -from t.json prints a table measured before"},
	} {
		args := append([]string{"table", "-sizes", "64"}, c.args...)
		code, out, errs := glmul(args...)
		if code != 2 || out != "" || !strings.Contains(errs, c.want) {
			t.Errorf("glmul %s: exit %d, stdout %q, stderr %q; want 2 and %q", strings.Join(args, " "), code, out, errs, c.want)
		}
	}
}
