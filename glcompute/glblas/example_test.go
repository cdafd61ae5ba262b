package glblas_test

import (
	"fmt"
	"log"

	"gonum.org/v1/gonum/blas/blas64"
	"gonum.org/v1/gonum/mat"

	"github.com/glmul/glmul/glcompute"
	"github.com/glmul/glmul/glcompute/glblas"
)

// The example is compiled by go test, so that the calls it shows stay
// right; it prints no checked output, as a machine without OpenGL has
// none to give.

// gonum's mat in float64 on the GPU: with Float64 installed, mat.Dense.Mul
// (and the blocked factorizations of gonum's LAPACK) call Dgemm there from
// the device's crossover on.
func ExampleFloat64() {
	dev, err := glcompute.Open(nil)
	if err != nil {
		log.Fatal(err)
	}
	defer dev.Release()
	blas64.Use(glblas.Float64{
		Device:   dev, // Threshold 0: the device's crossover (tuning.DgemmThreshold); 1 sends every product
		Fallback: func(err error) { log.Print("Dgemm on the CPU: ", err) },
	})
	a := mat.NewDense(2, 3, []float64{1, 2, 3, 4, 5, 6})
	b := mat.NewDense(3, 2, []float64{7, 8, 9, 10, 11, 12})
	var c mat.Dense
	c.Mul(a, b)
	fmt.Printf("%v\n", mat.Formatted(&c)) // ⎡ 58   64⎤ ⎣139  154⎦
}
