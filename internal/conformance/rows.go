package conformance

import "gonum.org/v1/gonum/blas/blas32"

// Rows reads rows of a matrix in memory, as a streamed product's
// RowReader (package stream) reads a file: for tests that stream a
// conformance product.
type Rows struct{ M blas32.General }

func (r Rows) Rows() int { return r.M.Rows }
func (r Rows) Cols() int { return r.M.Cols }

// ReadRows copies rows [r0, r0+dst.Rows) of M into dst.
func (r Rows) ReadRows(dst blas32.General, r0 int) error {
	for i := range dst.Rows {
		copy(dst.Data[i*dst.Stride:i*dst.Stride+dst.Cols], r.M.Data[(r0+i)*r.M.Stride:])
	}
	return nil
}

// RowsInto writes the rows it is given into C, in order, as a streamed
// product's RowWriter writes a file, leaving C's padding as it is.
type RowsInto struct {
	C   blas32.General
	row int
}

// WriteRows copies m into C's next m.Rows rows.
func (w *RowsInto) WriteRows(m blas32.General) error {
	for i := range m.Rows {
		copy(w.C.Data[(w.row+i)*w.C.Stride:(w.row+i)*w.C.Stride+w.C.Cols], m.Data[i*m.Stride:i*m.Stride+m.Cols])
	}
	w.row += m.Rows
	return nil
}
