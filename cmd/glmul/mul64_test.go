package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	gblas "gonum.org/v1/gonum/blas"
	"gonum.org/v1/gonum/blas/blas64"

	"github.com/glmul/glmul/glcompute"
)

// panelRowsFor64 makes glmul mul -type f64's panels rows rows for the
// test's duration.
func panelRowsFor64(t *testing.T, rows int) {
	saved := panelRows64
	t.Cleanup(func() { panelRows64 = saved })
	panelRows64 = func(m, k, n int, _ bool) int { return max(1, min(m, rows)) }
}

// mulPanelsWith64 makes mulPanel64 wrong by f (given the panel's index
// from 0) for the test's duration.
func mulPanelsWith64(t *testing.T, f func(i int, dev *glcompute.Device, c, a, b blas64.General, o *glcompute.MulOptions) (glcompute.Timings, error)) {
	saved := mulPanel64
	t.Cleanup(func() { mulPanel64 = saved })
	i := 0
	mulPanel64 = func(dev *glcompute.Device, c, a, b blas64.General, o *glcompute.MulOptions) (glcompute.Timings, error) {
		i++
		return f(i-1, dev, c, a, b, o)
	}
}

// files64 writes float64 A (m×k) and B (k×n) as .npy files in dir, and
// returns them, their paths and their bytes.
func files64(t *testing.T, dir string, m, k, n int) (a, b blas64.General, pa, pb string, before [][]byte) {
	a, b = uniform64(m, k, 64, 0), uniform64(k, n, 64, 1)
	pa, pb = filepath.Join(dir, "a.npy"), filepath.Join(dir, "b.npy")
	writeNPY64(t, pa, a)
	writeNPY64(t, pb, b)
	for _, p := range []string{pa, pb} {
		bs, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		before = append(before, bs)
	}
	return a, b, pa, pb, before
}

// sameFiles reports an error for each of paths whose bytes are not want's.
func sameFiles(t *testing.T, paths []string, want [][]byte) {
	t.Helper()
	for i, p := range paths {
		if now, err := os.ReadFile(p); err != nil || !bytes.Equal(now, want[i]) {
			t.Errorf("%s changed (%v)", p, err)
		}
	}
}

// TestMulFloat64Panels: glmul mul -type f64 streams by panels of rows
// (8 here; 37 rows make 4 whole panels and one of 5): C, .npy or .mtx,
// is within the float64 tolerance of the exact product and agrees with
// gonum's dgemm as TestMulFloat64's does, with either check; the report
// gives the panels; A and B are unchanged, every bit.
func TestMulFloat64Panels(t *testing.T) {
	needGL(t)
	panelRowsFor64(t, 8)
	dir := t.TempDir()
	a, b, pa, pb, before := files64(t, dir, 37, 300, 29)
	blas := blas64.General{Rows: 37, Cols: 29, Stride: 29, Data: make([]float64, 37*29)}
	blas64.Gemm(gblas.NoTrans, gblas.NoTrans, 1, a, b, 0, blas)
	for _, c := range []struct{ out, mode string }{{"c.npy", "full"}, {"c.mtx", "full"}, {"c2.npy", "freivalds"}, {"c3.npy", "none"}} {
		out := filepath.Join(dir, c.out)
		code, stdout, stderr := glmul("mul", "-type", "f64", "-backend", "egl", "-validate", c.mode, "-format", "json", pa, pb, "-o", out)
		var r struct {
			Type       string
			Panels     int
			PanelRows  int   `json:"panel_rows"`
			HostBytes  int64 `json:"host_bytes"`
			Validation struct {
				Mode string
				OK   bool
			}
		}
		if err := json.Unmarshal([]byte(stdout), &r); code != 0 || err != nil {
			t.Fatalf("%v: exit %d, %v\n%s%s", c, code, err, stdout, stderr)
		}
		if r.Type != "float64" || r.Panels != 5 || r.PanelRows != 8 || r.HostBytes != 8*(300*29+panelsInFlight*8*(300+29)) || r.Validation.Mode != c.mode || !r.Validation.OK {
			t.Errorf("%v: report %+v", c, r)
		}
		checkC64(t, c, a, b, readNPY64(t, out), blas)
	}
	sameFiles(t, []string{pa, pb}, before)
	// In text, the report says how it streamed.
	code, _, stderr := glmul("mul", "-type", "f64", "-backend", "egl", pa, pb, "-o", filepath.Join(dir, "c4.npy"))
	if code != 0 || !strings.Contains(stderr, "5 of 8 rows of A and C") || !strings.Contains(stderr, "wrote C (37×29 float64)") {
		t.Errorf("text: exit %d\n%s", code, stderr)
	}
}

