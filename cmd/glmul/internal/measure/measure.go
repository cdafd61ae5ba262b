// Package measure runs one matrix product on a glcompute.Device the way
// every glmul command measures it: seeded random inputs, warm-up until the
// GPU's clocks are up, timed runs, the timing source (the GL timer where
// the driver's is real, else the wall clock after glFinish), validation on
// the CPU, and flop rates. run, bench, tune and table all measure here.
package measure

import (
	"context"
	"errors"
	"math"
	"runtime"
	"slices"
	"sync"
	"time"

	"gonum.org/v1/gonum/blas/blas32"

	"github.com/glmul/glmul/cmd/glmul/internal/report"
	"github.com/glmul/glmul/cpu"
	"github.com/glmul/glmul/glcompute"
	"github.com/glmul/glmul/glcompute/pinned"
	"github.com/glmul/glmul/validate"
)

// Inputs are the matrices of an m×k by k×n product: A and B uniform on
// [-1, 1) from a seeded generator, C the result. One Inputs serves every
// kernel measured on that shape.
type Inputs struct {
	A, B, C blas32.General
	Seed    uint64
	ready   chan struct{} // MakeInputs': closed once they are made; nil: made
	overlap bool          // a Product has overlapped the making (MakeInputs)
}

// NewInputs makes the inputs of an m×k by k×n product from seed: A from
// its stream 0 and B from stream 1 (cpu.FillUniform, on every CPU, the
// same values whatever their number).
func NewInputs(m, k, n int, seed uint64) *Inputs { return NewInputsProgress(m, k, n, seed, nil) }

// NewInputsProgress is NewInputs calling progress, if set, as the
// elements of A and B are made (fill says how).
func NewInputsProgress(m, k, n int, seed uint64, progress func(done, total int)) *Inputs {
	in := &Inputs{A: cpu.New(m, k), B: cpu.New(k, n), C: cpu.New(m, n), Seed: seed}
	in.fill(progress)
	return in
}

// fill draws A and B from in.Seed, calling progress, if set, with the
// elements of both made so far and their total, from one goroutine at a
// time.
func (in *Inputs) fill(progress func(done, total int)) {
	a, b := in.A.Rows*in.A.Cols, in.B.Rows*in.B.Cols
	var pa, pb func(done, total int)
	if progress != nil {
		pa = func(done, _ int) { progress(done, a+b) }
		pb = func(done, _ int) { progress(a+done, a+b) }
	}
	cpu.FillUniform(in.A, in.Seed, 0, pa)
	cpu.FillUniform(in.B, in.Seed, 1, pb)
}

// MakeInputs allocates the inputs NewInputsProgress makes and starts
// making them, C poisoned with NaN as Product would, on the CPUs: it
// returns at once. Product waits for them only where it must read them
// (glcompute.MulOptions.Measure), so that the device plans the product,
// allocates its buffers and warms up meanwhile. Wait waits for them.
func MakeInputs(m, k, n int, seed uint64, progress func(done, total int)) *Inputs {
	in := &Inputs{A: cpu.New(m, k), B: cpu.New(k, n), C: cpu.New(m, n), Seed: seed, ready: make(chan struct{})}
	go func() {
		defer close(in.ready)
		in.fill(progress)
		fillNaN(in.C)
	}()
	return in
}

// Wait returns once the inputs are made (at once but for MakeInputs').
func (in *Inputs) Wait() {
	if in != nil && in.ready != nil {
		<-in.ready
	}
}

// poison fills C with NaN for a Product, or leaves that to MakeInputs'
// maker for the first Product that overlaps it (not once: one without a
// Measure hook reads A and B at once).
func (in *Inputs) poison(once bool) {
	if in.ready != nil && !in.overlap && !once {
		in.overlap = true
		return
	}
	in.Wait()
	fillNaN(in.C)
}

// NewMappedInputs makes the same inputs as NewInputs, in host matrices the
// GPU reads and writes directly (package pinned), calling progress, if set, as NewInputsProgress does;
// release frees them.
func NewMappedInputs(dev *glcompute.Device, m, k, n int, seed uint64, progress func(done, total int)) (in *Inputs, release func(), err error) {
	var mats []*pinned.Matrix
	release = func() {
		for _, h := range mats {
			h.Release()
		}
	}
	for _, s := range [][2]int{{m, k}, {k, n}, {m, n}} {
		h, err := pinned.New(dev, s[0], s[1])
		if err != nil {
			release()
			return nil, nil, err
		}
		mats = append(mats, h)
	}
	in = &Inputs{A: mats[0].General, B: mats[1].General, C: mats[2].General, Seed: seed}
	in.fill(progress)
	return in, release, nil
}

