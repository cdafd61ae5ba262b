package main

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/glmul/glmul/glcompute"
	"github.com/glmul/glmul/internal/cause"
)

// TestHintsNameTheCause: where the environment, not the driver, keeps
// glmul from a context, the hint says so (issue 23, item 8): a Mesa
// override variable caps the version (unset it), and -backend glfw has no
// display (use -backend egl or xvfb-run). Each case runs in a child
// process: Mesa reads its overrides once per process.
func TestHintsNameTheCause(t *testing.T) {
	if os.Getenv("GLMUL_TEST_CHILD") == "hint" {
		code, _, stderr := glmul(strings.Fields(os.Getenv("GLMUL_TEST_ARGS"))...)
		fmt.Printf("exit=%d\n%s", code, stderr)
		return
	}
	info := needGL(t)
	for _, c := range []struct {
		env, args []string
		mesa      bool // Mesa's variables: skipped on other drivers
		want      []string
		not       string // the hint this case used to get
	}{
		{[]string{"MESA_GL_VERSION_OVERRIDE=3.3"}, []string{"-n", "64", "-backend", "egl"}, true,
			[]string{"hint: MESA_GL_VERSION_OVERRIDE=3.3 in the environment caps the version Mesa offers", "unset it"}, "a GPU driver from 2012"},
		{[]string{"MESA_GLSL_VERSION_OVERRIDE=130"}, []string{"-n", "64", "-backend", "egl"}, true,
			[]string{"hint: MESA_GLSL_VERSION_OVERRIDE=130 in the environment caps the version Mesa offers", "GLSL 4.30", "unset it"}, "a GPU driver from 2012"},
		{[]string{"MESA_GL_VERSION_OVERRIDE=3.3", "MESA_GLSL_VERSION_OVERRIDE=130"}, []string{"-n", "64", "-backend", "egl"}, true,
			[]string{"hint: MESA_GL_VERSION_OVERRIDE=3.3 and MESA_GLSL_VERSION_OVERRIDE=130 in the environment cap", "unset them"}, "a GPU driver from 2012"},
		{[]string{"MESA_GLES_VERSION_OVERRIDE=3.0"}, []string{"-n", "64", "-backend", "gles"}, true,
			[]string{"hint: MESA_GLES_VERSION_OVERRIDE=3.0 in the environment caps the version Mesa offers (OpenGL ES 3.1 is needed)", "unset it"}, "install an OpenGL 4.3 driver"},
		{nil, []string{"-n", "64", "-backend", "glfw"}, false,
			[]string{"neither DISPLAY nor WAYLAND_DISPLAY is set", "hint: -backend glfw needs a display (X11 or Wayland", "use -backend egl", "xvfb-run"}, "install an OpenGL 4.3 driver"},
	} {
		if c.mesa && !strings.Contains(info.Version, "Mesa") {
			t.Logf("%v: needs Mesa's override variables; driver %q", c.env, info.Version)
			continue
		}
		cmd := exec.Command(os.Args[0], "-test.run=^TestHintsNameTheCause$")
		for _, kv := range os.Environ() { // no display, no override but the case's
			name, _, _ := strings.Cut(kv, "=")
			if name != "DISPLAY" && name != "WAYLAND_DISPLAY" && !strings.HasPrefix(name, "MESA_") {
				cmd.Env = append(cmd.Env, kv)
			}
		}
		cmd.Env = append(cmd.Env, "GLMUL_TEST_CHILD=hint", "GLMUL_TEST_ARGS="+strings.Join(c.args, " "))
		cmd.Env = append(cmd.Env, c.env...)
		out, err := cmd.CombinedOutput()
		var ee *exec.ExitError
		if err != nil && !errors.As(err, &ee) {
			t.Fatal(err)
		}
		s := string(out)
		ok := strings.Contains(s, "exit=1\n") && !strings.Contains(s, c.not)
		for _, w := range c.want {
			ok = ok && strings.Contains(s, w)
		}
		if !ok {
			t.Errorf("%v glmul %v: want exit 1 and %q, not %q:\n%s", c.env, c.args, c.want, c.not, s)
		}
	}
}

