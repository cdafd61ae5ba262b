// Command matmul64 times gonum's mat.Dense.Mul of two n×n float64
// matrices, the whole call, with glblas.Float64 installed (every Dgemm
// on the GPU) and with gonum's own Dgemm, on the same inputs in one run,
// and checks that the two products agree (issue 45's figure of merit).
//
//	matmul64 -n 8192 [-gonum=false]
package main

import (
	"flag"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"time"

	"gonum.org/v1/gonum/blas/blas64"
	"gonum.org/v1/gonum/mat"

	"github.com/glmul/glmul/glcompute"
	"github.com/glmul/glmul/glcompute/glblas"
)

func main() {
	n := flag.Int("n", 4096, "size of the square matrices")
	reps := flag.Int("reps", 3, "timed calls with glblas.Float64 (the median is reported)")
	withGonum := flag.Bool("gonum", true, "also time gonum's own Dgemm (seconds to minutes at 8192)")
	flag.Parse()
	if err := run(*n, *reps, *withGonum); err != nil {
		fmt.Fprintln(os.Stderr, "matmul64:", err)
		os.Exit(1)
	}
}

func run(n, reps int, withGonum bool) error {
	rng := rand.New(rand.NewPCG(1, 2))
	fill := func() *mat.Dense {
		d := make([]float64, n*n)
		for i := range d {
			d[i] = 2*rng.Float64() - 1
		}
		return mat.NewDense(n, n, d)
	}
	a, b := fill(), fill()
	dev, err := glcompute.Open(nil)
	if err != nil {
		return err
	}
	defer dev.Release()
	gonumImpl := blas64.Implementation()
	var fallback error
	blas64.Use(glblas.Float64{Device: dev, Threshold: 1, Fallback: func(err error) { fallback = err }})
	var gpu mat.Dense
	gpu.Mul(a, b) // compiles the kernel, allocates
	times := make([]time.Duration, reps)
	for i := range times {
		t0 := time.Now()
		gpu.Mul(a, b)
		times[i] = time.Since(t0)
	}
	blas64.Use(gonumImpl)
	if fallback != nil {
		return fmt.Errorf("glblas.Float64 fell back to gonum: %w", fallback)
	}
	med := median(times)
	flop := 2 * math.Pow(float64(n), 3)
	fmt.Printf("n=%d glblas mat.Dense.Mul: %v median of %d (%.1f GFLOPS, whole call) on %s\n", n, med, reps, flop/med.Seconds()/1e9, dev.Info().Renderer)
	if !withGonum {
		return nil
	}
	var cpu mat.Dense
	t0 := time.Now()
	cpu.Mul(a, b)
	tg := time.Since(t0)
	fmt.Printf("n=%d gonum mat.Dense.Mul: %v (%.1f GFLOPS); glblas %.3g× faster\n", n, tg, flop/tg.Seconds()/1e9, tg.Seconds()/med.Seconds())
	var diff mat.Dense
	diff.Sub(&gpu, &cpu)
	fmt.Printf("n=%d ‖GPU − gonum‖_F / ‖gonum‖_F = %.2g (C[0][0] %.17g and %.17g)\n", n, mat.Norm(&diff, 2)/mat.Norm(&cpu, 2), gpu.At(0, 0), cpu.At(0, 0))
	return nil
}

func median(ts []time.Duration) time.Duration {
	s := append([]time.Duration(nil), ts...)
	for i := range s {
		for j := i + 1; j < len(s); j++ {
			if s[j] < s[i] {
				s[i], s[j] = s[j], s[i]
			}
		}
	}
	return s[len(s)/2]
}
