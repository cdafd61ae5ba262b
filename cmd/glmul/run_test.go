package main

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/glmul/glmul/cmd/glmul/internal/measure"
	"github.com/glmul/glmul/cmd/glmul/internal/report"
	"github.com/glmul/glmul/glcompute"
	"github.com/glmul/glmul/glcompute/devgroup"
)

// glmul runs the command in-process and returns its exit status and output.
func glmul(args ...string) (code int, stdout, stderr string) {
	var out, errb bytes.Buffer
	code = exitCode(run(args, &out, &errb), &errb)
	return code, out.String(), errb.String()
}

func TestUsageErrors(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"-n", "0"}, "-n must be at least 1 (got 0)"},
		{[]string{"bench", "-shapes", "0"}, "sizes must be at least 1"},
		{[]string{"-n", "-5"}, "-n must be at least 1 (got -5)"},
		{[]string{"bench", "-shapes", "3x4"}, "want MxKxN"},
		{[]string{"-n", "abc"}, `invalid value "abc" for flag -n`},
		{[]string{"bench", "-kernels", "fastest"}, "unknown kernel"},
		{[]string{"-shape", "3x0x4"}, "every dimension must be at least 1"},
		{[]string{"bench", "-reps", "0"}, "bench: -reps must be 1 to 1000000 (got 0)"},
		{[]string{"-shape", "3x4"}, "want MxKxN"},
		{[]string{"bench", "-format", "xml"}, "use text, csv, json, bench"},
		{[]string{"-shape", "3xfourx4"}, `"four" is not a whole number`},
		{[]string{"bench", "-validate", "most"}, "unknown validation mode"},
		{[]string{}, "give a size"},
		{[]string{"tune", "-n", "0"}, "tune: -n must be 16 to 536870912 (got 0)"},
		{[]string{"tune", "-n", "3"}, "tune: -n must be 16 to"}, // once run at 16 without a word
		{[]string{"-n", "4", "-shape", "2x2x2"}, "not both"},
		{[]string{"tune", "-reps", "0"}, "tune: -reps must be 1 to 1000000 (got 0)"},
		{[]string{"tune", "-unseen"}, "tune: -unseen is for judging the device model"},
		{[]string{"bench", "-split-k", "-1"}, "bench: -split-k must be 0 (automatic) or more (got -1)"},
		{[]string{"bench", "-split-k", "2"}, "bench: -split-k 2 needs fast or cpu kernels; tiled32 cannot split K"},
		{[]string{"-n", "4", "-reps", "0"}, "-reps must be 1 to"},
		{[]string{"tune", "-format", "csv"}, "use text, json"},
		{[]string{"-n", "4", "-max-groups", "0"}, "-max-groups must be 1 to 65535"},
		{[]string{"-n", "4", "-max-groups", "70000"}, "-max-groups must be 1 to 65535"}, // exited 1 after opening the device
		{[]string{"-n", "4", "-program-cache", "/dev/null"}, "-program-cache /dev/null: is a file, not a directory"},
		{[]string{"bench", "-program-cache", "/dev/null"}, "glmul: bench: -program-cache /dev/null: is a file, not a directory"},
		{[]string{"-n", "4", "-program-cache", "/dev/null/sub"}, "-program-cache /dev/null/sub: not a directory"}, // ignored without a word
		{[]string{"mul", "-a", "x.npy", "-b", "y.npy", "-o", "z.npy", "-program-cache", "/dev/null"}, "is a file, not a directory"},
		{[]string{"tune", "-candidates", "tiled32"}, "not a fast or cpu kernel configuration"},
		{[]string{"-n", "4", "-split-k", "-1"}, "-split-k must be 0 or more"},
		{[]string{"table", "-format", "xml"}, "use text, markdown, csv, json"},
		{[]string{"-n", "4", "-validate", "most"}, "unknown validation mode"},
		{[]string{"table", "-kernels", "fastest"}, "unknown kernel"},
		{[]string{"-n", "4", "-backend", "vulkan"}, "unknown backend"},
		{[]string{"-n", "4", "-format", "xml"}, "unknown format"},
		{[]string{"-n", "4", "-kernel", "fastest"}, "unknown kernel"},
		{[]string{"-n", "4", "-kernel", "fast:128x128x6_8x8"}, "multiples of 4"},
		{[]string{"-n", "4", "extra"}, `unexpected argument "extra"`},
		{[]string{"tabel"}, `unknown command "tabel": glmul's commands are mul, bench, tune, table, devices and help`},
		{[]string{"-bogus"}, "flag provided but not defined: -bogus"},
		{[]string{"-n", "8", "-reps", "2000000000000"}, "-reps must be 1 to 1000000"},
		{[]string{"-shape", "9999999999999999999x1x1"}, "too large for a dimension"},
		{[]string{"-n", "8", "-kernel", "tiled32", "-split-k", "4"}, "-split-k needs a fast kernel"},
		// The flag that was wrong, and the subcommand's own -h (before:
		// "-shape : want MxKxN" for -shapes, "glmul: glmul bench:", glmul -h).
		{[]string{"bench", "-shapes", ""}, `bench: -shapes "": an empty item`},
		{[]string{"bench", "-shapes", "64,,64"}, `bench: -shapes "64,,64": an empty item`},
		{[]string{"bench", "-shapes", "64x3"}, "bench: -shapes 64x3: want MxKxN"},
		{[]string{"bench", "extra"}, "glmul: bench: unexpected argument \"extra\"\nRun 'glmul bench -h' for usage."},
		{[]string{"tune", "extra"}, "Run 'glmul tune -h' for usage."},
		{[]string{"devices", "extra"}, "glmul: devices: unexpected argument \"extra\"\nRun 'glmul devices -h' for usage."},
	} {
		code, stdout, stderr := glmul(c.args...)
		if code != 2 || !strings.Contains(stderr, c.want) || !strings.Contains(stderr, " -h' for usage.") || stdout != "" {
			t.Errorf("glmul %v: exit %d, stderr %q, stdout %q; want exit 2 and %q", c.args, code, stderr, stdout, c.want)
		}
	}
}

