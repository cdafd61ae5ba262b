package matfile

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"strings"

	"github.com/sbinet/npyio/npy"
	"gonum.org/v1/gonum/blas/blas32"
)

// readNPY reads a rank-2 float32 or float64 .npy array from r, which holds
// size bytes; name is for messages.
func readNPY(r io.Reader, size int64, name string) (m blas32.General, err error) {
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
			return m, fmt.Errorf("%s: not a valid .npy file: its header announces %d bytes, the file holds %d", name, hdr, size)
		}
	}
	cr := &countingReader{r: br}
	nr, err := npy.NewReader(fullReader{cr})
	if err != nil {
		return m, fmt.Errorf("%s: not a valid .npy file: %w", name, err)
	}
	d := nr.Header.Descr
	if len(d.Shape) != 2 {
		return m, fmt.Errorf("%s: a %d-dimensional array (shape %v); glmul multiplies matrices: rank 2", name, len(d.Shape), d.Shape)
	}
	rows, cols := d.Shape[0], d.Shape[1]
	if rows < 1 || cols < 1 {
		return m, fmt.Errorf("%s: an empty %d×%d matrix", name, rows, cols)
	}
	if rows > 1<<40 || cols > 1<<40 || float64(rows)*float64(cols)*4 > float64(size) {
		return m, fmt.Errorf("%s: the header's shape %d×%d is larger than the file (%d bytes)", name, rows, cols, size)
	}
	item := 0
	if strings.HasPrefix(d.Type, "=") {
		return m, fmt.Errorf("%s: dtype %q: native byte order '=' is not supported; save with an explicit '<' or '>'", name, d.Type)
	}
	switch strings.TrimLeft(d.Type, "<>|") {
	case "f4":
		item = 4
	case "f8":
		item = 8
	default:
		return m, fmt.Errorf("%s: dtype %q is not supported: glmul reads float32 ('<f4', '>f4') and float64 ('<f8', '>f8')", name, d.Type)
	}
	n := int64(rows) * int64(cols)
	if want := cr.n + n*int64(item); size != want {
		return m, fmt.Errorf("%s: the header says %d×%d %s (%d bytes of data), the file holds %d", name, rows, cols, d.Type, n*int64(item), size-cr.n)
	}
	data := make([]float32, n)
	if item == 4 {
		err = nr.Read(&data)
	} else {
		wide := make([]float64, n)
		if err = nr.Read(&wide); err == nil {
			for i, v := range wide {
				data[i] = float32(v)
			}
		}
	}
	if err != nil && !errors.Is(err, io.EOF) {
		return m, fmt.Errorf("%s: reading the data: %w", name, err)
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
	return m, nil
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

// fullReader fills every Read completely or fails: npyio reads each
// element with one Read and does not look at the count.
type fullReader struct{ r io.Reader }

func (f fullReader) Read(p []byte) (int, error) { return io.ReadFull(f.r, p) }
