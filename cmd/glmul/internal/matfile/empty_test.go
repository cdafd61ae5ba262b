package matfile

import (
	"bytes"
	"path/filepath"
	"testing"

	"gonum.org/v1/gonum/blas/blas32"
)

// TestEmptyMatrices: a matrix with no rows or no columns reads, as NumPy
// reads it (np.zeros((5, 0)) saves and loads; it was "an empty 5×0
// matrix"), from .npy and .mtx, and a Sink writes one that reads back.
func TestEmptyMatrices(t *testing.T) {
	for _, c := range []struct {
		name       string
		b          []byte
		rows, cols int
	}{
		{"rows.npy", npyBytes("<f4", false, "(0, 3)", nil), 0, 3},
		{"cols.npy", npyBytes("<f8", true, "(5, 0)", nil), 5, 0},
		{"none.npy", npyBytes(">f4", false, "(0, 0)", nil), 0, 0},
		{"array.mtx", []byte("%%MatrixMarket matrix array real general\n0 2\n"), 0, 2},
		{"coord.mtx", []byte("%%MatrixMarket matrix coordinate real general\n3 0 0\n"), 3, 0},
	} {
		m, err := readBytes(t, c.name, c.b)
		if err != nil || m.Rows != c.rows || m.Cols != c.cols {
			t.Errorf("%s: %d×%d, %v; want %d×%d", c.name, m.Rows, m.Cols, err, c.rows, c.cols)
		}
	}
	for _, ext := range []string{".npy", ".mtx"} {
		for _, shape := range [][2]int{{0, 4}, {5, 0}} {
			path := filepath.Join(t.TempDir(), "c"+ext)
			if err := Write(path, blas32.General{Rows: shape[0], Cols: shape[1], Stride: shape[1]}); err != nil {
				t.Fatalf("%s %v: %v", ext, shape, err)
			}
			m, err := Read(path)
			if err != nil || m.Rows != shape[0] || m.Cols != shape[1] {
				t.Errorf("%s %v: read back %d×%d, %v", ext, shape, m.Rows, m.Cols, err)
			}
		}
	}
	var b bytes.Buffer
	s, _ := NewSink(&b, "c.npy", 0, 4)
	s.Close()
	if want := npyBytes("<f4", false, "(0, 4)", nil); !bytes.Equal(b.Bytes(), want) {
		t.Errorf("0×4 .npy:\n%q\nwant\n%q", b.Bytes(), want)
	}
}