func TestHelpAndVersion(t *testing.T) {
	// -h and help are asked for: the usage on stdout (a pager reads it),
	// nothing on stderr.
	for _, args := range [][]string{{"-h"}, {"help"}, {"-help"}} {
		code, stdout, stderr := glmul(args...)
		if code != 0 || !strings.Contains(stdout, "-shape MxKxN") || !strings.Contains(stdout, "Exit status") || strings.Count(stdout, "Usage:") != 1 || stderr != "" {
			t.Errorf("%v: exit %d, stdout %q, stderr %q", args, code, stdout, stderr)
		}
	}
	// A usage that cannot be written fails (it exited 0 on a full disk).
	var out bytes.Buffer
	if code := exitCode(run([]string{"bench", "-h"}, failingWriter{}, &out), &out); code != 1 || !strings.Contains(out.String(), "writing the usage") {
		t.Errorf("bench -h to a failing stdout: exit %d, %q", code, out.String())
	}
	for _, sub := range []string{"bench", "tune", "table", "mul", "devices"} {
		code, stdout, stderr := glmul(sub, "-h")
		if code != 0 || !strings.Contains(stdout, "glmul "+sub) || !strings.Contains(stdout, "Flags:") || stderr != "" {
			t.Errorf("%s -h: exit %d, stdout %q, stderr %q", sub, code, stdout, stderr)
		}
	}
	code, stdout, _ := glmul("-version")
	if code != 0 || !strings.HasPrefix(stdout, "glmul "+version) {
		t.Errorf("-version: exit %d, %q", code, stdout)
	}
}

