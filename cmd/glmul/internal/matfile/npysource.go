package matfile

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"runtime"
	"strconv"
	"sync"

	"gonum.org/v1/gonum/blas/blas32"
)

// Sizes of the reads a Source makes.
const (
	// bufSize bounds the buffer a Source converts data through and a Sink
	// writes through: 1 MiB, a whole number of float32s and float64s.
	bufSize = 1 << 20
	// directRowBytes is the shortest row that a strided dst gets by a
	// read of its own; shorter rows go through the buffer, a block of
	// them a read, and are copied.
	directRowBytes = 64 << 10
	// gapBytes is the most bytes of other rows that a read of a
	// Fortran-order file's columns may skip over between two of the
	// block's column segments, however short the segments.
	gapBytes = 4 << 10
)

// npySource reads a .npy file's rows with positioned reads, a block at a
// time.
type npySource struct {
	mu   sync.Mutex // ReadRows' and Info's: one at a time
	ra   io.ReaderAt
	f    *os.File // to check the size and close; nil for a test's reader
	name string
	size int64 // the file's size when it was opened
	l    npyLayout
	o    ReadOptions
	// direct: the data are float32 in the host's byte order, read
	// straight into dst's memory.
	direct bool
	// stream: ra is a stream read once, in order (forwardReader): reads
	// are not split over CPUs, and errors speak of a stream.
	stream bool
	buf    []byte    // made on first use, bufLen bytes
	bufLen int       // bufSize; less in tests, to cut reads into many pieces
	tile   []float32 // a Fortran-order file's columns, made on first use
	r0, n  int       // the rows being read, for messages
	nw     narrowing
	done   spans // the rows that nw counts, each once
}

// newNPYSource reads and checks the header of the .npy file in ra, of
// size bytes; f, nil for a reader that is not a file, is checked for
// changes in size and closed.
func newNPYSource(f *os.File, ra io.ReaderAt, size int64, name string, o ReadOptions) (*npySource, error) {
	l, err := readNPYLayout(ra, size, name)
	if err != nil {
		return nil, err
	}
	s := npySourceOf(l, ra, name, o)
	s.f, s.size = f, size
	return s, nil
}

// npySourceOf reads the data of layout l from ra.
func npySourceOf(l npyLayout, ra io.ReaderAt, name string, o ReadOptions) *npySource {
	return &npySource{ra: ra, name: name, size: l.hdr + l.n*int64(l.item), l: l, o: o, direct: l.item == 4 && l.order == hostOrder, bufLen: bufSize}
}

// Rows returns the matrix's number of rows.
func (s *npySource) Rows() int { return s.l.rows }

// Cols returns the matrix's number of columns.
func (s *npySource) Cols() int { return s.l.cols }

// Info says what reading float64 data changed so far, each row counted
// once.
func (s *npySource) Info() ReadInfo {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.nw.info()
}

// Close closes the file.
func (s *npySource) Close() error {
	if s.f == nil {
		return nil
	}
	return s.f.Close()
}

