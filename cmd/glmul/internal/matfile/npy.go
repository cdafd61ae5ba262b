package matfile

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"

	"github.com/sbinet/npyio/npy"
	"gonum.org/v1/gonum/blas/blas32"
)

// readNPY reads a rank-2 float32 or float64 .npy array from r; size is
// the file's size when it was opened (r may yet end sooner, if the file
// shrank since); name is for messages.
func readNPY(r io.Reader, size int64, name string, o ReadOptions) (m blas32.General, info ReadInfo, err error) {
	defer func() {
		// npyio indexes a header it has not checked: a corrupt one panics.
		if p := recover(); p != nil {
			err = fmt.Errorf("%s: not a valid .npy file (corrupt header)", name)
		}
	}()
	br := bufio.NewReader(r)
	if err := checkNPYHeaderSize(br, size, name); err != nil {
		return m, info, err
	}
	// npyio reads the header only (its binary.Read reads in full); the
	// data are read below, where a short read is an error: npyio's own
	// data reader ignores io.EOF and leaves zeros.
	cr := &countingReader{r: br}
	l, err := readNPYHeader(cr, size, name)
	if err != nil {
		return m, info, err
	}
	var nw narrowing
	data, err := l.readData(cr, name, &nw)
	if err != nil {
		return m, info, err
	}
	if err := nw.check(o); err != nil {
		return m, info, err
	}
	return l.matrix(data), nw.info(), nil
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

// checkNPYHeaderSize returns an error if the header length a .npy file
// announces runs past its size: npyio allocates the header's announced
// length before checking it, so it is checked against the file first.
func checkNPYHeaderSize(br *bufio.Reader, size int64, name string) error {
	if pre, err := br.Peek(12); err == nil && string(pre[:6]) == "\x93NUMPY" {
		hdr, at := int64(binary.LittleEndian.Uint16(pre[8:10])), int64(10)
		if pre[6] >= 2 {
			hdr, at = int64(binary.LittleEndian.Uint32(pre[8:12])), 12
		}
		if at+hdr > size {
			return fmt.Errorf("%s: not a valid .npy file: its header announces %d bytes, the file holds %d", name, hdr, size)
		}
	}
	return nil
}

// readNPYHeader reads the header through cr and checks it: a dtype glmul
// reads, a rank-2 shape, not empty, and exactly as much data as the rest
// of the file, of size bytes, holds.
func readNPYHeader(cr *countingReader, size int64, name string) (npyLayout, error) {
	nr, err := npy.NewReader(cr)
	if err != nil {
		return npyLayout{}, fmt.Errorf("%s: not a valid .npy file: %w", name, err)
	}
	d := nr.Header.Descr
	// The dtype first: its item size decides what the file's size means.
	order, item, err := npyDtype(d.Type)
	if err != nil {
		return npyLayout{}, fmt.Errorf("%s: %w", name, err)
	}
	if len(d.Shape) != 2 {
		return npyLayout{}, fmt.Errorf("%s: a %d-dimensional array (shape %v); glmul multiplies matrices: rank 2", name, len(d.Shape), d.Shape)
	}
	rows, cols := d.Shape[0], d.Shape[1]
	if rows < 1 || cols < 1 {
		return npyLayout{}, fmt.Errorf("%s: an empty %d×%d matrix", name, rows, cols)
	}
	if rows > 1<<40 || cols > 1<<40 || float64(rows)*float64(cols)*float64(item) > float64(size) {
		return npyLayout{}, fmt.Errorf("%s: the header's shape %d×%d of %s is larger than the file (%d bytes)", name, rows, cols, d.Type, size)
	}
	n := int64(rows) * int64(cols)
	if want := cr.n + n*int64(item); size != want {
		return npyLayout{}, fmt.Errorf("%s: the header says %d×%d %s (%d bytes of data), the file holds %d", name, rows, cols, d.Type, n*int64(item), size-cr.n)
	}
	return npyLayout{dtype: d.Type, fortran: d.Fortran, order: order, item: item, rows: rows, cols: cols, n: n, hdr: cr.n}, nil
}

// place returns the (row, column) of the i-th element in file order.
func (l npyLayout) place(i int64) (row, col int64) {
	if l.fortran {
		return i % int64(l.rows), i / int64(l.rows)
	}
	return i / int64(l.cols), i % int64(l.cols)
}

// readData reads l's elements from cr, which has read the header, in
// file order, rounding float64 ones through nw; a file that ends early is
// an error that says so.
func (l npyLayout) readData(cr *countingReader, name string, nw *narrowing) ([]float32, error) {
	data, got, err := readNPYData(cr, l.n, l.order, l.item, nw, func(i int64, v float64) {
		row, col := l.place(i)
		nw.where = fmt.Sprintf("%s: element [%d, %d] (row, column from 0, as NumPy indexes) is %s", name, row, col, strconv.FormatFloat(v, 'g', -1, 64))
	})
	switch {
	case errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF):
		return nil, fmt.Errorf("%s: expected %d elements (%d×%d %s) but read %d: the file ended %d bytes into its data, which held %d bytes when it was opened (is it still being written?)",
			name, l.n, l.rows, l.cols, l.dtype, got, cr.n-l.hdr, l.n*int64(l.item))
	case err != nil:
		return nil, fmt.Errorf("%s: reading the data: expected %d elements, read %d: %w", name, l.n, got, err)
	}
	return data, nil
}

