package matfile

import (
	"bufio"
	"fmt"
	"io"
	"strconv"
	"strings"

	"gonum.org/v1/gonum/blas/blas32"
)

// mtxHeader is a MatrixMarket banner: format, field and symmetry.
type mtxHeader struct{ format, field, symmetry string }

// readMTX reads a MatrixMarket matrix from r into a dense matrix; name is
// for messages.
func readMTX(r io.Reader, name string) (blas32.General, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	line := 0
	errf := func(format string, args ...any) error {
		return fmt.Errorf("%s:%d: %s", name, line, fmt.Sprintf(format, args...))
	}
	next := func() (string, bool) { // the next line that is not a comment
		for sc.Scan() {
			line++
			t := strings.TrimSpace(sc.Text())
			if t != "" && !strings.HasPrefix(t, "%") {
				return t, true
			}
		}
		return "", false
	}
	if !sc.Scan() {
		return blas32.General{}, fmt.Errorf("%s: empty file, not a MatrixMarket file", name)
	}
	line++
	h, err := parseBanner(sc.Text())
	if err != nil {
		return blas32.General{}, errf("%v", err)
	}
	size, ok := next()
	if !ok {
		return blas32.General{}, errf("the size line is missing")
	}
	dims, err := ints(size)
	want := 2
	if h.format == "coordinate" {
		want = 3
	}
	if err != nil || len(dims) != want {
		return blas32.General{}, errf("the size line %q should hold %d whole numbers", size, want)
	}
	rows, cols := dims[0], dims[1]
	if rows < 1 || cols < 1 {
		return blas32.General{}, errf("an empty %d×%d matrix", rows, cols)
	}
	if h.symmetry == "symmetric" && rows != cols {
		return blas32.General{}, errf("a symmetric matrix must be square, not %d×%d", rows, cols)
	}
	if int64(rows)*int64(cols) > 1<<31 {
		return blas32.General{}, errf("%d×%d is too large to hold dense", rows, cols)
	}
	m := blas32.General{Rows: rows, Cols: cols, Stride: cols, Data: make([]float32, rows*cols)}
	set := func(i, j int, v float32) {
		m.Data[i*cols+j] = v
		if h.symmetry == "symmetric" {
			m.Data[j*cols+i] = v
		}
	}
	value := func(f string) (float32, error) {
		if h.field == "integer" {
			v, err := strconv.ParseInt(f, 10, 64)
			return float32(v), err
		}
		v, err := strconv.ParseFloat(f, 64)
		return float32(v), err
	}
	if h.format == "array" {
		// Column-major; a symmetric one lists the lower triangle only.
		for j := 0; j < cols; j++ {
			i0 := 0
			if h.symmetry == "symmetric" {
				i0 = j
			}
			for i := i0; i < rows; i++ {
				t, ok := next()
				if !ok {
					return m, errf("the file ends before entry (%d, %d) of the %d×%d array", i+1, j+1, rows, cols)
				}
				v, err := value(t)
				if err != nil {
					return m, errf("%q is not a %s value", t, h.field)
				}
				set(i, j, v)
			}
		}
	} else {
		nnz := dims[2]
		for e := 0; e < nnz; e++ {
			t, ok := next()
			if !ok {
				return m, errf("the file ends after %d of its %d entries", e, nnz)
			}
			f := strings.Fields(t)
			if wantF := map[bool]int{true: 2, false: 3}[h.field == "pattern"]; len(f) != wantF {
				return m, errf("entry %q should hold %d fields", t, wantF)
			}
			ij, err := ints(f[0] + " " + f[1])
			if err != nil || ij[0] < 1 || ij[0] > rows || ij[1] < 1 || ij[1] > cols {
				return m, errf("entry %q: indices must be whole numbers within 1…%d and 1…%d", t, rows, cols)
			}
			v := float32(1)
			if h.field != "pattern" {
				if v, err = value(f[2]); err != nil {
					return m, errf("entry %q: %q is not a %s value", t, f[2], h.field)
				}
			}
			set(ij[0]-1, ij[1]-1, v)
		}
	}
	if t, ok := next(); ok {
		return m, errf("data after the last entry the header announces: %q", t)
	}
	if err := sc.Err(); err != nil {
		return m, fmt.Errorf("%s: %w", name, err)
	}
	return m, nil
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
