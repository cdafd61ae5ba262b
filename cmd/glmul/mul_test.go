package main

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"gonum.org/v1/gonum/blas/blas32"

	"github.com/glmul/glmul/cmd/glmul/internal/matfile"
	"github.com/glmul/glmul/cpu"
	"github.com/glmul/glmul/validate"
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
		// The data are the files: the product line names them, no seed
		// (issue 23).
		if !strings.Contains(stderr, "A 3×4 from "+a+", B 4×2 from "+b) || strings.Contains(stderr, "seed") {
			t.Errorf("%s: the product line does not name the input files, or claims a seed:\n%s", ext, stderr)
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
	b5, b4 := write("b5.mtx", 5, 2, 0), write("b4.mtx", 4, 2, 0)
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
		{[]string{"-a", a, "-b", b5}, 2, "give -o FILE for C"},
		{[]string{"-a", a, "-b", b5, "-o", filepath.Join(dir, "c.txt")}, 2, "unknown file type"},
		{[]string{"-a", a, "-b", a, "-o", a}, 2, "is an input"},
		{[]string{"-a", a, "-b", b4, "-o", filepath.Join(dir, "none", "c.npy")}, 1, "there is no directory"},
		{[]string{"-a", a, "-b", b5, "-o", out}, 1, "A's columns must equal B's rows"},
		{[]string{"-a", corrupt, "-b", b5, "-o", out}, 1, "corrupt.npy: not a valid .npy file"},
		{[]string{"-a", filepath.Join(dir, "missing.npy"), "-b", b5, "-o", out}, 1, "missing.npy: no such file"},
		{[]string{"-a", tall, "-b", wide, "-o", out}, 1, "GiB free"}, // 1.2 MB files, a 335 GiB C
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

// npyFile builds a C-order .npy file by hand (matfile writes '<f4' only):
// dtype descr, data as given.
func npyFile(descr, shape string, data []byte) []byte {
	dict := fmt.Sprintf("{'descr': '%s', 'fortran_order': False, 'shape': %s, }", descr, shape)
	dict += strings.Repeat(" ", (64-(10+len(dict)+1)%64)%64) + "\n"
	var b bytes.Buffer
	b.WriteString("\x93NUMPY\x01\x00")
	binary.Write(&b, binary.LittleEndian, uint16(len(dict)))
	b.WriteString(dict)
	b.Write(data)
	return b.Bytes()
}

// f8 is vs as little-endian float64 bytes.
func f8(vs ...float64) []byte {
	var b bytes.Buffer
	binary.Write(&b, binary.LittleEndian, vs)
	return b.Bytes()
}

// TestMulArgs: A and B as two arguments, with flags before, between or
// after them (or after "--"), as -a and -b still; a clear usage error for
// both forms at once or a wrong count.
func TestMulArgs(t *testing.T) {
	dir := t.TempDir()
	a, b := filepath.Join(dir, "a.npy"), filepath.Join(dir, "b.mtx")
	os.WriteFile(a, npyFile("<f8", "(2, 3)", f8(1, 2, 3, 4, 5, 6)), 0o644)
	os.WriteFile(b, []byte("%%MatrixMarket matrix array real general\n3 2\n1\n0\n1\n0\n1\n1\n"), 0o644)
	out := filepath.Join(dir, "c.npy")
	for _, c := range []struct {
		args []string
		code int
		want string // in stderr; for exit 0, C = [[4, 5], [10, 11]] too
	}{
		{[]string{a}, 2, "mul: give A and B as two arguments, not 1"},
		{[]string{a, b, a, "-o", out}, 2, "mul: give A and B as two arguments, not 3"},
		{[]string{a, b, "-a", a, "-o", out}, 2, "either as two arguments or with -a and -b, not both"},
		{[]string{"-b", b, a, "-o", out}, 2, "not both"},
		{[]string{a, b}, 2, "mul: give -o FILE for C: glmul mul A.npy B.npy -o C.npy"},
		{[]string{"-o", out}, 2, "mul: give the matrices A and B: glmul mul A.npy B.npy -o C.npy (or -a A.npy -b B.npy)"},
		{[]string{"-o", out, "--", a, "-x.npy", b}, 2, `not 3 (["` + a + `" "-x.npy" "` + b + `"])`},
		{[]string{a, b, "-o", out, "-bogus"}, 2, "mul: flag provided but not defined: -bogus"},
		{[]string{"-h"}, 0, "glmul mul A.npy B.npy -o C.npy [flags]\n  glmul mul -a A.npy -b B.npy -o C.npy [flags]"},
		{[]string{a, b, "-o", out}, 0, "validate"},
		{[]string{"-validate", "full", a, "-o", out, b}, 0, "validate   full: ok"},
		{[]string{"-o", out, "-validate", "full", "--", a, b}, 0, "validate   full: ok"},
		{[]string{"-a", a, "-b", b, "-o", out}, 0, "validate"},
	} {
		if c.code == 0 && c.args[0] != "-h" {
			needGL(t)
			os.Remove(out)
		}
		code, stdout, stderr := glmul(append([]string{"mul", "-backend", "egl"}, c.args...)...)
		if c.args[0] == "-h" { // asked for: on stdout, nothing on stderr
			stderr, stdout = stdout, stderr
		}
		if code != c.code || !strings.Contains(stderr, c.want) || (c.args[0] == "-h" && stdout != "") {
			t.Errorf("mul %q: exit %d, %s\nwant exit %d and %q", c.args, code, stderr, c.code, c.want)
			continue
		}
		if code == 0 && c.args[0] != "-h" {
			if m, err := matfile.Read(out); err != nil || fmt.Sprint(m.Data) != "[4 5 10 11]" {
				t.Errorf("mul %q: C = %v, %v; want [4 5 10 11]", c.args, m.Data, err)
			}
		}
	}
	// -h documents the new flag and the .mtx and float64 conventions.
	_, help, _ := glmul("mul", "-h")
	for _, want := range []string{"-allow-overflow", "beyond float32's range", "means the sum of\nits entries", "too small for float32"} {
		if !strings.Contains(help, want) {
			t.Errorf("mul -h lacks %q:\n%s", want, help)
		}
	}
}

// TestMulInputs: float64 beyond float32's range is refused unless
// -allow-overflow; underflows and .mtx duplicates are told on stderr; a
// short file or an unsupported dtype fails naming the file. No output is
// left where the product fails.
func TestMulInputs(t *testing.T) {
	needGL(t)
	dir := t.TempDir()
	file := func(name string, b []byte) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	a := file("a.npy", npyFile("<f8", "(2, 3)", f8(1, 2, 3, 4, 5, 6)))
	over := file("over.npy", npyFile("<f8", "(2, 3)", f8(1, 1e39, 3, 4, 5, 6)))
	under := file("under.npy", npyFile("<f8", "(2, 3)", f8(1e-50, 2, 3, 4, 5, 6)))
	short := file("short.npy", npyFile("<f8", "(2, 3)", f8(1, 2)))
	half := file("half.npy", npyFile("<f2", "(3, 100)", make([]byte, 2*3*100))) // 4 bytes an element are more than the file
	b := file("b.mtx", []byte("%%MatrixMarket matrix array real general\n3 2\n1\n0\n1\n0\n1\n1\n"))
	bOver := file("b-over.mtx", []byte("%%MatrixMarket matrix coordinate real general\n3 2 1\n1 1 -4e38\n"))
	bDup := file("b-dup.mtx", []byte("%%MatrixMarket matrix coordinate real general\n3 2 6\n1 1 0.5\n3 1 1\n1 1 0.25\n2 2 1\n3 2 1\n1 1 0.25\n"))
	out := filepath.Join(dir, "out", "c.npy")
	os.Mkdir(filepath.Dir(out), 0o755)
	for _, c := range []struct {
		name  string
		args  []string
		code  int
		wants []string // in stderr
		c     string   // C, for exit 0
	}{
		{"overflow", []string{over, b}, 1, []string{"glmul: " + over + ": element [0, 1] (row, column from 0, as NumPy indexes) is 1e+39, beyond float32's range (largest magnitude 3.4028235e+38): it would become +Inf in float32; rescale the data, or pass -allow-overflow"}, ""},
		{"overflow-allowed", []string{"-allow-overflow", over, b}, 0, []string{over + ": 1 float64 value beyond float32's range became ±Inf (-allow-overflow)", "validate   full: ok"}, "[NaN +Inf 10 11]"},
		{"overflow-mtx", []string{a, bOver}, 1, []string{bOver + ":3: entry (1, 1) (row, column from 1, as the file numbers them) is -4e38, beyond float32's range", "-allow-overflow"}, ""},
		{"underflow", []string{under, b}, 0, []string{under + ": 1 nonzero value too small for float32 (below ≈1.4e-45) became 0"}, "[3 5 10 11]"},
		{"duplicates", []string{a, bDup}, 0, []string{bDup + ": 2 duplicate entries summed into an earlier entry at the same position (MatrixMarket's coordinate convention)"}, "[4 5 10 11]"},
		{"short", []string{short, b}, 1, []string{short + ": the header says 2×3 <f8 (48 bytes of data), the file holds 16"}, ""},
		{"float16", []string{a, half}, 1, []string{half + ": dtype \"<f2\" (float16) is not supported; glmul reads float32 ('<f4', '>f4') and float64 ('<f8', '>f8')"}, ""},
	} {
		os.Remove(out)
		n := len(c.args) // flags, then A and B: given with -a and -b here
		args := append([]string{"mul", "-backend", "egl", "-o", out}, c.args[:n-2]...)
		code, _, stderr := glmul(append(args, "-a", c.args[n-2], "-b", c.args[n-1])...)
		if code != c.code {
			t.Errorf("%s: exit %d, want %d\n%s", c.name, code, c.code, stderr)
			continue
		}
		for _, w := range c.wants {
			if !strings.Contains(stderr, w) {
				t.Errorf("%s: stderr lacks %q:\n%s", c.name, w, stderr)
			}
		}
		if code == 0 && !strings.Contains(stderr, "wrote C") {
			t.Errorf("%s: no C written:\n%s", c.name, stderr)
		}
		if m, err := matfile.Read(out); c.code == 0 && (err != nil || fmt.Sprint(m.Data) != c.c) {
			t.Errorf("%s: C = %v, %v; want %s", c.name, m.Data, err, c.c)
		}
		if entries, _ := os.ReadDir(filepath.Dir(out)); c.code != 0 && len(entries) != 0 {
			t.Errorf("%s: files left behind: %v", c.name, entries)
		}
	}
}

// TestMulToStdout: -o - (and /dev/stdout, whatever stdout is) writes C to
// standard output as .npy, as it comes, with the report on stderr; with
// -format json, which would share stdout, it is a usage error. (/dev/stdout
// redirected to a file named C.bin was refused, "unknown file type", and
// -o - too.)
func TestMulToStdout(t *testing.T) {
	needGL(t)
	dir := t.TempDir()
	a, b := filepath.Join(dir, "a.npy"), filepath.Join(dir, "b.mtx")
	os.WriteFile(a, npyFile("<f8", "(2, 3)", f8(1, 2, 3, 4, 5, 6)), 0o644)
	os.WriteFile(b, []byte("%%MatrixMarket matrix array real general\n3 2\n1\n0\n1\n0\n1\n1\n"), 0o644)
	for _, out := range []string{"-", "/dev/stdout"} {
		code, stdout, stderr := glmul("mul", "-backend", "egl", a, b, "-o", out)
		if code != 0 || !strings.Contains(stderr, "wrote C (2×2 float32) to standard output") {
			t.Fatalf("-o %s: exit %d, %s", out, code, stderr)
		}
		got := filepath.Join(dir, "got.npy")
		os.WriteFile(got, []byte(stdout), 0o644)
		if m, err := matfile.Read(got); err != nil || fmt.Sprint(m.Data) != "[4 5 10 11]" {
			t.Errorf("-o %s: C = %v, %v; want [4 5 10 11]", out, m.Data, err)
		}
	}
	// Standard output onto an input (the shell's 1<> or >>): refused, the
	// input unchanged (C was written over A).
	before, _ := os.ReadFile(a)
	f, err := os.OpenFile(a, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	saved := os.Stdout
	os.Stdout = f
	code, _, stderr := glmul("mul", "-backend", "egl", a, b, "-o", "-")
	os.Stdout = saved
	f.Close()
	if after, _ := os.ReadFile(a); code != 2 || !strings.Contains(stderr, "standard output is the input") || !bytes.Equal(before, after) {
		t.Errorf("-o - onto A: exit %d, %s; A changed: %v", code, stderr, !bytes.Equal(before, after))
	}
	code, stdout, stderr := glmul("mul", a, b, "-o", "-", "-format", "json")
	if code != 2 || stdout != "" || !strings.Contains(stderr, "-o - writes C to standard output, where -format json would write the report too") {
		t.Errorf("-o - -format json: exit %d, %q, %q", code, stdout, stderr)
	}
}

// TestMulFailedValidation: a product whose check fails is reported as -n
// and bench report theirs: with -format json, the report on stdout with
// "ok": false (stdout was empty); in text, the report on stderr; then the
// failure on stderr, exit 1, and -o left as it was.
func TestMulFailedValidation(t *testing.T) {
	needGL(t)
	saved := newPanels
	t.Cleanup(func() { newPanels = saved })
	newPanels = func(mode validate.Mode, b blas32.General, rng *rand.Rand) *validate.Panels {
		wrong := cpu.New(b.Rows, b.Cols) // the check sees another B
		for i := range b.Rows {
			copy(wrong.Data[i*wrong.Stride:i*wrong.Stride+b.Cols], b.Data[i*b.Stride:])
		}
		wrong.Data[0] += 1
		return validate.NewPanels(mode, wrong, rng)
	}
	dir := t.TempDir()
	rng := rand.New(rand.NewPCG(7, 8))
	a, b := filepath.Join(dir, "a.npy"), filepath.Join(dir, "b.npy")
	for _, in := range []struct {
		path       string
		rows, cols int
	}{{a, 5, 6}, {b, 6, 4}} {
		m := cpu.New(in.rows, in.cols)
		for i := range m.Data {
			m.Data[i] = float32(rng.Float64() + 0.5)
		}
		if err := matfile.Write(in.path, m); err != nil {
			t.Fatal(err)
		}
	}
	out := filepath.Join(dir, "c.npy")
	os.WriteFile(out, []byte("before"), 0o644)
	for _, format := range []string{"json", "text"} {
		code, stdout, stderr := glmul("mul", "-backend", "egl", a, b, "-o", out, "-format", format)
		if code != 1 || !strings.Contains(stderr, "glmul mul: validation (full) failed") || !strings.Contains(stderr, out+" was left as it was") || strings.Contains(stderr, "wrote C") {
			t.Errorf("-format %s: exit %d, stderr:\n%s", format, code, stderr)
		}
		if before, _ := os.ReadFile(out); string(before) != "before" {
			t.Errorf("-format %s: -o became %q", format, before)
		}
		if format == "text" {
			if stdout != "" || !strings.Contains(stderr, "validate   full: FAILED") {
				t.Errorf("text: stdout %q, stderr:\n%s", stdout, stderr)
			}
			continue
		}
		var r struct {
			M, K, N    int
			Validation struct {
				Mode string
				OK   bool
			}
		}
		if err := json.Unmarshal([]byte(stdout), &r); err != nil || r.Validation.OK || r.Validation.Mode != "full" || r.M != 5 || r.K != 6 || r.N != 4 {
			t.Errorf("json: %v, %+v from %q", err, r, stdout)
		}
	}
}

// TestMulQuotedPath: -o named with bytes that are not UTF-8 is written,
// and the JSON report gives its name faithfully in output_quoted (a Go
// string literal) beside the lossy output.
func TestMulQuotedPath(t *testing.T) {
	needGL(t)
	dir := t.TempDir()
	a, b := filepath.Join(dir, "a.npy"), filepath.Join(dir, "b.mtx")
	os.WriteFile(a, npyFile("<f8", "(2, 3)", f8(1, 2, 3, 4, 5, 6)), 0o644)
	os.WriteFile(b, []byte("%%MatrixMarket matrix array real general\n3 2\n1\n0\n1\n0\n1\n1\n"), 0o644)
	out := filepath.Join(dir, "c\xff\xfe.npy")
	code, stdout, stderr := glmul("mul", "-backend", "egl", a, b, "-o", out, "-format", "json")
	var r struct {
		Output       string
		OutputQuoted string `json:"output_quoted"`
	}
	if err := json.Unmarshal([]byte(stdout), &r); code != 0 || err != nil {
		t.Fatalf("exit %d, %v, %s", code, err, stderr)
	}
	if got, err := strconv.Unquote(r.OutputQuoted); err != nil || got != out {
		t.Errorf("output_quoted %q unquotes to %q, %v; want %q", r.OutputQuoted, got, err, out)
	}
	if m, err := matfile.Read(out); err != nil || fmt.Sprint(m.Data) != "[4 5 10 11]" {
		t.Errorf("C = %v, %v", m.Data, err)
	}
}
