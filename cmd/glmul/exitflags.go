package main

import (
	"encoding/json"
	"fmt"
	"io"
	"runtime"
	"runtime/debug"
	"strings"

	"github.com/glmul/glmul/cmd/glmul/internal/report"
	"github.com/glmul/glmul/glcompute/devgroup"
	"github.com/glmul/glmul/glcompute/tuner"
	"github.com/glmul/glmul/glcompute/tuning"
	"github.com/glmul/glmul/internal/outfile"
)

// printAndExit runs the main command's flags that print and exit:
// -version, -list-devices and -dump-program, in that order of precedence,
// as text or, with -format json, as one JSON object on stdout.
func printAndExit(o *options, stdout io.Writer) error {
	flag := "-version"
	switch {
	case o.listDevices && !o.version:
		flag = "-list-devices"
	case o.dumpProgram != "" && !o.version && !o.listDevices:
		flag = "-dump-program"
	}
	format, err := report.CheckFormat(o.format, report.Text, report.JSON)
	if err != nil {
		return usagef("-format %s: %s prints text or json", o.format, flag)
	}
	switch flag {
	case "-version":
		if format == report.JSON {
			return writeJSON(stdout, currentVersion())
		}
		_, err := fmt.Fprintln(stdout, currentVersion())
		return err
	case "-list-devices":
		return listDevices(format, stdout)
	}
	if o.typ == typeF64 {
		return usagef("-dump-program dumps a float32 kernel (-kernel); the float64 kernels' binaries are not dumped yet: drop -type f64")
	}
	if o.dumpProgram == outfile.Stdout && format == report.JSON {
		return usagef("-dump-program - writes the program binary to standard output, where -format json would write its report too: name a file, or use -format text")
	}
	return dumpProgram(o, format, stdout)
}

// writeJSON writes v to w as indented JSON.
func writeJSON(w io.Writer, v any) error {
	e := json.NewEncoder(w)
	e.SetIndent("", "  ")
	return e.Encode(v)
}

// versionInfo is what -version prints.
type versionInfo struct {
	Version  string `json:"version"`
	Revision string `json:"revision,omitempty"` // the git commit built, where known (12 digits)
	Go       string `json:"go"`
	OS       string `json:"os"`
	Arch     string `json:"arch"`
}

// currentVersion is this build's versionInfo.
func currentVersion() versionInfo {
	v := versionInfo{Version: version, Go: runtime.Version(), OS: runtime.GOOS, Arch: runtime.GOARCH}
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, s := range bi.Settings {
			if s.Key == "vcs.revision" && len(s.Value) >= 12 {
				v.Revision = s.Value[:12]
			}
		}
	}
	return v
}

// String is -version's text: "glmul 0.1.0 0123456789ab (go1.26, linux/amd64)".
func (v versionInfo) String() string {
	rev := ""
	if v.Revision != "" {
		rev = " " + v.Revision
	}
	return fmt.Sprintf("glmul %s%s (%s, %s/%s)", v.Version, rev, v.Go, v.OS, v.Arch)
}

// versionString is -version's text for this build.
func versionString() string { return currentVersion().String() }

// eglDevice is one line of -list-devices.
type eglDevice struct {
	Device int    `json:"device"` // what -device selects
	Name   string `json:"name"`
}

// noEGLDevices is -list-devices' note where EGL lists none.
const noEGLDevices = "EGL lists no devices (EGL_EXT_device_enumeration missing); -backend egl uses Mesa's surfaceless platform if present"

// listDevices prints the EGL devices that -device selects.
func listDevices(format report.Format, stdout io.Writer) error {
	lines := devgroup.Devices()
	if format == report.JSON {
		v := struct {
			Devices []eglDevice `json:"egl_devices"`
			Note    string      `json:"note,omitempty"`
		}{Devices: []eglDevice{}}
		for i, d := range lines {
			_, name, _ := strings.Cut(d, ": ") // "1: software (Mesa)"
			v.Devices = append(v.Devices, eglDevice{Device: i + 1, Name: name})
		}
		if len(lines) == 0 {
			v.Note = noEGLDevices
		}
		return writeJSON(stdout, v)
	}
	if len(lines) == 0 {
		lines = []string{noEGLDevices}
	}
	_, err := fmt.Fprintln(stdout, strings.Join(lines, "\n"))
	return err
}

// dumpProgram writes the kernel's program binary to o.dumpProgram
// (through outfile: "-" is stdout, a device is written in place, a link's
// target is replaced), and says so on stdout (in format) unless the
// binary went there.
func dumpProgram(o *options, format report.Format, stdout io.Writer) error {
	if err := tuning.CheckKernel(o.kernel); err != nil {
		return usagef("-kernel: %v", err)
	}
	if err := o.dev.check(); err != nil {
		return err
	}
	if err := outfile.Check(o.dumpProgram); err != nil {
		return usagef("-dump-program: %v", err)
	}
	dev, err := o.dev.open()
	if err != nil {
		return err
	}
	defer dev.Release()
	data, err := tuner.Of(dev).ProgramBinary(o.kernel)
	if err != nil {
		return err
	}
	if err := outfile.Write(o.dumpProgram, stdout, data); err != nil {
		return err
	}
	switch {
	case o.dumpProgram == outfile.Stdout:
		return nil
	case format == report.JSON:
		return writeJSON(stdout, struct {
			Kernel     string `json:"kernel"`
			Bytes      int    `json:"bytes"`
			File       string `json:"file"`
			FileQuoted string `json:"file_quoted,omitempty"` // a file name not UTF-8
		}{o.kernel, len(data), o.dumpProgram, report.QuotePath(o.dumpProgram)})
	}
	_, err = fmt.Fprintf(stdout, "wrote %d bytes of %s's program binary to %s\n", len(data), o.kernel, o.dumpProgram)
	return err
}
