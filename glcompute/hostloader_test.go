package glcompute

import (
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"testing"
	"unsafe"

	"github.com/go-gl/gl/v4.3-core/gl"

	"github.com/glmul/glmul/glcompute/internal/egl"
	"github.com/glmul/glmul/glcompute/internal/glw"
)

// TestHostLoaderKept: a host that loaded go-gl with its own loader keeps
// it: NewDeviceFromCurrent(nil) does not reload go-gl's process-wide
// pointers, which replaced the host's loader for all its later calls (the
// engine host's finding on every run). In a child process, where nothing
// of glmul's has loaded them first.
func TestHostLoaderKept(t *testing.T) {
	if os.Getenv("GLMUL_TEST_CHILD") == "hostloader" {
		runtime.LockOSThread()
		h, err := NewHeadlessContext(0)
		if err != nil {
			fmt.Printf("nocontext=%v\n", err)
			return
		}
		defer h.Release()
		hostCalls := 0
		if err := gl.InitWithProcAddrFunc(func(name string) unsafe.Pointer { hostCalls++; return egl.GetProcAddress(name) }); err != nil {
			fmt.Printf("hostinit=%v\n", err)
			return
		}
		reloads := 0
		initGoGL = func(p func(string) unsafe.Pointer) error { reloads++; return glw.Init(p) }
		d, err := NewDeviceFromCurrent(nil)
		if err != nil {
			fmt.Printf("error=%v\n", err)
			return
		}
		defer d.Release()
		fmt.Printf("hostcalls>0=%v reloads=%d renderer=%q\n", hostCalls > 0, reloads, d.Info().Renderer)
		return
	}
	if runtime.GOOS == "windows" {
		t.Skip("no HeadlessContext: EGL is not part of Windows")
	}
	openDevice(t, BackendEGL) // a context must exist for the test to mean anything
	cmd := exec.Command(os.Args[0], "-test.run=^TestHostLoaderKept$")
	cmd.Env = append(os.Environ(), "GLMUL_TEST_CHILD=hostloader", "DISPLAY=", "WAYLAND_DISPLAY=")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("child: %v\n%s", err, out)
	}
	if !strings.Contains(string(out), "hostcalls>0=true reloads=0 renderer=") || strings.Contains(string(out), `renderer=""`) {
		t.Fatalf("the host's loader was replaced, or no device:\n%s", out)
	}
}
