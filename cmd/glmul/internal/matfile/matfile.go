package matfile

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"gonum.org/v1/gonum/blas/blas32"

	"github.com/glmul/glmul/internal/outfile"
)

// Format returns the file format that path's extension names: ".npy" or
// ".mtx"; an error for any other.
func Format(path string) (string, error) {
	switch ext := strings.ToLower(filepath.Ext(path)); ext {
	case ".npy", ".mtx":
		return ext, nil
	}
	return "", fmt.Errorf("%s: unknown file type: use .npy (NumPy) or .mtx (MatrixMarket)", path)
}

// OutputFormat is Format for a file to be written: a link named without
// either extension takes its target's (/dev/stdout redirected to c.npy),
// and a device or a FIFO (or a link to one) whose name has neither, such
// as /dev/null or /dev/stdout into a pipe, is written as .npy.
func OutputFormat(path string) (string, error) {
	if path == outfile.Stdout {
		return ".npy", nil // a stream has no name to tell a format by
	}
	format, err := Format(path)
	if err == nil {
		return format, nil
	}
	if final, lerr := filepath.EvalSymlinks(path); lerr == nil && final != path {
		if format, ferr := Format(final); ferr == nil {
			return format, nil
		}
	}
	if outfile.InPlace(path) {
		return ".npy", nil
	}
	return "", fmt.Errorf("%w (a device or FIFO without either is written as .npy)", err)
}

// Source is a matrix file opened for reading by blocks of rows.
type Source interface {
	// Rows returns the matrix's number of rows.
	Rows() int
	// Cols returns the matrix's number of columns.
	Cols() int
	// ReadRows fills dst (dst.Rows rows, dst.Cols == Cols(), any Stride
	// >= Cols) with rows [r0, r0+dst.Rows) of the matrix, as float32,
	// row-major; dst's elements beyond Cols in each row are left as they
	// are. Calls are serialized: one goroutine at a time reads; rows may
	// be read in any order and more than once. Errors: a file that ended
	// early or changed size since Open ("is it still being written?"),
	// an I/O error, a float64 value beyond float32's range without
	// ReadOptions.AllowOverflow (matching ErrOverflow, naming the
	// element [row, col] and its value). A dst that does not fit the
	// matrix is a programmer error: ReadRows panics.
	ReadRows(dst blas32.General, r0 int) error
	// Info says what reading changed so far: overflows (with
	// AllowOverflow) and underflows, each row counted once however often
	// it is read, and a .mtx file's duplicate entries.
	Info() ReadInfo
	// Close closes the file.
	Close() error
}

// Open opens path by its extension (.npy or .mtx) for reading by blocks
// of rows; o nil means the zero ReadOptions. A .npy file's header is read
// and checked now; its data are read by ReadRows with positioned reads,
// a block at a time. A .mtx file's header is read now, and its entries,
// which come in no row order, are parsed whole into memory at the first
// ReadRows, which copies from it. A stream (IsStream: "-" for standard
// input, a FIFO, a device) is read once, in order: see openStream.
func Open(path string, o *ReadOptions) (Source, error) {
	if o == nil {
		o = &ReadOptions{}
	}
	if IsStream(path) {
		return openStream(path, *o)
	}
	format, err := Format(path)
	if err != nil {
		return nil, err
	}
	fi, err := os.Stat(path)
	if err != nil {
		return nil, pathFirst(path, err)
	}
	if format == ".npy" {
		if err := checkNPYFile(fi, path); err != nil {
			return nil, err
		}
	} else if fi.IsDir() {
		return nil, fmt.Errorf("%s: is a directory, not a %s file", path, format)
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, pathFirst(path, err)
	}
	if format == ".mtx" {
		s, err := openMTX(f, f, path, *o)
		if err != nil {
			f.Close()
			return nil, err
		}
		return s, nil
	}
	fi, err = f.Stat() // the size of the file opened
	if err != nil {
		f.Close()
		return nil, err
	}
	s, err := newNPYSource(f, f, fi.Size(), path, *o)
	if err != nil {
		f.Close()
		return nil, err
	}
	return s, nil
}

// checkNPYFile returns an error that says what path is where it is not a
// .npy file's kind of file (a FIFO or a device is a stream: openStream),
// and an empty file holds no header (reading one said only "EOF").
func checkNPYFile(fi os.FileInfo, path string) error {
	switch m := fi.Mode(); {
	case m.IsDir():
		return fmt.Errorf("%s: is a directory, not a .npy file", path)
	case !m.IsRegular():
		return fmt.Errorf("%s: is not a regular file (mode %v): glmul reads a .npy file by panels, more than once; save it to a regular file first", path, m)
	case fi.Size() == 0:
		return fmt.Errorf("%s: is empty (0 bytes): not a .npy file", path)
	}
	return nil
}

// Read reads the matrix in path, by its extension, with the zero
// ReadOptions; ReadWith also says what reading changed.
func Read(path string) (blas32.General, error) {
	m, _, err := ReadWith(path, nil)
	return m, err
}

// ReadWith reads the matrix in path, by its extension; o nil means the
// zero ReadOptions. ReadInfo counts what float32 and the format's
// conventions changed, for the caller to tell the user. It is Open and
// one ReadRows of the whole matrix.
func ReadWith(path string, o *ReadOptions) (blas32.General, ReadInfo, error) {
	s, err := Open(path, o)
	if err != nil {
		return blas32.General{}, ReadInfo{}, err
	}
	defer s.Close()
	return readAll(s)
}

// readAll reads s's whole matrix: a .mtx file's as it was parsed, with
// no copy.
func readAll(s Source) (blas32.General, ReadInfo, error) {
	if ms, ok := s.(*mtxSource); ok {
		if err := ms.parse(); err != nil {
			return blas32.General{}, ReadInfo{}, err
		}
		return ms.m, ms.info, nil
	}
	m := blas32.General{Rows: s.Rows(), Cols: s.Cols(), Stride: s.Cols(), Data: make([]float32, s.Rows()*s.Cols())}
	if err := s.ReadRows(m, 0); err != nil {
		return blas32.General{}, ReadInfo{}, err
	}
	return m, s.Info(), nil
}

// Write writes m to path in the format its extension names (OutputFormat), streamed
// through outfile: a regular file (a link's target, for a link) is
// replaced atomically, left as it was on any failure; a device or FIFO is
// written in place. path cannot be "-": its extension names the format.
func Write(path string, m blas32.General) error {
	if _, err := OutputFormat(path); err != nil {
		return err
	}
	return outfile.WriteWith(path, nil, func(w io.Writer) error {
		return writeMatrix(w, path, m)
	})
}

// writeMatrix writes m to w through a Sink, in the format path's
// extension names: the one writer of both formats.
func writeMatrix(w io.Writer, path string, m blas32.General) error {
	s, err := NewSink(w, path, m.Rows, m.Cols)
	if err != nil {
		return err
	}
	if err := s.WriteRows(m); err != nil {
		return err
	}
	return s.Close()
}

// pathFirst words an error of the os package about path as glmul's
// messages about a file are, "PATH: what is wrong" ("stat PATH: ..." said
// which system call failed).
func pathFirst(path string, err error) error {
	return fmt.Errorf("%s: %w", path, outfile.Pathless(err))
}
