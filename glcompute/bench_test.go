package glcompute

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/glmul/glmul/cpu"
)

// BenchmarkMul compares the GPU kernels with gonum's Sgemm (all cores) on
// the same inputs in one run. ns/op and flop/s count a whole Mul (upload,
// one run, readback); kernel-flop/s counts the run alone, timed by the GL
// timer where the driver has a real one, else by the wall clock after
// glFinish. On llvmpipe both GPU figures use the CPU's cores, as gonum does.
//
//	go test ./glcompute -run '^$' -bench Mul -benchtime 5x
func BenchmarkMul(b *testing.B) {
	for _, n := range []int{256, 512} {
		rng := rand.New(rand.NewPCG(uint64(n), 1))
		a, bm := cpu.Random(n, n, rng), cpu.Random(n, n, rng)
		c := cpu.New(n, n)
		flop := 2 * float64(n) * float64(n) * float64(n)
		b.Run(fmt.Sprintf("impl=gonum/n=%d", n), func(b *testing.B) {
			for b.Loop() {
				cpu.Sgemm(c, a, bm)
			}
			b.ReportMetric(flop*float64(b.N)/b.Elapsed().Seconds(), "flop/s")
		})
		for _, kernel := range []string{"tiled32", "fast"} {
			b.Run(fmt.Sprintf("impl=%s/n=%d", kernel, n), func(b *testing.B) {
				d := openDevice(b, BackendEGL)
				// Compile and JIT (llvmpipe compiles at first dispatch) before timing.
				if _, err := d.Mul(c, a, bm, &MulOptions{Kernel: kernel}); err != nil {
					b.Fatal(err)
				}
				var kernelSeconds float64
				for b.Loop() {
					t, err := d.Mul(c, a, bm, &MulOptions{Kernel: kernel})
					if err != nil {
						b.Fatal(err)
					}
					kernelSeconds += t.Compute[0].Seconds() // the pass's time in its dispatches
				}
				b.ReportMetric(flop*float64(b.N)/b.Elapsed().Seconds(), "flop/s")
				b.ReportMetric(flop*float64(b.N)/kernelSeconds, "kernel-flop/s")
			})
		}
	}
}
