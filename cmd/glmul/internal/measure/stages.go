package measure

import (
	"context"
	"math"
	"slices"
	"time"

	"github.com/glmul/glmul/glcompute"
	"github.com/glmul/glmul/glcompute/tuning"
)

// What ended a warm-up (Timings.WarmupRule).
const (
	WarmupRuns   = "the warm-up runs alone: a device on the CPU has no clocks to ramp"
	WarmupPanels = "the warm-up runs alone: each is a whole panel, and the pass it warms lasts longer than a clock ramp"
	WarmupSteady = "until steady"
	WarmupIdle   = "at least 0.5 s (the device had been idle 0.5 s or more), then until steady"
	WarmupAlways = "at least 0.5 s before every product, then until steady"
)

// MinWarmup and MaxWarmup bound the warm-up before timed runs: after the
// Warmup runs, more run for at least MinWarmup and then until their times
// are steady (batches of steadyBatch agreeing within steadyTolerance), none
// begun after MaxWarmup. A GPU that was idle runs at low clocks for a while
// (an H100 left idle during a minutes-long CPU loop measured 5× slow over
// one 0.3 ms warm-up run), and holds them steady before it rises: after a
// second idle, 4097³ ran at 16.1 ms, six runs alike, then at 4.2 ms, so
// steadiness alone stopped a warm-up at the low clocks. The minimum covers
// that ramp; it applies only after RampIdle of idleness (or with
// Options.Ramp). 0.1 s was not enough: nvidia-smi, sampling every 0.1 s
// during glmul bench, showed the H100's clock at 345-585 MHz after 1.5 s
// idle, holding under full load for 0.1-0.3 s (480, then 750, then 1980
// MHz), and 4097³'s first timed runs slower by the clocks' ratio (14.3 ms
// at 585 MHz, 24.5 at 345, against 4.19 at 1980) in four runs of four.
const (
	MinWarmup = 500 * time.Millisecond
	MaxWarmup = 800 * time.Millisecond
)

// RampIdle is how long a device must have been idle (glcompute.Stages.
// Idle) for the warm-up to last MinWarmup. On the H100 the clocks stay at
// their maximum for about 0.6 s after work and then fall to idle over
// about 1.5 s; creating a context raises them to the maximum at once, so
// a product soon after Open or after another needs no ramp (measured:
// n = 128, 1024 and 4097 in a new process reached the same rate after a
// 15 ms warm-up as after 115 ms; docs/PERFORMANCE.md).
const RampIdle = 500 * time.Millisecond

// Steady warm-up: batches of at least steadyBatch, three in a row within
// steadyTolerance of one another on their fastest run. The fastest, not
// the mean: a 30 µs run's mean over a batch moves by more than 2% with the
// host's scheduling alone (on the H100 n = 128 never settled that way),
// while clocks that rise make every run faster.
//
// A batch is shorter for short runs: steadyRuns of them, at least
// minSteadyBatch. On the H100 a 128³ product's run (30 µs with its
// glFinish) made three 5 ms batches 15 ms of a 170 ms process; 30 runs
// still give a fastest that a clock change moves by far more than 2%.
const (
	steadyBatch     = 5 * time.Millisecond
	minSteadyBatch  = time.Millisecond
	steadyRuns      = 30
	steadyTolerance = 0.02
)

