package matfile

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"gonum.org/v1/gonum/blas/blas32"
)

// npyBytes builds a .npy file by hand: header dict descr, data as given.
func npyBytes(descr string, fortran bool, shape string, data []byte) []byte {
	dict := fmt.Sprintf("{'descr': '%s', 'fortran_order': %s, 'shape': %s, }", descr, map[bool]string{true: "True", false: "False"}[fortran], shape)
	for (10+len(dict)+1)%64 != 0 {
		dict += " "
	}
	dict += "\n"
	var b bytes.Buffer
	b.WriteString("\x93NUMPY\x01\x00")
	binary.Write(&b, binary.LittleEndian, uint16(len(dict)))
	b.WriteString(dict)
	b.Write(data)
	return b.Bytes()
}

func floats(order binary.ByteOrder, wide bool, vs ...float64) []byte {
	var b bytes.Buffer
	for _, v := range vs {
		if wide {
			binary.Write(&b, order, v)
		} else {
			binary.Write(&b, order, float32(v))
		}
	}
	return b.Bytes()
}

func readBytes(t *testing.T, name string, b []byte) (blas32.General, error) {
	t.Helper()
	path := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return Read(path)
}

// The 2×3 matrix [[1, 2, 3], [4, 5, 6]] in every layout the reader takes.
func TestReadNPYLayouts(t *testing.T) {
	want := []float32{1, 2, 3, 4, 5, 6}
	for _, c := range []struct {
		name string
		file []byte
	}{
		{"f4-little-C", npyBytes("<f4", false, "(2, 3)", floats(binary.LittleEndian, false, 1, 2, 3, 4, 5, 6))},
		{"f4-big-C", npyBytes(">f4", false, "(2, 3)", floats(binary.BigEndian, false, 1, 2, 3, 4, 5, 6))},
		{"f8-little-Fortran", npyBytes("<f8", true, "(2, 3)", floats(binary.LittleEndian, true, 1, 4, 2, 5, 3, 6))},
		{"f8-big-C", npyBytes(">f8", false, "(2, 3)", floats(binary.BigEndian, true, 1, 2, 3, 4, 5, 6))},
	} {
		m, err := readBytes(t, c.name+".npy", c.file)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if m.Rows != 2 || m.Cols != 3 || fmt.Sprint(m.Data) != fmt.Sprint(want) {
			t.Errorf("%s: %d×%d %v, want 2×3 %v", c.name, m.Rows, m.Cols, m.Data, want)
		}
	}
}

func TestReadNPYErrors(t *testing.T) {
	good := floats(binary.LittleEndian, false, 1, 2, 3, 4, 5, 6)
	for _, c := range []struct {
		name string
		file []byte
		want string
	}{
		{"truncated", npyBytes("<f4", false, "(2, 3)", good[:20]), "the file holds 20"},
		{"overlong", npyBytes("<f4", false, "(2, 3)", append(good, 0, 0, 0, 0)), "the file holds 28"},
		{"rank1", npyBytes("<f4", false, "(6,)", good), "1-dimensional"},
		{"rank3", npyBytes("<f4", false, "(1, 2, 3)", good), "3-dimensional"},
		{"int64", npyBytes("<i8", false, "(2, 3)", make([]byte, 48)), "dtype \"<i8\" (int64) is not supported; glmul reads float32 ('<f4', '>f4') and float64 ('<f8', '>f8')"},
		// Item sizes under 4 bytes once met "larger than the file" first,
		// where 4 bytes an element were more than the file.
		{"float16", npyBytes("<f2", false, "(64, 64)", make([]byte, 2*64*64)), "dtype \"<f2\" (float16) is not supported; glmul reads float32"},
		{"bool", npyBytes("|b1", false, "(64, 64)", make([]byte, 64*64)), "dtype \"|b1\" (bool) is not supported; glmul reads float32"},
		{"int8", npyBytes("|i1", false, "(64, 64)", make([]byte, 64*64)), "dtype \"|i1\" (int8) is not supported"},
		{"uint16", npyBytes(">u2", false, "(64, 64)", make([]byte, 2*64*64)), "dtype \">u2\" (uint16) is not supported"},
		{"complex128", npyBytes("<c16", false, "(2, 3)", make([]byte, 96)), "dtype \"<c16\" (complex128) is not supported"},
		{"no-order", npyBytes("|f4", false, "(2, 3)", good), "a.astype(np.float32)"},
		{"not-npy", []byte("hello, world"), "not a valid .npy file"},
		{"no-newline", []byte("\x93NUMPY\x01\x00\x04\x00abcd"), "not a valid .npy file"},
		{"huge-header", []byte("\x93NUMPY\x02\x00\xf0\xff\xff\xff"), "its header announces"},
		{"huge-shape", npyBytes("<f4", false, "(8589934592, 2147483648)", nil), "larger than the file"},
		{"native-order", npyBytes("=f4", false, "(2, 3)", good), "native byte order"},
		{"bare-dtype", npyBytes("f4", false, "(2, 3)", good), "dtype \"f4\" has no byte-order character; glmul reads '<f4' and '>f4'"},
		{"zero-bytes", nil, "is empty (0 bytes)"},
	} {
		_, err := readBytes(t, c.name+".npy", c.file)
		if err == nil || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), c.name+".npy") {
			t.Errorf("%s: %v, want an error naming the file and %q", c.name, err, c.want)
		}
	}
}

