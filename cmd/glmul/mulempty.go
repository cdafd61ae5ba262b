package main

import (
	"context"
	"fmt"
	"io"
	"time"

	"gonum.org/v1/gonum/blas/blas32"
	"gonum.org/v1/gonum/blas/blas64"

	"github.com/glmul/glmul/cmd/glmul/internal/matfile"
	"github.com/glmul/glmul/glcompute/stream"
	"github.com/glmul/glmul/internal/outfile"
	"github.com/glmul/glmul/validate"
)

// emptyDims reports whether an m×k by k×n product has an empty dimension.
func emptyDims(m, k, n int) bool { return m == 0 || k == 0 || n == 0 }

// emptyProduct writes C = A·B where a dimension is 0, as NumPy gives it:
// m×n zeros where K is 0 (each element a sum of no terms), a matrix
// without elements where M or N is, of f.typ's elements. Nothing is
// computed, so no device is opened and nothing validated; A and B are
// still read through, B first, as f.typ (a file's data checked as for
// any product, a stream drained). C goes through outfile as a product's
// does; Ctrl-C stops it between blocks.
func emptyProduct(f *mulFlags, a, b matfile.Source, stdout, stderr io.Writer) error {
	ctx, stop := notifyInterrupt()
	defer stop()
	m, k, n := a.Rows(), a.Cols(), b.Cols()
	r := mulResult{Result: dimsOnly(m, k, n), Validation: validate.Result{Mode: validate.None, OK: true, Row: -1, Col: -1}}
	size := cBytes(f.out, m, n)
	if f.typ == typeF64 {
		size = c64Bytes(f.out, m, n)
	}
	err, abandoned := awaitWork(ctx, stderr, "glmul mul", func() error {
		t0 := time.Now()
		if err := drain(ctx, b, f.typ); err != nil {
			return err
		}
		r.ReadB = time.Since(t0)
		if err := drain(ctx, a, f.typ); err != nil {
			return err
		}
		r.Read = time.Since(t0) - r.ReadB
		err := outfile.WriteSized(f.out, stdout, size, func(w io.Writer) error {
			return writeZeros(ctx, w, f.out, m, n, f.typ)
		})
		r.Write, r.Wall = time.Since(t0)-r.ReadB-r.Read, time.Since(t0)
		return err
	})
	if abandoned {
		outfile.Abandon()
		return interruptedError{fmt.Sprintf("the empty %d×%d×%d product did not stop within a second; %s", m, k, n, leftAs(f.out))}
	}
	if err != nil {
		return mulError(f, m, k, n, err)
	}
	noteReads(f, a, b, stderr)
	return writeMulReport(f, r, true, stdout, stderr)
}

// dimsOnly is the stream.Result of an empty product: its dimensions.
func dimsOnly(m, k, n int) (r stream.Result) {
	r.M, r.K, r.N = m, k, n
	return r
}

// emptyBlock is the most bytes a block of rows that drain reads, or that
// writeZeros writes, takes.
const emptyBlock = 16 << 20

// drain reads s's rows through, a block at a time, in order (at least
// once: the empty read of a matrix without rows ends a stream's), for
// their errors: a file shorter than its header says, a value beyond
// float32's range (none with typ f64: they are read as float64,
// matfile.ReadRows64).
func drain(ctx context.Context, s matfile.Source, typ string) error {
	rows, cols := s.Rows(), s.Cols()
	per := max(1, emptyBlock/(elemBytes(typ)*max(1, cols)))
	var read func(nr, r0 int) error // nr rows, at most per, from r0
	if typ == typeF64 {
		buf := make([]float64, min(rows, per)*cols)
		read = func(nr, r0 int) error {
			return matfile.ReadRows64(s, blas64.General{Rows: nr, Cols: cols, Stride: cols, Data: buf}, r0)
		}
	} else {
		buf := make([]float32, min(rows, per)*cols)
		read = func(nr, r0 int) error {
			return s.ReadRows(blas32.General{Rows: nr, Cols: cols, Stride: cols, Data: buf}, r0)
		}
	}
	for r0 := 0; r0 < rows || r0 == 0; r0 += per {
		if err := ctx.Err(); err != nil {
			return err
		}
		if err := read(min(per, rows-r0), r0); err != nil {
			return overflowHint(err)
		}
	}
	return nil
}

// elemBytes is the bytes of one of typ's elements.
func elemBytes(typ string) int {
	if typ == typeF64 {
		return 8
	}
	return 4
}

// writeZeros writes an m×n matrix of typ's zeros to w in out's format.
func writeZeros(ctx context.Context, w io.Writer, out string, m, n int, typ string) error {
	per := max(1, emptyBlock/(elemBytes(typ)*max(1, n)))
	if typ == typeF64 {
		sink, err := matfile.NewSink64(w, out, m, n)
		if err != nil {
			return err
		}
		zeros := make([]float64, min(m, per)*n)
		return writeBlocks(ctx, sink, m, per, func(rows int) blas64.General { return blas64.General{Rows: rows, Cols: n, Stride: n, Data: zeros} })
	}
	sink, err := matfile.NewSink(w, out, m, n)
	if err != nil {
		return err
	}
	zeros := make([]float32, min(m, per)*n)
	return writeBlocks(ctx, sink, m, per, func(rows int) blas32.General { return blas32.General{Rows: rows, Cols: n, Stride: n, Data: zeros} })
}

// writeBlocks writes m rows to sink, block(rows) for each block of at
// most per, stopping once ctx is done, then closes it: matfile's Sink or
// Sink64, M its matrix type.
func writeBlocks[M any](ctx context.Context, sink interface {
	WriteRows(M) error
	Close() error
}, m, per int, block func(rows int) M) error {
	for r0 := 0; r0 < m; r0 += per {
		if err := ctx.Err(); err != nil {
			return err
		}
		if err := sink.WriteRows(block(min(per, m-r0))); err != nil {
			return err
		}
	}
	return sink.Close()
}
