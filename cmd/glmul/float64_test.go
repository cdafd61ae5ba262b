package main

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestMultiplyFloat64: glmul -n 300 -type f64 multiplies float64 inputs
// with the dfast kernel and validates them in full against the
// double-double reference; the reports say float64.
func TestMultiplyFloat64(t *testing.T) {
	needGL(t)
	code, stdout, stderr := glmul("-n", "300", "-type", "f64", "-reps", "2", "-backend", "egl", "-format", "json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	var r struct {
		Type, Kernel string
		M, K, N      int
		Validation   struct {
			Mode         string
			OK           bool
			WorstRatio   float64 `json:"worst_ratio"`
			RelFrobenius float64 `json:"rel_frobenius"`
		}
		Summary struct {
			TimingSource string  `json:"timing_source"`
			GFLOPSMean   float64 `json:"gflops_mean"`
		}
		Timings struct {
			Compute []int64 `json:"compute_ns"`
		}
	}
	if err := json.Unmarshal([]byte(stdout), &r); err != nil {
		t.Fatalf("%v\n%s", err, stdout)
	}
	if r.Type != "float64" || !strings.HasPrefix(r.Kernel, "dfast") || r.M != 300 || r.K != 300 || len(r.Timings.Compute) != 2 {
		t.Errorf("type %q, kernel %q, %d×%d×%d, %d runs", r.Type, r.Kernel, r.M, r.K, r.N, len(r.Timings.Compute))
	}
	// A float64 product's error: around 10⁻¹⁶, where float32's is 10⁻⁷.
	if v := r.Validation; !v.OK || v.Mode != "full" || v.WorstRatio > 0.5 || !(v.RelFrobenius < 1e-14) {
		t.Errorf("validation %+v", v)
	}
	if r.Summary.TimingSource != "wall" || !(r.Summary.GFLOPSMean > 0) {
		t.Errorf("summary %+v", r.Summary)
	}
	code, stdout, stderr = glmul("-shape", "31x40x3", "-type", "f64", "-reps", "1", "-backend", "egl", "-validate", "freivalds")
	if code != 0 || !strings.Contains(stdout, "C = A·B in float64") || !strings.Contains(stdout, "validate   freivalds (4 vectors): ok") {
		t.Errorf("exit %d\n%s\n%s", code, stdout, stderr)
	}
}

// TestFloat64Usage: -type takes f32 or f64, and -type f64 refuses what
// float64 products do not have, naming it.
func TestFloat64Usage(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"-n", "8", "-type", "f16"}, `-type "f16": use f32`},
		{[]string{"-n", "8", "-type", "f64", "-kernel", "tiled32"}, "-type f64 runs dfast"},
		{[]string{"-n", "8", "-type", "f64", "-kernel", "fast:64x64x8_4x4"}, "-type f64 runs dfast"},
		{[]string{"-n", "8", "-type", "f64", "-mapped"}, "leave it out with -type f64"},
		{[]string{"-n", "8", "-type", "f64", "-devices", "all"}, "leave it out with -type f64"},
		{[]string{"-n", "8", "-type", "f64", "-split-k", "2"}, "do not split K"},
		{[]string{"-n", "8", "-kernel", "dfast"}, "unknown kernel"},
	} {
		code, _, stderr := glmul(c.args...)
		if code != 2 || !strings.Contains(stderr, c.want) {
			t.Errorf("%v: exit %d, want 2 with %q:\n%s", c.args, code, c.want, stderr)
		}
	}
}

// TestFloat64OnGLES: OpenGL ES shaders have no double: -type f64 there
// fails (exit 1) before any input is made, saying what to use instead.
func TestFloat64OnGLES(t *testing.T) {
	needGL(t)
	code, stdout, stderr := glmul("-n", "64", "-type", "f64", "-backend", "gles")
	if code != 1 || stdout != "" || !strings.Contains(stderr, "have no float64") || !strings.Contains(stderr, "hint: -type f64 needs desktop OpenGL") {
		t.Errorf("exit %d\n%s%s", code, stdout, stderr)
	}
}