func TestWriteReadRoundTrip(t *testing.T) {
	m := blas32.General{Rows: 3, Cols: 2, Stride: 4, Data: []float32{1.5, -2, 99, 99, float32(math.Inf(1)), 1e-30, 99, 99, 7, float32(math.NaN())}}
	for _, ext := range []string{".npy", ".mtx"} {
		path := filepath.Join(t.TempDir(), "c"+ext)
		if err := Write(path, m); err != nil {
			t.Fatal(err)
		}
		back, err := Read(path)
		if err != nil {
			t.Fatalf("%s: %v", ext, err)
		}
		for i := 0; i < 3; i++ {
			for j := 0; j < 2; j++ {
				g, w := back.Data[i*back.Stride+j], m.Data[i*m.Stride+j]
				if math.Float32bits(g) != math.Float32bits(w) && !(g != g && w != w) {
					t.Errorf("%s: (%d,%d) = %v, want %v", ext, i, j, g, w)
				}
			}
		}
		entries, _ := os.ReadDir(filepath.Dir(path))
		if len(entries) != 1 {
			t.Errorf("%s: %d files left in the directory, want the output only", ext, len(entries))
		}
	}
	if err := Write(filepath.Join(t.TempDir(), "c.txt"), m); err == nil || !strings.Contains(err.Error(), "unknown file type") {
		t.Errorf("Write to .txt: %v", err)
	}
	// A device named without .npy or .mtx is written as .npy (before:
	// "unknown file type", so -o /dev/null could not be given).
	if err := Write("/dev/null", m); err != nil {
		t.Errorf("Write to /dev/null: %v", err)
	}
	if f, err := OutputFormat("/dev/null"); f != ".npy" || err != nil {
		t.Errorf("OutputFormat(/dev/null) = %q, %v; want .npy", f, err)
	}
	if _, err := Format("/dev/null"); err == nil {
		t.Error("Format (an input's) of /dev/null: no error")
	}
	// A link named without an extension takes its target's: /dev/stdout
	// redirected to a file.
	dir := t.TempDir()
	link := filepath.Join(dir, "out")
	if err := os.Symlink(filepath.Join(dir, "c.mtx"), link); err == nil {
		os.WriteFile(filepath.Join(dir, "c.mtx"), nil, 0o644)
		if f, err := OutputFormat(link); f != ".mtx" || err != nil {
			t.Errorf("OutputFormat of a link to c.mtx = %q, %v", f, err)
		}
	}
}

