package main

import (
	"cmp"
	"context"
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/schollz/progressbar/v3"

	"github.com/glmul/glmul/cmd/glmul/internal/measure"
	"github.com/glmul/glmul/cmd/glmul/internal/report"
	"github.com/glmul/glmul/glcompute"
	"github.com/glmul/glmul/glcompute/devgroup"
	"github.com/glmul/glmul/glcompute/tuning"
	"github.com/glmul/glmul/validate"
)

// parseDevices reads -devices: "all" (nil: every GPU EGL lists) or a
// comma-separated list of EGL device indices, each once.
func parseDevices(s string) ([]int, error) {
	if s == "all" {
		return nil, nil
	}
	var out []int
	for f := range strings.SplitSeq(s, ",") {
		i, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || i < 1 {
			return nil, usagef("-devices %q: want all, or EGL device indices from 1 (glmul -list-devices) separated by commas, e.g. 1,2", s)
		}
		if slices.Contains(out, i) {
			return nil, usagef("-devices %q: device %d listed twice", s, i)
		}
		out = append(out, i)
	}
	return out, nil
}

// checkDevices parses a -devices list (parseDevices) and refuses one EGL
// cannot give: an index past its devices, as -device refuses one.
func checkDevices(s string) ([]int, error) {
	list, err := parseDevices(s)
	if err != nil {
		return nil, err
	}
	if devs := devgroup.Devices(); len(devs) > 0 && len(list) > 0 && slices.Max(list) > len(devs) {
		return nil, usagef("-devices %q: EGL lists %s; glmul -list-devices names them", s, report.Plural(len(devs), "device"))
	}
	return list, nil
}

// openGroup opens a group of the EGL devices list names (nil: every GPU)
// with the options of d, whose backend and device it leaves out: a group
// is headless EGL, a context a device.
func (d *deviceFlags) openGroup(list []int) (*devgroup.Group, error) {
	return devgroup.Open(list, &glcompute.Options{Backend: glcompute.BackendEGL, Verbose: d.verbose,
		IgnoreTuned: d.ignoreTuned, Unseen: d.unseen, NoPersistentMapping: d.mapPerChunk, ProgramCache: d.programs})
}

// checkGroupFlags refuses a -devices list EGL cannot give (checkDevices)
// and the flags a group product does not take.
func (o *options) checkGroupFlags() error {
	if _, err := checkDevices(o.devices); err != nil {
		return err
	}
	switch {
	case o.mapped:
		return usagef("-devices and -mapped: mapped host matrices belong to one device's context")
	case o.dev.device != 0:
		return usagef("-devices and -device: name the devices in -devices")
	case o.splitK > 1:
		return usagef("-devices and -split-k: a group shares out C's column panels and splits no product along K")
	case o.kernel == "tiled32":
		return usagef("-devices needs a fast kernel: tiled32 cannot run in panels")
	case o.dev.backend == "glfw" || o.dev.backend == "gles":
		return usagef("-devices opens one headless EGL context a GPU: leave -backend auto or egl")
	}
	return nil
}

// groupRun is one glmul -devices product: the group's figures over the
// timed runs, and the validation of the last one.
type groupRun struct {
	M          int              `json:"m"`
	K          int              `json:"k"`
	N          int              `json:"n"`
	Seed       uint64           `json:"seed"`
	Panels     int              `json:"panels"`
	PanelCols  int              `json:"panel_cols"`
	Warmup     int              `json:"warmup"`
	Runs       []time.Duration  `json:"runs_ns"`
	RunsAsked  int              `json:"runs_asked,omitempty"` // set where Ctrl-C stopped the runs after len(Runs)
	EndToEnd   time.Duration    `json:"end_to_end_ns"`        // the median run
	GFLOPS     float64          `json:"gflops_end_to_end"`
	Devices    []groupDeviceRow `json:"devices"`
	Validation validate.Result  `json:"validation"`
	Timings    devgroup.Timings `json:"-"`
}

// groupDeviceRow is one device's share of the last timed run; Index
// is its EGL device index, as -devices and -list-devices count.
type groupDeviceRow struct {
	Index    int           `json:"index"`
	Renderer string        `json:"renderer"`
	Kernel   string        `json:"kernel"`
	Plan     string        `json:"plan"`
	Panels   int           `json:"panels"`
	Reruns   int           `json:"reruns"`
	Share    float64       `json:"share"`   // of the product's flops
	Busy     time.Duration `json:"busy_ns"` // its part of the run, as Share's EndToEnd
	GFLOPS   float64       `json:"gflops"`  // its flops over its busy time
	Error    string        `json:"error,omitempty"`
}

