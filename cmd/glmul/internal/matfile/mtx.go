package matfile

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"

	"gonum.org/v1/gonum/blas/blas32"
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
	// seen marks the positions set (a symmetric pair at its lower one),
	// to count the entries summed into an earlier one (dups); nil for
	// array format.
	seen []uint64
	dups int
}

func (r *mtxReader) errf(format string, args ...any) error {
	if err := r.sc.Err(); err != nil { // the scanner's own trouble explains it
		if errors.Is(err, bufio.ErrTooLong) {
			return fmt.Errorf("%s:%d: a line is longer than 1 MiB", r.name, r.line+1)
		}
		return fmt.Errorf("%s: %w", r.name, err)
	}
	return fmt.Errorf("%s:%d: %s", r.name, r.line, fmt.Sprintf(format, args...))
}

// next returns the next line that is not blank or a comment.
func (r *mtxReader) next() (string, bool) {
	for r.sc.Scan() {
		r.line++
		t := strings.TrimSpace(r.sc.Text())
		if t != "" && !strings.HasPrefix(t, "%") {
			return t, true
		}
	}
	return "", false
}

// value parses one entry of the file's field. A real value beyond even
// float64's range (1e400) comes back as ±math.MaxFloat64, and a nonzero
// one below it (1e-400) as ±math.SmallestNonzeroFloat64, so that rounding
// to float32 counts them as what they are: an overflow, an underflow.
func (r *mtxReader) value(f string) (float64, error) {
	if r.h.field == "integer" {
		v, err := strconv.ParseInt(f, 10, 64)
		return float64(v), err
	}
	v, err := strconv.ParseFloat(f, 64)
	switch {
	case errors.Is(err, strconv.ErrRange) && math.IsInf(v, 0):
		return math.Copysign(math.MaxFloat64, v), nil
	case err == nil && v == 0 && nonzeroMantissa(f):
		return math.Copysign(math.SmallestNonzeroFloat64, v), nil
	}
	return v, err
}

// nonzeroMantissa reports whether a number's text has a nonzero digit
// before its exponent ("1e-400", "0x1p-2000"; not "0.0e5").
func nonzeroMantissa(s string) bool {
	s = strings.ToLower(strings.TrimLeft(s, "+-"))
	if hex, ok := strings.CutPrefix(s, "0x"); ok {
		mant, _, _ := strings.Cut(hex, "p")
		return strings.ContainsAny(mant, "123456789abcdef")
	}
	mant, _, _ := strings.Cut(s, "e")
	return strings.ContainsAny(mant, "123456789")
}

// readMTX reads a MatrixMarket matrix from r into a dense matrix; name is
// for messages.
func readMTX(in io.Reader, name string, o ReadOptions) (blas32.General, ReadInfo, error) {
	r := &mtxReader{sc: bufio.NewScanner(in), name: name}
	r.sc.Buffer(make([]byte, 64<<10), 1<<20)
	dims, err := r.header()
	if err != nil {
		return blas32.General{}, ReadInfo{}, err
	}
	rows, cols := dims[0], dims[1]
	r.alloc(rows, cols)
	if r.h.format == "array" {
		err = r.array(rows, cols, r.set)
	} else {
		err = r.coordinate(rows, cols, dims[2], r.set)
	}
	if err != nil {
		return r.m, ReadInfo{}, err
	}
	return r.end(o)
}

// alloc makes the rows×cols matrix the entries are read into and, for
// coordinate format, the marks of the positions set.
func (r *mtxReader) alloc(rows, cols int) {
	r.m = blas32.General{Rows: rows, Cols: cols, Stride: cols, Data: make([]float32, rows*cols)}
	if r.h.format == "coordinate" {
		r.seen = make([]uint64, (rows*cols+63)/64)
	}
}

