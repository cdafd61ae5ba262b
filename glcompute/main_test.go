package glcompute

import (
	"os"
	"runtime"
	"testing"

	_ "github.com/glmul/glmul/glcompute/glfw" // BackendGLFW in the tests
	"github.com/glmul/glmul/internal/xvfb"
)

// xvfbDisplay is the display of the Xvfb that TestMain started for the GLFW
// tests, or "" if none could start.
var xvfbDisplay string

func TestMain(m *testing.M) {
	stop := func() {}
	if runtime.GOOS != "windows" { // Windows (and Wine) windows need no X server of ours
		xvfbDisplay, stop = xvfb.Start("glcompute tests")
	}
	code := m.Run()
	stop()
	os.Exit(code)
}

// requireGL reports whether a missing context must fail the test.
func requireGL() bool { return os.Getenv("GLMUL_REQUIRE_GL") == "1" }

// openDevice opens a Device on backend for a test. Without a context it
// skips, or fails when GLMUL_REQUIRE_GL=1. The GLFW backend runs on the
// tests' Xvfb; the EGL backend runs with no display at all. On Windows
// (platformBackend) EGL's tests run on GLFW and OpenGL ES's skip: no EGL
// can exist there.
func openDevice(t testing.TB, backend Backend) *Device {
	t.Helper()
	return openDeviceWith(t, &Options{Backend: backend})
}

// openDeviceWith is openDevice with more Options.
func openDeviceWith(t testing.TB, o *Options) *Device {
	t.Helper()
	backend, impossible := platformBackend(o.Backend)
	if impossible != "" {
		t.Skip(impossible) // not a missing driver: no GL of this kind can exist here
	}
	switch {
	case backend == BackendGLFW && runtime.GOOS == "windows":
	case backend == BackendGLFW:
		if xvfbDisplay == "" {
			noGL(t, "no Xvfb display for the GLFW backend")
		}
		t.Setenv("DISPLAY", xvfbDisplay)
	case backend == BackendEGL || backend == BackendGLES:
		t.Setenv("DISPLAY", "")
		t.Setenv("WAYLAND_DISPLAY", "")
	}
	oo := *o
	oo.Backend = backend
	d, err := Open(&oo)
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

// onPlatform is the backend that runs a test asking for b here (see
// platformBackend): EGL's tests run on GLFW on Windows.
func onPlatform(b Backend) Backend {
	p, _ := platformBackend(b)
	return p
}

var backends = []Backend{BackendEGL, BackendGLFW, BackendGLES}

// tempDir is t.TempDir, except under Windows, where it is removed on a
// best-effort basis: Wine 8 lacks the call Go 1.26's RemoveAll makes there
// ("unlinkat ...: Invalid function"), which would fail the test.
func tempDir(t testing.TB) string {
	if runtime.GOOS != "windows" {
		return t.TempDir()
	}
	dir, err := os.MkdirTemp("", "glcompute-test-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	return dir
}
