// Package gltest opens the GL device that packages outside glcompute test on:
// headless EGL, released when the test ends. Where no context can be made
// the test skips, except with GLMUL_REQUIRE_GL=1 (CI), where it fails.
package gltest

import (
	"os"
	"testing"

	"github.com/glmul/glmul/glcompute"
)

// Open returns a device for t, or skips (fails with GLMUL_REQUIRE_GL=1).
func Open(t testing.TB) *glcompute.Device {
	t.Helper()
	d, err := glcompute.Open(&glcompute.Options{Backend: glcompute.BackendEGL})
	if err != nil {
		if os.Getenv("GLMUL_REQUIRE_GL") == "1" {
			t.Fatal(err)
		}
		t.Skip(err)
	}
	t.Cleanup(d.Release)
	return d
}
