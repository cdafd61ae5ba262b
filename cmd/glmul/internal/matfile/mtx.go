package matfile

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"

	"gonum.org/v1/gonum/blas/blas32"
	"gonum.org/v1/gonum/blas/blas64"
)

// mtxHeader is a MatrixMarket banner: format, field and symmetry.
type mtxHeader struct{ format, field, symmetry string }

// maxMTXElements bounds the dense matrix a .mtx file may ask for (1 GiB
// of float32) before its entries are read: a coordinate file's few lines
// can announce any size.
const maxMTXElements = 1 << 28

// mtxReader reads a MatrixMarket file line by line, counting lines for
// messages.
type mtxReader struct {
	sc   *bufio.Scanner
	name string
	line int
	h    mtxHeader
	nw   narrowing

	m blas32.General // the matrix read
	// wide: the matrix is read as float64, into m64 (Read64), every
	// value as the file writes it; m stays empty and nothing is rounded.
	wide bool
	m64  blas64.General
	cols int // the matrix's, m's or m64's
	// seen marks the positions set (a symmetric pair at its lower one),
	// to count the entries summed into an earlier one (dups); nil for
	// array format.
	seen []uint64
	dups int

	batch []mtxEntry // entries parsed, to be set
	texts []byte     // their values' text
	touch uint32     // what flush's loads add up to, kept so they are made
}

// mtxEntry is an entry parsed, waiting in the batch to be set.
type mtxEntry struct {
	i, j   int // 0-based
	v      float64
	line   int
	t0, t1 int // its value's text: texts[t0:t1]
}

// mtxBatch is the most entries parsed before they are set.
const mtxBatch = 256

// errf returns an error naming the file and the line just read, or the
// scanner's own trouble, which explains it.
func (r *mtxReader) errf(format string, args ...any) error {
	if err := r.sc.Err(); err != nil { // the scanner's own trouble explains it
		if errors.Is(err, bufio.ErrTooLong) {
			return fmt.Errorf("%s:%d: a line is longer than 1 MiB", r.name, r.line+1)
		}
		return fmt.Errorf("%s: %w", r.name, err)
	}
	return fmt.Errorf("%s:%d: %s", r.name, r.line, fmt.Sprintf(format, args...))
}

// next returns the next line that is not blank or a comment, trimmed: a
// view of the scanner's buffer, valid until the next call.
func (r *mtxReader) next() ([]byte, bool) {
	for r.sc.Scan() {
		r.line++
		t := bytes.TrimSpace(r.sc.Bytes())
		if len(t) > 0 && t[0] != '%' {
			return t, true
		}
	}
	return nil, false
}

// value parses one entry of the file's field. A real value beyond even
// float64's range (1e400) comes back as ±math.MaxFloat64, and a nonzero
// one below it (1e-400) as ±math.SmallestNonzeroFloat64, so that rounding
// to float32 counts them as what they are: an overflow, an underflow.
// Read as float64 (wide), they are ±Inf and 0, as float64 rounds them.
//
// A plain decimal of few digits (as glmul writes float32) is parsed by
// fastFloat; others by strconv, where string(f) does not allocate: the
// string does not escape strconv (its errors copy it), so a short one is
// made on the stack.
func (r *mtxReader) value(f []byte) (float64, error) {
	if r.h.field == "integer" {
		v, err := strconv.ParseInt(string(f), 10, 64)
		if errors.Is(err, strconv.ErrRange) {
			// An integer beyond int64 is still one: its float64 value
			// (float32's range is checked later, as for any value; one
			// beyond float64's too, as a real's is).
			v, err := strconv.ParseFloat(string(f), 64)
			if errors.Is(err, strconv.ErrRange) && math.IsInf(v, 0) {
				return math.Copysign(math.MaxFloat64, v), nil
			}
			return v, err
		}
		return float64(v), err
	}
	if v, ok := fastFloat(f); ok {
		return v, nil
	}
	v, err := strconv.ParseFloat(string(f), 64)
	switch {
	case r.wide && errors.Is(err, strconv.ErrRange) && math.IsInf(v, 0):
		return v, nil // read as float64: ±Inf, as NumPy reads it
	case r.wide:
		return v, err // and 1e-400 is 0
	case errors.Is(err, strconv.ErrRange) && math.IsInf(v, 0):
		return math.Copysign(math.MaxFloat64, v), nil
	case err == nil && v == 0 && nonzeroMantissa(f):
		return math.Copysign(math.SmallestNonzeroFloat64, v), nil
	}
	return v, err
}

