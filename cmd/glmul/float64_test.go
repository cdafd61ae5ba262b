package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	gblas "gonum.org/v1/gonum/blas"
	"gonum.org/v1/gonum/blas/blas64"

	"github.com/glmul/glmul/cmd/glmul/internal/matfile"
	"github.com/glmul/glmul/cpu"
	"github.com/glmul/glmul/validate"
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
	// Each run is one pipelined pass: timed by its GL timestamps, or by
	// its dispatch calls where the timer is not plausible.
	if src := r.Summary.TimingSource; src != "wall" && src != "gl-timer" || !(r.Summary.GFLOPSMean > 0) {
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
// TestWrongFloat64KernelFails: K = 1 to 2¹⁸ (in K panels on llvmpipe;
// 2²⁰ took 9 s a run there, three runs, and validate's own tests reach
// 2²⁴), both checks; then glmul
// mul -type f64 of the files in dir (a.npy, b.npy: 33×4097 by 4097×35)
// into dir's c-MODE.npy, both checks.
//
// The cases share a program cache in dir (the kernel as it is and the
// mutant are cached apart, by their source): each process then compiles
// dfast once at most, not once a case.
func float64MutantCases(dir string) [][]string {
	var cs [][]string
	modes := []string{"full", "freivalds"}
	for _, shape := range []string{"33x1x35", "33x4097x35", "9x65536x7", "3x262144x2"} {
		for _, mode := range modes {
			cs = append(cs, []string{"-shape", shape, "-type", "f64", "-validate", mode, "-reps", "1", "-warmup", "0",
				"-format", "json", "-program-cache", filepath.Join(dir, "programs"), "-backend", "egl"})
		}
	}
	for _, mode := range modes {
		cs = append(cs, []string{"mul", filepath.Join(dir, "a.npy"), "-type", "f64", "-validate", mode, filepath.Join(dir, "b.npy"),
			"-o", filepath.Join(dir, "c-"+mode+".npy"), "-format", "json", "-program-cache", filepath.Join(dir, "programs"), "-backend", "egl"})
	}
	return cs
}

// TestWrongFloat64KernelFails is the float64 check's proof on the GL
// driver, as TestWrongKernelFails is the float32 one's: dfast.comp with
// every store into C scaled by 1 + 10⁻¹⁰ (through GLMUL_SHADER_DIR, in a
// child process) fails both checks at every K, and glmul mul -type f64
// with it leaves -o unwritten; the kernel as it is passes them. The
// mutant's worst error is under 2⁻³⁰ of the tolerance
// times the ratio it fails by: a tolerance of float32 strength (u 2²⁹
// times larger, and every term of the tolerance with it but the
// reference's, 10⁻⁵ of it) would pass it with room to spare.
func TestWrongFloat64KernelFails(t *testing.T) {
	needGL(t)
	if os.Getenv("GLMUL_MUTANT_CHILD") != "" {
		for _, args := range float64MutantCases(os.Getenv("GLMUL_MUTANT_FILES")) {
			code, stdout, stderr := glmul(args...)
			var r struct {
				Validation struct {
					OK         bool
					WorstRatio float64 `json:"worst_ratio"`
				}
			}
			json.Unmarshal([]byte(stdout), &r)
			_, err := os.Stat(args[8]) // mul's -o
			res, _ := json.Marshal(map[string]any{"case": strings.Join(args[:6], " "), "code": code, "ok": r.Validation.OK, "ratio": r.Validation.WorstRatio,
				"stderr": stderr, "written": args[0] == "mul" && err == nil})
			fmt.Printf("MUTANT %s\n", res)
		}
		return
	}
	files := t.TempDir()
	writeNPY64(t, filepath.Join(files, "a.npy"), uniform64(33, 4097, 7, 0))
	writeNPY64(t, filepath.Join(files, "b.npy"), uniform64(4097, 35, 7, 1))
	cases := float64MutantCases(files)
	for _, args := range cases {
		if args[5] != "full" {
			continue // Freivalds' check of right products: validate's tests, and TestMultiplyFloat64
		}
		if code, ok, stderr := validated(args); code != 0 || !ok {
			t.Errorf("%v, the kernel as it is: exit %d: %s", args[:6], code, stderr)
		}
		if args[0] == "mul" {
			os.Remove(args[8]) // written: the mutant must leave it unwritten
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
	cmd.Env = append(os.Environ(), "GLMUL_MUTANT_CHILD=1", "GLMUL_SHADER_DIR="+dir, "GLMUL_MUTANT_FILES="+files)
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
			Case    string
			Code    int
			OK      bool
			Ratio   float64
			Stderr  string
			Written bool
		}
		if err := json.Unmarshal([]byte(js), &r); err != nil {
			t.Fatal(err)
		}
		seen++
		if r.Code != 1 || r.OK || !strings.Contains(r.Stderr, "validation (") || r.Written {
			t.Errorf("×(1+1e-10) %s: exit %d, ok %v, C written %v: a wrong float64 kernel passed\n%s", r.Case, r.Code, r.OK, r.Written, r.Stderr)
		}
		if r.Ratio*math.Ldexp(1, -29) > 0.5 {
			t.Errorf("×(1+1e-10) %s: %.3g times the tolerance: a float32-strength check might fail it too, and this test would not show the float64 check's strength", r.Case, r.Ratio)
		}
		t.Logf("×(1+1e-10) %s: %.3g times the tolerance", r.Case, r.Ratio)
	}
	if seen != len(cases) {
		t.Fatalf("%d of %d cases reported\n%s", seen, len(cases), out)
	}
}

// uniform64 is an r×c float64 matrix from cpu.FillUniform64.
func uniform64(r, c int, seed, stream uint64) blas64.General {
	m := blas64.General{Rows: r, Cols: c, Stride: c, Data: make([]float64, r*c)}
	cpu.FillUniform64(m, seed, stream, nil)
	return m
}

// writeNPY64 writes m to path as a '<f8' .npy file.
func writeNPY64(t *testing.T, path string, m blas64.General) {
	t.Helper()
	var b bytes.Buffer
	if err := matfile.Write64(&b, path, m); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, b.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
}

// readNPY64 reads path as float64 (matfile.Read64).
func readNPY64(t *testing.T, path string) blas64.General {
	t.Helper()
	s, err := matfile.Open(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	m, _, err := matfile.Read64(s)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// TestMulFloat64: glmul mul -type f64 keeps float64 .npy files float64
// from file to file. C is within the float64 tolerance of the exact
// product (validate.CheckFull64, the double-double reference), as a BLAS
// dgemm's, NumPy's float64 product's (gonum's here: no NumPy in the
// tests), is; so the two agree within twice that tolerance. With a .mtx
// output and B from a .mtx file, and Freivalds' check, the same. The
// default, without -type, still rounds float64 input to float32 and
// writes float32 C.
func TestMulFloat64(t *testing.T) {
	needGL(t)
	dir := t.TempDir()
	a, b := uniform64(37, 300, 45, 0), uniform64(300, 29, 45, 1)
	pa, pb, pbm := filepath.Join(dir, "a.npy"), filepath.Join(dir, "b.npy"), filepath.Join(dir, "b.mtx")
	writeNPY64(t, pa, a)
	writeNPY64(t, pb, b)
	writeNPY64(t, pbm, b)
	blas := blas64.General{Rows: 37, Cols: 29, Stride: 29, Data: make([]float64, 37*29)}
	blas64.Gemm(gblas.NoTrans, gblas.NoTrans, 1, a, b, 0, blas)
	if r := validate.CheckFull64(a, b, blas); !r.OK {
		t.Fatalf("gonum's dgemm outside the float64 tolerance: %v", r)
	}
	for _, c := range []struct{ b, out, mode string }{{pb, "c.npy", "full"}, {pbm, "c.mtx", "full"}, {pb, "c2.npy", "freivalds"}} {
		out := filepath.Join(dir, c.out)
		code, _, stderr := glmul("mul", "-type", "f64", "-backend", "egl", "-validate", c.mode, pa, c.b, "-o", out)
		if code != 0 || !strings.Contains(stderr, "C = A·B in float64") || !strings.Contains(stderr, "wrote C (37×29 float64)") {
			t.Fatalf("%v: exit %d\n%s", c, code, stderr)
		}
		checkC64(t, c, a, b, readNPY64(t, out), blas)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "c.npy")); !bytes.Contains(b, []byte("'<f8'")) {
		t.Errorf("C is not '<f8'")
	}
	// The default: float32.
	out := filepath.Join(dir, "c32.npy")
	if code, _, stderr := glmul("mul", "-backend", "egl", pa, pb, "-o", out); code != 0 || !strings.Contains(stderr, "wrote C (37×29 float32)") {
		t.Fatalf("without -type: exit %d\n%s", code, stderr)
	}
	if b, _ := os.ReadFile(out); !bytes.Contains(b, []byte("'<f4'")) {
		t.Errorf("C without -type is not '<f4'")
	}
	// The testdata example, float64 in Fortran order by a .mtx file: its
	// values are short, its product exact in float64.
	ta, tb := filepath.Join("..", "..", "testdata", "mul", "a.npy"), filepath.Join("..", "..", "testdata", "mul", "b.mtx")
	out = filepath.Join(dir, "t.npy")
	if code, _, stderr := glmul("mul", "-type", "f64", "-backend", "egl", ta, tb, "-o", out); code != 0 || !strings.Contains(stderr, "worst error 0 of its tolerance") {
		t.Fatalf("testdata: exit %d\n%s", code, stderr)
	}
}

// TestMulFloat64OnGLES: mul -type f64 on OpenGL ES fails before reading
// the files, with the hint, and writes nothing.
func TestMulFloat64OnGLES(t *testing.T) {
	needGL(t)
	out := filepath.Join(t.TempDir(), "c.npy")
	ta, tb := filepath.Join("..", "..", "testdata", "mul", "a.npy"), filepath.Join("..", "..", "testdata", "mul", "b.mtx")
	code, _, stderr := glmul("mul", "-type", "f64", "-backend", "gles", ta, tb, "-o", out)
	if code != 1 || !strings.Contains(stderr, "hint: -type f64 needs desktop OpenGL") {
		t.Errorf("exit %d\n%s", code, stderr)
	}
	if _, err := os.Stat(out); err == nil {
		t.Errorf("%s written", out)
	}
	if code, _, stderr := glmul("mul", "-type", "f64", "-kernel", "tiled32", ta, tb, "-o", out); code != 2 || !strings.Contains(stderr, "mul: -kernel tiled32: -type f64 runs dfast") {
		t.Errorf("-kernel tiled32: exit %d\n%s", code, stderr)
	}
}

// TestBenchFloat64: glmul bench -type f64 measures dfast (the default
// -kernels there) and validates every product in float64; kernels without
// a float64 version and -split-k are usage errors.
func TestBenchFloat64(t *testing.T) {
	needGL(t)
	code, stdout, stderr := glmul("bench", "-type", "f64", "-shapes", "64,33x100x17", "-reps", "2", "-backend", "egl", "-format", "json", "-progress", "off")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	var r struct {
		Results []struct {
			Shape, Spec, Type string
			Times             []int64 `json:"times_ns"`
			Valid             bool
			Validation        string
		}
	}
	if err := json.Unmarshal([]byte(stdout), &r); err != nil || len(r.Results) != 2 {
		t.Fatalf("%v\n%s", err, stdout)
	}
	for _, row := range r.Results {
		if !strings.HasPrefix(row.Spec, "dfast:") || !row.Valid || row.Validation != "full" || len(row.Times) != 2 || row.Type != "float64" {
			t.Errorf("row %+v", row)
		}
	}
	// The other formats say float64 too; benchstat's names never pair a
	// float64 product with a float32 one.
	for format, want := range map[string]string{"text": "float64 (dfast", "csv": ",float64", "bench": "BenchmarkDGEMM/kernel=dfast/shape=64x64x64"} {
		code, stdout, stderr := glmul("bench", "-type", "f64", "-shapes", "64", "-reps", "1", "-backend", "egl", "-format", format, "-progress", "off")
		if code != 0 || !strings.Contains(stdout, want) {
			t.Errorf("-format %s: exit %d, want %q in:\n%s%s", format, code, want, stdout, stderr)
		}
	}
	for _, args := range [][]string{{"-kernels", "tiled32"}, {"-kernels", "fast,cpu:8x8_8x8"}, {"-split-k", "2"}} {
		code, _, stderr := glmul(append([]string{"bench", "-type", "f64", "-shapes", "64"}, args...)...)
		if code != 2 || !strings.Contains(stderr, "-type f64") {
			t.Errorf("bench -type f64 %v: exit %d\n%s", args, code, stderr)
		}
	}
}

// checkC64 fails t unless got, the C of case what, is within the float64
// bound of a·b (CheckFull64, relative Frobenius error at most 1e-14) and
// within 1e-14 of dgemm's product in relative Frobenius norm.
func checkC64(t *testing.T, what any, a, b, got, dgemm blas64.General) {
	t.Helper()
	if r := validate.CheckFull64(a, b, got); !r.OK || r.RelFrobenius > 1e-14 {
		t.Errorf("%v: C %v", what, r)
	}
	var d2, n2 float64
	for i, v := range got.Data {
		d2 += (v - dgemm.Data[i]) * (v - dgemm.Data[i])
		n2 += dgemm.Data[i] * dgemm.Data[i]
	}
	if rel := math.Sqrt(d2 / n2); rel > 1e-14 {
		t.Errorf("%v: C is %.3g from dgemm's product (relative Frobenius)", what, rel)
	}
}