func TestExitCodes(t *testing.T) {
	var b bytes.Buffer
	for _, c := range []struct {
		err  error
		want int
	}{
		{nil, 0}, {usagef("x"), 2}, {errReported, 1},
		{fmt.Errorf("%w: no", glcompute.ErrNoContext), 1},
		{fmt.Errorf("%w: big", glcompute.ErrTooLarge), 1},
	} {
		if got := exitCode(c.err, &b); got != c.want {
			t.Errorf("exitCode(%v) = %d, want %d", c.err, got, c.want)
		}
	}
}

func TestParseShape(t *testing.T) {
	for in, want := range map[string][3]int{"100x77x130": {100, 77, 130}, "1X2X3": {1, 2, 3}, "4×5×6": {4, 5, 6}} {
		m, k, n, err := parseShape(in)
		if err != nil || [3]int{m, k, n} != want {
			t.Errorf("parseShape(%q) = %d,%d,%d,%v", in, m, k, n, err)
		}
	}
}

// needGL skips (or, with GLMUL_REQUIRE_GL=1, fails) when no EGL context can
// be had, and returns the device's info.
func needGL(t *testing.T) glcompute.Info {
	t.Helper()
	d, err := glcompute.Open(&glcompute.Options{Backend: glcompute.BackendEGL})
	if err != nil {
		if os.Getenv("GLMUL_REQUIRE_GL") == "1" {
			t.Fatalf("no OpenGL context and GLMUL_REQUIRE_GL=1: %v", err)
		}
		t.Skipf("no OpenGL context: %v", err)
	}
	defer d.Release()
	return d.Info()
}

func TestMultiplyText(t *testing.T) {
	needGL(t)
	code, stdout, stderr := glmul("-n", "70", "-reps", "2", "-backend", "egl", "-kernel", "tiled32")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	for _, want := range []string{"A 70×70, B 70×70", "OpenGL", "tiled32: 3×3 work groups in 1 dispatch", "GFLOPS", "validate   full: ok"} {
		if !strings.Contains(stdout, want) {
			t.Errorf("output lacks %q:\n%s", want, stdout)
		}
	}
}

func TestMultiplyJSONManyDispatches(t *testing.T) {
	needGL(t)
	code, stdout, stderr := glmul("-shape", "33x1x65", "-kernel", "tiled32", "-max-groups", "1", "-reps", "3", "-format", "json", "-backend", "egl", "-validate", "full")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	var r struct {
		M, K, N    int
		Timings    measure.Timings
		Validation struct {
			Mode string
			OK   bool
		}
		Summary report.Summary
	}
	if err := json.Unmarshal([]byte(stdout), &r); err != nil {
		t.Fatalf("%v\n%s", err, stdout)
	}
	// 33 rows, 65 columns: 2×3 groups of 32×32, one per dispatch.
	if r.M != 33 || r.K != 1 || r.N != 65 || r.Timings.Dispatches != 6 || len(r.Timings.Compute) != 3 {
		t.Errorf("shape %d×%d×%d, %d dispatches, %d runs", r.M, r.K, r.N, r.Timings.Dispatches, len(r.Timings.Compute))
	}
	if !r.Validation.OK || r.Validation.Mode != "full" || !(r.Summary.GFLOPSMean > 0) {
		t.Errorf("validation %+v, GFLOPS %v", r.Validation, r.Summary.GFLOPSMean)
	}
}

func TestMultiplyCSV(t *testing.T) {
	needGL(t)
	code, stdout, stderr := glmul("-shape", "31x40x3", "-reps", "1", "-format", "csv", "-backend", "egl", "-validate", "freivalds")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	rows, err := csv.NewReader(strings.NewReader(stdout)).ReadAll()
	if err != nil || len(rows) != 2 || len(rows[0]) != len(report.CSVHeader) || len(rows[1]) != len(rows[0]) {
		t.Fatalf("CSV %v %q", err, stdout)
	}
	get := func(col string) string {
		for i, h := range rows[0] {
			if h == col {
				return rows[1][i]
			}
		}
		t.Fatalf("no column %s", col)
		return ""
	}
	if get("m") != "31" || get("k") != "40" || get("n") != "3" || get("valid") != "true" || get("validation") != "freivalds" {
		t.Errorf("CSV row %v", rows[1])
	}
}