// TestHintsOnWindows: on Windows no hint points at Debian packages, EGL or
// Xvfb (issue 26).
func TestHintsOnWindows(t *testing.T) {
	for _, err := range []error{
		cause.Mark(fmt.Errorf("%w: egl: EGL is not part of OpenGL on this platform", glcompute.ErrNoContext), cause.NoEGL),
		cause.Mark(fmt.Errorf("%w: glfw: no display: GLFW cannot make a window here", glcompute.ErrNoContext), cause.NoDisplay),
		cause.Mark(fmt.Errorf("%w: OpenGL 4.3 core with compute shaders is needed", glcompute.ErrUnsupported), cause.GLVersion),
	} {
		h := hintOn(err, "windows")
		if h == "" || strings.Contains(h, "make deps") || strings.Contains(h, "-backend egl") || strings.Contains(h, "xvfb") {
			t.Errorf("%v: hint %q", err, h)
		}
	}
}

// TestHintsFromCauses: the library's errors over the limits a flag sets
// carry their cause, and glmul names the flag to change; the hints came
// from the errors' text, which a reworded message silently broke.
func TestHintsFromCauses(t *testing.T) {
	needGL(t)
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"-kernel", "tiled32", "-max-binding", "64KiB"}, "hint: use -kernel fast"},
		{[]string{"-max-binding", "1KiB"}, "hint: raise -max-binding"},
		{[]string{"-max-gpu-mem", "16KiB"}, "hint: raise -max-gpu-mem"},
		{[]string{"-kernel", "fast:128x128x128_8x8"}, "hint: choose a smaller fast configuration"}, // 128 KiB of shared memory
	} {
		code, _, stderr := glmul(append([]string{"-n", "512", "-backend", "egl"}, c.args...)...)
		if code != 1 || !strings.Contains(stderr, c.want) {
			t.Errorf("glmul %v: exit %d, want 1 and %q in:\n%s", c.args, code, c.want, stderr)
		}
	}
	if h := hintOn(fmt.Errorf("%w: a message that names no cause", glcompute.ErrTooLarge), "linux"); h != "" {
		t.Errorf("an error without a cause: hint %q", h)
	}
}

// TestSplitOverGPUMemCap: -split-k with a -max-gpu-mem that holds A, B
// and C but not the split's workspace fails with exit 1, the reason and a
// hint naming both flags (the library counts the workspace against the
// cap; it once used it uncounted).
func TestSplitOverGPUMemCap(t *testing.T) {
	needGL(t)
	code, _, stderr := glmul("-n", "256", "-kernel", "fast", "-split-k", "4", "-max-gpu-mem", "800KiB", "-backend", "egl")
	for _, w := range []string{"split-K in 4 slices needs a workspace of 1.0 MiB", "hint: raise -max-gpu-mem, or drop -split-k"} {
		if code != 1 || !strings.Contains(stderr, w) {
			t.Errorf("exit %d, want 1 and %q in:\n%s", code, w, stderr)
		}
	}
}

// TestMappedOnGLES: -mapped where the context has no glBufferStorage (the
// ES context of Mesa here) fails with a hint to drop it or use desktop
// OpenGL (before: the library's error alone).
func TestMappedOnGLES(t *testing.T) {
	needGL(t)
	code, _, stderr := glmul("-n", "64", "-backend", "gles", "-mapped")
	if code == 0 {
		t.Skip("this ES context maps buffers persistently (EXT_buffer_storage): -mapped runs")
	}
	if code != 1 || !strings.Contains(stderr, "hint: -mapped needs glBufferStorage") {
		t.Errorf("exit %d:\n%s", code, stderr)
	}
}
