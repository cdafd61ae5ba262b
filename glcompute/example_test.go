package glcompute_test

import (
	"errors"
	"fmt"
	"log"

	"gonum.org/v1/gonum/blas"
	"gonum.org/v1/gonum/blas/blas32"

	"github.com/glmul/glmul/glcompute"
)

// The examples are compiled by go test, so that the calls they show (and
// README's, which they follow) stay right; they print no checked output,
// as a machine without OpenGL has none to give.

// A product of host matrices: C = A·B, uploaded, computed and read back.
func ExampleDevice_Mul() {
	dev, err := glcompute.Open(nil) // the best context: a GPU, else Mesa's llvmpipe
	if errors.Is(err, glcompute.ErrNoContext) || errors.Is(err, glcompute.ErrUnsupported) {
		log.Fatalf("no OpenGL 4.3 context with compute shaders: %v", err)
	}
	if err != nil {
		log.Fatal(err)
	}
	defer dev.Release()
	a := blas32.General{Rows: 2, Cols: 3, Stride: 3, Data: []float32{1, 2, 3, 4, 5, 6}}
	b := blas32.General{Rows: 3, Cols: 2, Stride: 2, Data: []float32{7, 8, 9, 10, 11, 12}}
	c := blas32.General{Rows: 2, Cols: 2, Stride: 2, Data: make([]float32, 4)}
	t, err := dev.Mul(c, a, b, nil)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(c.Data)                             // [58 64 139 154]
	fmt.Println(t.Kernel, t.Groups, t.EndToEnd > 0) // the layout that ran, and the pass's time
}

// Matrices that stay on the GPU: uploaded once, multiplied as often as
// needed, C = ½·Aᵀ·B + C, read back when wanted.
func ExampleMatrix_Gemm() {
	dev, err := glcompute.Open(nil)
	if err != nil {
		log.Fatal(err)
	}
	defer dev.Release()
	const k, m, n = 64, 32, 48
	a, err := dev.NewMatrix(k, m) // Aᵀ is stored: k×m
	if err != nil {
		log.Fatal(err)
	}
	defer a.Release()
	b, _ := dev.NewMatrix(k, n)
	defer b.Release()
	c, _ := dev.NewMatrix(m, n)
	defer c.Release()
	host := func(r, cols int) blas32.General {
		g := blas32.General{Rows: r, Cols: cols, Stride: cols, Data: make([]float32, r*cols)}
		for i := range g.Data {
			g.Data[i] = float32(i%7) - 3
		}
		return g
	}
	a.Upload(host(k, m))
	b.Upload(host(k, n))
	c.Upload(host(m, n))
	if err := c.Gemm(blas.Trans, blas.NoTrans, 0.5, a, b, 1); err != nil {
		log.Fatal(err)
	}
	out := host(m, n)
	if err := c.Download(out); err != nil { // waits for the product
		log.Fatal(err)
	}
	// A view of rows 8..15 of C: the fields may describe any part of
	// the buffer, no more.
	c.Rows, c.Offset = 8, 8*n
	part := host(8, n)
	c.Download(part)
	fmt.Println(part.Data[0] == out.Data[8*n])
}
