package glcompute

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/glmul/glmul/cpu"
	"github.com/glmul/glmul/internal/conformance"
)

// BenchmarkCallOverhead is the CPU cost of queueing one resident 64×64
// product (no wait): what an engine pays per call. ns/op is that cost; the
// queue is drained with a fence after the loop. The scoped modes make
// every call inside one Device.Scope (one state save and restore, storage
// barriers only), as an engine's physics step would. Back to back, tens of
// thousands of calls fill the driver's queue and the host then waits for
// the GPU, so ns/op can be the GPU's time per tiny product rather than
// the host's cost; the -drained modes wait for the queue every 64 calls
// with the timer stopped, so they time the host's cost alone, as an engine
// that queues a few products a frame sees it.
func BenchmarkCallOverhead(b *testing.B) {
	run := func(b *testing.B, d *Device, scoped bool, drain int) {
		if scoped {
			if err := d.Scope(func() error { runCalls(b, d, drain); return nil }); err != nil {
				b.Fatal(err)
			}
			return
		}
		runCalls(b, d, drain)
	}
	for _, drain := range []int{0, 64} {
		for _, scoped := range []bool{false, true} {
			suffix := ""
			if scoped {
				suffix = "-scope"
			}
			if drain > 0 {
				suffix += "-drained"
			}
			b.Run("mode=owned"+suffix, func(b *testing.B) { run(b, openDevice(b, BackendEGL), scoped, drain) })
			b.Run("mode=borrowed"+suffix, func(b *testing.B) {
				runtime.LockOSThread()
				defer runtime.UnlockOSThread()
				h, err := NewHeadlessContext(0)
				if err != nil {
					noGL(b, err.Error())
				}
				defer h.Release()
				d, err := NewDeviceFromCurrent(nil)
				if err != nil {
					b.Fatal(err)
				}
				defer d.Release()
				run(b, d, scoped, drain)
			})
		}
	}
}

// runCalls times resident 64×64 products queued back to back or, with
// drain > 0, in runs of drain calls with the queue drained between them
// outside the timer.
func runCalls(b *testing.B, d *Device, drain int) {
	rng := rand.New(rand.NewPCG(1, 2))
	ma, _ := d.NewMatrix(64, 64)
	mb, _ := d.NewMatrix(64, 64)
	mc, _ := d.NewMatrix(64, 64)
	ma.Upload(cpu.Random(64, 64, rng))
	mb.Upload(cpu.Random(64, 64, rng))
	mc.Mul(ma, mb) // compile before timing
	wait := func() {
		f := d.Fence()
		f.Wait(time.Minute)
		f.Release()
	}
	wait()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if drain > 0 && i%drain == drain-1 {
			b.StopTimer()
			wait()
			b.StartTimer()
		}
		if err := mc.Mul(ma, mb); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	wait()
	for _, m := range []*Matrix{ma, mb, mc} {
		m.Release()
	}
}

// BenchmarkBatched4x4 multiplies GLMUL_BENCH_BATCH (default 10,000; the
// H100 figure uses 1,000,000) pairs of 4×4 matrices per op and waits for
// them; bytes/s counts A, B and C once each (48 floats per product).
func BenchmarkBatched4x4(b *testing.B) {
	d := openDevice(b, BackendEGL)
	count := conformance.EnvSize("GLMUL_BENCH_BATCH", 10000)
	rng := rand.New(rand.NewPCG(3, 4))
	ma, _ := d.NewMatrix(count, 16)
	mb, _ := d.NewMatrix(count, 16)
	mc, err := d.NewMatrix(count, 16)
	if err != nil {
		b.Fatal(err)
	}
	ma.Upload(cpu.Random(count, 16, rng))
	mb.Upload(cpu.Random(count, 16, rng))
	bt := Batch{Count: count, M: 4, K: 4, N: 4}
	d.MulBatched(mc, ma, mb, bt)
	d.Fence().Wait(time.Minute)
	b.Run(fmt.Sprintf("count=%d", count), func(b *testing.B) {
		for b.Loop() {
			d.MulBatched(mc, ma, mb, bt)
			f := d.Fence()
			f.Wait(time.Minute)
			f.Release()
		}
		b.ReportMetric(float64(48*4*count)*float64(b.N)/b.Elapsed().Seconds(), "bytes/s")
	})
}

