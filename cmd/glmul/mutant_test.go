package main

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// mutantCase is one product of TestWrongKernelFails.
type mutantCase struct {
	kernel, shape, mode string
	splitK              int
}

func (c mutantCase) args() []string {
	a := []string{"-shape", c.shape, "-kernel", c.kernel, "-validate", c.mode, "-reps", "1", "-warmup", "0",
		"-format", "json", "-program-cache", ""}
	if c.splitK > 0 {
		a = append(a, "-split-k", fmt.Sprint(c.splitK))
	}
	return a
}

// mutantCases: the device's default kernel (on llvmpipe the cpu family,
// on NVIDIA the buffer-texture one), the paper's and a storage-buffer
// fast kernel, at K = 1 to 65536 (the default kernel to 2²⁰: llvmpipe
// runs the others' long K on one thread, 8-18 s), the long ones split
// along K too, each with both checks when mode is "" (else that mode
// alone). 2²⁴ does not fit llvmpipe's 128 MiB storage bindings;
// validate's own tests take it.
func mutantCases(mode string) []mutantCase {
	var cs []mutantCase
	shapes := []string{"33x1x35", "33x4097x35", "9x65536x7", "3x1048576x2"}
	modes := []string{"full", "freivalds"}
	if mode != "" {
		modes = []string{mode}
	}
	for _, kernel := range []string{"fast", "tiled32", "fast:64x64x8_4x4"} {
		for i, shape := range shapes {
			if i == 3 && kernel != "fast" {
				continue
			}
			for _, mode := range modes {
				cs = append(cs, mutantCase{kernel, shape, mode, 0})
				if kernel != "tiled32" && i >= 2 {
					cs = append(cs, mutantCase{kernel, shape, mode, 3})
				}
			}
		}
	}
	return cs
}

// validated runs glmul with args and returns its exit status, whether its
// JSON report says the validation passed, and its standard error.
func validated(args []string) (code int, ok bool, stderr string) {
	code, stdout, stderr := glmul(args...)
	var r struct{ Validation struct{ OK bool } }
	if err := json.Unmarshal([]byte(stdout), &r); err != nil {
		return code, false, stderr + " (no JSON report: " + err.Error() + ")"
	}
	return code, r.Validation.OK, stderr
}

// mutateShaders writes into dir the kernels' shader files with every
// store of an accumulator into C scaled by f: a kernel wrong by f−1.
func mutateShaders(t *testing.T, dir string, f string) {
	store := regexp.MustCompile(`= (acc\[i\]\[j\]|Rsub);`)
	for _, name := range []string{"cpu.comp", "fast.comp", "tiled32.comp"} {
		b, err := os.ReadFile(filepath.Join("..", "..", "shaders", name))
		if err != nil {
			t.Fatal(err)
		}
		src := string(b)
		out := store.ReplaceAllString(src, "= $1 * "+f+";")
		if out == src {
			t.Fatalf("%s: no store of an accumulator found to mutate", name)
		}
		if err := os.WriteFile(filepath.Join(dir, name), []byte(out), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// TestWrongKernelFails is issue 43's proof on a real driver: kernels
// whose every result is scaled by 1.01 (through GLMUL_SHADER_DIR,
// in a child process: shaders are read once a process) fail both checks
// at every K, and the kernels as they are pass them. Before, the
// worst-case bound passed a kernel wrong by 50% from K = 2²⁰ on.
func TestWrongKernelFails(t *testing.T) {
	needGL(t)
	if os.Getenv("GLMUL_MUTANT_CHILD") != "" {
		for _, c := range mutantCases("") {
			code, ok, stderr := validated(c.args())
			res, _ := json.Marshal(map[string]any{"case": fmt.Sprint(c), "code": code, "ok": ok, "stderr": stderr})
			fmt.Printf("MUTANT %s\n", res)
		}
		return
	}
	for _, c := range mutantCases("full") { // Freivalds' check of right products: validate's tests
		if code, ok, stderr := validated(c.args()); code != 0 || !ok {
			t.Errorf("%v, the kernel as it is: exit %d: %s", c, code, stderr)
		}
	}
	for _, f := range []string{"1.01"} { // 0.99 and 0.5: validate's tests
		dir := t.TempDir()
		mutateShaders(t, dir, f)
		cmd := exec.Command(os.Args[0], "-test.run=^TestWrongKernelFails$")
		cmd.Env = append(os.Environ(), "GLMUL_MUTANT_CHILD=1", "GLMUL_SHADER_DIR="+dir)
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("child: %v\n%s", err, out)
		}
		seen := 0
		for _, line := range strings.Split(string(out), "\n") {
			js, ok := strings.CutPrefix(line, "MUTANT ")
			if !ok {
				continue
			}
			var r struct {
				Case   string
				Code   int
				OK     bool
				Stderr string
			}
			if err := json.Unmarshal([]byte(js), &r); err != nil {
				t.Fatal(err)
			}
			seen++
			if r.Code != 1 || r.OK || !strings.Contains(r.Stderr, "validation (") {
				t.Errorf("×%s %s: exit %d, ok %v: a wrong kernel passed\n%s", f, r.Case, r.Code, r.OK, r.Stderr)
			}
		}
		if seen != len(mutantCases("")) {
			t.Fatalf("×%s: %d of %d cases reported\n%s", f, seen, len(mutantCases("")), out)
		}
	}
}