// Options of one measurement. The zero value runs the device's default
// kernel once, without warm-up, and validates automatically.
type Options struct {
	// Kernel as glcompute.MulOptions.Kernel reads it. Zero value: "fast".
	Kernel string
	// Reps timed runs. Zero value: 1.
	Reps int
	// Warmup untimed runs, continued for MinWarmup (after RampIdle of
	// idleness, or with Ramp) and then until their times are steady, none
	// begun after MaxWarmup. Zero value: none.
	Warmup int
	// MaxGroups, SplitK, MaxBinding and MaxGPUMemory as in
	// glcompute.MulOptions.
	MaxGroups, SplitK        int
	MaxBinding, MaxGPUMemory int64
	// Validate is how C is checked. Zero value "": validate.Auto.
	Validate validate.Mode
	// Progress, if set, is called as the dispatches of the warm-up's
	// Warmup runs and of the timed runs complete, then as the pipelined
	// pass's blocks of C arrive (glcompute.MulOptions.Progress), each with
	// its own total.
	Progress func(done, total int)
	// Context, if set, stops the product between runs once it is done
	// (and between the pass's steps: glcompute.MulOptions.Context).
	Context context.Context
	// KeepRuns, where Context stops the timed runs after one or more, has
	// Product return those runs (Result.Interrupted) rather than the
	// context's error: for the main command's single product, whose runs
	// are the whole measurement. Once they are all made, Context no longer
	// stops the pipelined pass, one more product: it ends, so the report
	// is whole. A series (bench, table, tune) counts a product measured
	// in full or not at all.
	KeepRuns bool
	// Once runs the product once, pipelined, without warm-up, timed runs
	// or stages measured alone (no glcompute.MulOptions.Measure hook).
	Once bool
	// Ramp warms up for MinWarmup before every product with a Warmup, not
	// only after the device was idle for RampIdle: a stream of short
	// products with CPU work between them (a benchmark over kernels and
	// shapes, compiling each kernel on first use) can leave an H100's
	// clock at 570-645 MHz of its 1980 for seconds, no idle gap of
	// RampIdle among them (docs/PERFORMANCE.md, "Clocks in a stream of
	// short products"). For series of products (bench, table).
	Ramp bool
	// Validating, if set, is called before a validation that will run,
	// with its mode (Auto resolved), for a message on slow checks.
	Validating func(validate.Mode)
	// ValidateProgress, if set, is called as a long validation's bands of
	// rows complete (check), with the rows checked and C's rows.
	ValidateProgress func(done, total int)
}

// Result is one measured product.
type Result struct {
	M, K, N int
	// Kernel is the spec that ran ("fast:128x256x8_8x8_db").
	Kernel  string
	Timings Timings
	// Times are the kernel times of the timed runs, from Source: "gl-timer"
	// (GL_TIME_ELAPSED) or "wall" (the CPU clock after glFinish, where the
	// driver's timer is not real, as on llvmpipe).
	Times      []time.Duration
	Source     string
	Validation validate.Result
	// Float64: a float64 product (Product64).
	Float64 bool
}

// Type names the product's element type for a report: "float32" or
// "float64".
func (r Result) Type() string {
	if r.Float64 {
		return "float64"
	}
	return "float32"
}

// passContext is the Context of the pipelined pass of a product whose
// runs are kept (Options.KeepRuns): done when the command's is, unless the
// Measure hook marked its runs done first (runsDone). A signal during the
// pass then lets it end (one product more, short beside the runs before
// it; a pass that outlasts the command's grace is abandoned there) rather
// than stopping it between its steps, which left the complete runs
// unreported and C, written or poisoned by the pass step by step, not the
// runs' to validate. A signal before then stops the runs, and no pass
// runs. Err answers at once (glcompute asks it between the pass's steps);
// Done is closed by a goroutine just after the command's context, where
// the runs were not done.
type passContext struct {
	context.Context // the command's
	done            chan struct{}
	mu              sync.Mutex
	runs            bool // runsDone said so
}

func newPassContext(ctx context.Context) (*passContext, func() bool) {
	p := &passContext{Context: ctx, done: make(chan struct{})}
	stop := context.AfterFunc(ctx, func() {
		p.mu.Lock()
		defer p.mu.Unlock()
		if !p.runs {
			close(p.done)
		}
	})
	return p, stop
}