// Timings of one measured product: the stages each timed alone (unless
// Overlapping), then the pipelined pass that gave C. Wall-clock times are
// measured on the CPU after glFinish; GPU times come from GL_TIME_ELAPSED.
type Timings struct {
	glcompute.Layout // the product's (glcompute.Timings)
	// Upload is the time to fill the GPU buffers of A and B from host
	// memory (and poison C's with NaN), until the GPU has finished. With
	// Warmup > 0 it is the second of two uploads: the first use of new
	// device memory costs the driver tens of milliseconds (NVIDIA 580:
	// about 50 ms for a 64 MiB buffer) that later uses do not, and a warm
	// transfer is what a stream of products sees, as warm compute is.
	// FirstUpload is then that first, cold upload; zero without warm-up.
	Upload      time.Duration `json:"upload_ns"`
	FirstUpload time.Duration `json:"first_upload_ns,omitempty"`
	// Compute holds the wall-clock time of each timed run.
	Compute []time.Duration `json:"compute_ns"`
	// GPU holds the GL_TIME_ELAPSED time of each timed run, or is nil where
	// the driver's timer is unusable (Mesa llvmpipe reports ≈0 for compute).
	GPU []time.Duration `json:"gpu_ns,omitempty"`
	// Readback is the time to copy C back into host memory; with warm-up
	// the second of two, FirstReadback the first (as for Upload).
	Readback      time.Duration `json:"readback_ns"`
	FirstReadback time.Duration `json:"first_readback_ns,omitempty"`
	// WarmupTime is how long the warm-up ran, WarmupCount its runs
	// (Options.Warmup and those added after them); WarmupRule, what made
	// it stop (WarmupRuns, WarmupSteady, WarmupIdle, WarmupAlways).
	WarmupTime  time.Duration `json:"warmup_ns"`
	WarmupCount int           `json:"warmup_runs"`
	WarmupRule  string        `json:"warmup_rule,omitempty"`
	// RunsAsked, where not 0, is the Reps asked of runs that Ctrl-C
	// (Options.Context) stopped after len(Compute) of them: no pipelined
	// pass followed (EndToEnd 0), and C is the last run's.
	RunsAsked int `json:"runs_asked,omitempty"`
	// UploadBytes and ReadbackBytes are the bytes moved each way.
	UploadBytes   int64 `json:"upload_bytes"`
	ReadbackBytes int64 `json:"readback_bytes"`
	// EndToEnd, Steps and Streamed are the pipelined pass's (glcompute.Timings).
	EndToEnd time.Duration `json:"end_to_end_ns"`
	Steps    int           `json:"pipeline_steps"`
	Streamed bool          `json:"streamed,omitempty"`
	// Overlapping: Upload, Compute and Readback were measured within the
	// pipelined pass (Options.Once, or a product in panels), each stage's
	// busy time there, and their sum exceeds EndToEnd by what overlapped.
	// Otherwise each stage was timed alone, before the pass.
	Overlapping bool `json:"overlapping,omitempty"`
}

// stages measures a product's stages through glcompute's Measure hook:
// the transfers in (twice with warm-up, the first untimed), the warm-up,
// the Reps timed runs, the readback (twice with warm-up).
type stages struct {
	o      Options
	t      Timings
	in     *Inputs // waited for before the stages read them (MakeInputs)
	alone  bool    // the stages ran alone (not a product in panels)
	onCPU  bool    // the device computes on the CPU: no clocks to ramp
	ctx    context.Context
	pass   *passContext // the pass's, where the runs are kept (KeepRuns)
	report func()
	done   int
	total  int
}

func newStages(o Options, info glcompute.Info) *stages {
	st := &stages{o: o, ctx: o.Context, onCPU: tuning.OnCPU(Driver(info))}
	if st.ctx == nil {
		st.ctx = context.Background()
	}
	return st
}

// run is the Measure hook.
func (st *stages) run(s tuning.Stages) error {
	if s.Panels() { // only a warm-up, which reads no input: the pass is the measurement
		err := st.warmUp(s)
		st.in.Wait() // the pass reads A and B once this returns
		return err
	}
	st.in.Wait()
	st.alone = true
	st.total = s.Dispatches() * (st.o.Warmup + max(1, st.o.Reps))
	if st.o.Progress != nil {
		st.report = func() { st.done++; st.o.Progress(st.done, st.total) }
	}
	if err := st.transfers(s); err != nil {
		return err
	}
	if err := st.warmUp(s); err != nil {
		return err
	}
	if err := st.timeRuns(s); err != nil {
		return err
	}
	if st.o.Warmup > 0 { // untimed, as the first upload is
		d, _, err := s.ReadBack()
		if err != nil {
			return err
		}
		st.t.FirstReadback = d
	}
	var err error
	if st.t.Readback, st.t.ReadbackBytes, err = s.ReadBack(); err != nil {
		return err
	}
	stopped := st.ctx.Err() != nil
	if st.pass != nil {
		stopped = !st.pass.runsDone() // and if not, the pass is not stopped
	}
	if stopped {
		// Stopped during the timed runs (timeRuns ended them early) or
		// the last of them: C is the last run's, read back; no pass.
		st.t.RunsAsked = max(1, st.o.Reps)
		return errRunsStopped
	}
	return nil
}

// transfers uploads A and B, once untimed first when warming up (the first
// use of new device memory costs the driver tens of milliseconds that the
// second does not: a warm transfer is what a steady stream of products
// sees, as warm compute is).
func (st *stages) transfers(s tuning.Stages) error {
	var err error
	if st.t.Upload, st.t.UploadBytes, err = s.Upload(); err != nil || st.o.Warmup == 0 {
		return err
	}
	st.t.FirstUpload = st.t.Upload
	st.t.Upload, st.t.UploadBytes, err = s.Upload()
	return err
}