// set stores entry (i, j), 0-based, of value v (text: as the file writes
// it) in the matrix. Entries add up: a coordinate file that lists (i, j)
// twice means the sum (SciPy reads it so); a symmetric one's (i, j) is
// also (j, i).
func (r *mtxReader) set(i, j int, v float64, text string) {
	cols := r.m.Cols
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
			v += float64(r.m.Data[k])
		}
		r.seen[lo/64] |= 1 << (lo % 64)
	}
	old := r.m.Data[k] // 0 but for a duplicate
	f, first := r.nw.round(v)
	if first {
		r.nw.where = fmt.Sprintf("%s:%d: entry (%d, %d) (row, column from 1, as the file numbers them) is %s", r.name, r.line, i+1, j+1, text)
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
	if r.h, err = parseBanner(r.sc.Text()); err != nil {
		return nil, r.errf("%v", err)
	}
	size, ok := r.next()
	if !ok {
		return nil, r.errf("the size line is missing")
	}
	dims, err := ints(size)
	want := 2
	if r.h.format == "coordinate" {
		want = 3
	}
	switch {
	case err != nil || len(dims) != want || want == 3 && dims[2] < 0:
		return nil, r.errf("the size line %q should hold %d whole numbers", size, want)
	case dims[0] < 1 || dims[1] < 1:
		return nil, r.errf("an empty %d×%d matrix", dims[0], dims[1])
	case r.h.symmetry == "symmetric" && dims[0] != dims[1]:
		return nil, r.errf("a symmetric matrix must be square, not %d×%d", dims[0], dims[1])
	case dims[0] > maxMTXElements || dims[1] > maxMTXElements || int64(dims[0])*int64(dims[1]) > maxMTXElements:
		return nil, r.errf("%d×%d is too large to hold dense (at most %d elements from a .mtx file; use .npy)", dims[0], dims[1], maxMTXElements)
	}
	return dims, nil
}

// array reads a column-major array; a symmetric one lists the lower
// triangle only.
func (r *mtxReader) array(rows, cols int, set func(i, j int, v float64, text string)) error {
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
				return r.errf("%q is not a %s value", t, r.h.field)
			}
			set(i, j, v, t)
		}
	}
	return nil
}

// coordinate reads nnz "i j [value]" entries, 1-based.
func (r *mtxReader) coordinate(rows, cols, nnz int, set func(i, j int, v float64, text string)) error {
	fields := 3
	if r.h.field == "pattern" {
		fields = 2
	}
	for e := 0; e < nnz; e++ {
		t, ok := r.next()
		if !ok {
			return r.errf("the file ends after %d of its %d entries", e, nnz)
		}
		f := strings.Fields(t)
		if len(f) != fields {
			return r.errf("entry %q should hold %d fields", t, fields)
		}
		ij, err := ints(f[0] + " " + f[1])
		if err != nil || ij[0] < 1 || ij[0] > rows || ij[1] < 1 || ij[1] > cols {
			return r.errf("entry %q: indices must be whole numbers within 1…%d and 1…%d", t, rows, cols)
		}
		v, text := 1.0, "1 (pattern)"
		if fields == 3 {
			if v, err = r.value(f[2]); err != nil {
				return r.errf("entry %q: %q is not a %s value", t, f[2], r.h.field)
			}
			text = f[2]
		}
		set(ij[0]-1, ij[1]-1, v, text)
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

// writeMTX writes m as "array real general", column-major.
func writeMTX(w io.Writer, m blas32.General) error {
	bw := bufio.NewWriter(w)
	fmt.Fprintf(bw, "%%%%MatrixMarket matrix array real general\n%% written by glmul (float32)\n%d %d\n", m.Rows, m.Cols)
	var buf []byte
	for j := 0; j < m.Cols; j++ {
		for i := 0; i < m.Rows; i++ {
			buf = strconv.AppendFloat(buf[:0], float64(m.Data[i*m.Stride+j]), 'g', -1, 32)
			buf = append(buf, '\n')
			bw.Write(buf)
		}
	}
	return bw.Flush()
}