func TestReadMTX(t *testing.T) {
	want := "[1 2 0 4 5 6]" // 2×3
	for _, c := range []struct{ name, text, want string }{
		{"array", "%%MatrixMarket matrix array real general\n% a comment\n2 3\n1\n4\n2\n5\n0\n6\n", want},
		{"coordinate", "%%MatrixMarket matrix coordinate real general\n2 3 5\n1 1 1.0\n1 2 2\n2 1 4e0\n2 2 5\n2 3 6\n", want},
		{"integer", "%%MatrixMarket matrix coordinate integer general\n2 3 5\n1 1 1\n1 2 2\n2 1 4\n2 2 5\n2 3 6\n", want},
		{"pattern", "%%MatrixMarket matrix coordinate pattern general\n2 2 2\n1 1\n2 1\n", "[1 0 1 0]"},
		{"symmetric-array", "%%MatrixMarket matrix array real symmetric\n2 2\n1\n2\n3\n", "[1 2 2 3]"},
		{"symmetric-coord", "%%MatrixMarket matrix coordinate real symmetric\n2 2 2\n2 1 7\n2 2 3\n", "[0 7 7 3]"},
		{"duplicates-sum", "%%MatrixMarket matrix coordinate real general\n2 2 3\n1 1 1\n1 1 5\n2 2 2\n", "[6 0 0 2]"},
		{"symmetric-both-triangles", "%%MatrixMarket matrix coordinate real symmetric\n2 2 2\n1 2 7\n2 1 4\n", "[0 11 11 0]"},
		// An integer beyond int64 is an integer still (it was refused as
		// "not a integer value"): 10²⁰ as float32.
		// A UTF-8 byte-order mark before the banner, as Windows editors
		// write one (it was "not a MatrixMarket file").
		{"bom", "\ufeff%%MatrixMarket matrix array real general\n2 3\n1\n4\n2\n5\n0\n6\n", want},
		{"integer-beyond-int64", "%%MatrixMarket matrix coordinate integer general\n1 2 2\n1 1 100000000000000000000\n1 2 -3\n", "[1e+20 -3]"},
	} {
		m, err := readBytes(t, c.name+".mtx", []byte(c.text))
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if got := fmt.Sprint(m.Data); got != c.want {
			t.Errorf("%s: %v, want %v", c.name, got, c.want)
		}
	}
}

func TestReadMTXErrors(t *testing.T) {
	for _, c := range []struct{ name, text, want string }{
		{"banner", "%%MatrixMarket vector array real general\n", "not a MatrixMarket file"},
		{"complex", "%%MatrixMarket matrix array complex general\n1 1\n1 0\n", "field \"complex\" is not supported"},
		{"skew", "%%MatrixMarket matrix array real skew-symmetric\n2 2\n1\n2\n3\n", "symmetry \"skew-symmetric\""},
		{"short", "%%MatrixMarket matrix array real general\n2 2\n1\n2\n3\n", "ends before entry (2, 2)"},
		{"extra", "%%MatrixMarket matrix array real general\n1 1\n1\n2\n", "data after the last entry"},
		{"index", "%%MatrixMarket matrix coordinate real general\n2 2 1\n3 1 1\n", "indices must be"},
		{"value", "%%MatrixMarket matrix coordinate real general\n2 2 1\n1 1 x\n", "\"x\" is not a real value"},
		{"empty", "", "empty file"},
		{"negative", "%%MatrixMarket matrix array real general\n-3 3\n", `the size line "-3 3" gives a negative dimension`},
		{"integer-word", "%%MatrixMarket matrix coordinate integer general\n2 2 1\n1 1 x\n", `"x" is not an integer value`},
		{"size", "%%MatrixMarket matrix coordinate real general\n2 2\n", "should hold 3 whole numbers"},
		{"overflow", "%%MatrixMarket matrix coordinate real general\n4294967296 4294967296 1\n1 1 2\n", "too large to hold dense"},
		{"negative-count", "%%MatrixMarket matrix coordinate real general\n2 2 -1\n", "should hold 3 whole numbers"},
		{"long-line", "%%MatrixMarket matrix coordinate real general\n2 2 1\n% " + strings.Repeat("x", 2<<20) + "\n1 1 1\n", "longer than 1 MiB"},
	} {
		_, err := readBytes(t, c.name+".mtx", []byte(c.text))
		if err == nil || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), c.name+".mtx") {
			t.Errorf("%s: %v, want an error naming the file and %q", c.name, err, c.want)
		}
	}
}