// warmUp runs the Warmup products (reported as progress), then, on a GPU,
// more until MinWarmup has passed (after RampIdle of idleness, or with
// Ramp) and until they run steadily, none begun after MaxWarmup. A device
// that computes on the CPU (llvmpipe) has no clocks to ramp: its first
// run compiles the kernel's machine code, and the Warmup runs are all it
// needs (unless Ramp asks for MinWarmup anyway). The steady loop cost llvmpipe at least 15 ms of glmul -n 128's
// 110 (up to 230, where 0.27 ms runs on a shared machine kept missing
// the 2% agreement), and the median fell to 62 ms without it (paired
// runs, docs/PERFORMANCE.md).
func (st *stages) warmUp(s tuning.Stages) error {
	if st.o.Warmup == 0 {
		return nil
	}
	start := time.Now()
	for i := 0; i < st.o.Warmup; i++ {
		if err := st.ctx.Err(); err != nil {
			return err
		}
		if _, _, err := s.Run(false, st.report); err != nil {
			return err
		}
		st.t.WarmupCount++
	}
	switch {
	case s.Panels() && !st.o.Ramp:
		// The pass is the measurement and lasts seconds; warm-up panels
		// after the asked runs cost the whole process about 0.3 s at
		// 32768 and changed no figure (docs/PERFORMANCE.md, "The whole
		// process at 32768").
		st.t.WarmupTime, st.t.WarmupRule = time.Since(start), WarmupPanels
		return nil
	case st.onCPU && !st.o.Ramp:
		st.t.WarmupTime, st.t.WarmupRule = time.Since(start), WarmupRuns
		return nil
	}
	minimum, rule := MinWarmup, WarmupAlways
	switch {
	case st.o.Ramp:
	case s.Idle() >= RampIdle:
		rule = WarmupIdle
	default:
		minimum, rule = 0, WarmupSteady
	}
	st.t.WarmupRule = rule
	run := func() (time.Duration, error) {
		d, _, err := s.Run(false, nil)
		st.t.WarmupCount++
		return d, err
	}
	if err := warmUpMore(st.ctx, start, minimum, MaxWarmup, run); err != nil {
		return err
	}
	st.t.WarmupTime = time.Since(start)
	return nil
}

// warmUpMore runs run (one untimed product, waited for) until minimum
// has passed since start, then in batches until the batches agree or
// limit has passed since start.
func warmUpMore(ctx context.Context, start time.Time, minimum, limit time.Duration, run func() (time.Duration, error)) error {
	for time.Since(start) < minimum {
		if err := ctx.Err(); err != nil {
			return err
		}
		if _, err := run(); err != nil {
			return err
		}
	}
	var fastest []time.Duration
	batch := time.Duration(0) // set by the first run: steadyRuns of it
	for time.Since(start) < limit {
		if err := ctx.Err(); err != nil {
			return err
		}
		b0, best := time.Now(), time.Duration(math.MaxInt64)
		for batch == 0 || time.Since(b0) < batch {
			d, err := run()
			if err != nil {
				return err
			}
			if batch == 0 {
				batch = min(steadyBatch, max(minSteadyBatch, steadyRuns*d))
			}
			best = min(best, d)
		}
		fastest = append(fastest, best)
		if k := len(fastest); k >= 3 && steady(fastest[k-3:]) {
			return nil
		}
	}
	return nil
}

// steady reports whether the times agree within steadyTolerance.
func steady(ts []time.Duration) bool {
	lo, hi := slices.Min(ts), slices.Max(ts)
	return float64(hi-lo) <= steadyTolerance*float64(lo)
}

// timeRuns times the Reps products by the wall clock after glFinish and,
// where the runs' GL timer readings are real (tuning.TimerPlausible,
// judged over all the runs), by the GL timer.
func (st *stages) timeRuns(s tuning.Stages) error {
	reps := max(1, st.o.Reps)
	gpu := make([]time.Duration, 0, min(reps, 1024))
	timed := s.TimerUsable()
	for i := 0; i < reps; i++ {
		if err := st.ctx.Err(); err != nil {
			if i == 0 {
				return err
			}
			break // the runs made are kept: run reads C back, Product reports them
		}
		wall, g, err := s.Run(timed, st.report)
		if err != nil {
			return err
		}
		st.t.Compute = append(st.t.Compute, wall)
		timed = timed && g > 0
		gpu = append(gpu, g)
	}
	if timed && tuning.TimerPlausible(gpu, st.t.Compute[len(st.t.Compute)-len(gpu):]) {
		st.t.GPU = gpu
	}
	return nil
}

// finish completes the Timings with the pass's figures; where the stages
// did not run alone, the pass's own stage times stand for them.
func (st *stages) finish(p glcompute.Timings) Timings {
	t := st.t
	t.Layout, t.EndToEnd, t.Steps, t.Streamed = p.Layout, p.EndToEnd, p.Steps, p.Streamed
	if st.alone {
		return t
	}
	t.Overlapping = true
	t.Upload, t.Readback, t.UploadBytes, t.ReadbackBytes = p.Upload, p.Readback, p.UploadBytes, p.ReadbackBytes
	t.Compute, t.GPU = p.Compute, p.GPU
	return t
}
