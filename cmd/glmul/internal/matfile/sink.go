package matfile

import (
	"bufio"
	"encoding/binary"
	"fmt"
	"io"
	"math"
	"strconv"

	"gonum.org/v1/gonum/blas/blas32"
)

// Sink writes a matrix to a stream in blocks of rows, in order.
type Sink interface {
	// WriteRows appends m's rows (m.Cols == the sink's cols) after those
	// written so far; more rows than the matrix has, in all, are an
	// error, and nothing of m is written.
	WriteRows(m blas32.General) error
	// Close checks that exactly rows rows were written (an error
	// otherwise) and flushes.
	Close() error
}

// NewSink returns a Sink that writes a rows×cols float32 matrix to w in
// the format that path's extension names (OutputFormat: .npy for a device
// or FIFO named without one): .npy, C order '<f4', the
// header first; .mtx, "coordinate real general" listing every element,
// zeros included, row by row (a row-streaming writer cannot write the
// column-major "array" format). path is only for the format and
// messages; the caller owns w. Writes to w are buffered: Close flushes.
func NewSink(w io.Writer, path string, rows, cols int) (Sink, error) {
	if rows < 0 || cols < 0 {
		panic("matfile: NewSink: a negative number of rows or columns")
	}
	format, err := OutputFormat(path)
	if err != nil {
		return nil, err
	}
	base := sinkBase{bw: bufio.NewWriterSize(w, bufSize), name: path, rows: rows, cols: cols}
	if format == ".mtx" {
		writeMTXBanner(base.bw, "float32", rows, cols)
		return &mtxSink{sinkBase: base}, nil
	}
	base.bw.Write(npyHeader(rows, cols))
	return &npySink{sinkBase: base, direct: hostOrder == binary.LittleEndian}, nil
}

// sinkBase counts a Sink's rows and buffers its writes.
type sinkBase struct {
	bw         *bufio.Writer
	name       string
	rows, cols int
	written    int // rows so far
}

// start checks that m's rows fit after those written so far: a panic
// for the wrong number of columns, an error for rows beyond the matrix.
func (s *sinkBase) start(m blas32.General) error {
	return s.check(m.Rows, m.Cols, m.Stride, len(m.Data))
}

// check is start for any element type: rows×cols, the rows stride
// elements apart in n elements.
func (s *sinkBase) check(rows, cols, stride, n int) error {
	switch {
	case cols != s.cols:
		panic("matfile: WriteRows: m.Cols is not the sink's number of columns")
	case rows < 0 || rows > 0 && (stride < cols || n < (rows-1)*stride+cols):
		panic("matfile: WriteRows: m's Rows, Stride and Data do not agree")
	case rows > s.rows-s.written:
		return fmt.Errorf("%s: %d more rows after %d of a matrix of %d rows: glmul wrote more rows than the matrix has (a bug: please report it)",
			s.name, rows, s.written, s.rows)
	}
	return nil
}

// Close checks that every row was written and flushes.
func (s *sinkBase) Close() error {
	if s.written != s.rows {
		return fmt.Errorf("%s: %d of the matrix's %d rows were written: the file is incomplete (a bug: please report it)", s.name, s.written, s.rows)
	}
	return s.bw.Flush()
}

// npySink writes rows as little-endian float32.
type npySink struct {
	sinkBase
	// direct: the host is little-endian, so rows are written from
	// their own memory as they are.
	direct bool
	buf    []byte // for conversion otherwise, made on first use
}

// WriteRows writes m's rows.
func (s *npySink) WriteRows(m blas32.General) error {
	if err := s.start(m); err != nil {
		return err
	}
	var err error
	switch {
	case m.Rows == 0:
	case s.direct && m.Stride == m.Cols:
		_, err = s.bw.Write(float32Bytes(m.Data[:m.Rows*m.Cols]))
	case s.direct:
		for i := 0; i < m.Rows && err == nil; i++ {
			_, err = s.bw.Write(float32Bytes(m.Data[i*m.Stride : i*m.Stride+m.Cols]))
		}
	default:
		if s.buf == nil {
			s.buf = make([]byte, bufSize)
		}
		for i := 0; i < m.Rows && err == nil; i++ {
			row := m.Data[i*m.Stride : i*m.Stride+m.Cols]
			for len(row) > 0 && err == nil {
				k := min(len(row), len(s.buf)/4)
				for j, v := range row[:k] {
					binary.LittleEndian.PutUint32(s.buf[4*j:], math.Float32bits(v))
				}
				_, err = s.bw.Write(s.buf[:4*k])
				row = row[k:]
			}
		}
	}
	s.written += m.Rows
	return err
}

// mtxSink writes rows as MatrixMarket coordinate entries "i j v", 1-based,
// v as the shortest decimal that reads back as the same float32.
type mtxSink struct {
	sinkBase
	buf []byte // a run of lines, reused
}

// WriteRows writes m's rows, every element an entry.
func (s *mtxSink) WriteRows(m blas32.General) error {
	if err := s.start(m); err != nil {
		return err
	}
	var err error
	for i := 0; i < m.Rows && err == nil; i++ {
		for j, v := range m.Data[i*m.Stride : i*m.Stride+m.Cols] {
			s.buf = appendEntry(s.buf, s.written+i, j, float64(v), 32)
			if len(s.buf) >= 64<<10 {
				_, err = s.bw.Write(s.buf)
				s.buf = s.buf[:0]
			}
		}
	}
	if err == nil && len(s.buf) > 0 {
		_, err = s.bw.Write(s.buf)
		s.buf = s.buf[:0]
	}
	s.written += m.Rows
	return err
}

// writeMTXBanner writes the MatrixMarket banner and size line of a
// rows×cols matrix whose every element is listed as a coordinate entry,
// naming the element type glmul wrote ("float32", "float64").
func writeMTXBanner(w io.Writer, elem string, rows, cols int) {
	fmt.Fprintf(w, "%%%%MatrixMarket matrix coordinate real general\n%% written by glmul (%s)\n%d %d %d\n", elem, rows, cols, int64(rows)*int64(cols))
}

// appendEntry appends the entry of element (i, j), 0-based, as
// MatrixMarket writes it ("i j v", 1-based), v the shortest decimal that
// reads back as the same float of bits bits (32 or 64).
func appendEntry(buf []byte, i, j int, v float64, bits int) []byte {
	buf = strconv.AppendInt(buf, int64(i+1), 10)
	buf = append(buf, ' ')
	buf = strconv.AppendInt(buf, int64(j+1), 10)
	buf = append(buf, ' ')
	buf = strconv.AppendFloat(buf, v, 'g', -1, bits)
	return append(buf, '\n')
}
