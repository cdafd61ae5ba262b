package matfile

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"gonum.org/v1/gonum/blas/blas64"
)

// read64Bytes writes b to a file named name and reads it with Read64.
func read64Bytes(t *testing.T, name string, b []byte) (blas64.General, ReadInfo, error) {
	t.Helper()
	path := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
	s, err := Open(path, nil)
	if err != nil {
		return blas64.General{}, ReadInfo{}, err
	}
	defer s.Close()
	return Read64(s)
}

// TestRead64Layouts: Read64 keeps float64 data as the file holds them,
// every bit, in each byte order and either order of elements, widens
// float32 data exactly, and reads .mtx values as float64 parses them.
func TestRead64Layouts(t *testing.T) {
	third := 1.0 / 3 // not a float32: rounding would show
	want := []float64{1, 2, third, 4, 5e-300, -6e300}
	for _, c := range []struct {
		name string
		file []byte
		want []float64
	}{
		{"c.npy", npyBytes("<f8", false, "(2, 3)", floats(binary.LittleEndian, true, want...)), want},
		{"big.npy", npyBytes(">f8", false, "(2, 3)", floats(binary.BigEndian, true, want...)), want},
		{"fortran.npy", npyBytes("<f8", true, "(2, 3)", floats(binary.LittleEndian, true, want[0], want[3], want[1], want[4], want[2], want[5])), want},
		{"f4.npy", npyBytes(">f4", false, "(2, 3)", floats(binary.BigEndian, false, 1, 2, 3, 4, 5, 6)), []float64{1, 2, 3, 4, 5, 6}},
		{"a.mtx", []byte("%%MatrixMarket matrix array real general\n2 3\n1\n4\n2\n5e-300\n0.3333333333333333\n-6e300\n"), want},
		{"c.mtx", []byte("%%MatrixMarket matrix coordinate real general\n2 3 7\n1 1 1\n1 2 2\n1 3 0.3333333333333333\n2 1 4\n2 2 5e-300\n2 3 -3e300\n2 3 -3e300\n"), want},
	} {
		m, info, err := read64Bytes(t, c.name, c.file)
		if err != nil || m.Rows != 2 || m.Cols != 3 || m.Stride != 3 || !slices.Equal(m.Data, c.want) {
			t.Errorf("%s: %v %d×%d %v, want %v", c.name, err, m.Rows, m.Cols, m.Data, c.want)
		}
		if d := info.Duplicates; c.name == "c.mtx" && d != 1 || c.name != "c.mtx" && d != 0 {
			t.Errorf("%s: %d duplicates", c.name, d)
		}
	}
	// Beyond float64's range: ±Inf, as NumPy reads it; below: 0.
	m, _, err := read64Bytes(t, "r.mtx", []byte("%%MatrixMarket matrix array real general\n1 2\n-1e400\n1e-400\n"))
	if err != nil || !math.IsInf(m.Data[0], -1) || m.Data[1] != 0 {
		t.Errorf("1e400 and 1e-400: %v %v", m.Data, err)
	}
	// testdata's example: float64, Fortran order.
	m, _, err = func() (blas64.General, ReadInfo, error) {
		s, err := Open(filepath.Join("..", "..", "..", "..", "testdata", "mul", "a.npy"), nil)
		if err != nil {
			return blas64.General{}, ReadInfo{}, err
		}
		defer s.Close()
		return Read64(s)
	}()
	m32, err32 := Read(filepath.Join("..", "..", "..", "..", "testdata", "mul", "a.npy"))
	if err != nil || err32 != nil || m.Rows != 3 || m.Cols != 4 {
		t.Fatalf("testdata a.npy: %v %v", err, err32)
	}
	for i, v := range m.Data {
		if float32(v) != m32.Data[i] {
			t.Errorf("a.npy[%d]: %v as float64, %v as float32", i, v, m32.Data[i])
		}
	}
}

// TestRead64Streams: a .npy stream read as float64 must end after its
// data, as ReadRows requires; a truncated file says so.
func TestRead64Streams(t *testing.T) {
	data := floats(binary.LittleEndian, true, 1, 2, 3, 4)
	for _, c := range []struct {
		name, want string
		file       []byte
	}{
		{"whole", "", npyBytes("<f8", false, "(2, 2)", data)},
		{"fortran", "", npyBytes("<f8", true, "(2, 2)", data)},
		{"longer", "goes on after", append(npyBytes("<f8", false, "(2, 2)", data), 0)},
		{"short", "ended", npyBytes("<f8", false, "(2, 2)", data[:24])},
	} {
		r, w, err := os.Pipe()
		if err != nil {
			t.Fatal(err)
		}
		go func() { w.Write(c.file); w.Close() }()
		s, err := readStream(bufio.NewReaderSize(r, bufSize), r, "x", "the stream", ReadOptions{})
		if err == nil {
			_, _, err = Read64(s)
			s.Close()
		}
		switch {
		case c.want == "" && err != nil:
			t.Errorf("%s: %v", c.name, err)
		case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)):
			t.Errorf("%s: %v, want an error with %q", c.name, err, c.want)
		}
	}
	if _, _, err := read64Bytes(t, "t.npy", npyBytes("<f8", false, "(2, 2)", data[:24])); err == nil || !strings.Contains(err.Error(), "the file holds 24") {
		t.Errorf("a truncated file: %v", err)
	}
}

// TestWrite64RoundTrip: Write64's .npy is '<f8' with every bit, its .mtx
// the shortest decimals that read back the same, either read back by
// Read64 as written.
func TestWrite64RoundTrip(t *testing.T) {
	m := blas64.General{Rows: 2, Cols: 3, Stride: 4, Data: []float64{1.0 / 3, -2, math.Pi, 99, math.SmallestNonzeroFloat64, math.MaxFloat64, -0.1, 99}}
	want := []float64{1.0 / 3, -2, math.Pi, math.SmallestNonzeroFloat64, math.MaxFloat64, -0.1}
	for _, ext := range []string{".npy", ".mtx"} {
		var b bytes.Buffer
		if err := Write64(&b, "c"+ext, m); err != nil {
			t.Fatal(err)
		}
		if ext == ".npy" && !bytes.Contains(b.Bytes(), []byte("'descr': '<f8'")) || ext == ".mtx" && !bytes.Contains(b.Bytes(), []byte("(float64)")) {
			t.Errorf("%s: header %q", ext, b.Bytes()[:64])
		}
		back, _, err := read64Bytes(t, "c"+ext, b.Bytes())
		if err != nil || back.Rows != 2 || back.Cols != 3 || !slices.Equal(back.Data, want) {
			t.Errorf("%s: read back %v %v, want %v", ext, back.Data, err, want)
		}
	}
}