// multiplyGroup runs glmul -n N -devices LIST: the inputs, o.warmup
// untimed products and o.reps timed ones over the group, each host memory
// to host memory, then one validation of C.
func multiplyGroup(o *options, stdout, stderr io.Writer) error {
	if err := checkHostMemory(o.m, o.k, o.nCols); err != nil {
		return err
	}
	list, err := parseDevices(o.devices)
	if err != nil {
		return err
	}
	// The inputs are made (C poisoned with NaN) while the devices open
	// and make their buffers, as one device's warms up
	// (docs/PERFORMANCE.md, "The whole process over two H200s").
	in := measure.MakeInputs(o.m, o.k, o.nCols, o.seed, stageBar(o.progress, stderr, "making A and B"))
	defer in.Wait() // no maker left writing on any way out
	g, err := o.dev.openGroup(list)
	if err != nil {
		return err
	}
	defer g.Release()
	ctx, stop := notifyInterrupt()
	defer stop()
	mo := &glcompute.MulOptions{Kernel: o.kernel, MaxGroups: o.maxGroups, MaxBinding: o.binding, MaxGPUMemory: o.gpuMem, Context: ctx}
	r := groupRun{M: o.m, K: o.k, N: o.nCols, Seed: o.seed, Warmup: o.warmup}
	mode, _ := validate.ParseMode(o.validate)
	onCPU := false // a device on the CPU's cores would share them with the check
	for _, d := range g.Devices() {
		onCPU = onCPU || tuning.OnCPU(measure.Driver(d.Info()))
	}
	check := measure.StartCheck(mode, in, !onCPU) // what reads A and B alone, beside the runs
	defer check.Stop()
	step, finish := runsBar(o, stderr)
	if err := r.runs(ctx, g, in, mo, o, step); err != nil {
		return err
	}
	if finish() {
		fmt.Fprintln(stderr, "validating (float64 on the CPU)...")
	}
	if r.RunsAsked > 0 && check.Mode() == validate.Full {
		// After Ctrl-C the command waits about a second for the check:
		// a full one of a large product takes longer, Freivalds' O(n²)
		// does not (as glmul -n on one device).
		check.Stop()
		check = measure.StartCheck(validate.Freivalds, in, false)
	}
	r.Validation = check.Check(stageBar(o.progress, stderr, "validating"))
	r.fill(g)
	if err := r.write(stdout, report.Format(o.format)); err != nil {
		return err
	}
	if err := r.Validation.Err(); err != nil {
		fmt.Fprintf(stderr, "glmul: %v\n", err)
		return errReported
	}
	switch {
	case r.RunsAsked > 0:
		return interruptedError{fmt.Sprintf("the report above holds the %d of %d runs made before it", len(r.Runs), r.RunsAsked)}
	case ctx.Err() != nil: // during the validation, which ended
		return interruptedError{"the report above is complete: the signal came after the timed runs"}
	}
	return nil
}

// runsBar is the runs' progress bar: step shows the runs made, the bar
// made at the first (once a run has ended, the inputs' bar done: one bar
// at a time); finish ends it, reporting whether there was one.
func runsBar(o *options, stderr io.Writer) (step func(done int), finish func() bool) {
	var bar *progressbar.ProgressBar
	step = func(done int) {
		if bar = cmp.Or(bar, newBar(o.progress, stderr, "GPU runs")); bar != nil {
			bar.ChangeMax(o.warmup + o.reps)
			bar.Set(done)
		}
	}
	finish = func() bool {
		if bar != nil {
			bar.Finish()
		}
		return bar != nil
	}
	return step, finish
}

// runs runs o.warmup untimed products and o.reps timed ones over g,
// each devices' buffers made while in's inputs are (MulReady), calling
// step with the runs made after each, into r. Ctrl-C (ctx done) in a timed run
// after the first ends them: those made are the measurement (r.RunsAsked
// says so), and C, whose every panel the stopped run did not land keeps
// the run before's, holds a whole product to check.
func (r *groupRun) runs(ctx context.Context, g *devgroup.Group, in *measure.Inputs, mo *glcompute.MulOptions, o *options, step func(done int)) error {
	for i := range o.warmup + o.reps {
		t, err := g.MulReady(in.C, in.A, in.B, mo, in.Wait)
		if errors.Is(err, context.Canceled) && ctx.Err() != nil {
			if len(r.Runs) == 0 {
				return interruptedError{fmt.Sprintf("nothing to report: the %d×%d×%d product stopped before a timed run finished", o.m, o.k, o.nCols)}
			}
			r.RunsAsked = o.reps
			return nil
		}
		if err != nil {
			return err
		}
		r.add(i, t)
		step(i + 1)
	}
	return nil
}

// add records run i's timings (from 0, the warm-up runs first): the
// last run's shares, and a timed run's end to end.
func (r *groupRun) add(i int, t devgroup.Timings) {
	r.Timings = t
	if i >= r.Warmup {
		r.Runs = append(r.Runs, t.EndToEnd)
	}
}

