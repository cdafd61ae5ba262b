package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"time"

	"gonum.org/v1/gonum/blas/blas64"

	"github.com/glmul/glmul/cmd/glmul/internal/matfile"
	"github.com/glmul/glmul/glcompute"
	"github.com/glmul/glmul/internal/outfile"
	"github.com/glmul/glmul/validate"
)

// glmul mul -type f64: A and B read whole as float64 (matfile.Read64),
// multiplied in one piece by glcompute.Device.Mul64, checked by
// validate.Check64 and C written whole as float64 (matfile.Write64),
// through outfile as the float32 product's C is: -o is replaced only
// once C is validated. Not streamed: float64 products do not run in
// panels yet.

// c64Bytes is the least an m×n float64 C takes in out's format: .npy's
// 8 bytes an element, or .mtx's 6 ("i j v" and a newline).
func c64Bytes(out string, m, n int) uint64 {
	if format, _ := matfile.OutputFormat(out); format == ".mtx" {
		return cBytes(out, m, n)
	}
	return 8 * uint64(m) * uint64(n)
}

// mul64 multiplies A by B in float64 into f.out, as runMul does in
// float32, and reports it.
func mul64(f *mulFlags, a, b matfile.Source, stdout, stderr io.Writer) error {
	m, k, n := a.Rows(), a.Cols(), b.Cols()
	if err := checkHostMemory64(m, k, n); err != nil {
		return err
	}
	ctx, stop := notifyInterrupt()
	defer stop()
	var r mulResult
	r.M, r.K, r.N = m, k, n
	err, abandoned := awaitWork(ctx, stderr, "glmul mul", func() error {
		return outfile.WriteSized(f.out, stdout, c64Bytes(f.out, m, n), func(w io.Writer) error {
			return mul64Into(ctx, w, f, a, b, &r, stderr)
		})
	})
	if abandoned {
		outfile.Abandon()
		return interruptedError{fmt.Sprintf("the float64 %d×%d×%d product did not stop within a second; %s", m, k, n, leftAs(f.out))}
	}
	err = mulError(f, m, k, n, err)
	invalid := errors.Is(err, errNotValidated)
	if err != nil && !invalid {
		return err
	}
	noteReads(f, a, b, stderr)
	if err := writeMulReport(f, r, !invalid, stdout, stderr); err != nil {
		return err
	}
	if invalid {
		fmt.Fprintf(stderr, "glmul mul: %v; %s\n", r.Validation.Err(), leftAs(f.out))
		return errReported
	}
	return nil
}

// mul64Into opens the device (an OpenGL ES one fails here, before the
// files are read), reads B and A, multiplies them, checks C and writes
// it to w in f.out's format; r gets the figures. A failed check returns
// errNotValidated, leaving w incomplete for outfile to discard.
func mul64Into(ctx context.Context, w io.Writer, f *mulFlags, a, b matfile.Source, r *mulResult, stderr io.Writer) error {
	m, k, n := r.M, r.K, r.N
	r.Validation = validate.Result{Mode: validate.None, OK: true, Row: -1, Col: -1}
	var dev *glcompute.Device
	if !emptyDims(m, k, n) { // an empty product is NumPy's, without a GPU
		h, err := f.dev.hold(stderr, nil)
		if err != nil {
			return err
		}
		defer h.release() // on this goroutine, after the product
		if err := probeFloat64(h.Device, f.kernel); err != nil {
			return err
		}
		dev, r.Device = h.Device, h.Info()
	}
	t0 := time.Now()
	bm, _, err := matfile.Read64(b)
	if err != nil {
		return err
	}
	r.ReadB = time.Since(t0)
	am, _, err := matfile.Read64(a)
	if err != nil {
		return err
	}
	r.Read = time.Since(t0) - r.ReadB
	r.Panels, r.PanelRows, r.HostBytes = 1, m, 8*(int64(m)*int64(k)+int64(k)*int64(n)+int64(m)*int64(n))
	c := blas64.General{Rows: m, Cols: n, Stride: n, Data: make([]float64, m*n)} // zeros: C of an empty K
	if dev != nil {
		for i := range c.Data {
			c.Data[i] = math.NaN() // an element the GPU leaves fails
		}
		t1 := time.Now()
		t, err := dev.Mul64(c, am, bm, &glcompute.MulOptions{Kernel: f.kernel, Context: ctx})
		if err != nil {
			return err
		}
		r.GPU, r.Kernel = time.Since(t1), t.Kernel
		t2 := time.Now()
		r.Validation = validate.Check64(newMulCheck(f.mode, m, k, n).mode, am, bm, c, rand.New(rand.NewPCG(1, 2)))
		r.Check = time.Since(t2)
		if r.Validation.Err() != nil {
			return errNotValidated
		}
	}
	t3 := time.Now()
	if err := matfile.Write64(w, f.out, c); err != nil {
		return err
	}
	r.Write, r.Wall = time.Since(t3), time.Since(t0)
	return nil
}
