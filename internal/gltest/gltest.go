// Package gltest opens the GL device that packages outside glcompute test on:
// headless EGL (on Windows, GLFW's WGL), released when the test ends. Where no context can be made
// the test skips, except with GLMUL_REQUIRE_GL=1 (CI), where it fails.
package gltest

import (
	"errors"
	"os"
	"runtime"
	"testing"

	"github.com/glmul/glmul/glcompute"
	"github.com/glmul/glmul/internal/cause"
)

// Open returns a device for t, or skips (fails with GLMUL_REQUIRE_GL=1).
func Open(t testing.TB) *glcompute.Device {
	t.Helper()
	return open(t, backend)
}

// OpenES returns a device on an OpenGL ES context (BackendGLES), or skips
// where the platform has none (Windows: no EGL) and as Open does.
func OpenES(t testing.TB) *glcompute.Device {
	t.Helper()
	if runtime.GOOS == "windows" {
		t.Skip("OpenGL ES contexts come from EGL, which Windows' OpenGL lacks")
	}
	return open(t, glcompute.BackendGLES)
}

// OpenWith returns a device opened with o (its Backend "": Open's), or
// skips as Open does.
func OpenWith(t testing.TB, o glcompute.Options) *glcompute.Device {
	t.Helper()
	if o.Backend == "" {
		o.Backend = backend
	}
	return openWith(t, o)
}

func open(t testing.TB, b glcompute.Backend) *glcompute.Device {
	t.Helper()
	return openWith(t, glcompute.Options{Backend: b})
}

func openWith(t testing.TB, o glcompute.Options) *glcompute.Device {
	t.Helper()
	d, err := glcompute.Open(&o)
	if err != nil {
		if os.Getenv("GLMUL_REQUIRE_GL") == "1" {
			t.Fatal(err)
		}
		t.Skip(err)
	}
	t.Cleanup(d.Release)
	return d
}

// Borrowed calls f with a Device borrowed (NewDeviceFromCurrent) from a
// headless context made current on f's thread, locked, as an engine's
// would be; skips or fails as Open does where none can be made, and
// skips where the platform has no EGL (Windows).
func Borrowed(t *testing.T, f func(d *glcompute.Device)) {
	t.Helper()
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	hc, err := glcompute.NewHeadlessContext(0)
	if errors.Is(err, cause.NoEGL) {
		t.Skip(err)
	}
	if err != nil {
		if os.Getenv("GLMUL_REQUIRE_GL") == "1" {
			t.Fatal(err)
		}
		t.Skip(err)
	}
	defer hc.Release()
	d, err := glcompute.NewDeviceFromCurrent(nil)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Release()
	f(d)
}
