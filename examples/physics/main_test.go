package main

import (
	"bytes"
	"os"
	"runtime"
	"strings"
	"testing"
	"time"
)

// TestHeadlessSteps runs the example headless for a few steps: the engine's
// state must survive every step and the transforms must match float64.
func TestHeadlessSteps(t *testing.T) {
	// The context is current on one OS thread: stay on it (main's init
	// locks only the main goroutine).
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	t.Setenv("DISPLAY", "")
	var out bytes.Buffer
	err := run([]string{"-headless", "-steps", "20", "-bodies", "3000"}, &out)
	if err != nil {
		if strings.Contains(err.Error(), "no OpenGL context") && os.Getenv("GLMUL_REQUIRE_GL") != "1" {
			t.Skip(err)
		}
		t.Fatalf("%v\n%s", err, out.String())
	}
	if !strings.Contains(out.String(), "20 steps") {
		t.Fatalf("output:\n%s", out.String())
	}
	// A mean "GPU time" under a microsecond is llvmpipe's ≈0 timer, which
	// must be called that, not reported as a time.
	if i := strings.Index(out.String(), "mean GPU time per step "); i >= 0 {
		if v, err := time.ParseDuration(strings.Fields(out.String()[i+len("mean GPU time per step "):])[0]); err == nil && v < time.Microsecond {
			t.Fatalf("an implausible GPU time was reported:\n%s", out.String())
		}
	}
}

// TestOptions: bad flags are errors (-steps -1 ran no step and passed).
func TestOptions(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"-steps", "-1"}, "-steps must be 0"},
		{[]string{"-bodies", "0"}, "-bodies must be at least 1"},
		{[]string{"-headless", "extra"}, `unexpected argument "extra"`},
	} {
		if _, err := parseOptions(c.args); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v: %v, want %q", c.args, err, c.want)
		}
	}
	if o, err := parseOptions([]string{"-headless"}); err != nil || o.steps != 200 {
		t.Errorf("-headless: %+v, %v; want 200 steps", o, err)
	}
}
