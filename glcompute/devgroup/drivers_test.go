package devgroup

import (
	"os"
	"runtime"
	"strings"
	"testing"

	"gonum.org/v1/gonum/blas/blas32"

	"github.com/glmul/glmul/glcompute"
	_ "github.com/glmul/glmul/glcompute/glfw"
	"github.com/glmul/glmul/glcompute/stream" // zink's context comes through GLFW (GLX)
	"github.com/glmul/glmul/internal/conformance"
	"github.com/glmul/glmul/internal/gltest"
	"github.com/glmul/glmul/internal/xvfb"
)

// display is the Xvfb TestMain started for the GLFW context of
// TestGroupTwoDrivers, or "".
var display string

func TestMain(m *testing.M) {
	stop := func() {}
	if runtime.GOOS != "windows" {
		display, stop = xvfb.Start("devgroup tests")
	}
	code := m.Run()
	stop()
	os.Exit(code)
}

// TestGroupTwoDrivers groups two different OpenGL implementations of
// Mesa, llvmpipe (headless EGL) and zink over lavapipe (GLX on Xvfb, made
// with Mesa's driver override set), and runs the group's conformance
// shapes: both take panels, each with its own kernels and plan, and C is
// right. Where the first device is not llvmpipe (a GPU), or on Windows,
// there is no second Mesa driver to make: it skips.
func TestGroupTwoDrivers(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("zink and llvmpipe side by side need Mesa's EGL and GLX")
	}
	d1 := gltest.Open(t)
	if !strings.Contains(d1.Info().Renderer, "llvmpipe") || strings.Contains(d1.Info().Renderer, "zink") {
		t.Skipf("the default device is %q, not Mesa's llvmpipe", d1.Info().Renderer)
	}
	if display == "" {
		t.Fatal("no Xvfb display for zink's GLX context")
	}
	t.Setenv("DISPLAY", display)
	t.Setenv("MESA_LOADER_DRIVER_OVERRIDE", "zink") // read as the context is made
	t.Setenv("LIBGL_ALWAYS_SOFTWARE", "1")
	d2, err := glcompute.Open(&glcompute.Options{Backend: glcompute.BackendGLFW})
	if err != nil {
		t.Fatalf("zink through GLFW: %v", err)
	}
	defer d2.Release()
	if !strings.Contains(d2.Info().Renderer, "zink") {
		t.Fatalf("the second device is %q, want zink", d2.Info().Renderer)
	}
	g := New(d1, d2)
	g.minCols = 16
	took := [2]int{}
	conformance.Run(t, groupShapes, func(c, a, b blas32.General) error {
		gt, err := g.Mul(c, a, b, nil)
		for i, sh := range gt.Devices {
			took[i] += sh.Panels
			if sh.Err != nil {
				t.Errorf("%d×%d×%d: device %d failed: %v", a.Rows, a.Cols, b.Cols, i+1, sh.Err)
			}
		}
		return err
	})
	if took[0] == 0 || took[1] == 0 {
		t.Errorf("panels taken: llvmpipe %d, zink %d; want both to take some", took[0], took[1])
	}
	// The same two drivers streaming products by panels of rows
	// (stream.MulDevices), each with its own kernel.
	took = [2]int{}
	conformance.Run(t, groupShapes, func(c, a, b blas32.General) error {
		row := 4 * int64((a.Cols+3)/4*4+(b.Cols+3)/4*4)
		r, err := stream.MulDevices(g.Devices(), &conformance.RowsInto{C: c}, conformance.Rows{M: a}, conformance.Rows{M: b}, &stream.Options{PanelBytes: row * 64})
		for i, sh := range r.Devices {
			took[i] += sh.Panels
		}
		return err
	})
	if took[0] == 0 || took[1] == 0 {
		t.Errorf("streamed panels taken: llvmpipe %d, zink %d; want both to take some", took[0], took[1])
	}
}
