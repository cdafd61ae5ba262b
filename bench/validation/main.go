// Command validation prints how the float32 product check of package
// validate rates right and wrong products at K from 1 to 2²⁴: products
// made as the kernels make them (float32 fused multiply-adds, in order or
// split in four along K) from zero-mean and positive uniform data, and the
// same wrong by 1%. Its output is the table in docs/VALIDATION.md.
//
//	go run ./bench/validation
package main

import (
	"fmt"
	"math"
	"math/rand/v2"

	"gonum.org/v1/gonum/blas/blas32"

	"github.com/glmul/glmul/validate"
)

func main() {
	fmt.Println("| data | K | order | right: full | right: Freivalds | rel. error | ×1.01: full | ×1.01: Freivalds |")
	fmt.Println("|---|---|---|---|---|---|---|---|")
	for _, positive := range []bool{false, true} {
		for _, k := range []int{1, 64, 4097, 65536, 1 << 20, 1 << 22, 1 << 24} {
			rng := rand.New(rand.NewPCG(uint64(k), 1))
			a, b := random(4, k, positive, rng), random(k, 4, positive, rng)
			for _, slices := range []int{1, 4} {
				c := product(a, b, slices)
				full := validate.CheckFull(a, b, c)
				frei := validate.CheckFreivalds(a, b, c, validate.FreivaldsVectors, rand.New(rand.NewPCG(3, 4)))
				w := c
				w.Data = make([]float32, len(c.Data))
				for i, v := range c.Data {
					w.Data[i] = v * 1.01
				}
				wfull := validate.CheckFull(a, b, w)
				wfrei := validate.CheckFreivalds(a, b, w, validate.FreivaldsVectors, rand.New(rand.NewPCG(3, 4)))
				data := "[-1, 1)"
				if positive {
					data = "[0, 1)"
				}
				order := "in order"
				if slices > 1 {
					order = "split in 4"
				}
				fmt.Printf("| %s | %d | %s | %.3g | %.3g | %.2g | %.3g | %.3g |\n", data, k, order,
					full.WorstRatio, frei.WorstRatio, full.RelFrobenius, wfull.WorstRatio, wfrei.WorstRatio)
			}
		}
	}
}

// random is r×c uniform on [-1, 1), or [0, 1) if positive.
func random(r, c int, positive bool, rng *rand.Rand) blas32.General {
	m := blas32.General{Rows: r, Cols: c, Stride: c, Data: make([]float32, r*c)}
	for i := range m.Data {
		if positive {
			m.Data[i] = float32(rng.Float64())
		} else {
			m.Data[i] = float32(2*rng.Float64() - 1)
		}
	}
	return m
}

// product is A·B as a float32 kernel makes it: fused multiply-adds into a
// float32 accumulator in order, in slices of K summed after.
func product(a, b blas32.General, slices int) blas32.General {
	c := blas32.General{Rows: a.Rows, Cols: b.Cols, Stride: b.Cols, Data: make([]float32, a.Rows*b.Cols)}
	k := a.Cols
	for i := range a.Rows {
		for j := range b.Cols {
			var sum float32
			for s := range slices {
				var acc float32
				for l := s * k / slices; l < (s+1)*k/slices; l++ {
					acc = float32(math.FMA(float64(a.Data[i*a.Stride+l]), float64(b.Data[l*b.Stride+j]), float64(acc)))
				}
				sum += acc
			}
			c.Data[i*c.Stride+j] = sum
		}
	}
	return c
}