// matrix returns data, l's elements in file order, as a row-major
// matrix.
func (l npyLayout) matrix(data []float32) blas32.General {
	m := blas32.General{Rows: l.rows, Cols: l.cols, Stride: l.cols, Data: data}
	if l.fortran { // column-major on disk
		t := make([]float32, l.n)
		for j := 0; j < l.cols; j++ {
			for i := 0; i < l.rows; i++ {
				t[i*l.cols+j] = data[j*l.rows+i]
			}
		}
		m.Data = t
	}
	return m
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

// readNPYData reads n elements of item bytes (4: float32, 8: float64) in
// order from r into float32s, in file order; float64 ones are rounded
// through nw, and overflowed(i, v) is called for the first that overflows.
// It returns how many whole elements it read: fewer than n only with an
// error (io.EOF or io.ErrUnexpectedEOF where the data end early).
func readNPYData(r io.Reader, n int64, order binary.ByteOrder, item int, nw *narrowing, overflowed func(i int64, v float64)) ([]float32, int64, error) {
	data := make([]float32, n)
	buf := make([]byte, min(n*int64(item), 1<<20)) // 1 MiB: a whole number of items
	var got int64
	for got < n {
		chunk := buf[:min(n-got, int64(len(buf)/item))*int64(item)]
		k, err := io.ReadFull(r, chunk)
		whole := chunk[:k/item*item]
		if item == 4 {
			for i := range len(whole) / 4 {
				data[got+int64(i)] = math.Float32frombits(order.Uint32(whole[4*i:]))
			}
		} else {
			for i := range len(whole) / 8 {
				v := math.Float64frombits(order.Uint64(whole[8*i:]))
				f, first := nw.round(v)
				if first {
					overflowed(got+int64(i), v)
				}
				data[got+int64(i)] = f
			}
		}
		got += int64(len(whole) / item)
		if err != nil {
			return data, got, err
		}
	}
	return data, got, nil
}

// writeNPY writes m as a C-order '<f4' .npy array (format version 1.0).
// npyio writes 2-D arrays only from gonum's float64 mat.Dense, so the
// header, a padded Python dict literal, is written here.
func writeNPY(w io.Writer, m blas32.General) error {
	dict := fmt.Sprintf("{'descr': '<f4', 'fortran_order': False, 'shape': (%d, %d), }", m.Rows, m.Cols)
	// magic (6) + version (2) + length (2) + dict + '\n': a multiple of 64.
	pad := (64 - (10+len(dict)+1)%64) % 64
	dict += strings.Repeat(" ", pad) + "\n"
	bw := bufio.NewWriter(w)
	bw.WriteString("\x93NUMPY\x01\x00")
	binary.Write(bw, binary.LittleEndian, uint16(len(dict)))
	bw.WriteString(dict)
	var buf [4]byte
	for i := 0; i < m.Rows; i++ {
		for _, v := range m.Data[i*m.Stride : i*m.Stride+m.Cols] {
			binary.LittleEndian.PutUint32(buf[:], math.Float32bits(v))
			bw.Write(buf[:])
		}
	}
	return bw.Flush()
}

// countingReader counts the bytes read through it.
type countingReader struct {
	r io.Reader
	n int64
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += int64(n)
	return n, err
}