// nonzeroMantissa reports whether a number's text has a nonzero digit
// before its exponent ("1e-400", "0x1p-2000"; not "0.0e5").
func nonzeroMantissa(s []byte) bool {
	s = bytes.TrimLeft(s, "+-")
	if len(s) > 1 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X') {
		mant, _, _ := bytes.Cut(s[2:], []byte("p"))
		if i := bytes.IndexByte(mant, 'P'); i >= 0 {
			mant = mant[:i]
		}
		return bytes.ContainsAny(mant, "123456789abcdefABCDEF")
	}
	if i := bytes.IndexAny(s, "eE"); i >= 0 {
		s = s[:i]
	}
	return bytes.ContainsAny(s, "123456789")
}

// readMTX reads a MatrixMarket matrix from r into a dense matrix; name is
// for messages.
func readMTX(in io.Reader, name string, o ReadOptions) (blas32.General, ReadInfo, error) {
	r, rows, cols, entries, err := readMTXHeader(in, name)
	if err != nil {
		return blas32.General{}, ReadInfo{}, err
	}
	return r.body(rows, cols, entries, o)
}

// readMTXHeader reads a MatrixMarket file's banner and size line: its
// rows and columns, and its entries for coordinate format. The reader
// goes on with the body.
func readMTXHeader(in io.Reader, name string) (r *mtxReader, rows, cols, entries int, err error) {
	r = &mtxReader{sc: bufio.NewScanner(in), name: name}
	// Lines up to 1 MiB, and reads of up to 1 MiB.
	r.sc.Buffer(make([]byte, bufSize), bufSize)
	dims, err := r.header()
	if err != nil {
		return nil, 0, 0, 0, err
	}
	if r.h.format == "coordinate" {
		entries = dims[2]
	}
	return r, dims[0], dims[1], entries, nil
}

// body reads the entries of a rows×cols matrix whose header was read.
func (r *mtxReader) body(rows, cols, entries int, o ReadOptions) (blas32.General, ReadInfo, error) {
	r.alloc(rows, cols)
	var err error
	if r.h.format == "array" {
		err = r.array(rows, cols)
	} else {
		err = r.coordinate(rows, cols, entries)
	}
	if err != nil {
		return r.m, ReadInfo{}, err
	}
	r.flush()
	return r.end(o)
}

// alloc makes the rows×cols matrix the entries are read into and, for
// coordinate format, the marks of the positions set.
func (r *mtxReader) alloc(rows, cols int) {
	r.cols = cols
	if r.wide {
		r.m64 = blas64.General{Rows: rows, Cols: cols, Stride: cols, Data: make([]float64, rows*cols)}
	} else {
		r.m = blas32.General{Rows: rows, Cols: cols, Stride: cols, Data: make([]float32, rows*cols)}
	}
	if r.h.format == "coordinate" {
		r.seen = make([]uint64, (rows*cols+63)/64)
	}
}

// add queues entry (i, j), 0-based, of value v (text: as the file
// writes it, a view of the line, copied), of the line just read, to be
// set in the matrix.
func (r *mtxReader) add(i, j int, v float64, text []byte) {
	r.batch = append(r.batch, mtxEntry{i: i, j: j, v: v, line: r.line, t0: len(r.texts), t1: len(r.texts) + len(text)})
	r.texts = append(r.texts, text...)
	if len(r.batch) == mtxBatch {
		r.flush()
	}
}

// flush sets the batch's entries, in order. It first loads their places
// in the matrix, and their marks, all at once: independent loads, whose
// cache misses overlap rather than add up, for a coordinate file's
// entries come in no order. (An array's entries go down the columns of
// the row-major matrix at a constant stride, which the processor
// prefetches: they are set as they are read.)
func (r *mtxReader) flush() {
	var sum uint32
	for _, e := range r.batch {
		k := e.i*r.cols + e.j
		if r.wide {
			sum += uint32(math.Float64bits(r.m64.Data[k]))
		} else {
			sum += math.Float32bits(r.m.Data[k])
		}
		if r.seen != nil {
			sum += uint32(r.seen[k/64])
		}
	}
	r.touch += sum
	for _, e := range r.batch {
		r.set(e.i, e.j, e.v, r.texts[e.t0:e.t1], e.line)
	}
	r.batch, r.texts = r.batch[:0], r.texts[:0]
}

