//go:build unix

package matfile

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"gonum.org/v1/gonum/blas/blas32"
)

// fifoWith makes a FIFO named name in a new directory, a goroutine
// writing b into it (and closing it) once it is opened; it returns the
// FIFO's path.
func fifoWith(t *testing.T, name string, b []byte) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), name)
	if err := syscall.Mkfifo(path, 0o600); err != nil {
		t.Skip("no FIFOs here:", err)
	}
	go func() {
		f, err := os.OpenFile(path, os.O_WRONLY, 0)
		if err != nil {
			return
		}
		f.Write(b) // fails where the reader stops early: no matter
		f.Close()
	}()
	return path
}

// stdinWith makes standard input a pipe that b is written into, for the
// test's duration.
func stdinWith(t *testing.T, b []byte) {
	t.Helper()
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	saved := os.Stdin
	os.Stdin = r
	t.Cleanup(func() { os.Stdin = saved; r.Close() })
	go func() { w.Write(b); w.Close() }()
}

// readPanels reads s in panels of rows, in order, as glmul mul's reader
// does, into one matrix (a matrix without rows by one empty read).
func readPanels(s Source, rows int) (blas32.General, error) {
	m := blas32.General{Rows: s.Rows(), Cols: s.Cols(), Stride: s.Cols() + 3, Data: make([]float32, s.Rows()*(s.Cols()+3))}
	for r0 := 0; r0 < m.Rows || r0 == 0; r0 += rows { // once at least: a matrix without rows
		n := min(rows, m.Rows-r0)
		if err := s.ReadRows(blas32.General{Rows: n, Cols: m.Cols, Stride: m.Stride, Data: m.Data[r0*m.Stride:]}, r0); err != nil {
			return m, err
		}
	}
	return m, nil
}

// TestReadStream: a matrix from a FIFO (named with its extension, or
// without: its first bytes tell) or from standard input ("-") is read
// once, in order, by panels of rows, and equals the same bytes read from
// a regular file, in every layout (issue: a FIFO was refused, "-" was
// not a file name). Errors name the stream.
func TestReadStream(t *testing.T) {
	const rows, cols = 37, 11
	vals := randValues(29, rows*cols)
	var mtx strings.Builder
	fmt.Fprintf(&mtx, "\ufeff%%%%MatrixMarket matrix coordinate real general\n%d %d %d\n", rows, cols, rows*cols)
	for k, v := range vals {
		fmt.Fprintf(&mtx, "%d %d %g\n", k/cols+1, k%cols+1, v)
	}
	shape := fmt.Sprintf("(%d, %d)", rows, cols)
	for _, c := range []struct {
		name string
		b    []byte
	}{
		{"f4.npy", npyBytes("<f4", false, shape, npyData("<f4", false, rows, cols, vals))},
		{"f8.npy", npyBytes("<f8", false, shape, npyData("<f8", false, rows, cols, vals))},
		{"bigf4.npy", npyBytes(">f4", false, shape, npyData(">f4", false, rows, cols, vals))},
		{"fortran.npy", npyBytes("<f8", true, shape, npyData("<f8", true, rows, cols, vals))},
		{"coord.mtx", []byte(mtx.String())},
	} {
		want, _, err := ReadWith(writeFile(t, c.name, c.b), nil)
		if err != nil {
			t.Fatalf("%s as a file: %v", c.name, err)
		}
		named, bare := fifoWith(t, c.name, c.b), fifoWith(t, "fifo", c.b)
		stdinWith(t, c.b)
		for _, path := range []string{named, bare, Stdin} {
			s, err := Open(path, nil)
			if err != nil {
				t.Errorf("%s from %s: %v", c.name, path, err)
				continue
			}
			got, err := readPanels(s, 5)
			s.Close()
			if err != nil {
				t.Errorf("%s from %s: %v", c.name, path, err)
				continue
			}
			for i := range rows {
				for j := range cols {
					if g, w := got.Data[i*got.Stride+j], want.Data[i*want.Stride+j]; g != w {
						t.Fatalf("%s from %s: [%d, %d] = %v, want %v", c.name, path, i, j, g, w)
					}
				}
			}
		}
	}
}

// TestReadStreamErrors: a stream that ends early, goes on after its data,
// is empty or is neither format, or is read out of order, is an error
// naming it.
func TestReadStreamErrors(t *testing.T) {
	vals := randValues(31, 12)
	good := npyBytes("<f4", false, "(4, 3)", npyData("<f4", false, 4, 3, vals))
	fortran := npyBytes("<f4", true, "(4, 3)", npyData("<f4", true, 4, 3, vals))
	for _, c := range []struct {
		name string
		b    []byte
		want string
	}{
		{"short", good[:len(good)-5], "fifo: the stream ended 43 bytes into its data, after 10 of the 12 elements (4×3 <f4) its header announces"},
		{"long", append(good[:len(good):len(good)], 0), "fifo: the stream goes on after the 4×3 <f4 its header announces"},
		{"fortran-short", fortran[:len(fortran)-5], "fifo: the stream ended 43 bytes into its data"},
		{"fortran-long", append(fortran[:len(fortran):len(fortran)], 0), "fifo: the stream goes on after the 4×3 <f4"},
		{"empty", nil, "fifo: empty: no matrix was written to it"},
		{"empty-matrix-long", append(npyBytes("<f4", false, "(0, 3)", nil), 1), "fifo: the stream goes on after the 0×3 <f4"},
		{"neither", []byte("1,2,3\n4,5,6\n"), "fifo: neither a .npy file (which starts with \\x93NUMPY) nor a MatrixMarket file"},
	} {
		s, err := Open(fifoWith(t, "fifo", c.b), nil)
		if err == nil {
			_, err = readPanels(s, 3)
			s.Close()
		}
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want %q", c.name, err, c.want)
		}
	}
	stdinWith(t, good)
	s, err := Open(Stdin, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	m := blas32.General{Rows: 2, Cols: 3, Stride: 3, Data: make([]float32, 6)}
	err = s.ReadRows(m, 2)
	if err == nil {
		err = s.ReadRows(m, 0)
	}
	if err == nil || !strings.Contains(err.Error(), "standard input: ") || !strings.Contains(err.Error(), "a stream is read once, in order") {
		t.Errorf("rows out of order: %v", err)
	}
}

// writeFile writes b to name in a new directory and returns its path.
func writeFile(t *testing.T, name string, b []byte) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}
