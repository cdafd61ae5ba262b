package matfile

import (
	"bufio"
	"encoding/binary"
	"fmt"
	"io"
	"strconv"
	"strings"

	"gonum.org/v1/gonum/blas/blas32"
)

// readNPY reads a rank-2 float32 or float64 .npy array, whole, from ra;
// size is the file's size when it was opened (ra may yet end sooner, if
// the file shrank since); name is for messages.
func readNPY(ra io.ReaderAt, size int64, name string, o ReadOptions) (blas32.General, ReadInfo, error) {
	s, err := newNPYSource(nil, ra, size, name, o)
	if err != nil {
		return blas32.General{}, ReadInfo{}, err
	}
	return readAll(s)
}

// readNPYLayout reads and checks the header of the .npy file in ra, of
// size bytes; name is for messages. The data are read by
// npySource.ReadRows.
func readNPYLayout(ra io.ReaderAt, size int64, name string) (npyLayout, error) {
	br := bufio.NewReader(io.NewSectionReader(ra, 0, size))
	h, hdr, err := readNPYPrefix(br, size)
	if err != nil {
		return npyLayout{}, fmt.Errorf("%s: %w", name, err)
	}
	return checkNPYHeader(h, hdr, size, name)
}

// npyLayout is what a checked .npy header says of the data after it.
type npyLayout struct {
	dtype      string           // as the header writes it: "<f4"
	fortran    bool             // column-major on disk
	order      binary.ByteOrder // the dtype's byte order
	item       int              // bytes an element: 4 (float32) or 8 (float64)
	rows, cols int
	n          int64 // elements: rows×cols
	hdr        int64 // bytes before the data
}

// checkNPYHeader checks a .npy file's header h, hdr bytes with the magic
// and version: a dtype glmul reads, a rank-2 shape (empty or not), and
// exactly as much data as the rest of the file, of size bytes, holds
// (size < 0: a stream, whose size is not known).
func checkNPYHeader(h npyDict, hdr, size int64, name string) (npyLayout, error) {
	// The dtype first: its item size decides what the file's size means.
	order, item, err := npyDtype(h.descr)
	if err != nil {
		return npyLayout{}, fmt.Errorf("%s: %w", name, err)
	}
	if len(h.shape) != 2 {
		return npyLayout{}, fmt.Errorf("%s: a %d-dimensional array (shape %v); glmul multiplies matrices: rank 2", name, len(h.shape), h.shape)
	}
	rows, cols := h.shape[0], h.shape[1] // 0 is allowed: an empty matrix, as NumPy's
	if rows > 1<<40 || cols > 1<<40 || size >= 0 && float64(rows)*float64(cols)*float64(item) > float64(size) {
		if size < 0 {
			return npyLayout{}, fmt.Errorf("%s: the header's shape %d×%d is larger than glmul reads (2^40 a dimension)", name, rows, cols)
		}
		return npyLayout{}, fmt.Errorf("%s: the header's shape %d×%d of %s is larger than the file (%d bytes)", name, rows, cols, h.descr, size)
	}
	n := int64(rows) * int64(cols)
	if want := hdr + n*int64(item); size >= 0 && size != want {
		return npyLayout{}, fmt.Errorf("%s: the header says %d×%d %s (%d bytes of data), the file holds %d", name, rows, cols, h.descr, n*int64(item), size-hdr)
	}
	return npyLayout{dtype: h.descr, fortran: h.fortran, order: order, item: item, rows: rows, cols: cols, n: n, hdr: hdr}, nil
}

// npyDtype returns the byte order and item size of the dtypes glmul reads:
// float32 and float64, with an explicit byte order.
func npyDtype(descr string) (binary.ByteOrder, int, error) {
	switch descr {
	case "<f4":
		return binary.LittleEndian, 4, nil
	case ">f4":
		return binary.BigEndian, 4, nil
	case "<f8":
		return binary.LittleEndian, 8, nil
	case ">f8":
		return binary.BigEndian, 8, nil
	case "=f4", "=f8":
		return nil, 0, fmt.Errorf("dtype %q: native byte order '=' is not supported; save with an explicit '<' or '>'", descr)
	case "f4", "f8":
		return nil, 0, fmt.Errorf("dtype %q has no byte-order character; glmul reads '<%s' and '>%s': save with an explicit '<' or '>'", descr, descr, descr)
	}
	what := ""
	if s := dtypeName(descr); s != "" {
		what = " (" + s + ")"
	}
	return nil, 0, fmt.Errorf("dtype %q%s is not supported; glmul reads float32 ('<f4', '>f4') and float64 ('<f8', '>f8'): convert it first, e.g. with NumPy np.save(path, a.astype(np.float32))", descr, what)
}

// dtypeName names a NumPy dtype for messages ("<f2": float16), or "".
func dtypeName(descr string) string {
	s := strings.TrimLeft(descr, "<>|=")
	if len(s) < 2 {
		return ""
	}
	size, err := strconv.Atoi(s[1:])
	if err != nil || size < 1 || size > 64 {
		return ""
	}
	switch s[0] {
	case 'b':
		if size == 1 {
			return "bool"
		}
	case 'i':
		return fmt.Sprintf("int%d", 8*size)
	case 'u':
		return fmt.Sprintf("uint%d", 8*size)
	case 'f':
		return fmt.Sprintf("float%d", 8*size)
	case 'c':
		return fmt.Sprintf("complex%d", 8*size)
	}
	return ""
}
