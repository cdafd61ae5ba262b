package matfile

import (
	"bytes"
	"encoding/binary"
	"fmt"
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
		{"int64", npyBytes("<i8", false, "(2, 3)", make([]byte, 48)), "dtype \"<i8\" is not supported"},
		{"empty", npyBytes("<f4", false, "(0, 3)", nil), "empty 0×3"},
		{"not-npy", []byte("hello, world"), "not a valid .npy file"},
		{"no-newline", []byte("\x93NUMPY\x01\x00\x04\x00abcd"), "not a valid .npy file"},
		{"huge-header", []byte("\x93NUMPY\x02\x00\xf0\xff\xff\xff"), "its header announces"},
		{"huge-shape", npyBytes("<f4", false, "(8589934592, 2147483648)", nil), "larger than the file"},
		{"native-order", npyBytes("=f4", false, "(2, 3)", good), "native byte order"},
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
		{"zero", "%%MatrixMarket matrix array real general\n0 2\n", "empty 0×2"},
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
		if err == nil && (m.Rows < 1 || m.Cols < 1 || len(m.Data) < (m.Rows-1)*m.Stride+m.Cols) {
			t.Fatalf("inconsistent matrix %d×%d stride %d, %d floats", m.Rows, m.Cols, m.Stride, len(m.Data))
		}
	})
}