// TestBeyondSSBOLimit: a product over one binding runs in panels with the
// fast kernel (K too, in panels that add up: it was refused), and is
// refused early, with the reason, with tiled32.
func TestBeyondSSBOLimit(t *testing.T) {
	info := needGL(t)
	n := int(math.Sqrt(float64(info.MaxSSBOBlockSize/4))) + 1
	code, stdout, stderr := glmul("-n", fmt.Sprint(n), "-kernel", "tiled32", "-backend", "egl")
	if code != 1 || stdout != "" || !strings.Contains(stderr, "does not fit one shader storage binding") || !strings.Contains(stderr, "use fast") {
		t.Fatalf("-n %d -kernel tiled32: exit %d, stderr %q", n, code, stderr)
	}
	code, stdout, stderr = glmul("-shape", "300x70x310", "-kernel", "fast:64x64x8_8x4", "-max-binding", "24KiB", "-max-gpu-mem", "120KiB",
		"-validate", "full", "-format", "json", "-backend", "egl")
	var r struct {
		Timings struct {
			Panels string `json:"panels"`
		} `json:"timings"`
		Validation struct{ OK bool } `json:"validation"`
	}
	if code != 0 || json.Unmarshal([]byte(stdout), &r) != nil || !strings.Contains(r.Timings.Panels, "A streamed") || !r.Validation.OK {
		t.Fatalf("paneled product: exit %d, %s\n%s", code, stderr, stdout)
	}
	code, stdout, stderr = glmul("-shape", "3x20001x5", "-kernel", "fast:64x64x8_8x4", "-max-binding", "64KiB", "-validate", "full", "-format", "json", "-backend", "egl")
	if r.Validation.OK = false; code != 0 || json.Unmarshal([]byte(stdout), &r) != nil || !strings.Contains(r.Timings.Panels, "K in 10 panels") || !r.Validation.OK {
		t.Fatalf("K in panels: exit %d, %s\n%s", code, stderr, stdout)
	}
	code, stdout, stderr = glmul("-n", "70", "-mapped", "-validate", "full", "-backend", "egl")
	if code != 0 || !strings.Contains(stdout, "validate   full: ok") {
		t.Fatalf("-mapped: exit %d, %s\n%s", code, stderr, stdout)
	}
	if code, _, stderr := glmul("-n", "3", "-max-gpu-mem", "lots"); code != 2 || !strings.Contains(stderr, "want a size") {
		t.Errorf("-max-gpu-mem lots: exit %d, %q", code, stderr)
	}
}