// FuzzRead: no input makes a reader panic or return an inconsistent
// matrix.
func FuzzRead(f *testing.F) {
	f.Add([]byte("%%MatrixMarket matrix array real general\n2 1\n1\n2\n"), false)
	f.Add(npyBytes("<f4", false, "(1, 2)", floats(binary.LittleEndian, false, 1, 2)), true)
	f.Fuzz(func(t *testing.T, b []byte, isNPY bool) {
		name := map[bool]string{true: "f.npy", false: "f.mtx"}[isNPY]
		m, err := readBytes(t, name, b)
		if err == nil && (m.Rows < 0 || m.Cols < 0 || m.Rows > 0 && len(m.Data) < (m.Rows-1)*m.Stride+m.Cols) {
			t.Fatalf("inconsistent matrix %d×%d stride %d, %d floats", m.Rows, m.Cols, m.Stride, len(m.Data))
		}
	})
}

// shortReader is a file that ends after its bytes b although its size,
// when opened, said more: truncated between the size check and the read.
type shortReader struct {
	b   []byte
	err error // after the bytes; io.EOF for a plain truncation
}

// ReadAt reads r.b from off, then returns r.err where p goes beyond it.
func (r *shortReader) ReadAt(p []byte, off int64) (int, error) {
	if off >= int64(len(r.b)) {
		return 0, r.err
	}
	n := copy(p, r.b[off:])
	if n < len(p) {
		return n, r.err
	}
	return n, nil
}

// A .npy file shorter when read than its size said is an error naming the
// file and the elements expected and read, never a matrix of zeros.
func TestReadNPYShortRead(t *testing.T) {
	diskErr := errors.New("input/output error")
	f4 := npyBytes("<f4", false, "(2, 3)", floats(binary.LittleEndian, false, 1, 2, 3, 4, 5, 6))
	f8 := npyBytes(">f8", true, "(2, 3)", floats(binary.BigEndian, true, 1, 4, 2, 5, 3, 6))
	for _, c := range []struct {
		name string
		file []byte
		keep int // bytes of data that remain
		err  error
		want string
	}{
		{"f4-element-boundary", f4, 12, io.EOF, "expected 6 elements (2×3 <f4) but read 3: the file ended 12 bytes into its data, which held 24"},
		{"f4-mid-element", f4, 14, io.EOF, "expected 6 elements (2×3 <f4) but read 3: the file ended 14 bytes"},
		{"f4-no-data", f4, 0, io.EOF, "expected 6 elements (2×3 <f4) but read 0"},
		{"f8-one-short", f8, 40, io.EOF, "expected 6 elements (2×3 >f8) but read 5"},
		{"f4-disk-error", f4, 8, diskErr, "reading the data: expected 6 elements, read 2: input/output error"},
	} {
		data := len(c.file) - map[bool]int{true: 48, false: 24}[c.name[:2] == "f8"]
		r := &shortReader{b: c.file[:data+c.keep], err: c.err}
		m, _, err := readNPY(r, int64(len(c.file)), "a.npy", ReadOptions{})
		if err == nil || !strings.HasPrefix(err.Error(), "a.npy: ") || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v (matrix %v), want an error naming a.npy and %q", c.name, err, m.Data, c.want)
		}
		if c.err != io.EOF && !errors.Is(err, c.err) {
			t.Errorf("%s: %v does not wrap %v", c.name, err, c.err)
		}
	}
	// The whole file through the same reader reads.
	if m, _, err := readNPY(&shortReader{b: f8, err: io.EOF}, int64(len(f8)), "a.npy", ReadOptions{}); err != nil || fmt.Sprint(m.Data) != "[1 2 3 4 5 6]" {
		t.Errorf("whole file: %v %v", m.Data, err)
	}
}

