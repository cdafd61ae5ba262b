package glcompute

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"gonum.org/v1/gonum/blas"
	"gonum.org/v1/gonum/blas/blas64"

	"github.com/glmul/glmul/glcompute/internal/glw"
	"github.com/glmul/glmul/internal/conformance"
	"github.com/glmul/glmul/shaders"
)

// BenchmarkFloat64 compares the float64 kernel's rate (its dispatches
// and glFinish; A and B uploaded once) with gonum's Dgemm (pure Go, all
// cores, up to n = 1024) on the same inputs in one run.
// GLMUL_FLOAT64_SIZES and GLMUL_FLOAT64_SPECS (comma lists) replace the
// sizes and kernels, "candidates" naming shaders.DFastCandidates and
// "sweep" shaders.DFastSweep (issue 45's list for the H200). Each kernel
// reports flop/s and TFLOPS; one over the device's limits (shared
// memory, invocations, a texture's view) is skipped, saying why.
//
//	go test ./glcompute -run '^$' -bench Float64 -benchtime 3x
//	GLMUL_FLOAT64_SIZES=4096,8192 GLMUL_FLOAT64_SPECS=sweep go test ./glcompute -run '^$' -bench Float64 -benchtime 5x
func BenchmarkFloat64(b *testing.B) {
	sizes, specs := []int{256, 512, 1024}, []string{"dfast", "dfast:64x64x8_4x4_db"}
	if env := os.Getenv("GLMUL_FLOAT64_SIZES"); env != "" {
		sizes = nil
		for _, f := range strings.Split(env, ",") {
			n, err := strconv.Atoi(f)
			if err != nil {
				b.Fatalf("GLMUL_FLOAT64_SIZES: %v", err)
			}
			sizes = append(sizes, n)
		}
	}
	env := os.Getenv("GLMUL_FLOAT64_SPECS")
	if list, ok := map[string]func() []shaders.DFastConfig{"candidates": shaders.DFastCandidates, "sweep": shaders.DFastSweep}[env]; ok {
		specs = nil
		for _, c := range list() {
			specs = append(specs, "dfast:"+c.String())
		}
	} else if env != "" {
		specs = strings.Split(env, ",")
	}
	d := openDevice(b, BackendEGL)
	needFloat64(b, d)
	info := d.Info()
	b.Logf("device: %s, %s (%s); %d bytes of shared memory a group, %d SMs; %d kernels at n = %v",
		info.Vendor, info.Renderer, info.api(), info.MaxSharedMemory, info.SMCount, len(specs), sizes)
	for _, n := range sizes {
		rng := rand.New(rand.NewPCG(uint64(n), 64))
		a, bm, c := conformance.Random64(n, n, n, rng), conformance.Random64(n, n, n, rng), conformance.Random64(n, n, n, rng)
		flop := 2 * float64(n) * float64(n) * float64(n)
		b.Run(fmt.Sprintf("impl=gonum/n=%d", n), func(b *testing.B) {
			if n > 1024 {
				b.Skip("gonum's Dgemm takes seconds a run beyond n = 1024")
			}
			for b.Loop() {
				blas64.Gemm(blas.NoTrans, blas.NoTrans, 1, a, bm, 0, c)
			}
			b.ReportMetric(flop*float64(b.N)/b.Elapsed().Seconds(), "flop/s")
		})
		for _, spec := range specs {
			b.Run(fmt.Sprintf("impl=%s/n=%d", spec, n), func(b *testing.B) {
				benchDgemm(b, spec, flop, c, a, bm)
			})
		}
	}
}

