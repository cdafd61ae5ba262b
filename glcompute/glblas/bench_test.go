package glblas

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"gonum.org/v1/gonum/blas"
	"gonum.org/v1/gonum/blas/gonum"

	"github.com/glmul/glmul/cpu"
	"github.com/glmul/glmul/internal/conformance"
	"github.com/glmul/glmul/internal/gltest"
)

// BenchmarkSgemmCrossover measures Float32's GPU path (upload,
// product, readback) against gonum's Sgemm, for the size from which the
// GPU pays (tuning.SgemmThreshold). Sizes: GLMUL_BENCH_SGEMM_MAX (default
// 256), halving from there down to 64.
func BenchmarkSgemmCrossover(b *testing.B) {
	d := gltest.Open(b)
	for n := 64; n <= conformance.EnvSize("GLMUL_BENCH_SGEMM_MAX", 256); n *= 2 {
		rng := rand.New(rand.NewPCG(uint64(n), 7))
		a, bm := cpu.Random(n, n, rng), cpu.Random(n, n, rng)
		c := cpu.New(n, n)
		flop := 2 * float64(n) * float64(n) * float64(n)
		for _, impl := range []struct {
			name string
			s    interface {
				Sgemm(blas.Transpose, blas.Transpose, int, int, int, float32, []float32, int, []float32, int, float32, []float32, int)
			}
		}{{"gonum", gonum.Implementation{}}, {"gpu", Float32{Device: d, Threshold: 1}}} {
			b.Run(fmt.Sprintf("impl=%s/n=%d", impl.name, n), func(b *testing.B) {
				impl.s.Sgemm(blas.NoTrans, blas.NoTrans, n, n, n, 1, a.Data, n, bm.Data, n, 0, c.Data, n)
				for b.Loop() {
					impl.s.Sgemm(blas.NoTrans, blas.NoTrans, n, n, n, 1, a.Data, n, bm.Data, n, 0, c.Data, n)
				}
				b.ReportMetric(flop*float64(b.N)/b.Elapsed().Seconds(), "flop/s")
			})
		}
	}
}

// BenchmarkFloat64 compares Float64.Dgemm with every product on the GPU
// (Threshold 1: packing, upload, kernel, readback) with gonum's Dgemm
// alone, on the same square inputs in one run, for Float64's crossover.
//
//	go test ./glcompute/glblas -run '^$' -bench Float64 -benchtime 2s
func BenchmarkFloat64(b *testing.B) {
	for _, n := range []int{64, 128, 256, 512, 1024} {
		rng := rand.New(rand.NewPCG(uint64(n), 65))
		a, bm, c := conformance.Random64(n, n, n, rng), conformance.Random64(n, n, n, rng), conformance.Random64(n, n, n, rng)
		flop := 2 * float64(n) * float64(n) * float64(n)
		for _, impl := range []string{"gonum", "glblas"} {
			b.Run(fmt.Sprintf("n=%d/impl=%s", n, impl), func(b *testing.B) {
				var dgemm func(tA, tB blas.Transpose, m, n, k int, alpha float64, a []float64, lda int, b []float64, ldb int, beta float64, c []float64, ldc int)
				if impl == "gonum" {
					dgemm = gonum.Implementation{}.Dgemm
				} else {
					d := gltest.Open(b)
					needFloat64(b, d)
					dgemm = Float64{Device: d, Threshold: 1}.Dgemm
					dgemm(blas.NoTrans, blas.NoTrans, n, n, n, 1, a.Data, n, bm.Data, n, 0, c.Data, n) // compiles the kernel
				}
				for b.Loop() {
					dgemm(blas.NoTrans, blas.NoTrans, n, n, n, 1, a.Data, n, bm.Data, n, 0, c.Data, n)
				}
				b.ReportMetric(flop*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOPS")
			})
		}
	}
}