// TestMulFloat64StopsMidway: an error in a panel after some were written
// (the GPU's, or A's file shrinking under glmul) leaves -o as it was and
// no file beside it, and says what went wrong and that -o is untouched.
func TestMulFloat64StopsMidway(t *testing.T) {
	needGL(t)
	panelRowsFor64(t, 8)
	dir := t.TempDir()
	_, _, pa, pb, before := files64(t, dir, 37, 300, 29)
	out := filepath.Join(dir, "c.npy")
	for _, tc := range []struct {
		name, want string
		at         func(dev *glcompute.Device, c, a, b blas64.General, o *glcompute.MulOptions) (glcompute.Timings, error)
	}{
		{"gpu", "glcompute: the driver lost the product", func(*glcompute.Device, blas64.General, blas64.General, blas64.General, *glcompute.MulOptions) (glcompute.Timings, error) {
			return glcompute.Timings{}, errors.New("glcompute: the driver lost the product")
		}},
		{"shrank", "the file shrank", func(dev *glcompute.Device, c, a, b blas64.General, o *glcompute.MulOptions) (glcompute.Timings, error) {
			if err := os.Truncate(pa, int64(len(before[0])-8)); err != nil {
				t.Fatal(err)
			}
			return dev.Mul64(c, a, b, o)
		}},
	} {
		os.WriteFile(out, []byte("before"), 0o644)
		mulPanelsWith64(t, func(i int, dev *glcompute.Device, c, a, b blas64.General, o *glcompute.MulOptions) (glcompute.Timings, error) {
			if i == 2 {
				return tc.at(dev, c, a, b, o)
			}
			return dev.Mul64(c, a, b, o)
		})
		code, _, stderr := glmul("mul", "-type", "f64", "-backend", "egl", pa, pb, "-o", out)
		if code != 1 || !strings.Contains(stderr, tc.want) || !strings.Contains(stderr, out+" was left as it was") || strings.Contains(stderr, "wrote C") {
			t.Errorf("%s: exit %d\n%s", tc.name, code, stderr)
		}
		if now, _ := os.ReadFile(out); string(now) != "before" {
			t.Errorf("%s: -o became %.40q", tc.name, now)
		}
		if entries, _ := os.ReadDir(dir); len(entries) != 3 {
			t.Errorf("%s: files beside A, B and C: %v", tc.name, entries)
		}
		if tc.name == "gpu" {
			sameFiles(t, []string{pa, pb}, before)
		}
	}
}

// mutants64 are wrong float64 products, one panel (the third of 8 rows
// but for "last": the last, of 5) wrong as a bug in streaming would make
// it.
var mutants64 = map[string]func(i int, dev *glcompute.Device, c, a, b blas64.General, o *glcompute.MulOptions, prev blas64.General) (glcompute.Timings, error){
	// C's rows one off: row r of the panel is A's row r+1 by B (its last
	// A's own), as a panel read from r0+1 would give.
	"shift": func(i int, dev *glcompute.Device, c, a, b blas64.General, o *glcompute.MulOptions, _ blas64.General) (glcompute.Timings, error) {
		if i != 2 {
			return dev.Mul64(c, a, b, o)
		}
		return shifted(dev, c, a, b, o)
	},
	"last": func(i int, dev *glcompute.Device, c, a, b blas64.General, o *glcompute.MulOptions, _ blas64.General) (glcompute.Timings, error) {
		if i != 4 {
			return dev.Mul64(c, a, b, o)
		}
		return shifted(dev, c, a, b, o)
	},
	// The panel not multiplied: C's panel as it was, NaN.
	"skip": func(i int, dev *glcompute.Device, c, a, b blas64.General, o *glcompute.MulOptions, _ blas64.General) (glcompute.Timings, error) {
		if i != 2 {
			return dev.Mul64(c, a, b, o)
		}
		return glcompute.Timings{}, nil
	},
	// The panel not multiplied, C's buffer holding the panel before's
	// product, as one reused without the NaN fill would.
	"stale": func(i int, dev *glcompute.Device, c, a, b blas64.General, o *glcompute.MulOptions, prev blas64.General) (glcompute.Timings, error) {
		if i != 2 {
			return dev.Mul64(c, a, b, o)
		}
		copy(c.Data, prev.Data)
		return glcompute.Timings{}, nil
	},
	// One element wrong by 10⁻¹⁰ of itself: float32's tolerance would let
	// it through.
	"ulp": func(i int, dev *glcompute.Device, c, a, b blas64.General, o *glcompute.MulOptions, _ blas64.General) (glcompute.Timings, error) {
		t, err := dev.Mul64(c, a, b, o)
		if i == 2 {
			c.Data[3*c.Stride+5] *= 1 + 1e-10
		}
		return t, err
	},
}