func benchDgemm(b *testing.B, spec string, flop float64, c, a, bm blas64.General) {
	d := openDevice(b, BackendEGL)
	needFloat64(b, d)
	// Skip and Fatal stop the benchmark's goroutine: they are called here,
	// never inside d.call, which runs on the device's thread.
	k, err := shaders.LookupFloat64(spec)
	if err != nil {
		b.Fatal(err)
	}
	var g *dgemm
	d.call(func() {
		if g, err = d.newDgemm(spec, 0, c, a, bm); err != nil {
			return
		}
		// llvmpipe compiles at the first dispatch: not timed.
		if _, err = g.run(0, g.k, defaultMaxGroups); err == nil {
			glw.Finish()
		}
	})
	if errors.Is(err, ErrUnsupported) {
		b.Skipf("%s: %v", spec, err) // over this device's limits, or the kernel's alignment
	} else if err != nil {
		if g != nil {
			d.call(g.release)
		}
		b.Fatalf("%s: %v", spec, err)
	}
	b.Logf("%s: %d invocations, %d bytes of shared memory a group", spec, k.Threads, k.SharedBytes)
	d.call(func() {
		defer g.release()
		for b.Loop() {
			if _, err = g.run(0, g.k, defaultMaxGroups); err != nil {
				return
			}
			glw.Finish()
		}
	})
	if err != nil {
		b.Fatalf("%s: %v", spec, err)
	}
	b.ReportMetric(flop*float64(b.N)/b.Elapsed().Seconds(), "flop/s")
	b.ReportMetric(flop*float64(b.N)/b.Elapsed().Seconds()/1e12, "TFLOPS")
}

// BenchmarkMul64 times Mul64 whole (packing, upload, kernel, readback:
// the call a glblas.Float64 Dgemm makes) on square inputs, with its Timings'
// end-to-end pass, compute (on llvmpipe the dispatch calls' wall time),
// host copies and steps as metrics. GLMUL_FLOAT64_SIZES
// (a comma list) replaces the sizes.
//
//	go test ./glcompute -run '^$' -bench Mul64 -benchtime 3x
func BenchmarkMul64(b *testing.B) {
	sizes := []int{1024, 2048}
	if env := os.Getenv("GLMUL_FLOAT64_SIZES"); env != "" {
		sizes = nil
		for _, f := range strings.Split(env, ",") {
			n, err := strconv.Atoi(f)
			if err != nil {
				b.Fatalf("GLMUL_FLOAT64_SIZES: %v", err)
			}
			sizes = append(sizes, n)
		}
	}
	for _, n := range sizes {
		rng := rand.New(rand.NewPCG(uint64(n), 66))
		a, bm, c := conformance.Random64(n, n, n, rng), conformance.Random64(n, n, n, rng), conformance.Random64(n, n, n, rng)
		flop := 2 * float64(n) * float64(n) * float64(n)
		b.Run(fmt.Sprintf("impl=Mul64/n=%d", n), func(b *testing.B) {
			d := openDevice(b, BackendEGL)
			needFloat64(b, d)
			if _, err := d.Mul64(c, a, bm, nil); err != nil { // compiles the kernel, makes the buffers
				b.Fatal(err)
			}
			var sum Timings
			for b.Loop() {
				t, err := d.Mul64(c, a, bm, nil)
				if err != nil {
					b.Fatal(err)
				}
				sum.EndToEnd += t.EndToEnd
				sum.Compute = []time.Duration{sumDurations(sum.Compute) + sumDurations(t.Compute)}
				sum.Upload += t.Upload
				sum.Readback += t.Readback
				sum.Steps = t.Steps
			}
			runs := float64(b.N)
			b.ReportMetric(flop*runs/b.Elapsed().Seconds(), "flop/s")
			b.ReportMetric(float64(sum.EndToEnd.Nanoseconds())/runs, "pass-ns/op")
			b.ReportMetric(float64(sumDurations(sum.Compute).Nanoseconds())/runs, "compute-ns/op")
			b.ReportMetric(float64(sum.Upload.Nanoseconds())/runs, "upload-ns/op")
			b.ReportMetric(float64(sum.Readback.Nanoseconds())/runs, "readback-ns/op")
			b.ReportMetric(float64(sum.Steps), "steps")
		})
	}
}

func sumDurations(ds []time.Duration) time.Duration {
	var s time.Duration
	for _, d := range ds {
		s += d
	}
	return s
}
