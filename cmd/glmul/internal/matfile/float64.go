package matfile

import (
	"bufio"
	"encoding/binary"
	"fmt"
	"io"
	"math"
	"math/bits"

	"gonum.org/v1/gonum/blas/blas64"
)

// Float64 matrices, for glmul mul -type f64: read a block of rows at a
// time (ReadRows64) or whole (Read64), and written a block of rows at a
// time (NewSink64) or whole (Write64). float64 values stay what the file
// holds; float32 values are widened, exactly.

// ReadRows64 fills dst (dst.Rows rows, dst.Cols == s.Cols(), any Stride
// >= Cols) with rows [r0, r0+dst.Rows) of s's matrix as float64, as
// Source.ReadRows does as float32: a .npy file's '<f8' or '>f8' data as
// they are (straight into dst's memory where its rows are contiguous,
// then put in the host's byte order), its '<f4' or '>f4' data widened; a
// .mtx file's values as float64 parses them (one beyond float64's range
// is ±Inf, as NumPy reads it), duplicates summed in float64, the file
// parsed whole at the first read. Nothing is rounded, so Info counts no
// overflow or underflow. The errors and the rules for streams are
// ReadRows's. A .mtx source read as float32 before cannot be read as
// float64, nor the other way round: ReadRows64 panics.
func ReadRows64(s Source, dst blas64.General, r0 int) error {
	switch s := s.(type) {
	case *npySource:
		return s.readRows64(dst, r0)
	case *npyStream:
		if err := s.readRows64(dst, r0); err != nil {
			return err
		}
		// The last rows read, or the empty read of a matrix without rows.
		if s.fr != nil && r0+dst.Rows == s.l.rows && (dst.Rows > 0 || s.l.rows == 0) {
			return checkEnd(s.fr.r, s.l, s.name)
		}
		return nil
	case *mtxSource:
		checkShape(dst.Rows, dst.Cols, dst.Stride, len(dst.Data), r0, s.rows, s.cols)
		if err := s.parse64(); err != nil {
			return err
		}
		c := s.cols
		for i := range dst.Rows {
			copy(dst.Data[i*dst.Stride:i*dst.Stride+c], s.m64.Data[(r0+i)*c:(r0+i+1)*c])
		}
		return nil
	}
	panic(fmt.Sprintf("matfile: ReadRows64 of a %T", s))
}

// Read64 reads the whole matrix of s, just opened (no ReadRows before),
// as float64: ReadRows64 of every row, a .mtx file's matrix as it was
// parsed, with no copy. ReadInfo counts a .mtx file's duplicates. The
// result is row-major, Stride == Cols.
func Read64(s Source) (blas64.General, ReadInfo, error) {
	if ms, ok := s.(*mtxSource); ok {
		if err := ms.parse64(); err != nil {
			return blas64.General{}, ReadInfo{}, err
		}
		return ms.m64, ms.info, nil
	}
	m := blas64.General{Rows: s.Rows(), Cols: s.Cols(), Stride: s.Cols(), Data: make([]float64, s.Rows()*s.Cols())}
	if err := ReadRows64(s, m, 0); err != nil {
		return blas64.General{}, ReadInfo{}, err
	}
	return m, s.Info(), nil
}

// parse64 parses a .mtx file's entries as float64, once.
func (s *mtxSource) parse64() error {
	switch {
	case !s.parsed:
		s.r.wide = true
	case s.err == nil && s.m64.Data == nil && s.rows*s.cols > 0:
		panic("matfile: a .mtx source read as float32 is read as float64")
	}
	return s.parse()
}