// shifted multiplies A's panel one row on, and its last row as it is.
func shifted(dev *glcompute.Device, c, a, b blas64.General, o *glcompute.MulOptions) (glcompute.Timings, error) {
	h := a.Rows
	up := blas64.General{Rows: h - 1, Cols: a.Cols, Stride: a.Stride, Data: a.Data[a.Stride:]}
	if _, err := dev.Mul64(blas64.General{Rows: h - 1, Cols: c.Cols, Stride: c.Stride, Data: c.Data}, up, b, o); err != nil {
		return glcompute.Timings{}, err
	}
	last := func(m blas64.General) blas64.General {
		return blas64.General{Rows: 1, Cols: m.Cols, Stride: m.Stride, Data: m.Data[(h-1)*m.Stride:]}
	}
	return dev.Mul64(last(c), last(a), b, o)
}

// TestMulFloat64WrongPanel: each of mutants64 fails both checks: exit 1,
// the failure named, -o left as it was.
func TestMulFloat64WrongPanel(t *testing.T) {
	needGL(t)
	panelRowsFor64(t, 8)
	dir := t.TempDir()
	_, _, pa, pb, before := files64(t, dir, 37, 300, 29)
	out := filepath.Join(dir, "c.npy")
	for name, mutant := range mutants64 {
		for _, mode := range []string{"full", "freivalds"} {
			var prev blas64.General
			mulPanelsWith64(t, func(i int, dev *glcompute.Device, c, a, b blas64.General, o *glcompute.MulOptions) (glcompute.Timings, error) {
				t, err := mutant(i, dev, c, a, b, o, prev)
				prev = blas64.General{Rows: c.Rows, Cols: c.Cols, Stride: c.Stride, Data: append([]float64(nil), c.Data[:c.Rows*c.Stride]...)}
				return t, err
			})
			os.WriteFile(out, []byte("before"), 0o644)
			code, _, stderr := glmul("mul", "-type", "f64", "-backend", "egl", "-validate", mode, pa, pb, "-o", out)
			if code != 1 || !strings.Contains(stderr, "glmul mul: validation ("+mode+") failed") || !strings.Contains(stderr, out+" was left as it was") || strings.Contains(stderr, "wrote C") {
				t.Errorf("%s, %s: exit %d\n%s", name, mode, code, stderr)
			}
			if now, _ := os.ReadFile(out); string(now) != "before" {
				t.Errorf("%s, %s: -o became %.40q", name, mode, now)
			}
			// The failure names a row of the wrong panel: C's, not the
			// panel's own.
			lo, hi := 16, 24
			if name == "last" {
				lo, hi = 32, 37
			}
			if m := failedRow.FindStringSubmatch(stderr); m == nil || atoi(m[1]) < lo || atoi(m[1]) >= hi {
				t.Errorf("%s, %s: the failure is not in rows %d to %d:\n%s", name, mode, lo, hi-1, stderr)
			}
		}
	}
	sameFiles(t, []string{pa, pb}, before)
}

// failedRow finds the row a failed check names: C[i][j], or row i of C·x.
var failedRow = regexp.MustCompile(`failed: (?:C\[|row )(\d+)`)

func atoi(s string) int { n, _ := strconv.Atoi(s); return n }