// float64 values beyond float32's range are an error naming the place,
// the value and float32's largest, unless allowed; nonzero values below
// its smallest become 0 and are counted; NaN and ±Inf are data.
func TestReadFloat64Range(t *testing.T) {
	inf, nan := math.Inf(1), math.NaN()
	const max32 = "3.4028235e+38"
	for _, c := range []struct {
		name    string
		file    []byte
		want    string // the error without AllowOverflow; "" for none
		with    string // the matrix with AllowOverflow
		over    int
		under   int
		noAllow string // the matrix without AllowOverflow, where it reads
	}{
		{name: "npy-C", file: npyBytes("<f8", false, "(2, 2)", floats(binary.LittleEndian, true, 1, 2, 1e39, 4)),
			want: "npy-C.npy: element [1, 0] (row, column from 0, as NumPy indexes) is 1e+39, beyond float32's range (largest magnitude " + max32 + "): it would become +Inf in float32",
			with: "[1 2 +Inf 4]", over: 1},
		{name: "npy-Fortran", file: npyBytes(">f8", true, "(2, 2)", floats(binary.BigEndian, true, 1, 2, -5e300, 1e40)),
			want: "npy-Fortran.npy: element [0, 1] (row, column from 0, as NumPy indexes) is -5e+300, beyond float32's range (largest magnitude " + max32 + "): it would become -Inf in float32 (2 such values in the file)",
			with: "[1 -Inf 2 +Inf]", over: 2},
		{name: "npy-underflow", file: npyBytes("<f8", false, "(1, 4)", floats(binary.LittleEndian, true, 1e-50, -1e-300, 1e-40, 0)),
			with: "[0 -0 1e-40 0]", under: 2, noAllow: "[0 -0 1e-40 0]"},
		{name: "npy-edges", file: npyBytes("<f8", false, "(1, 4)", floats(binary.LittleEndian, true, math.MaxFloat32, 3.4028235e38, inf, nan)),
			with: "[3.4028235e+38 3.4028235e+38 +Inf NaN]", noAllow: "[3.4028235e+38 3.4028235e+38 +Inf NaN]"},
		{name: "npy-f4-inf", file: npyBytes("<f4", false, "(1, 2)", floats(binary.LittleEndian, false, inf, nan)),
			with: "[+Inf NaN]", noAllow: "[+Inf NaN]"},
		{name: "mtx-array", file: []byte("%%MatrixMarket matrix array real general\n2 1\n1\n-1e39\n"),
			want: "mtx-array.mtx:4: entry (2, 1) (row, column from 1, as the file numbers them) is -1e39, beyond float32's range (largest magnitude " + max32 + "): it would become -Inf in float32",
			with: "[1 -Inf]", over: 1},
		{name: "mtx-beyond-float64", file: []byte("%%MatrixMarket matrix coordinate real general\n1 2 2\n1 2 1e400\n1 1 -1e-400\n"),
			want: "mtx-beyond-float64.mtx:3: entry (1, 2) (row, column from 1, as the file numbers them) is 1e400, beyond float32's range",
			with: "[-0 +Inf]", over: 1, under: 1},
		// An integer of 400 digits: beyond float64 too, an overflow as a
		// real's is (it was "not an integer value").
		{name: "mtx-integer-beyond-float64", file: []byte("%%MatrixMarket matrix coordinate integer general\n1 2 1\n1 2 -1" + strings.Repeat("0", 400) + "\n"),
			want: "beyond float32's range", with: "[0 -Inf]", over: 1},
		{name: "mtx-duplicate-sum", file: []byte("%%MatrixMarket matrix coordinate real general\n1 1 2\n1 1 3e38\n1 1 3e38\n"),
			want: "mtx-duplicate-sum.mtx:4: entry (1, 1) (row, column from 1, as the file numbers them) is 3e38, summed with 3e+38 from earlier entries there, beyond float32's range",
			with: "[+Inf]", over: 1},
		{name: "mtx-underflow", file: []byte("%%MatrixMarket matrix coordinate real symmetric\n2 2 2\n2 1 1e-46\n2 2 0x1p-2000\n"),
			with: "[0 0 0 0]", under: 2, noAllow: "[0 0 0 0]"},
		{name: "mtx-data", file: []byte("%%MatrixMarket matrix array real general\n3 1\ninf\n-Infinity\nnan\n"),
			with: "[+Inf -Inf NaN]", noAllow: "[+Inf -Inf NaN]"},
		{name: "mtx-zeros", file: []byte("%%MatrixMarket matrix array real general\n2 1\n0.000e-400\n-0x0p-3000\n"),
			with: "[0 -0]", noAllow: "[0 -0]"},
	} {
		ext := ".npy"
		if strings.HasPrefix(c.name, "mtx") {
			ext = ".mtx"
		}
		path := filepath.Join(t.TempDir(), c.name+ext)
		if err := os.WriteFile(path, c.file, 0o644); err != nil {
			t.Fatal(err)
		}
		m, info, err := ReadWith(path, nil)
		switch {
		case c.want != "" && (err == nil || !errors.Is(err, ErrOverflow) || !strings.HasPrefix(err.Error(), path) || !strings.Contains(err.Error(), c.want)):
			t.Errorf("%s: %v, want ErrOverflow naming the file and %q", c.name, err, c.want)
		case c.want == "" && (err != nil || fmt.Sprint(m.Data) != c.noAllow || info.Underflows != c.under || info.Overflows != 0):
			t.Errorf("%s: %v %+v %v, want %v with %d underflows", c.name, m.Data, info, err, c.noAllow, c.under)
		}
		m, info, err = ReadWith(path, &ReadOptions{AllowOverflow: true})
		if err != nil || fmt.Sprint(m.Data) != c.with || info.Overflows != c.over || info.Underflows != c.under {
			t.Errorf("%s allowed: %v %+v %v, want %v with %d overflows, %d underflows", c.name, m.Data, info, err, c.with, c.over, c.under)
		}
	}
}

