package matfile

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"io"
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

// TestReadRows64Blocks: ReadRows64 reads any block of rows, in any
// order, into a strided or a compact dst, as Read64 reads them all, in
// each byte order and order of elements, through a buffer of a few
// elements and the usual one; a .npy stream in order.
func TestReadRows64Blocks(t *testing.T) {
	const rows, cols = 11, 7
	want := make([]float64, rows*cols)
	for i := range want {
		want[i] = float64(i+1) / 3 // not float32s: rounding would show
	}
	colMajor := make([]float64, rows*cols)
	for i := range rows {
		for j := range cols {
			colMajor[j*rows+i] = want[i*cols+j]
		}
	}
	narrow := make([]float64, len(want)) // what '<f4' holds, widened
	for i, v := range want {
		narrow[i] = float64(float32(v))
	}
	var mtx bytes.Buffer
	if err := Write64(&mtx, "a.mtx", blas64.General{Rows: rows, Cols: cols, Stride: cols, Data: want}); err != nil {
		t.Fatal(err)
	}
	shape := "(11, 7)"
	for _, c := range []struct {
		name string
		file []byte
		want []float64
	}{
		{"c.npy", npyBytes("<f8", false, shape, floats(binary.LittleEndian, true, want...)), want},
		{"big.npy", npyBytes(">f8", false, shape, floats(binary.BigEndian, true, want...)), want},
		{"fortran.npy", npyBytes("<f8", true, shape, floats(binary.LittleEndian, true, colMajor...)), want},
		{"bigfortran.npy", npyBytes(">f8", true, shape, floats(binary.BigEndian, true, colMajor...)), want},
		{"f4.npy", npyBytes("<f4", false, shape, floats(binary.LittleEndian, false, want...)), narrow},
		{"f4fortran.npy", npyBytes(">f4", true, shape, floats(binary.BigEndian, false, colMajor...)), narrow},
		{"a.mtx", mtx.Bytes(), want},
	} {
		path := filepath.Join(t.TempDir(), c.name)
		if err := os.WriteFile(path, c.file, 0o644); err != nil {
			t.Fatal(err)
		}
		for _, small := range []bool{false, true} {
			s, err := Open(path, nil)
			if err != nil {
				t.Fatal(err)
			}
			if ns, ok := s.(*npySource); ok && small {
				ns.bufLen = 3 * ns.l.item
			}
			for _, b := range []struct{ r0, n, stride int }{{4, 6, cols}, {0, 1, cols + 2}, {10, 1, cols}, {0, 11, cols + 1}, {3, 0, cols}, {2, 5, cols}} {
				dst := blas64.General{Rows: b.n, Cols: cols, Stride: b.stride, Data: make([]float64, max(0, (b.n-1)*b.stride+cols))}
				if err := ReadRows64(s, dst, b.r0); err != nil {
					t.Fatalf("%s: rows %d+%d: %v", c.name, b.r0, b.n, err)
				}
				for i := range b.n {
					if got, w := dst.Data[i*b.stride:i*b.stride+cols], c.want[(b.r0+i)*cols:(b.r0+i+1)*cols]; !slices.Equal(got, w) {
						t.Errorf("%s (small buffer %v): row %d: %v, want %v", c.name, small, b.r0+i, got, w)
					}
				}
			}
			s.Close()
		}
	}
	// A stream, in bands of 4 rows, in order; it must end after them.
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	go func() { w.Write(npyBytes("<f8", false, shape, floats(binary.LittleEndian, true, want...))); w.Close() }()
	s, err := readStream(bufio.NewReaderSize(r, bufSize), r, "x", "the stream", ReadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	for r0 := 0; r0 < rows; r0 += 4 {
		n := min(4, rows-r0)
		dst := blas64.General{Rows: n, Cols: cols, Stride: cols, Data: make([]float64, n*cols)}
		if err := ReadRows64(s, dst, r0); err != nil || !slices.Equal(dst.Data, want[r0*cols:(r0+n)*cols]) {
			t.Errorf("stream: rows %d+%d: %v %v", r0, n, dst.Data, err)
		}
	}
}

// TestSink64Blocks: a Sink64 written in blocks of rows, strided, writes
// what Write64 writes of the whole matrix, in both formats; rows beyond
// the matrix are an error, and so is a Close before the last row.
func TestSink64Blocks(t *testing.T) {
	const rows, cols, stride = 9, 5, 6
	m := blas64.General{Rows: rows, Cols: cols, Stride: stride, Data: make([]float64, rows*stride)}
	for i := range m.Data {
		m.Data[i] = math.Sqrt(float64(i)) - 3
	}
	for _, ext := range []string{".npy", ".mtx"} {
		var whole, blocks bytes.Buffer
		if err := Write64(&whole, "c"+ext, m); err != nil {
			t.Fatal(err)
		}
		s, err := NewSink64(&blocks, "c"+ext, rows, cols)
		if err != nil {
			t.Fatal(err)
		}
		r0 := 0
		for _, n := range []int{0, 3, 1, 5} {
			if err := s.WriteRows(blas64.General{Rows: n, Cols: cols, Stride: stride, Data: m.Data[r0*stride:]}); err != nil {
				t.Fatal(err)
			}
			r0 += n
		}
		if err := s.WriteRows(blas64.General{Rows: 1, Cols: cols, Stride: stride, Data: m.Data}); err == nil || !strings.Contains(err.Error(), "more rows") {
			t.Errorf("%s: a row too many: %v", ext, err)
		}
		if err := s.Close(); err != nil || !bytes.Equal(blocks.Bytes(), whole.Bytes()) {
			t.Errorf("%s: %v; blocks differ from the whole:\n%q\n%q", ext, err, blocks.Bytes(), whole.Bytes())
		}
		short, _ := NewSink64(io.Discard, "c"+ext, rows, cols)
		if err := short.Close(); err == nil || !strings.Contains(err.Error(), "0 of the matrix's 9 rows") {
			t.Errorf("%s: Close before the last row: %v", ext, err)
		}
	}
}