// runsDone marks the runs done unless the command's context is done
// already, and reports whether it did: from then on the pass's context is
// never done.
func (p *passContext) runsDone() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.runs = p.Context.Err() == nil
	return p.runs
}

// Err is the command's context's error until the runs are done, then nil.
func (p *passContext) Err() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.runs {
		return nil
	}
	return p.Context.Err()
}

// Done is closed where the command's context is done before the runs.
func (p *passContext) Done() <-chan struct{} { return p.done }

// errRunsStopped ends a Mul whose timed runs Ctrl-C stopped (the Measure
// hook's error): Product reports the runs made.
var errRunsStopped = errors.New("measure: the timed runs were stopped")

// Interrupted reports whether Ctrl-C stopped the timed runs (Options.
// Context): Times then holds those made, of Timings.RunsAsked, and no
// pipelined pass ran.
func (r Result) Interrupted() bool { return r.Timings.RunsAsked > 0 }

// Product measures C = A·B of in on dev as o says and validates C. C is
// filled with NaN first, so that an element the GPU path fails to write
// back (or a kernel that writes nothing, when Inputs serve several) fails
// validation.
func Product(dev *glcompute.Device, in *Inputs, o Options) (Result, error) {
	defer in.Wait() // on every path: the maker writes A, B and C
	in.poison(o.Once)
	mo := &glcompute.MulOptions{Kernel: o.Kernel, MaxGroups: o.MaxGroups, SplitK: o.SplitK, Progress: o.Progress,
		MaxBinding: o.MaxBinding, MaxGPUMemory: o.MaxGPUMemory, Context: o.Context}
	st := newStages(o, dev.Info())
	st.in = in
	if !o.Once {
		mo.Measure = st.run
		if o.KeepRuns && o.Context != nil {
			var stop func() bool
			st.pass, stop = newPassContext(o.Context)
			defer stop()
			mo.Context = st.pass
		}
	}
	r := Result{M: in.A.Rows, K: in.A.Cols, N: in.B.Cols}
	mode := o.Validate
	if mode == "" || mode == validate.Auto {
		mode = validate.Choose(r.M, r.K, r.N)
	}
	// The part of the check that reads A and B alone runs while the GPU
	// makes C, where the GPU is no CPU's (llvmpipe's runs would share
	// the cores, and their times with the check); an error below stops it.
	pending := StartCheck(mode, in, !st.onCPU)
	defer pending.Stop()
	mo.Arrived = pending.Arrived // C's bands checked as they arrive
	pass, err := dev.Mul(in.C, in.A, in.B, mo)
	stopped := errors.Is(err, errRunsStopped)
	if stopped && !o.KeepRuns {
		return r, context.Canceled
	}
	if err != nil && !stopped {
		return r, err
	}
	var t Timings
	if stopped {
		// Ctrl-C during the timed runs: those made are the measurement,
		// without the pipelined pass; C is the last run's, read back.
		t = st.t
		t.Layout = pass.Layout
	} else {
		t = st.finish(pass)
	}
	r.Kernel, r.Timings, r.Times, r.Source = t.Kernel, t, t.Compute, "wall"
	if t.GPU != nil {
		r.Times, r.Source = t.GPU, "gl-timer"
	}
	if mode == validate.Full && o.KeepRuns && o.Context != nil && o.Context.Err() != nil {
		// After Ctrl-C (in the runs, stopped, or in the pass, which
		// ended) the command waits about a second for this: a full check
		// of a large product takes longer, Freivalds' O(n²) does not.
		mode = validate.Freivalds
	}
	if o.Validating != nil && mode != validate.None {
		o.Validating(mode)
	}
	if pending.mode == mode {
		r.Validation = pending.Check(o.ValidateProgress)
	} else {
		r.Validation = check(mode, in, o.ValidateProgress)
	}
	return r, nil
}

// the first touch of a fresh C, which page faults make slow, shared.
func fillNaN(c blas32.General) {
	const band = 1 << 16 // elements, at least, a goroutine sets
	rows := max(1, band/max(1, c.Cols))
	workers := min(runtime.GOMAXPROCS(0), (c.Rows+rows-1)/rows)
	per := (c.Rows + max(1, workers) - 1) / max(1, workers)
	nan := float32(math.NaN())
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			for i := w * per; i < min(c.Rows, (w+1)*per); i++ {
				row := c.Data[i*c.Stride : i*c.Stride+c.Cols]
				for j := range row {
					row[j] = nan
				}
			}
		})
	}
	wg.Wait()
}

