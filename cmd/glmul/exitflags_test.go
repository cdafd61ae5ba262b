package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestPrintAndExitJSON: -version, -list-devices and -dump-program print
// JSON with -format json (they printed text whatever -format said);
// -dump-program - with it, and -format csv with any of them, are usage
// errors that say why.
func TestPrintAndExitJSON(t *testing.T) {
	var v struct{ Version, Go, OS, Arch string }
	code, stdout, stderr := glmul("-version", "-format", "json")
	if err := json.Unmarshal([]byte(stdout), &v); code != 0 || err != nil || v.Version != version || v.Go == "" || v.OS == "" || v.Arch == "" {
		t.Errorf("-version -format json: exit %d, %v, %q, %q", code, err, stdout, stderr)
	}
	var devs struct {
		Devices []struct {
			Device int
			Name   string
		} `json:"egl_devices"`
		Note string
	}
	code, stdout, stderr = glmul("-list-devices", "-format", "json")
	if err := json.Unmarshal([]byte(stdout), &devs); code != 0 || err != nil || devs.Devices == nil || len(devs.Devices) == 0 && devs.Note == "" {
		t.Errorf("-list-devices -format json: exit %d, %v, %q, %q", code, err, stdout, stderr)
	}
	for i, d := range devs.Devices {
		if d.Device != i+1 || d.Name == "" || strings.HasPrefix(d.Name, "1:") {
			t.Errorf("-list-devices -format json: device %d is %+v", i+1, d)
		}
	}
	for _, args := range [][]string{{"-version"}, {"-list-devices"}, {"-dump-program", "x.bin"}} {
		code, stdout, stderr := glmul(append(args, "-format", "csv")...)
		if code != 2 || stdout != "" || !strings.Contains(stderr, args[0]+" prints text or json") {
			t.Errorf("%v -format csv: exit %d, %q, %q", args, code, stdout, stderr)
		}
	}
	if code, _, stderr := glmul("-dump-program", "x.bin", "-type", "f64"); code != 2 || !strings.Contains(stderr, "drop -type f64") {
		t.Errorf("-dump-program -type f64: exit %d, %q; want 2, the float64 kernels not dumped", code, stderr)
	}
	code, stdout, stderr = glmul("-dump-program", "-", "-format", "json")
	if code != 2 || stdout != "" || !strings.Contains(stderr, "-dump-program - writes the program binary to standard output, where -format json") {
		t.Errorf("-dump-program - -format json: exit %d, %q, %q", code, stdout, stderr)
	}
	needGL(t)
	out := filepath.Join(t.TempDir(), "prog.bin")
	code, stdout, stderr = glmul("-backend", "egl", "-kernel", "tiled32", "-dump-program", out, "-format", "json")
	var d struct {
		Kernel, File string
		Bytes        int
	}
	bin, _ := os.ReadFile(out)
	if err := json.Unmarshal([]byte(stdout), &d); code != 0 || err != nil || d.Kernel != "tiled32" || d.File != out || d.Bytes == 0 || d.Bytes != len(bin) {
		t.Errorf("-dump-program -format json: exit %d, %v, %q, %q", code, err, stdout, stderr)
	}
}
