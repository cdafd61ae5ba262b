package glcompute

import (
	"gonum.org/v1/gonum/blas/blas32"
	"gonum.org/v1/gonum/blas/blas64"
)

// dims is what the checks of Mul's and Mul64's operands read of a
// matrix, whatever its element type: its shape, stride and data length.
type dims struct{ rows, cols, stride, len int }

func dims32(m blas32.General) dims { return dims{m.Rows, m.Cols, m.Stride, len(m.Data)} }
func dims64(m blas64.General) dims { return dims{m.Rows, m.Cols, m.Stride, len(m.Data)} }

// checkProduct panics unless c = a·b is a product Mul can take: shapes
// that agree, no negative dimension, strides and data that fit the
// shapes. empty reports a product with a dimension 0.
func checkProduct(c, a, b dims) (empty bool) {
	emptyA, emptyB, emptyC := a.checkOperand(), b.checkOperand(), c.checkOperand()
	if a.cols != b.rows {
		panic("glcompute: inner dimensions of A and B differ")
	}
	if c.rows != a.rows || c.cols != b.cols {
		panic("glcompute: C has the wrong shape")
	}
	return emptyA || emptyB || emptyC
}

// checkGeneral panics unless m has at least a row and a column, a stride
// no shorter than a row, and data for its shape.
func checkGeneral(m blas32.General) {
	if m.Rows < 1 || m.Cols < 1 {
		panic("glcompute: matrix dimension below 1")
	}
	dims32(m).checkLayout()
}

// checkOperand is checkGeneral for an operand of Mul, which may have no
// rows or no columns (empty reports so); its data may then be nil.
func checkOperand(m blas32.General) (empty bool) { return dims32(m).checkOperand() }

func (m dims) checkOperand() (empty bool) {
	if m.rows < 0 || m.cols < 0 {
		panic("glcompute: negative matrix dimension")
	}
	if m.rows == 0 || m.cols == 0 {
		if m.stride < m.cols {
			panic("glcompute: stride shorter than a row")
		}
		return true
	}
	m.checkLayout()
	return false
}

// checkLayout panics unless m's stride and data fit its shape (rows and
// cols at least 1).
func (m dims) checkLayout() {
	if m.stride < m.cols {
		panic("glcompute: stride shorter than a row")
	}
	if m.len < (m.rows-1)*m.stride+m.cols {
		panic("glcompute: matrix data shorter than its shape")
	}
}

// blockView returns rows [r0, r0+rows) of m's columns [c0, c0+cols).
func blockView(m blas32.General, r0, rows, c0, cols int) blas32.General {
	first := r0*m.Stride + c0
	return blas32.General{Rows: rows, Cols: cols, Stride: m.Stride, Data: m.Data[first : first+(rows-1)*m.Stride+cols]}
}