// PoisonC fills C with NaN, as Product does before its runs: a caller
// that times several whole products (glmul's -devices) calls it before
// the last, so that a run that left an element unwritten fails the check
// of C rather than pass with the run before's.
func (in *Inputs) PoisonC() {
	in.Wait()
	fillNaN(in.C)
}

// Flop is the product's floating-point operations, 2·M·N·K (the paper's
// count: a multiply and an add per term).
func (r Result) Flop() float64 { return 2 * float64(r.M) * float64(r.N) * float64(r.K) }

// GFLOPS is the rate of the product done in d.
func (r Result) GFLOPS(d time.Duration) float64 { return GFLOPS(r.Flop(), d) }

// EndToEnd is the pipelined product's wall time, from A and B in host
// memory to C in host memory (glcompute.Timings.EndToEnd).
func (r Result) EndToEnd() time.Duration { return r.Timings.EndToEnd }

// Overlap is how much shorter the pipelined product was than its stages
// (upload, one mean run, readback) one after another.
func (r Result) Overlap() time.Duration {
	if r.Timings.EndToEnd == 0 { // no pipelined pass (Interrupted)
		return 0
	}
	return max(0, r.Timings.Upload+Mean(r.Timings.Compute)+r.Timings.Readback-r.Timings.EndToEnd)
}

// Summary returns the figures a report prints.
func (r Result) Summary() report.Summary {
	ms := func(d time.Duration) float64 { return float64(d) / 1e6 }
	return report.Summary{TimingSource: r.Source,
		KernelMeanMS: ms(Mean(r.Times)), KernelMedMS: ms(Median(r.Times)), KernelMinMS: ms(slices.Min(r.Times)),
		WallMeanMS: ms(Mean(r.Timings.Compute)), UploadMS: ms(r.Timings.Upload), ReadbackMS: ms(r.Timings.Readback),
		FirstUploadMS: ms(r.Timings.FirstUpload), FirstReadbackMS: ms(r.Timings.FirstReadback),
		GFLOPSMean: r.GFLOPS(Mean(r.Times)), GFLOPSMedian: r.GFLOPS(Median(r.Times)), GFLOPSEndToEnd: r.GFLOPS(r.EndToEnd()),
		EndToEndMS: ms(r.EndToEnd()), OverlapMS: ms(r.Overlap())}
}

// GFLOPS returns flop / d in units of 10⁹ per second; 0 for d ≤ 0.
func GFLOPS(flop float64, d time.Duration) float64 {
	if d <= 0 {
		return 0
	}
	return flop / d.Seconds() / 1e9
}

// Mean of ds.
func Mean(ds []time.Duration) time.Duration {
	var s time.Duration
	for _, d := range ds {
		s += d
	}
	return s / time.Duration(len(ds))
}

// Median of ds, which it leaves in their order.
func Median(ds []time.Duration) time.Duration {
	s := slices.Clone(ds)
	slices.Sort(s)
	n := len(s)
	if n%2 == 1 {
		return s[n/2]
	}
	return (s[n/2-1] + s[n/2]) / 2
}

// Device describes dev for a report.
func Device(info glcompute.Info) report.Device {
	return report.Device{Vendor: info.Vendor, Renderer: info.Renderer, Version: API(info), GLSLVersion: ShadingLanguage(info),
		Backend: string(info.Backend), BackendNote: info.BackendNote, Full: info}
}

// Report returns the report of the main command's product; staging says
// how host matrices travelled (Device.Staging, or "mapped host matrices").
func (r Result) Report(info glcompute.Info, staging string, seed uint64, warmup, maxGroups int) report.Run {
	t := r.Timings
	return report.Run{Device: Device(info), Type: r.Type(), Kernel: r.Kernel, M: r.M, K: r.K, N: r.N, Seed: seed, Warmup: warmup,
		MaxGroups: maxGroups, Validation: r.Validation, Summary: r.Summary(), Staging: staging,
		Timings: report.Timings{Dispatches: t.Dispatches, Groups: t.Groups, Runs: len(t.Compute), Upload: t.Upload,
			Readback: t.Readback, UploadBytes: t.UploadBytes, ReadbackBytes: t.ReadbackBytes, Panels: t.Panels, Steps: t.Steps, Streamed: t.Streamed, WarmupTime: t.WarmupTime, WarmupCount: t.WarmupCount, WarmupRule: t.WarmupRule, Splits: t.Splits,
			RunsAsked: t.RunsAsked, EdgeKernel: t.EdgeKernel, EdgeGroups: t.EdgeGroups, StreamKTiles: t.StreamKTiles, StreamKGroups: t.StreamKGroups, Overlapping: t.Overlapping, Full: t}}
}
