package measure

import (
	"context"
	"math"
	"math/rand/v2"
	"time"

	"gonum.org/v1/gonum/blas/blas64"

	"github.com/glmul/glmul/cpu"
	"github.com/glmul/glmul/glcompute"
	"github.com/glmul/glmul/validate"
)

// Float64 products (glmul -type f64) run through glcompute.Device.Mul64,
// which runs a product as Mul does, in a pipelined pass, and takes no
// Measure hook: each run is one whole Mul64 call, and its Timings give
// the pass's end to end, the busy times of its copies and the GPU's time
// with its dispatches in flight (GL timestamps where the timer is real,
// else the dispatch calls' wall time). Product64 repeats whole runs.

// Inputs64 are the matrices of a float64 product: A and B uniform on
// [-1, 1) with all 53 bits (cpu.FillUniform64), C the result.
type Inputs64 struct {
	A, B, C blas64.General
	Seed    uint64
}

// NewInputs64 makes the inputs of an m×k by k×n float64 product from
// seed, A from its stream 0 and B from stream 1 as NewInputs does,
// calling progress, if set, as the elements of A and B are made.
func NewInputs64(m, k, n int, seed uint64, progress func(done, total int)) *Inputs64 {
	in := &Inputs64{A: newGeneral64(m, k), B: newGeneral64(k, n), C: newGeneral64(m, n), Seed: seed}
	a, b := m*k, k*n
	var pa, pb func(done, total int)
	if progress != nil {
		pa = func(done, _ int) { progress(done, a+b) }
		pb = func(done, _ int) { progress(a+done, a+b) }
	}
	cpu.FillUniform64(in.A, seed, 0, pa)
	cpu.FillUniform64(in.B, seed, 1, pb)
	return in
}

func newGeneral64(r, c int) blas64.General {
	return blas64.General{Rows: r, Cols: c, Stride: c, Data: make([]float64, r*c)}
}

// WarmupRuns64 is what ended a float64 product's warm-up: its Warmup
// runs, whatever the device (Mul64 has no Measure hook to warm up within).
const WarmupRuns64 = "the warm-up runs alone: float64 products have no steady warm-up yet"

// Product64 measures C = A·B of in on dev in float64 as o says (Kernel a
// float64 spec, "" for "dfast"; SplitK, Once, Ramp and KeepRuns are not
// used) and validates C with validate.Check64. C is filled with NaN
// first. It runs o.Warmup untimed products, then o.Reps timed ones, each
// a whole pipelined pass: Result.Times are each pass's compute time (Source
// "gl-timer" where every pass read the GL timer, else "wall"),
// Timings.Upload and Readback the last pass's busy times (FirstUpload and
// FirstReadback the first's where there was a warm-up), EndToEnd the
// timed passes' mean. Ctrl-C (o.Context) between or
// within runs returns context.Canceled: no runs are kept.
func Product64(dev *glcompute.Device, in *Inputs64, o Options) (Result, error) {
	for i := range in.C.Rows {
		row := in.C.Data[i*in.C.Stride : i*in.C.Stride+in.C.Cols]
		for j := range row {
			row[j] = math.NaN()
		}
	}
	mo := &glcompute.MulOptions{Kernel: o.Kernel, MaxGroups: o.MaxGroups, MaxBinding: o.MaxBinding, MaxGPUMemory: o.MaxGPUMemory, Context: o.Context}
	ctx := o.Context
	if ctx == nil {
		ctx = context.Background()
	}
	r := Result{M: in.A.Rows, K: in.A.Cols, N: in.B.Cols, Float64: true, Source: "wall"}
	reps, total := max(1, o.Reps), o.Warmup+max(1, o.Reps)
	var t Timings
	var endToEnd time.Duration
	start := time.Now()
	for run := range total {
		if err := ctx.Err(); err != nil {
			return r, context.Canceled
		}
		pt, err := dev.Mul64(in.C, in.A, in.B, mo)
		if err != nil {
			return r, err
		}
		switch {
		case run < o.Warmup:
			t.WarmupCount++
			if run == 0 {
				t.FirstUpload, t.FirstReadback = pt.Upload, pt.Readback
			}
			if run == o.Warmup-1 {
				t.WarmupTime, t.WarmupRule = time.Since(start), WarmupRuns64
			}
		default:
			t.Compute = append(t.Compute, pt.Compute...)
			t.GPU = append(t.GPU, pt.GPU...)
			endToEnd += pt.EndToEnd
		}
		t.Layout, t.Upload, t.Readback, t.UploadBytes, t.ReadbackBytes = pt.Layout, pt.Upload, pt.Readback, pt.UploadBytes, pt.ReadbackBytes
		if o.Progress != nil {
			o.Progress(run+1, total)
		}
	}
	t.EndToEnd, t.Steps = endToEnd/time.Duration(reps), 1
	r.Kernel, r.Timings, r.Times = t.Kernel, t, t.Compute
	if len(t.GPU) == reps { // every timed pass read the GL timer
		r.Times, r.Source = t.GPU, "gl-timer"
	} else {
		r.Timings.GPU = nil
	}
	mode := o.Validate
	if mode == "" || mode == validate.Auto {
		mode = validate.Choose(r.M, r.K, r.N)
	}
	if o.Validating != nil && mode != validate.None {
		o.Validating(mode)
	}
	r.Validation = validate.Check64(mode, in.A, in.B, in.C, rand.New(rand.NewPCG(in.Seed, 2)))
	return r, nil
}