// readRows64 reads rows [r0, r0+dst.Rows) into dst as float64.
func (s *npySource) readRows64(dst blas64.General, r0 int) error {
	checkShape(dst.Rows, dst.Cols, dst.Stride, len(dst.Data), r0, s.l.rows, s.l.cols)
	if dst.Rows == 0 {
		return nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.r0, s.n = r0, dst.Rows
	if err := s.checkSize(); err != nil {
		return err
	}
	if s.l.fortran {
		return s.readFortran64(dst, r0)
	}
	return s.readC64(dst, r0)
}

// readC64 reads rows of a C-order file: 8-byte items straight into dst's
// memory, a read for all its rows where they are contiguous, else one a
// row, then put in the host's byte order; 4-byte ones through the
// buffer, widened.
func (s *npySource) readC64(dst blas64.General, r0 int) error {
	l := s.l
	rowBytes := int64(l.cols) * int64(l.item)
	off := l.hdr + int64(r0)*rowBytes
	if l.item == 8 {
		if dst.Stride == l.cols {
			data := dst.Data[:dst.Rows*l.cols]
			if err := s.readAtParallel(float64Bytes(data), off); err != nil {
				return err
			}
			s.toHost64(data)
			return nil
		}
		for i := range dst.Rows {
			row := dst.Data[i*dst.Stride : i*dst.Stride+l.cols]
			if err := s.readAt(float64Bytes(row), off+int64(i)*rowBytes); err != nil {
				return err
			}
			s.toHost64(row)
		}
		return nil
	}
	buf := s.buffer()
	per, total := len(buf)/4, dst.Rows*l.cols
	for e := 0; e < total; e += per {
		k := min(per, total-e)
		if err := s.readAt(buf[:4*k], off+4*int64(e)); err != nil {
			return err
		}
		for d := 0; d < k; { // the chunk's piece of each row
			i, j := (e+d)/l.cols, (e+d)%l.cols
			m := min(k-d, l.cols-j)
			row := dst.Data[i*dst.Stride+j : i*dst.Stride+j+m]
			for c := range row {
				row[c] = float64(math.Float32frombits(l.order.Uint32(buf[4*(d+c):])))
			}
			d += m
		}
	}
	return nil
}

// toHost64 puts float64s read as they are from the file in the host's
// byte order.
func (s *npySource) toHost64(data []float64) {
	if s.l.order != hostOrder {
		for i, v := range data {
			data[i] = math.Float64frombits(bits.ReverseBytes64(math.Float64bits(v)))
		}
	}
}

// readFortran64 reads rows [r0, r0+dst.Rows) of a Fortran-order file,
// where those rows of column j are contiguous: a tile of k rows of at
// most tileCols columns at a time, a read a column, into the buffer, then
// converted into dst's rows a row at a time (the tile's columns, read
// across, stay in cache).
func (s *npySource) readFortran64(dst blas64.General, r0 int) error {
	l := s.l
	item := l.item
	buf := s.buffer()
	g := max(1, min(l.cols, tileCols, len(buf)/item))
	k := max(1, min(dst.Rows, len(buf)/item/g))
	for j0 := 0; j0 < l.cols; j0 += g {
		gg := min(g, l.cols-j0)
		for a := 0; a < dst.Rows; a += k {
			kk := min(k, dst.Rows-a)
			seg := kk * item
			for c := range gg {
				off := l.hdr + (int64(j0+c)*int64(l.rows)+int64(r0+a))*int64(item)
				if err := s.readAt(buf[c*seg:(c+1)*seg], off); err != nil {
					return err
				}
			}
			for i := range kk {
				row := dst.Data[(a+i)*dst.Stride+j0 : (a+i)*dst.Stride+j0+gg]
				for c := range row {
					row[c] = s.value64(buf[c*seg+i*item:])
				}
			}
		}
	}
	return nil
}

// value64 is the element whose bytes begin b, as float64.
func (s *npySource) value64(b []byte) float64 {
	if s.l.item == 8 {
		return math.Float64frombits(s.l.order.Uint64(b))
	}
	return float64(math.Float32frombits(s.l.order.Uint32(b)))
}

// Sink64 is Sink for float64 matrices.
type Sink64 interface {
	// WriteRows appends m's rows (m.Cols == the sink's cols) after those
	// written so far; more rows than the matrix has, in all, are an
	// error, and nothing of m is written.
	WriteRows(m blas64.General) error
	// Close checks that exactly rows rows were written (an error
	// otherwise) and flushes.
	Close() error
}

// NewSink64 returns a Sink64 that writes a rows×cols float64 matrix to w
// in the format that path's extension names (OutputFormat), as NewSink
// does a float32 one: .npy with dtype '<f8', C order; .mtx as "coordinate
// real general" listing every element row by row, each the shortest
// decimal that reads back as the same float64. path is only for the
// format and messages; the caller owns w. Close flushes.
func NewSink64(w io.Writer, path string, rows, cols int) (Sink64, error) {
	if rows < 0 || cols < 0 {
		panic("matfile: NewSink64: a negative number of rows or columns")
	}
	format, err := OutputFormat(path)
	if err != nil {
		return nil, err
	}
	s := &sink64{sinkBase: sinkBase{bw: bufio.NewWriterSize(w, bufSize), name: path, rows: rows, cols: cols}, mtx: format == ".mtx"}
	if s.mtx {
		writeMTXBanner(s.bw, "float64", rows, cols)
	} else {
		s.bw.Write(npyHeaderOf("<f8", rows, cols))
	}
	return s, nil
}

// sink64 writes rows as little-endian float64 (.npy) or as MatrixMarket
// coordinate entries "i j v", 1-based (.mtx).
type sink64 struct {
	sinkBase
	mtx bool
	buf []byte // a run of lines, or of converted items, reused
}

// WriteRows writes m's rows.
func (s *sink64) WriteRows(m blas64.General) error {
	if err := s.check(m.Rows, m.Cols, m.Stride, len(m.Data)); err != nil {
		return err
	}
	var err error
	for i := 0; i < m.Rows && err == nil; i++ {
		row := m.Data[i*m.Stride : i*m.Stride+m.Cols]
		switch {
		case s.mtx:
			for j, v := range row {
				s.buf = appendEntry(s.buf, s.written+i, j, v, 64)
			}
		case hostOrder == binary.LittleEndian:
			_, err = s.bw.Write(float64Bytes(row))
			continue
		default:
			for _, v := range row {
				s.buf = binary.LittleEndian.AppendUint64(s.buf, math.Float64bits(v))
			}
		}
		if len(s.buf) >= 64<<10 || i == m.Rows-1 {
			_, err = s.bw.Write(s.buf)
			s.buf = s.buf[:0]
		}
	}
	s.written += m.Rows
	return err
}

// Write64 writes m to w in the format that path's extension names
// (OutputFormat), as float64: NewSink64 and one WriteRows. path is only
// for the format; the caller owns w (outfile, as Write's is).
func Write64(w io.Writer, path string, m blas64.General) error {
	if m.Rows < 0 || m.Cols < 0 || m.Rows > 0 && (m.Stride < m.Cols || len(m.Data) < (m.Rows-1)*m.Stride+m.Cols) {
		panic("matfile: Write64: m's Rows, Stride and Data do not agree")
	}
	s, err := NewSink64(w, path, m.Rows, m.Cols)
	if err != nil {
		return err
	}
	if err := s.WriteRows(m); err != nil {
		return err
	}
	return s.Close()
}