// TestMissingGL43 runs glmul, and glmul devices, where Mesa offers only
// OpenGL 4.1, as macOS does (and OpenGL ES 3.0, without compute shaders).
func TestMissingGL43(t *testing.T) {
	if os.Getenv("GLMUL_TEST_CHILD") == "1" {
		code, _, stderr := glmul("-n", "8", "-backend", "egl")
		fmt.Printf("exit=%d\n%s", code, stderr)
		code, stdout, stderr := glmul("devices")
		fmt.Printf("devices-exit=%d\n%s%s", code, stdout, stderr)
		return
	}
	info := needGL(t)
	if !strings.Contains(info.Version, "Mesa") {
		t.Skipf("needs Mesa's MESA_GL_VERSION_OVERRIDE; driver %q", info.Version)
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestMissingGL43$")
	cmd.Env = append(os.Environ(), "GLMUL_TEST_CHILD=1", "MESA_GL_VERSION_OVERRIDE=4.1", "MESA_GLES_VERSION_OVERRIDE=3.0")
	out, err := cmd.CombinedOutput()
	var ee *exec.ExitError
	if err != nil && !errors.As(err, &ee) {
		t.Fatal(err)
	}
	s := string(out)
	if !strings.Contains(s, "exit=1") || !strings.Contains(s, "OpenGL 4.3 core with compute shaders is needed") || !strings.Contains(s, `"4.1`) {
		t.Fatalf("child output:\n%s", s)
	}
	if !strings.Contains(s, "devices-exit=1") || !strings.Contains(s, "        no: ") || !strings.Contains(s, "no context qualifies") {
		t.Fatalf("glmul devices under OpenGL 4.1:\n%s", s)
	}
}

// TestDevices: every EGL device is listed, the one the tests run on
// qualifies with its renderer and limits, and -format json parses.
func TestDevices(t *testing.T) {
	info := needGL(t)
	code, stdout, stderr := glmul("devices")
	if code != 0 || !strings.Contains(stdout, "yes: ") || !strings.Contains(stdout, info.Renderer) || !strings.Contains(stdout, "limits: work groups") {
		t.Fatalf("glmul devices: exit %d\n%s%s", code, stdout, stderr)
	}
	for _, d := range devgroup.Devices() {
		if !strings.Contains(stdout, "egl "+d) {
			t.Errorf("EGL device %q not listed:\n%s", d, stdout)
		}
	}
	code, stdout, _ = glmul("devices", "-format", "json")
	var reports []deviceReport
	if err := json.Unmarshal([]byte(stdout), &reports); code != 0 || err != nil || len(reports) == 0 {
		t.Fatalf("devices -format json: exit %d, %v:\n%s", code, err, stdout)
	}
	if code, _, stderr := glmul("devices", "-format", "xml"); code != 2 || !strings.Contains(stderr, "want text or json") {
		t.Errorf("-format xml: exit %d, %q", code, stderr)
	}
}

// FuzzParseShape: no -shape value panics, and an accepted one has three
// dimensions of at least 1.
func FuzzParseShape(f *testing.F) {
	for _, s := range []string{"100x77x130", "3×4×5", "1X1X1", "9999999999999999999x1x1", "x", "0x1x1", " 2 x3x 4"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		m, k, n, err := parseShape(s)
		if err == nil && (m < 1 || k < 1 || n < 1) {
			t.Fatalf("parseShape(%q) = %d, %d, %d", s, m, k, n)
		}
	})
}

func TestNoSuchDevice(t *testing.T) {
	needGL(t)
	if len(devgroup.Devices()) == 0 {
		t.Skip("EGL lists no devices here")
	}
	code, stdout, stderr := glmul("-n", "4", "-device", "99")
	if code != 2 || stdout != "" || !strings.Contains(stderr, "-device 99: EGL lists") {
		t.Fatalf("-device 99: exit %d, %q", code, stderr)
	}
}

// TestSubcommandUsagePointsToItsHelp: a subcommand's usage error names its
// own -h.
func TestSubcommandUsagePointsToItsHelp(t *testing.T) {
	for _, sub := range []string{"bench", "tune", "table", "mul"} {
		code, _, stderr := glmul(sub, "-no-such-flag")
		if code != 2 || !strings.Contains(stderr, "Run 'glmul "+sub+" -h' for usage.") {
			t.Errorf("%s -no-such-flag: exit %d, %q", sub, code, stderr)
		}
	}
}

// TestHostMemoryBounded: a product whose matrices cannot fit in memory is
// refused before anything is allocated (it used to crash the runtime).
func TestHostMemoryBounded(t *testing.T) {
	code, stdout, stderr := glmul("-n", "10000000")
	if code != 1 || stdout != "" || !strings.Contains(stderr, "GiB of host memory") {
		t.Fatalf("-n 10000000: exit %d, %q", code, stderr)
	}
}