// BenchmarkResidentVsReadback: an n×n product (GLMUL_BENCH_N, default 256;
// the H100 figure uses 4096) on resident matrices (queue + fence) against
// Device.Mul, which uploads A and B and reads C back every time.
func BenchmarkResidentVsReadback(b *testing.B) {
	d := openDevice(b, BackendEGL)
	n := conformance.EnvSize("GLMUL_BENCH_N", 256)
	rng := rand.New(rand.NewPCG(5, 6))
	a, bm := cpu.Random(n, n, rng), cpu.Random(n, n, rng)
	c := cpu.New(n, n)
	flop := 2 * float64(n) * float64(n) * float64(n)
	b.Run(fmt.Sprintf("path=resident/n=%d", n), func(b *testing.B) {
		ma, _ := d.NewMatrix(n, n)
		mb, _ := d.NewMatrix(n, n)
		mc, _ := d.NewMatrix(n, n)
		ma.Upload(a)
		mb.Upload(bm)
		mc.Mul(ma, mb)
		d.Fence().Wait(time.Minute)
		for b.Loop() {
			mc.Mul(ma, mb)
			f := d.Fence()
			f.Wait(time.Minute)
			f.Release()
		}
		b.ReportMetric(flop*float64(b.N)/b.Elapsed().Seconds(), "flop/s")
	})
	b.Run(fmt.Sprintf("path=readback/n=%d", n), func(b *testing.B) {
		d.Mul(c, a, bm, &MulOptions{Kernel: "fast"})
		for b.Loop() {
			if _, err := d.Mul(c, a, bm, &MulOptions{Kernel: "fast"}); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(flop*float64(b.N)/b.Elapsed().Seconds(), "flop/s")
	})
}

// BenchmarkResidentShapes times resident products (Matrix.Mul: no upload,
// no readback) of the shapes in GLMUL_BENCH_SHAPES (N or MxKxN, comma
// separated; default 64,100x200x300), 10 queued back to back and then
// waited for with a fence, as an engine's step queues them, each a call
// of its own or all in one Scope (GLMUL_BENCH_NOTEX: the device's kernels
// without buffer textures): flop/s is the
// GPU's rate on products that stay on it, to set against glmul bench's
// host products of the same shapes.
func BenchmarkResidentShapes(b *testing.B) {
	d := openDevice(b, BackendEGL)
	if os.Getenv("GLMUL_BENCH_NOTEX") != "" {
		// The device's kernels read through storage buffers, not buffer
		// textures: what the textures cost or give resident products.
		notex := func(spec string) string { return strings.ReplaceAll(spec, "_tex", "") }
		d.info.DefaultKernel, d.info.NaturalKernel, d.info.NaturalWideKernel, d.info.SmallGridKernel = notex(d.info.DefaultKernel), notex(d.info.NaturalKernel), notex(d.info.NaturalWideKernel), notex(d.info.SmallGridKernel)
		for class, spec := range d.info.ClassKernels {
			d.info.ClassKernels[class] = notex(spec)
		}
	}
	shapes := os.Getenv("GLMUL_BENCH_SHAPES")
	if shapes == "" {
		shapes = "64,100x200x300"
	}
	for _, s := range strings.Split(shapes, ",") {
		var m, k, n int
		if _, err := fmt.Sscanf(s, "%dx%dx%d", &m, &k, &n); err != nil {
			if _, err := fmt.Sscanf(s, "%d", &m); err != nil {
				b.Fatalf("GLMUL_BENCH_SHAPES: %q is not N or MxKxN", s)
			}
			k, n = m, m
		}
		rng := rand.New(rand.NewPCG(uint64(m), uint64(n)))
		ma, _ := d.NewMatrix(m, k)
		mb, _ := d.NewMatrix(k, n)
		mc, _ := d.NewMatrix(m, n)
		if err := errors.Join(ma.Upload(cpu.Random(m, k, rng)), mb.Upload(cpu.Random(k, n, rng))); err != nil {
			b.Fatal(err)
		}
		const queued = 10
		for _, scoped := range []bool{false, true} {
			run := func() {
				muls := func() error {
					for range queued {
						if err := mc.Mul(ma, mb); err != nil {
							return err
						}
					}
					return nil
				}
				var err error
				if scoped {
					err = d.Scope(muls)
				} else {
					err = muls()
				}
				if err != nil {
					b.Fatal(err)
				}
				f := d.Fence()
				f.Wait(time.Minute)
				f.Release()
			}
			b.Run(fmt.Sprintf("shape=%dx%dx%d/scope=%v", m, k, n, scoped), func(b *testing.B) {
				run()
				for b.Loop() {
					run()
				}
				b.ReportMetric(2*float64(m)*float64(k)*float64(n)*queued*float64(b.N)/b.Elapsed().Seconds(), "flop/s")
			})
		}
		ma.Release()
		mb.Release()
		mc.Release()
	}
}
