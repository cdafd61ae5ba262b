package conformance

import (
	"testing"

	"gonum.org/v1/gonum/blas/blas32"

	"github.com/glmul/glmul/cpu"
)

// The harness itself must fail a wrong implementation; a test that cannot
// fail is no test. These run the checks that Run makes against deliberately
// broken products.
func TestHarnessCatchesBrokenProducts(t *testing.T) {
	broken := map[string]Mul{
		"skips-last-k": func(c, a, b blas32.General) error {
			for i := 0; i < a.Rows; i++ {
				for j := 0; j < b.Cols; j++ {
					var s float32
					for k := 0; k < a.Cols-1; k++ {
						s += a.Data[i*a.Stride+k] * b.Data[k*b.Stride+j]
					}
					c.Data[i*c.Stride+j] = s
				}
			}
			return nil
		},
		"leaves-last-row": func(c, a, b blas32.General) error {
			cc := cpu.New(c.Rows, c.Cols)
			cpu.Sgemm(cc, compact(a), compact(b))
			for i := 0; i < c.Rows-1; i++ {
				copy(c.Data[i*c.Stride:i*c.Stride+c.Cols], cc.Data[i*c.Cols:])
			}
			return nil
		},
		"writes-padding": func(c, a, b blas32.General) error {
			cpu.Naive(c, a, b)
			if c.Stride > c.Cols {
				c.Data[c.Cols] = 0
			}
			return nil
		},
	}
	for name, mul := range broken {
		if err := Check(Shape{33, 5, 31}, 3, mul); err == nil {
			t.Errorf("harness passed a %s implementation", name)
		}
	}
}

func TestHarnessPassesCPU(t *testing.T) {
	Run(t, nil, func(c, a, b blas32.General) error { cpu.Naive(c, a, b); return nil })
	Run(t, nil, func(c, a, b blas32.General) error { cpu.Sgemm(c, a, b); return nil })
}