// set stores entry (i, j), 0-based, of value v (text: as the file writes
// it) from line in the matrix. Entries add up: a coordinate file that
// lists (i, j) twice means the sum (SciPy reads it so); a symmetric one's
// (i, j) is also (j, i).
func (r *mtxReader) set(i, j int, v float64, text []byte, line int) {
	cols := r.cols
	k := i*cols + j
	if r.seen != nil {
		lo := k
		if r.h.symmetry == "symmetric" && j > i {
			lo = j*cols + i
		}
		if r.seen[lo/64]&(1<<(lo%64)) != 0 {
			r.dups++
			// The sum in float64, rounded once: a sum beyond
			// float32's range is an overflow as one value is.
			if r.wide {
				v += r.m64.Data[k]
			} else {
				v += float64(r.m.Data[k])
			}
		}
		r.seen[lo/64] |= 1 << (lo % 64)
	}
	if r.wide {
		r.m64.Data[k] = v
		if r.h.symmetry == "symmetric" && i != j {
			r.m64.Data[j*cols+i] = v
		}
		return
	}
	old := r.m.Data[k] // 0 but for a duplicate
	f, first := r.nw.round(v)
	if first {
		r.nw.where = fmt.Sprintf("%s:%d: entry (%d, %d) (row, column from 1, as the file numbers them) is %s", r.name, line, i+1, j+1, text)
		if old != 0 {
			r.nw.where += fmt.Sprintf(", summed with %v from earlier entries there", old)
		}
	}
	r.m.Data[k] = f
	if r.h.symmetry == "symmetric" && i != j {
		r.m.Data[j*cols+i] = f
	}
}

// end checks what follows the last entry (nothing but blanks and
// comments) and the values' narrowing to float32 under o, and returns
// the matrix read with what reading it found.
func (r *mtxReader) end(o ReadOptions) (blas32.General, ReadInfo, error) {
	if t, ok := r.next(); ok {
		return r.m, ReadInfo{}, r.errf("data after the last entry the header announces: %q", t)
	}
	if err := r.sc.Err(); err != nil {
		return r.m, ReadInfo{}, fmt.Errorf("%s: %w", r.name, err)
	}
	if err := r.nw.check(o); err != nil {
		return r.m, ReadInfo{}, err
	}
	info := r.nw.info()
	info.Duplicates = r.dups
	return r.m, info, nil
}

// header reads the banner and the size line: rows, cols (and entries,
// for coordinate format).
func (r *mtxReader) header() ([]int, error) {
	if !r.sc.Scan() {
		if r.sc.Err() != nil {
			return nil, r.errf("")
		}
		return nil, fmt.Errorf("%s: empty file, not a MatrixMarket file", r.name)
	}
	r.line++
	var err error
	// A UTF-8 byte-order mark, as some Windows editors write one, is not
	// part of the banner.
	banner := strings.TrimPrefix(r.sc.Text(), "\ufeff")
	if r.h, err = parseBanner(banner); err != nil {
		return nil, r.errf("%v", err)
	}
	size, ok := r.next()
	if !ok {
		return nil, r.errf("the size line is missing")
	}
	dims, err := ints(string(size))
	want := 2
	if r.h.format == "coordinate" {
		want = 3
	}
	switch {
	case err != nil || len(dims) != want || want == 3 && dims[2] < 0:
		return nil, r.errf("the size line %q should hold %d whole numbers", size, want)
	case dims[0] < 0 || dims[1] < 0:
		return nil, r.errf("the size line %q gives a negative dimension", size)
	case r.h.symmetry == "symmetric" && dims[0] != dims[1]:
		return nil, r.errf("a symmetric matrix must be square, not %d×%d", dims[0], dims[1])
	case dims[0] > maxMTXElements || dims[1] > maxMTXElements || int64(dims[0])*int64(dims[1]) > maxMTXElements:
		return nil, r.errf("%d×%d is too large to hold dense (at most %d elements from a .mtx file; use .npy)", dims[0], dims[1], maxMTXElements)
	}
	return dims, nil
}

// array reads a column-major array; a symmetric one lists the lower
// triangle only.
func (r *mtxReader) array(rows, cols int) error {
	for j := 0; j < cols; j++ {
		i0 := 0
		if r.h.symmetry == "symmetric" {
			i0 = j
		}
		for i := i0; i < rows; i++ {
			t, ok := r.next()
			if !ok {
				return r.errf("the file ends before entry (%d, %d) of the %d×%d array", i+1, j+1, rows, cols)
			}
			v, err := r.value(t)
			if err != nil {
				return r.errf("%q is not %s value", t, aField(r.h.field))
			}
			r.set(i, j, v, t, r.line)
		}
	}
	return nil
}

// patternText is a pattern entry's value, as messages write it.
var patternText = []byte("1 (pattern)")

// coordinate reads nnz "i j [value]" entries, 1-based.
func (r *mtxReader) coordinate(rows, cols, nnz int) error {
	fields := 3
	if r.h.field == "pattern" {
		fields = 2
	}
	var f [4][]byte // a fourth: one field too many
	for e := 0; e < nnz; e++ {
		t, ok := r.next()
		if !ok {
			return r.errf("the file ends after %d of its %d entries", e, nnz)
		}
		if splitFields(t, f[:]) != fields && unicodeFields(t, f[:]) != fields {
			return r.errf("entry %q should hold %d fields", t, fields)
		}
		i, erri := strconv.Atoi(string(f[0]))
		j, errj := strconv.Atoi(string(f[1]))
		if erri != nil || errj != nil || i < 1 || i > rows || j < 1 || j > cols {
			return r.errf("entry %q: indices must be whole numbers within 1…%d and 1…%d", t, rows, cols)
		}
		v, text := 1.0, patternText
		if fields == 3 {
			var err error
			if v, err = r.value(f[2]); err != nil {
				return r.errf("entry %q: %q is not %s value", t, f[2], aField(r.h.field))
			}
			text = f[2]
		}
		r.add(i-1, j-1, v, text)
	}
	return nil
}