// TestMulFloat64CtrlC: Ctrl-C stops glmul mul -type f64 between panels
// (or abandons the one in progress after a second), as it does the
// float32 product: exit 130, -o as it was, nothing beside it. The files,
// made by the parent: 2048×1024 by 1024×1024, eight panels of 256 rows.
func TestMulFloat64CtrlC(t *testing.T) {
	if os.Getenv("GLMUL_TEST_CHILD") == "mul64" {
		dir := os.Getenv("GLMUL_TEST_DIR")
		panelRows64 = func(m, k, n int, _ bool) int { return 256 }
		os.Exit(exitCode(run([]string{"mul", "-type", "f64", filepath.Join(dir, "a.npy"), filepath.Join(dir, "b.npy"), "-o", filepath.Join(dir, "c.npy"),
			"-backend", "egl", "-progress", "on"}, os.Stdout, os.Stderr), os.Stderr))
	}
	needGL(t)
	dir := t.TempDir()
	files64(t, dir, 2048, 1024, 1024)
	before := []byte("the C of an earlier run")
	os.WriteFile(filepath.Join(dir, "c.npy"), before, 0o644)
	t.Setenv("GLMUL_TEST_DIR", dir)
	c := startChild(t, "TestMulFloat64CtrlC", "mul64", "(1/8)")
	if !c.interrupt(t) {
		t.Skip("the device finished all 8 panels before Ctrl-C; the test needs a slow one (llvmpipe in CI)")
	}
	if e := c.stderr.String(); !strings.Contains(e, "interrupted by Ctrl-C: the ") || !strings.Contains(e, "2048×1024×1024 product ") || !strings.Contains(e, filepath.Join(dir, "c.npy")+" was left as it was") {
		t.Errorf("stderr:\n%s", e)
	}
	if now, _ := os.ReadFile(filepath.Join(dir, "c.npy")); string(now) != string(before) {
		t.Errorf("c.npy changed: %q", now)
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 3 {
		t.Errorf("files beside the inputs and c.npy: %v", entries)
	}
}

// TestPanelRows64FitsItsCheck: the panels panelRows64 sizes pass the
// memory check that mul64 then makes, with the full check's memory
// counted where it runs: a forced full check of a large product was
// refused for panels sized without it.
func TestPanelRows64FitsItsCheck(t *testing.T) {
	total, ok := hostMemory()
	if !ok {
		t.Skip("the host's memory is unknown here")
	}
	n := int(math.Sqrt(total / 8 / 3)) // B a third of the memory
	for _, full := range []bool{false, true} {
		rows := panelRows64(1<<30, n, n, full)
		if err := checkPanelMemory64(1<<30, n, n, rows, full); err != nil || rows < 1 {
			t.Errorf("full %v: %d rows of %d-column panels: %v", full, rows, n, err)
		}
	}
}

// TestPanelMemory64RefusesLargeB: a B larger than the host's memory is
// refused before anything is read, the error naming B and the panels; the
// whole-product check names A, B and C.
func TestPanelMemory64RefusesLargeB(t *testing.T) {
	total, ok := hostMemory()
	if !ok {
		t.Skip("the host's memory is unknown here")
	}
	n := int(math.Sqrt(total/8)) + 1 // B alone over the memory
	err := checkPanelMemory64(1<<20, n, n, panelRows64(1<<20, n, n, false), false)
	if err == nil || !strings.Contains(err.Error(), "for B and 3 panels of") {
		t.Errorf("a B of %.1f GiB: %v, want a refusal naming B and a panel", 8*float64(n)*float64(n)/(1<<30), err)
	}
	if err := checkHostMemory64(n, n, n); err == nil || !strings.Contains(err.Error(), "for A, B and C") {
		t.Errorf("the whole product: %v, want a refusal naming A, B and C", err)
	}
}

// TestMulChecksOutputBeforeDevice: an -o that cannot be written fails
// before the device opens, in float32 and float64: with -backend glfw and
// no display, the error names the missing directory, not the display.
func TestMulChecksOutputBeforeDevice(t *testing.T) {
	dir := t.TempDir()
	_, _, pa, pb, _ := files64(t, dir, 3, 4, 5)
	t.Setenv("DISPLAY", "")
	t.Setenv("WAYLAND_DISPLAY", "")
	out := filepath.Join(dir, "missing", "c.npy")
	for _, typ := range []string{"f32", "f64"} {
		code, _, stderr := glmul("mul", "-type", typ, pa, pb, "-o", out, "-backend", "glfw")
		if code != 1 || !strings.Contains(stderr, filepath.Join(dir, "missing")) || strings.Contains(stderr, "display") {
			t.Errorf("-type %s: exit %d, want 1 and the directory named, no display:\n%s", typ, code, stderr)
		}
	}
}
