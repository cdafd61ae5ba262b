package glcompute

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	_ "github.com/glmul/glmul/glcompute/glfw" // BackendGLFW in the tests
)

// xvfbDisplay is the display of the Xvfb that TestMain started for the GLFW
// tests, or "" if none could start.
var xvfbDisplay string

func TestMain(m *testing.M) {
	stop := startXvfb()
	code := m.Run()
	stop()
	os.Exit(code)
}

// startXvfb starts a private Xvfb and returns a function that stops it.
// -displayfd makes Xvfb pick a free display number and print it.
func startXvfb() (stop func()) {
	path, err := exec.LookPath("Xvfb")
	if err != nil {
		fmt.Fprintln(os.Stderr, "glcompute tests: no Xvfb on PATH; the GLFW tests need it (make deps installs it)")
		return func() {}
	}
	r, w, err := os.Pipe()
	if err != nil {
		return func() {}
	}
	cmd := exec.Command(path, "-displayfd", "3", "-screen", "0", "64x64x24", "-nolisten", "tcp")
	cmd.ExtraFiles = []*os.File{w}
	if err := cmd.Start(); err != nil {
		fmt.Fprintln(os.Stderr, "glcompute tests: starting Xvfb:", err)
		return func() {}
	}
	w.Close()
	line := make(chan string, 1)
	go func() {
		s, _ := bufio.NewReader(r).ReadString('\n')
		line <- strings.TrimSpace(s)
	}()
	select {
	case n := <-line:
		if n != "" {
			xvfbDisplay = ":" + n
		}
	case <-time.After(20 * time.Second):
		fmt.Fprintln(os.Stderr, "glcompute tests: Xvfb gave no display within 20 s")
	}
	return func() {
		cmd.Process.Kill()
		cmd.Wait()
		r.Close()
	}
}

// requireGL reports whether a missing context must fail the test.
func requireGL() bool { return os.Getenv("GLMUL_REQUIRE_GL") == "1" }

// openDevice opens a Device on backend for a test. Without a context it
// skips, or fails when GLMUL_REQUIRE_GL=1. The GLFW backend runs on the
// tests' Xvfb; the EGL backend runs with no display at all.
func openDevice(t testing.TB, backend Backend) *Device {
	t.Helper()
	switch backend {
	case BackendGLFW:
		if xvfbDisplay == "" {
			noGL(t, "no Xvfb display for the GLFW backend")
		}
		t.Setenv("DISPLAY", xvfbDisplay)
	case BackendEGL, BackendGLES:
		t.Setenv("DISPLAY", "")
		t.Setenv("WAYLAND_DISPLAY", "")
	}
	d, err := Open(&Options{Backend: backend})
	if err != nil {
		noGL(t, err.Error())
	}
	t.Cleanup(d.Release)
	return d
}

func noGL(t testing.TB, why string) {
	t.Helper()
	if requireGL() {
		t.Fatalf("no OpenGL context and GLMUL_REQUIRE_GL=1: %s", why)
	}
	t.Skipf("no OpenGL context: %s", why)
}

var backends = []Backend{BackendEGL, BackendGLFW, BackendGLES}