// eglIndex is the EGL device index of the device of info, the i-th of a
// group (from 0): as -devices and -list-devices count, i+1 where the
// device has none (a group of Devices made otherwise).
func eglIndex(info glcompute.Info, i int) int { return cmp.Or(info.EGLDevice, i+1) }

// fill derives the figures of r from its runs and last timings.
func (r *groupRun) fill(g *devgroup.Group) {
	t := r.Timings
	r.Panels, r.PanelCols = t.Panels, t.PanelCols
	r.EndToEnd = measure.Median(r.Runs)
	flop := 2 * float64(r.M) * float64(r.K) * float64(r.N)
	r.GFLOPS = measure.GFLOPS(flop, r.EndToEnd)
	for i, d := range g.Devices() {
		sh := t.Devices[i]
		row := groupDeviceRow{Index: eglIndex(d.Info(), i), Renderer: d.Info().Renderer, Kernel: sh.Timings.Kernel, Plan: sh.Timings.Panels,
			Panels: sh.Panels, Reruns: sh.Reruns, Busy: sh.Timings.EndToEnd, GFLOPS: measure.GFLOPS(sh.Flop, sh.Timings.EndToEnd)}
		if flop > 0 {
			row.Share = sh.Flop / flop
		}
		if sh.Err != nil {
			row.Error = sh.Err.Error()
		}
		r.Devices = append(r.Devices, row)
	}
}

// write writes r as text, JSON or CSV (a row a device).
func (r *groupRun) write(w io.Writer, f report.Format) error {
	switch f {
	case report.JSON:
		e := json.NewEncoder(w)
		e.SetIndent("", "  ")
		return e.Encode(r)
	case report.CSV:
		cw := csv.NewWriter(w)
		cw.Write([]string{"m", "k", "n", "device", "renderer", "kernel", "panels", "reruns", "share", "device_ms", "device_gflops", "group_ms", "group_gflops", "validation"})
		for _, d := range r.Devices {
			cw.Write([]string{strconv.Itoa(r.M), strconv.Itoa(r.K), strconv.Itoa(r.N), strconv.Itoa(d.Index), d.Renderer, d.Kernel,
				strconv.Itoa(d.Panels), strconv.Itoa(d.Reruns), fmt.Sprintf("%.4f", d.Share), ms(d.Busy), fmt.Sprintf("%.1f", d.GFLOPS),
				ms(r.EndToEnd), fmt.Sprintf("%.1f", r.GFLOPS), strconv.FormatBool(r.Validation.OK)})
		}
		cw.Flush()
		return cw.Error()
	}
	ew := &errWriter{w: w}
	ew.printf("product    C = A·B in float32, A %d×%d, B %d×%d, seed %d\n", r.M, r.K, r.K, r.N, r.Seed)
	upTo := "up to "
	if r.Panels <= 1 || r.PanelCols == 0 || r.N%r.PanelCols == 0 {
		upTo = ""
	}
	ew.printf("group      %s, C shared out in %s of %s%d columns\n", report.Plural(len(r.Devices), "device"), report.Plural(r.Panels, "column panel"), upTo, min(r.PanelCols, r.N))
	for _, d := range r.Devices {
		ew.printf("device %d   %s: %s (%.0f%%), %s, %.1f GFLOPS over its %s ms; kernel %s; %s\n", d.Index, d.Renderer,
			report.Plural(d.Panels, "panel"), 100*d.Share, report.Plural(d.Reruns, "rerun"), d.GFLOPS, ms(d.Busy), d.Kernel, d.Plan)
		if d.Error != "" {
			ew.printf("           failed: %s (its unfinished panels ran on the others)\n", d.Error)
		}
	}
	runs := report.Plural(len(r.Runs), "timed run")
	if r.RunsAsked > 0 {
		runs = fmt.Sprintf("%s of the %d asked (interrupted)", runs, r.RunsAsked)
	}
	ew.printf("runs       %s after %s, end to end (host memory to host memory): %s ms median\n",
		runs, report.Plural(r.Warmup, "warm-up run"), ms(r.EndToEnd))
	ew.printf("GFLOPS     %.1f end to end (median run)\n", r.GFLOPS)
	ew.printf("validate   %s\n", r.Validation)
	return ew.err
}

func ms(d time.Duration) string { return fmt.Sprintf("%.2f", float64(d)/1e6) }

// errWriter keeps the first error of a series of writes.
type errWriter struct {
	w   io.Writer
	err error
}

func (e *errWriter) printf(format string, args ...any) {
	if e.err == nil {
		_, e.err = fmt.Fprintf(e.w, format, args...)
	}
}
