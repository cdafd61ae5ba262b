package main

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/glmul/glmul/cmd/glmul/internal/matfile"
)

// TestMulEmpty: a product with an empty dimension gives NumPy's C, 5×0
// by 0×4 5×4 zeros, 0×5 by 5×4 a 0×4 matrix, 5×3 by 3×0 a 5×0 one (each
// was refused: "an empty matrix"), without a device: -backend glfw
// without a display, which cannot open one, is never tried. A and B are
// still read through: a float64 beyond float32's range in A is the error
// it always is.
func TestMulEmpty(t *testing.T) {
	t.Setenv("DISPLAY", "")
	t.Setenv("WAYLAND_DISPLAY", "")
	dir := t.TempDir()
	rng := rand.New(rand.NewPCG(17, 18))
	file := func(name string, rows, cols int, big bool) string {
		vals := make([]float64, rows*cols)
		for i := range vals {
			vals[i] = rng.Float64()*2 - 1
		}
		if big {
			vals[len(vals)-1] = 1e39
		}
		p := filepath.Join(dir, name)
		os.WriteFile(p, npyFile("<f8", fmt.Sprintf("(%d, %d)", rows, cols), f8(vals...)), 0o644)
		return p
	}
	a50, a05, a53, big := file("a50.npy", 5, 0, false), file("a05.npy", 0, 5, false), file("a53.npy", 5, 3, false), file("big.npy", 5, 3, true)
	b04 := filepath.Join(dir, "b04.mtx")
	os.WriteFile(b04, []byte("%%MatrixMarket matrix array real general\n0 4\n"), 0o644)
	b54, b30 := file("b54.npy", 5, 4, false), file("b30.npy", 3, 0, false)
	for _, c := range []struct {
		a, b, out  string
		rows, cols int
		want       string // in the text report
	}{
		{a50, b04, "c1.npy", 5, 4, "C is 5×4 zeros (each element a sum of no terms, K = 0)"},
		{a05, b54, "c2.mtx", 0, 4, "C is 0×4, without elements"},
		{a53, b30, "c3.npy", 5, 0, "C is 5×0, without elements"},
	} {
		out := filepath.Join(dir, c.out)
		code, _, stderr := glmul("mul", "-backend", "glfw", c.a, c.b, "-o", out)
		if code != 0 || !strings.Contains(stderr, c.want) || !strings.Contains(stderr, fmt.Sprintf("wrote C (%d×%d float32) to %s", c.rows, c.cols, out)) {
			t.Errorf("%s: exit %d, %s", c.out, code, stderr)
			continue
		}
		m, err := matfile.Read(out)
		if err != nil || m.Rows != c.rows || m.Cols != c.cols {
			t.Errorf("%s: %d×%d, %v", c.out, m.Rows, m.Cols, err)
		}
		for _, v := range m.Data {
			if v != 0 {
				t.Errorf("%s: C holds %v", c.out, m.Data)
				break
			}
		}
	}
	code, stdout, stderr := glmul("mul", "-backend", "glfw", a05, b54, "-o", filepath.Join(dir, "c4.npy"), "-format", "json")
	var r struct {
		Device     any
		Empty      bool
		M, K, N    int
		Validation struct{ OK bool }
	}
	if err := json.Unmarshal([]byte(stdout), &r); code != 0 || err != nil || r.Device != nil || !r.Empty || r.M != 0 || r.K != 5 || r.N != 4 || !r.Validation.OK {
		t.Errorf("json: exit %d, %v, %+v, %s", code, err, r, stderr)
	}
	code, _, stderr = glmul("mul", "-backend", "glfw", big, b30, "-o", filepath.Join(dir, "c5.npy"))
	if code != 1 || !strings.Contains(stderr, "beyond float32's range") {
		t.Errorf("overflow in A: exit %d, %s", code, stderr)
	}
	if _, err := os.Stat(filepath.Join(dir, "c5.npy")); err == nil {
		t.Error("C was written after A's overflow")
	}
}

// TestMulEmptyFloat64: glmul mul -type f64 of a product with an empty
// dimension writes NumPy's float64 C ('<f8' zeros where K is 0), without
// a device, as the float32 product does; A's float64 beyond float32's
// range is read as the float64 it is, not refused.
func TestMulEmptyFloat64(t *testing.T) {
	t.Setenv("DISPLAY", "")
	t.Setenv("WAYLAND_DISPLAY", "")
	dir := t.TempDir()
	file := func(name string, rows, cols int, vals ...float64) string {
		p := filepath.Join(dir, name)
		os.WriteFile(p, npyFile("<f8", fmt.Sprintf("(%d, %d)", rows, cols), f8(vals...)), 0o644)
		return p
	}
	a50, b04 := file("a50.npy", 5, 0), file("b04.npy", 0, 4)
	big, b30 := file("big.npy", 2, 3, 0.5, -1, 1e39, 2, 3, -0.25), file("b30.npy", 3, 0)
	for _, c := range []struct {
		a, b, out  string
		rows, cols int
	}{{a50, b04, "c1.npy", 5, 4}, {big, b30, "c2.npy", 2, 0}} {
		out := filepath.Join(dir, c.out)
		code, _, stderr := glmul("mul", "-type", "f64", "-backend", "glfw", c.a, c.b, "-o", out)
		if code != 0 || !strings.Contains(stderr, fmt.Sprintf("wrote C (%d×%d float64) to %s", c.rows, c.cols, out)) {
			t.Errorf("%s: exit %d, %s", c.out, code, stderr)
			continue
		}
		bs, _ := os.ReadFile(out)
		m := readNPY64(t, out)
		if !strings.Contains(string(bs), "'<f8'") || m.Rows != c.rows || m.Cols != c.cols || slices.ContainsFunc(m.Data, func(v float64) bool { return v != 0 }) {
			t.Errorf("%s: %d×%d %v, not float64 zeros %d×%d", c.out, m.Rows, m.Cols, m.Data, c.rows, c.cols)
		}
	}
}
