package egl

import (
	"errors"
	"fmt"
	"os"
	"runtime"
	"strings"
	"testing"
)

// TestDevicesAndContext lists the EGL devices and makes a 4.3 core context
// on each by index, as -device N does. Without EGL it skips, unless
// GLMUL_REQUIRE_GL=1.
func TestDevicesAndContext(t *testing.T) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	c, err := NewContext(0, 4, 3)
	if err != nil {
		if os.Getenv("GLMUL_REQUIRE_GL") == "1" {
			t.Fatal(err)
		}
		t.Skip(err)
	}
	if err := c.MakeCurrent(); err != nil {
		t.Fatal(err)
	}
	c.Release()
	c.Release() // idempotent
	devs := Devices()
	for _, d := range devs {
		if !strings.HasPrefix(d.String(), fmt.Sprintf("%d: ", d.Index)) || d.Index < 1 {
			t.Errorf("device %+v prints as %q", d, d.String())
		}
		c, err := NewContext(d.Index, 4, 3)
		if err != nil {
			t.Errorf("device %s: %v", d, err)
			continue
		}
		if c.Platform != "device" || c.Device.Index != d.Index {
			t.Errorf("asked for device %d, got %s %d", d.Index, c.Platform, c.Device.Index)
		}
		c.Release()
	}
	if _, err := NewContext(len(devs)+1, 4, 3); len(devs) > 0 && !errors.Is(err, ErrNoContext) {
		t.Errorf("device %d of %d: %v, want ErrNoContext", len(devs)+1, len(devs), err)
	}
}

func TestErrorName(t *testing.T) {
	if errorName(0x3009) != "EGL_BAD_MATCH" || !strings.Contains(errorName(0x1234), "0x1234") {
		t.Fatal(errorName(0x3009), errorName(0x1234))
	}
}
