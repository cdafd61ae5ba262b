package main

import (
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/glmul/glmul/cpu"
	"github.com/glmul/glmul/internal/matfile"
)

// TestMulFiles multiplies the testdata examples (float64 Fortran-order .npy
// by coordinate .mtx) into each output format and checks C against a
// float64 product of the files as read, and that the inputs are unchanged.
func TestMulFiles(t *testing.T) {
	needGL(t)
	a, b := filepath.Join("..", "..", "testdata", "mul", "a.npy"), filepath.Join("..", "..", "testdata", "mul", "b.mtx")
	before := [2][]byte{}
	for i, p := range []string{a, b} {
		before[i], _ = os.ReadFile(p)
	}
	ma, _ := matfile.Read(a)
	mb, _ := matfile.Read(b)
	ref := cpu.Reference(ma, mb, false)
	for _, ext := range []string{".npy", ".mtx"} {
		out := filepath.Join(t.TempDir(), "c"+ext)
		code, _, stderr := glmul("mul", "-a", a, "-b", b, "-o", out, "-backend", "egl", "-validate", "full")
		if code != 0 || !strings.Contains(stderr, "validate   full: ok") {
			t.Fatalf("%s: exit %d\n%s", ext, code, stderr)
		}
		c, err := matfile.Read(out)
		if err != nil || c.Rows != 3 || c.Cols != 2 {
			t.Fatalf("%s: %v %d×%d", ext, err, c.Rows, c.Cols)
		}
		for i := range c.Data {
			if w := ref.Data[i]; math.Abs(float64(c.Data[i])-w) > 1e-6*(1+math.Abs(w)) {
				t.Errorf("%s: C[%d] = %v, want %v", ext, i, c.Data[i], w)
			}
		}
	}
	for i, p := range []string{a, b} {
		if now, _ := os.ReadFile(p); string(now) != string(before[i]) {
			t.Errorf("%s was modified", p)
		}
	}
}

// TestMulBadInput: each class of bad input fails with the file named and
// the right exit status, and leaves no output or temporary file behind.
func TestMulBadInput(t *testing.T) {
	needGL(t)
	dir := t.TempDir()
	write := func(name string, rows, cols int, first float32) string {
		p, m := filepath.Join(dir, name), cpu.New(rows, cols)
		m.Data[0] = first
		if err := matfile.Write(p, m); err != nil {
			t.Fatal(err)
		}
		return p
	}
	a := write("a.npy", 3, 4, 0)
	b5 := write("b5.mtx", 5, 2, 0)
	tall, wide := write("tall.npy", 300000, 1, 1), write("wide.npy", 1, 300000, 1)
	corrupt := filepath.Join(dir, "corrupt.npy")
	os.WriteFile(corrupt, []byte("\x93NUMPY garbage"), 0o644)
	nanFile := write("nan.npy", 2, 2, float32(math.NaN()))
	out := filepath.Join(dir, "out", "c.npy")
	os.Mkdir(filepath.Dir(out), 0o755)
	for _, c := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"-a", a, "-b", b5}, 2, "give -a, -b and -o"},
		{[]string{"-a", a, "-b", b5, "-o", filepath.Join(dir, "c.txt")}, 2, "unknown file type"},
		{[]string{"-a", a, "-b", a, "-o", a}, 2, "is an input"},
		{[]string{"-a", a, "-b", b5, "-o", filepath.Join(dir, "none", "c.npy")}, 1, "there is no directory"},
		{[]string{"-a", a, "-b", b5, "-o", out}, 1, "A's columns must equal B's rows"},
		{[]string{"-a", corrupt, "-b", b5, "-o", out}, 1, "corrupt.npy: not a valid .npy file"},
		{[]string{"-a", filepath.Join(dir, "missing.npy"), "-b", b5, "-o", out}, 1, "missing.npy: no such file"},
		{[]string{"-a", tall, "-b", wide, "-o", out}, 1, "GiB of host memory"}, // 1.2 MB files, a 360 GB C
	} {
		code, _, stderr := glmul(append([]string{"mul", "-backend", "egl"}, c.args...)...)
		if code != c.code || !strings.Contains(stderr, c.want) {
			t.Errorf("mul %v: exit %d, %q; want exit %d and %q", c.args, code, stderr, c.code, c.want)
		}
	}
	if entries, _ := os.ReadDir(filepath.Dir(out)); len(entries) != 0 {
		t.Errorf("files left behind: %v", entries)
	}
	// NaN propagates as BLAS's does, and validates.
	code, _, stderr := glmul("mul", "-backend", "egl", "-a", nanFile, "-b", nanFile, "-o", out)
	if code != 0 || !strings.Contains(stderr, "full: ok") {
		t.Fatalf("NaN input: exit %d, %s", code, stderr)
	}
	if c, _ := matfile.Read(out); !math.IsNaN(float64(c.Data[0])) || !math.IsNaN(float64(c.Data[1])) || !math.IsNaN(float64(c.Data[2])) || c.Data[3] != 0 {
		t.Errorf("NaN input: C = %v", c.Data)
	}
}
