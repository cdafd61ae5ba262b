package glcompute

import (
	"unsafe"

	"gonum.org/v1/gonum/blas/blas32"
	"gonum.org/v1/gonum/blas/blas64"

	"github.com/glmul/glmul/glcompute/internal/glw"
	"github.com/glmul/glmul/glcompute/internal/staging"
	"github.com/glmul/glmul/shaders"
)

// Host products of both element types share one transfer layer. The
// staging buffers (internal/staging) and the steps of a pipelined pass
// (pipeline.go: staging.View, part, upTransfer) move 4-byte words: they
// copy bits and never read them as numbers. A row-major float64 matrix is bit
// for bit a matrix of words with twice the columns (words64), so Mul64
// goes through the same staging, pipelined pass and panels as Mul. What
// differs is the kernel side: the program and the units of its uniforms
// (program.setLayout), and the planners' counts of columns, strides and
// offsets, which they turn from elements into words (words).

// words is how many 4-byte words an element of a product's matrices
// takes: 1 for float32, 2 for float64.
type words int

const float64Words words = 2

// wordsOf returns the words of an element of size bytes (4 or 8).
func wordsOf(size int) words { return words(size / 4) }

// view is where a matrix of ld elements a row lies in buf, from element
// off.
func (w words) view(buf glw.Buffer, off, ld int) staging.View {
	return staging.View{Buf: buf, Off: int(w) * off, Stride: int(w) * ld}
}

// part is rows [r0, r0+rows) and columns [c0, c0+cols), in elements, of
// m, a matrix of words (a float64 matrix's words64).
func (w words) part(m blas32.General, r0, c0, rows, cols int) part {
	return part{m: m, r0: r0, c0: int(w) * c0, rows: rows, cols: int(w) * cols}
}

// words64 is m as a matrix of words: the same memory, each double two
// words, each row twice as long. The transfer layer copies it as it
// copies a float32 matrix, bit for bit (Go's copy moves bytes; nothing
// converts them), so a NaN's payload and a signed zero arrive as they
// were.
func words64(m blas64.General) blas32.General {
	var data []float32
	if len(m.Data) > 0 {
		data = unsafe.Slice((*float32)(unsafe.Pointer(unsafe.SliceData(m.Data))), 2*len(m.Data))
	}
	return blas32.General{Rows: m.Rows, Cols: 2 * m.Cols, Stride: 2 * m.Stride, Data: data}
}

// part is a block of a host matrix: rows [r0, r0+rows) and columns
// [c0, c0+cols) of m.
type part struct {
	m                  blas32.General
	r0, c0, rows, cols int
}

func (p part) general() blas32.General {
	return blas32.General{Rows: p.rows, Cols: p.cols, Stride: p.m.Stride, Data: p.m.Data[p.r0*p.m.Stride+p.c0:]}
}

// reduceFor is the reduction that adds kernel k's partial results:
// Reduce, or Reduce64 for a float64 kernel.
func reduceFor(k shaders.Kernel) shaders.Kernel {
	if k.Float64 {
		return shaders.Reduce64()
	}
	return shaders.Reduce()
}