// ReadRows reads rows [r0, r0+dst.Rows) into dst.
func (s *npySource) ReadRows(dst blas32.General, r0 int) error {
	checkDst(dst, r0, s.l.rows, s.l.cols)
	if dst.Rows == 0 {
		return nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.r0, s.n = r0, dst.Rows
	if err := s.checkSize(); err != nil {
		return err
	}
	if s.l.item == 4 { // float32: nothing rounded, nothing to count
		return s.readBlock(dst, r0, nil)
	}
	// The rows read before and the others apart, so that Info counts
	// each row once however often it is read.
	pieces := s.done.split(r0, r0+dst.Rows)
	nws := make([]narrowing, len(pieces))
	all := narrowing{scope: s.scope()}
	for k, p := range pieces {
		sub := blas32.General{Rows: p.hi - p.lo, Cols: dst.Cols, Stride: dst.Stride, Data: dst.Data[(p.lo-r0)*dst.Stride:]}
		if err := s.readBlock(sub, p.lo, &nws[k]); err != nil {
			return err
		}
		all.merge(nws[k])
	}
	if err := all.check(s.o); err != nil {
		return err
	}
	for k, p := range pieces {
		if !p.in {
			s.nw.merge(nws[k])
			s.done.add(p.lo, p.hi)
		}
	}
	return nil
}

// checkDst panics unless dst can take rows [r0, r0+dst.Rows) of a
// rows×cols matrix.
func checkDst(dst blas32.General, r0, rows, cols int) {
	checkShape(dst.Rows, dst.Cols, dst.Stride, len(dst.Data), r0, rows, cols)
}

// checkShape panics unless a dst of dRows×dCols, its rows stride
// elements apart in n elements, can take rows [r0, r0+dRows) of a
// rows×cols matrix: checkDst for any element type.
func checkShape(dRows, dCols, stride, n, r0, rows, cols int) {
	switch {
	case dCols != cols:
		panic("matfile: ReadRows: dst.Cols is not the matrix's number of columns")
	case dRows < 0 || r0 < 0 || r0 > rows-dRows:
		panic("matfile: ReadRows: rows beyond the matrix's")
	case stride < dCols:
		panic("matfile: ReadRows: dst.Stride is less than dst.Cols")
	case dRows > 0 && n < (dRows-1)*stride+dCols:
		panic("matfile: ReadRows: dst.Data is too short for dst's rows")
	}
}

// whole reports whether the rows being read are the whole matrix.
func (s *npySource) whole() bool { return s.r0 == 0 && s.n == s.l.rows }

// scope says where the rows being read are, for an overflow's count.
func (s *npySource) scope() string {
	if s.whole() {
		return ""
	}
	return fmt.Sprintf("in rows %d to %d", s.r0, s.r0+s.n-1)
}

// checkSize returns an error if the file's size is not what it was when
// it was opened: rewritten or still being written.
func (s *npySource) checkSize() error {
	if s.f == nil {
		return nil
	}
	fi, err := s.f.Stat()
	if err != nil {
		return err // a *PathError: it names the file
	}
	now := fi.Size()
	if now == s.size {
		return nil
	}
	how := "shrank"
	if now > s.size {
		how = "grew"
	}
	return fmt.Errorf("%s: the file %s from %d to %d bytes since it was opened, while glmul read it (is it still being written?); run again once it is complete",
		s.name, how, s.size, now)
}

// readBlock reads rows [r0, r0+dst.Rows) into dst, rounding float64
// values through nw.
func (s *npySource) readBlock(dst blas32.General, r0 int, nw *narrowing) error {
	if s.l.fortran {
		return s.readFortran(dst, r0, nw)
	}
	return s.readC(dst, r0, nw)
}

// readC reads rows of a C-order file: straight into dst's memory where
// the data are float32 in the host's byte order and dst's rows are
// contiguous or long; else through the buffer, a chunk of the block's
// elements at a time, converted into dst's rows.
func (s *npySource) readC(dst blas32.General, r0 int, nw *narrowing) error {
	l := s.l
	rowBytes := l.cols * l.item
	off := l.hdr + int64(r0)*int64(rowBytes)
	switch {
	case s.direct && dst.Stride == l.cols:
		return s.readAtParallel(float32Bytes(dst.Data[:dst.Rows*l.cols]), off)
	case s.direct && rowBytes >= directRowBytes:
		for i := range dst.Rows {
			row := dst.Data[i*dst.Stride : i*dst.Stride+l.cols]
			if err := s.readAt(float32Bytes(row), off+int64(i)*int64(rowBytes)); err != nil {
				return err
			}
		}
		return nil
	}
	buf := s.buffer()
	per, total := len(buf)/l.item, dst.Rows*l.cols
	for e := 0; e < total; e += per {
		k := min(per, total-e)
		if err := s.readAt(buf[:k*l.item], off+int64(e)*int64(l.item)); err != nil {
			return err
		}
		for d := 0; d < k; { // the chunk's piece of each row
			i, j := (e+d)/l.cols, (e+d)%l.cols
			m := min(k-d, l.cols-j)
			src := buf[d*l.item : (d+m)*l.item]
			if at := s.decode(dst.Data[i*dst.Stride+j:], src, nw); at >= 0 {
				s.overflowAt(nw, r0+i, j+at, src[at*l.item:])
			}
			d += m
		}
	}
	return nil
}

// buffer returns the reused conversion buffer.
func (s *npySource) buffer() []byte {
	if len(s.buf) != s.bufLen {
		s.buf = make([]byte, s.bufLen)
	}
	return s.buf
}

// decode sets dst[i], for each element i of src, to its value; float64
// values are rounded through nw. It returns the index of the element that
// was nw's first overflow, if it is among them, else -1.
func (s *npySource) decode(dst []float32, src []byte, nw *narrowing) int {
	big := s.l.order == binary.BigEndian
	switch {
	case s.l.item == 8:
		return decode8(dst, src, big, nw)
	case s.direct:
		copy(float32Bytes(dst[:len(src)/4]), src)
	case big:
		dst = dst[:len(src)/4]
		for i := range dst {
			dst[i] = math.Float32frombits(binary.BigEndian.Uint32(src[4*i:]))
		}
	default:
		dst = dst[:len(src)/4]
		for i := range dst {
			dst[i] = math.Float32frombits(binary.LittleEndian.Uint32(src[4*i:]))
		}
	}
	return -1
}

// decode8 sets dst[i] to float64 element i of src rounded to float32
// through nw, and returns the index of nw's first overflow if it is among
// them, else -1.
func decode8(dst []float32, src []byte, big bool, nw *narrowing) int {
	first := -1
	dst = dst[:len(src)/8]
	for i := range dst {
		var u uint64
		if big {
			u = binary.BigEndian.Uint64(src[8*i:])
		} else {
			u = binary.LittleEndian.Uint64(src[8*i:])
		}
		v := math.Float64frombits(u)
		f := float32(v)
		if f == 0 || f-f != 0 { // 0, ±Inf or NaN: what nw counts, or not
			var isFirst bool
			if f, isFirst = nw.round(v); isFirst {
				first = i
			}
		}
		dst[i] = f
	}
	return first
}

// overflowAt names the first overflow, element [row, col] whose bytes
// begin b, in nw.
func (s *npySource) overflowAt(nw *narrowing, row, col int, b []byte) {
	v := math.Float64frombits(s.l.order.Uint64(b))
	nw.where = fmt.Sprintf("%s: element [%d, %d] (row, column from 0, as NumPy indexes) is %s", s.name, row, col, strconv.FormatFloat(v, 'g', -1, 64))
}

// readAt fills p from the file at off; a file that ends sooner is an
// error that says so.
func (s *npySource) readAt(p []byte, off int64) error {
	k, err := s.ra.ReadAt(p, off)
	if k == len(p) { // io.ReaderAt may say io.EOF with the last byte
		return nil
	}
	return s.shortRead(off+int64(k), err)
}

// parallelReadBytes is the least a read must be for readAtParallel to
// split it, and the least each piece is.
const parallelReadBytes = 8 << 20

// readAtParallel is readAt, the read split over the CPUs in pieces of at
// least parallelReadBytes where it is longer. Reading a large block into
// memory not touched before is bound by the page faults that give the
// destination its pages (a 256 MiB B: 149 ms on the H100 machine, 1.7
// GB/s from the page cache), and faults on different CPUs proceed
// together. io.ReaderAt allows parallel calls. The first piece's error
// (in file order) is returned.
func (s *npySource) readAtParallel(p []byte, off int64) error {
	n := min(runtime.GOMAXPROCS(0), len(p)/parallelReadBytes)
	if n < 2 || s.stream {
		return s.readAt(p, off)
	}
	per := (len(p)/n + 4095) &^ 4095
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		lo := i * per
		hi := min(len(p), lo+per)
		if lo >= hi {
			break
		}
		wg.Go(func() { errs[i] = s.readAt(p[lo:hi], off+int64(lo)) })
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

// shortRead returns the error for a read that stopped at byte end of the
// file with err: io.EOF (or none) where the file ended there.
func (s *npySource) shortRead(end int64, err error) error {
	l := s.l
	into, held := end-l.hdr, l.n*int64(l.item)
	got := into / int64(l.item)
	eof := err == nil || errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF)
	switch {
	case eof && s.stream:
		return fmt.Errorf("%s: the stream ended %d bytes into its data, after %d of the %d elements (%d×%d %s) its header announces",
			s.name, into, got, l.n, l.rows, l.cols, l.dtype)
	case eof && s.whole():
		return fmt.Errorf("%s: expected %d elements (%d×%d %s) but read %d: the file ended %d bytes into its data, which held %d bytes when it was opened (is it still being written?)",
			s.name, l.n, l.rows, l.cols, l.dtype, got, into, held)
	case eof:
		return fmt.Errorf("%s: reading rows %d to %d of %d×%d %s: the file ended %d bytes into its data (after %d of its %d elements), which held %d bytes when it was opened (is it still being written?)",
			s.name, s.r0, s.r0+s.n-1, l.rows, l.cols, l.dtype, into, got, l.n, held)
	case s.whole():
		return fmt.Errorf("%s: reading the data: expected %d elements, read %d: %w", s.name, l.n, got, err)
	}
	return fmt.Errorf("%s: reading rows %d to %d of %d×%d %s, %d bytes into its data: %w", s.name, s.r0, s.r0+s.n-1, l.rows, l.cols, l.dtype, into, err)
}
