package matfile

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/google/renameio/v2"
	"gonum.org/v1/gonum/blas/blas32"
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

// Read reads the matrix in path, by its extension.
func Read(path string) (blas32.General, error) {
	format, err := Format(path)
	if err != nil {
		return blas32.General{}, err
	}
	f, err := os.Open(path)
	if err != nil {
		return blas32.General{}, err
	}
	defer f.Close()
	if format == ".mtx" {
		return readMTX(f, path)
	}
	fi, err := f.Stat()
	if err != nil {
		return blas32.General{}, err
	}
	return readNPY(f, fi.Size(), path)
}

// Write writes m to path in the format its extension names, atomically:
// into a temporary file in the same directory, renamed over path when
// complete, removed on any failure.
func Write(path string, m blas32.General) error {
	format, err := Format(path)
	if err != nil {
		return err
	}
	var b bytes.Buffer
	if format == ".mtx" {
		err = writeMTX(&b, m)
	} else {
		err = writeNPY(&b, m)
	}
	if err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	return renameio.WriteFile(path, b.Bytes(), 0o644)
}