// float64MutantCases are the float64 products of
// TestWrongFloat64KernelFails: K = 1 to 2²⁰ (Mul64 runs the longest in
// slices of K on llvmpipe, added up on the host), both checks.
func float64MutantCases() [][]string {
	var cs [][]string
	for _, shape := range []string{"33x1x35", "33x4097x35", "9x65536x7", "3x1048576x2"} {
		for _, mode := range []string{"full", "freivalds"} {
			cs = append(cs, []string{"-shape", shape, "-type", "f64", "-validate", mode, "-reps", "1", "-warmup", "0",
				"-format", "json", "-program-cache", "", "-backend", "egl"})
		}
	}
	return cs
}

// TestWrongFloat64KernelFails is the float64 check's proof on the GL
// driver, as TestWrongKernelFails is the float32 one's: dfast.comp with
// every store into C scaled by 1 + 10⁻¹⁰ (through GLMUL_SHADER_DIR, in a
// child process) fails both checks at every K, and the kernel as it is
// passes them. The mutant's worst error is under 2⁻³⁰ of the tolerance
// times the ratio it fails by: a tolerance of float32 strength (u 2²⁹
// times larger, and every term of the tolerance with it but the
// reference's, 10⁻⁵ of it) would pass it with room to spare.
func TestWrongFloat64KernelFails(t *testing.T) {
	needGL(t)
	if os.Getenv("GLMUL_MUTANT_CHILD") != "" {
		for _, args := range float64MutantCases() {
			code, stdout, stderr := glmul(args...)
			var r struct {
				Validation struct {
					OK         bool
					WorstRatio float64 `json:"worst_ratio"`
				}
			}
			json.Unmarshal([]byte(stdout), &r)
			res, _ := json.Marshal(map[string]any{"case": strings.Join(args[:6], " "), "code": code, "ok": r.Validation.OK, "ratio": r.Validation.WorstRatio, "stderr": stderr})
			fmt.Printf("MUTANT %s\n", res)
		}
		return
	}
	for _, args := range float64MutantCases() {
		if args[5] != "full" {
			continue // Freivalds' check of right products: validate's tests, and TestMultiplyFloat64
		}
		if code, ok, stderr := validated(args); code != 0 || !ok {
			t.Errorf("%v, the kernel as it is: exit %d: %s", args[:6], code, stderr)
		}
	}
	dir := t.TempDir()
	b, err := os.ReadFile(filepath.Join("..", "..", "shaders", "dfast.comp"))
	if err != nil {
		t.Fatal(err)
	}
	store := regexp.MustCompile(`= (acc\[i\]\[j\]\.[xy]);`)
	src := store.ReplaceAllString(string(b), "= $1 * 1.0000000001LF;")
	if n := strings.Count(src, "1.0000000001LF"); n != 2 {
		t.Fatalf("dfast.comp: %d stores into C mutated, want 2", n)
	}
	if err := os.WriteFile(filepath.Join(dir, "dfast.comp"), []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestWrongFloat64KernelFails$")
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
			Ratio  float64
			Stderr string
		}
		if err := json.Unmarshal([]byte(js), &r); err != nil {
			t.Fatal(err)
		}
		seen++
		if r.Code != 1 || r.OK || !strings.Contains(r.Stderr, "validation (") {
			t.Errorf("×(1+1e-10) %s: exit %d, ok %v: a wrong float64 kernel passed\n%s", r.Case, r.Code, r.OK, r.Stderr)
		}
		if r.Ratio*math.Ldexp(1, -29) > 0.5 {
			t.Errorf("×(1+1e-10) %s: %.3g times the tolerance: a float32-strength check might fail it too, and this test would not show the float64 check's strength", r.Case, r.Ratio)
		}
		t.Logf("×(1+1e-10) %s: %.3g times the tolerance", r.Case, r.Ratio)
	}
	if seen != len(float64MutantCases()) {
		t.Fatalf("%d of %d cases reported\n%s", seen, len(float64MutantCases()), out)
	}
}