// Duplicate coordinate entries are summed, as MatrixMarket means, and
// counted: in a symmetric file, (j, i) after (i, j) too.
func TestReadMTXDuplicates(t *testing.T) {
	for _, c := range []struct {
		name, text, want string
		dups             int
	}{
		{"none", "%%MatrixMarket matrix coordinate real general\n2 2 2\n1 1 1\n2 2 2\n", "[1 0 0 2]", 0},
		{"twice", "%%MatrixMarket matrix coordinate real general\n2 2 3\n1 1 1\n1 1 5\n2 2 2\n", "[6 0 0 2]", 1},
		{"thrice", "%%MatrixMarket matrix coordinate integer general\n2 2 4\n2 1 1\n2 1 1\n2 1 1\n1 2 1\n", "[0 1 3 0]", 2},
		{"pattern", "%%MatrixMarket matrix coordinate pattern general\n1 1 2\n1 1\n1 1\n", "[2]", 1},
		{"symmetric-both-triangles", "%%MatrixMarket matrix coordinate real symmetric\n2 2 2\n1 2 7\n2 1 4\n", "[0 11 11 0]", 1},
		{"symmetric-pair", "%%MatrixMarket matrix coordinate real symmetric\n2 2 2\n2 1 7\n1 1 4\n", "[4 7 7 0]", 0},
		{"cancel", "%%MatrixMarket matrix coordinate real general\n1 1 2\n1 1 1.5\n1 1 -1.5\n", "[0]", 1},
		{"array", "%%MatrixMarket matrix array real general\n1 2\n1\n1\n", "[1 1]", 0},
	} {
		path := filepath.Join(t.TempDir(), c.name+".mtx")
		os.WriteFile(path, []byte(c.text), 0o644)
		m, info, err := ReadWith(path, nil)
		if err != nil || fmt.Sprint(m.Data) != c.want || info.Duplicates != c.dups {
			t.Errorf("%s: %v, %d duplicates, %v; want %v, %d", c.name, m.Data, info.Duplicates, err, c.want, c.dups)
		}
	}
}

// TestOpenMessages: a missing input or a directory is named first, as
// every message about a file is ("stat x.npy: ..." and "x.mtx: read
// x.mtx: is a directory" said which call failed), and a missing one still
// matches fs.ErrNotExist.
func TestOpenMessages(t *testing.T) {
	dir := t.TempDir()
	missing := filepath.Join(dir, "nope.npy")
	_, err := Open(missing, nil)
	if err == nil || err.Error() != missing+": no such file or directory" || !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("missing: %v", err)
	}
	d := filepath.Join(dir, "d.mtx")
	os.Mkdir(d, 0o755)
	if _, err := Open(d, nil); err == nil || err.Error() != d+": is a directory, not a .mtx file" {
		t.Errorf("directory: %v", err)
	}
}
