package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"runtime"

	"github.com/glmul/glmul/cmd/glmul/internal/measure"
	"github.com/glmul/glmul/glcompute"
	"github.com/glmul/glmul/glcompute/devgroup"
	"github.com/glmul/glmul/glcompute/tuning"
)

// deviceReport is one context glmul devices tried: which, and either the
// device's Info or why it does not qualify.
type deviceReport struct {
	Backend   string          `json:"backend"`
	Device    int             `json:"device,omitempty"` // EGL device index; 0 for GLFW
	Name      string          `json:"name"`
	Qualifies bool            `json:"qualifies"`
	Why       string          `json:"why,omitempty"`
	Info      *glcompute.Info `json:"info,omitempty"`
}

func runDevices(args []string, stdout, stderr io.Writer) error {
	fs := newCommand("glmul devices", `glmul devices opens an OpenGL context and an OpenGL ES one on every EGL
device, and a context through GLFW where a display exists, and says for each
whether it qualifies (OpenGL 4.3 core or OpenGL ES 3.1, with compute shaders)
or why not, with its version, vendor, renderer and limits. -device N of the
other commands picks EGL device N; -backend gles the ES context.`, []string{"[-format text|json]"}, stdout)
	format := fs.String("format", "text", "`text` or json")
	if err := parseQuietly(fs, args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return usagef("devices: unexpected argument %q", fs.Arg(0))
	}
	if *format != "text" && *format != "json" {
		return usagef("devices: -format %q: want text or json", *format)
	}
	reports := probeDevices()
	if *format == "json" {
		e := json.NewEncoder(stdout)
		e.SetIndent("", "  ")
		if err := e.Encode(reports); err != nil {
			return err
		}
	} else if err := writeDevices(stdout, reports); err != nil {
		return err
	}
	for _, r := range reports {
		if r.Qualifies {
			return nil
		}
	}
	fmt.Fprintln(stderr, "glmul devices: no context qualifies: install a driver with OpenGL 4.3 (Mesa 20 or later gives llvmpipe on the CPU)")
	return errReported
}

// probeDevices opens and releases a context on each EGL device, and on
// GLFW where DISPLAY or WAYLAND_DISPLAY is set; on Windows, GLFW's WGL
// context alone.
func probeDevices() []deviceReport {
	var out []deviceReport
	try := func(r deviceReport, o glcompute.Options) {
		d, err := glcompute.Open(&o)
		if err != nil {
			r.Why = err.Error()
		} else {
			info := d.Info()
			r.Qualifies, r.Info = true, &info
			d.Release()
		}
		out = append(out, r)
	}
	if runtime.GOOS == "windows" { // WGL only: EGL is no part of Windows' OpenGL
		try(deviceReport{Backend: "glfw", Name: "hidden GLFW window (WGL)"}, glcompute.Options{Backend: glcompute.BackendGLFW})
		return out
	}
	devs := devgroup.Devices()
	for i, name := range devs {
		try(deviceReport{Backend: "egl", Device: i + 1, Name: name}, glcompute.Options{Backend: glcompute.BackendEGL, Device: i + 1})
		try(deviceReport{Backend: "gles", Device: i + 1, Name: name}, glcompute.Options{Backend: glcompute.BackendGLES, Device: i + 1})
	}
	if len(devs) == 0 {
		try(deviceReport{Backend: "egl", Name: "EGL without device enumeration (Mesa's surfaceless platform, if any)"}, glcompute.Options{Backend: glcompute.BackendEGL})
	}
	switch { // where -backend auto tries GLFW
	case os.Getenv("DISPLAY") != "":
		try(deviceReport{Backend: "glfw", Name: "hidden GLFW window on DISPLAY " + os.Getenv("DISPLAY")}, glcompute.Options{Backend: glcompute.BackendGLFW})
	case os.Getenv("WAYLAND_DISPLAY") != "":
		try(deviceReport{Backend: "glfw", Name: "hidden GLFW window on WAYLAND_DISPLAY " + os.Getenv("WAYLAND_DISPLAY")}, glcompute.Options{Backend: glcompute.BackendGLFW})
	}
	return out
}

// writeDevices prints the reports as text.
func writeDevices(w io.Writer, reports []deviceReport) error {
	for _, r := range reports {
		if !r.Qualifies {
			fmt.Fprintf(w, "%s %s\n        no: %s\n", r.Backend, r.Name, r.Why)
			continue
		}
		i := r.Info
		fmt.Fprintf(w, "%s %s\n        yes: %s | %s | %s | %s\n", r.Backend, r.Name, i.Vendor, i.Renderer, measure.API(*i), measure.ShadingLanguage(*i))
		fmt.Fprintf(w, "        limits: work groups %d×%d×%d, %d invocations a group, %d bytes shared, %.0f MiB a storage block, timer %d bits\n",
			i.MaxWorkGroupCount[0], i.MaxWorkGroupCount[1], i.MaxWorkGroupCount[2], i.MaxWorkGroupInvocations,
			i.MaxSharedMemory, float64(i.MaxSSBOBlockSize)/(1<<20), i.TimerBits)
		natural := ""
		if i.NaturalKernel != "" {
			natural = fmt.Sprintf("; with A as it is (N < %d, panels): %s", tuning.TransposedAMinN, i.NaturalKernel)
		}
		if i.NaturalWideKernel != "" {
			natural += fmt.Sprintf("; the large ones (from %d multiply-adds, where its waves finish first): %s", int64(tuning.WideNaturalMinMACs), i.NaturalWideKernel)
		}
		if _, err := fmt.Fprintf(w, "        kernel: %s (%s)%s\n", i.DefaultKernel, i.DefaultKernelSource, natural); err != nil {
			return err
		}
	}
	return nil
}
