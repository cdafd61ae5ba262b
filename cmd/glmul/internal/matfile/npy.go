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
	// npyio allocates the header's announced length before checking it:
	// check it against the file first.
	if pre, err := br.Peek(12); err == nil && string(pre[:6]) == "\x93NUMPY" {
		hdr, at := int64(binary.LittleEndian.Uint16(pre[8:10])), int64(10)
		if pre[6] >= 2 {
			hdr, at = int64(binary.LittleEndian.Uint32(pre[8:12])), 12
		}
		if at+hdr > size {
			return m, info, fmt.Errorf("%s: not a valid .npy file: its header announces %d bytes, the file holds %d", name, hdr, size)
		}
	}
	// npyio reads the header only (its binary.Read reads in full); the
	// data are read below, where a short read is an error: npyio's own
	// data reader ignores io.EOF and leaves zeros.
	cr := &countingReader{r: br}
	nr, err := npy.NewReader(cr)
	if err != nil {
		return m, info, fmt.Errorf("%s: not a valid .npy file: %w", name, err)
	}
	d := nr.Header.Descr
	// The dtype first: its item size decides what the file's size means.
	order, item, err := npyDtype(d.Type)
	if err != nil {
		return m, info, fmt.Errorf("%s: %w", name, err)
	}
	if len(d.Shape) != 2 {
		return m, info, fmt.Errorf("%s: a %d-dimensional array (shape %v); glmul multiplies matrices: rank 2", name, len(d.Shape), d.Shape)
	}
	rows, cols := d.Shape[0], d.Shape[1]
	if rows < 1 || cols < 1 {
		return m, info, fmt.Errorf("%s: an empty %d×%d matrix", name, rows, cols)
	}
	if rows > 1<<40 || cols > 1<<40 || float64(rows)*float64(cols)*float64(item) > float64(size) {
		return m, info, fmt.Errorf("%s: the header's shape %d×%d of %s is larger than the file (%d bytes)", name, rows, cols, d.Type, size)
	}
	n := int64(rows) * int64(cols)
	if want := cr.n + n*int64(item); size != want {
		return m, info, fmt.Errorf("%s: the header says %d×%d %s (%d bytes of data), the file holds %d", name, rows, cols, d.Type, n*int64(item), size-cr.n)
	}
	var nw narrowing
	place := func(i int64) (row, col int64) { // file order to (row, column)
		if d.Fortran {
			return i % int64(rows), i / int64(rows)
		}
		return i / int64(cols), i % int64(cols)
	}
	hdr := cr.n
	data, got, err := readNPYData(cr, n, order, item, &nw, func(i int64, v float64) {
		row, col := place(i)
		nw.where = fmt.Sprintf("%s: element [%d, %d] (row, column from 0, as NumPy indexes) is %s", name, row, col, strconv.FormatFloat(v, 'g', -1, 64))
	})
	switch {
	case errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF):
		return m, info, fmt.Errorf("%s: expected %d elements (%d×%d %s) but read %d: the file ended %d bytes into its data, which held %d bytes when it was opened (is it still being written?)",
			name, n, rows, cols, d.Type, got, cr.n-hdr, n*int64(item))
	case err != nil:
		return m, info, fmt.Errorf("%s: reading the data: expected %d elements, read %d: %w", name, n, got, err)
	}
	if err := nw.check(o); err != nil {
		return m, info, err
	}
	m = blas32.General{Rows: rows, Cols: cols, Stride: cols, Data: data}
	if d.Fortran { // column-major on disk
		t := make([]float32, n)
		for j := 0; j < cols; j++ {
			for i := 0; i < rows; i++ {
				t[i*cols+j] = data[j*rows+i]
			}
		}
		m.Data = t
	}
	return m, nw.info(), nil
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
