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

// Read reads the matrix in path, by its extension, with the zero
// ReadOptions; ReadWith also says what reading changed.
func Read(path string) (blas32.General, error) {
	m, _, err := ReadWith(path, nil)
	return m, err
}

// ReadWith reads the matrix in path, by its extension; o nil means the
// zero ReadOptions. ReadInfo counts what float32 and the format's
// conventions changed, for the caller to tell the user.
func ReadWith(path string, o *ReadOptions) (blas32.General, ReadInfo, error) {
	if o == nil {
		o = &ReadOptions{}
	}
	format, err := Format(path)
	if err != nil {
		return blas32.General{}, ReadInfo{}, err
	}
	f, err := os.Open(path)
	if err != nil {
		return blas32.General{}, ReadInfo{}, err
	}
	defer f.Close()
	if format == ".mtx" {
		return readMTX(f, path, *o)
	}
	fi, err := f.Stat()
	if err != nil {
		return blas32.General{}, ReadInfo{}, err
	}
	return readNPY(f, fi.Size(), path, *o)
}

// Write writes m to path in the format its extension names, streamed
// through outfile: a regular file (a link's target, for a link) is
// replaced atomically, left as it was on any failure; a device or FIFO is
// written in place. path cannot be "-": its extension names the format.
func Write(path string, m blas32.General) error {
	format, err := Format(path)
	if err != nil {
		return err
	}
	return outfile.WriteWith(path, nil, func(w io.Writer) error {
		if format == ".mtx" {
			return writeMTX(w, m)
		}
		return writeNPY(w, m)
	})
}