// parseBanner reads "%%MatrixMarket matrix FORMAT FIELD SYMMETRY".
func parseBanner(s string) (mtxHeader, error) {
	f := strings.Fields(strings.ToLower(s))
	if len(f) != 5 || f[0] != "%%matrixmarket" || f[1] != "matrix" {
		return mtxHeader{}, fmt.Errorf("not a MatrixMarket file: the first line should be \"%%%%MatrixMarket matrix FORMAT FIELD SYMMETRY\"")
	}
	h := mtxHeader{f[2], f[3], f[4]}
	switch {
	case h.format != "array" && h.format != "coordinate":
		return h, fmt.Errorf("format %q is not supported: array or coordinate", h.format)
	case h.field != "real" && h.field != "integer" && h.field != "pattern":
		return h, fmt.Errorf("field %q is not supported: real, integer or pattern", h.field)
	case h.field == "pattern" && h.format == "array":
		return h, fmt.Errorf("a pattern matrix must be in coordinate format")
	case h.symmetry != "general" && h.symmetry != "symmetric":
		return h, fmt.Errorf("symmetry %q is not supported: general or symmetric", h.symmetry)
	}
	return h, nil
}

// ints parses whitespace-separated whole numbers.
func ints(s string) ([]int, error) {
	var out []int
	for _, f := range strings.Fields(s) {
		v, err := strconv.Atoi(f)
		if err != nil {
			return nil, err
		}
		out = append(out, v)
	}
	return out, nil
}

// mtxSource is a .mtx file's matrix: its header read when it was opened,
// its entries, which come in no row order, parsed whole at the first
// ReadRows (on the product's reader, not before the output and the
// device are known to work).
type mtxSource struct {
	f                   io.Closer // the file; nil for standard input
	r                   *mtxReader
	rows, cols, entries int
	o                   ReadOptions
	parsed              bool
	m                   blas32.General // row-major, Stride == Cols
	m64                 blas64.General // the same, read by Read64 (mtxReader.wide)
	info                ReadInfo
	err                 error // the parse's, returned by every ReadRows
}

// openMTX reads in's header; f, closed once the entries are parsed, is
// the file in reads (nil for standard input).
func openMTX(in io.Reader, f io.Closer, name string, o ReadOptions) (*mtxSource, error) {
	r, rows, cols, entries, err := readMTXHeader(in, name)
	if err != nil {
		return nil, err
	}
	return &mtxSource{f: f, r: r, rows: rows, cols: cols, entries: entries, o: o}, nil
}

// parse reads the entries, once, and closes the file.
func (s *mtxSource) parse() error {
	if !s.parsed {
		s.parsed = true
		s.m, s.info, s.err = s.r.body(s.rows, s.cols, s.entries, s.o)
		s.m64 = s.r.m64
		s.r = nil
		s.closeFile()
	}
	return s.err
}

// closeFile closes the file read, if any.
func (s *mtxSource) closeFile() error {
	if s.f == nil {
		return nil
	}
	return s.f.Close()
}

// Rows returns the matrix's number of rows.
func (s *mtxSource) Rows() int { return s.rows }

// Cols returns the matrix's number of columns.
func (s *mtxSource) Cols() int { return s.cols }

// Info says what reading the file changed: nothing before the first
// ReadRows.
func (s *mtxSource) Info() ReadInfo { return s.info }

// Close closes the file if it was not parsed.
func (s *mtxSource) Close() error {
	if s.parsed {
		return nil
	}
	s.parsed, s.err = true, errors.New("matfile: read after Close")
	return s.closeFile()
}

// ReadRows copies rows [r0, r0+dst.Rows) into dst.
func (s *mtxSource) ReadRows(dst blas32.General, r0 int) error {
	checkDst(dst, r0, s.rows, s.cols)
	if err := s.parse(); err != nil {
		return err
	}
	c := s.m.Cols
	for i := range dst.Rows {
		copy(dst.Data[i*dst.Stride:i*dst.Stride+c], s.m.Data[(r0+i)*c:(r0+i+1)*c])
	}
	return nil
}

// aField is a field's name with its article: "a real", "an integer".
func aField(field string) string {
	if strings.IndexByte("aeiou", field[0]) >= 0 {
		return "an " + field
	}
	return "a " + field
}
