package main

import (
	"flag"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/glmul/glmul/glcompute"
	"github.com/glmul/glmul/internal/measure"
	"github.com/glmul/glmul/internal/report"
	"github.com/glmul/glmul/internal/tuning"
	"github.com/glmul/glmul/validate"
)

// llvmpipeTuneN is tune's default size on Mesa llvmpipe, where a 2048³
// product takes seconds and a sweep of dozens of candidates many minutes.
const llvmpipeTuneN = 256

// tuneFlags are glmul tune's flags, checked.
type tuneFlags struct {
	dev      deviceFlags
	n, reps  int
	nSet     bool // -n was given
	show     bool
	save     bool
	specs    []string
	format   report.Format
	progress string
}

func parseTune(args []string, stderr io.Writer) (*tuneFlags, error) {
	fs := newCommand("glmul tune", `glmul tune runs every candidate configuration of the fast kernel on this
device, validates each product, and caches the fastest for this exact GL
vendor, renderer and driver version; glmul then uses it by default.`, []string{"[flags]", "-show"}, stderr)
	f := &tuneFlags{}
	f.dev.register(fs)
	fs.IntVar(&f.n, "n", 2048, "tune on `N`×N products (default 2048; 256 on Mesa llvmpipe)")
	fs.IntVar(&f.reps, "reps", 5, "timed runs per candidate; the median counts")
	fs.BoolVar(&f.show, "show", false, "print the tuning cache and the configuration this device uses, and exit")
	fs.BoolVar(&f.save, "save", true, "store the winner in the tuning cache")
	only := fs.String("candidates", "all", "`all`, or a comma-separated list of fast:... specs to try")
	format := fs.String("format", "text", "output: text|json")
	fs.StringVar(&f.progress, "progress", "auto", "progress: auto|on|off (auto: a bar on terminals, a line per candidate otherwise)")
	if err := f.dev.parse(fs, args); err != nil {
		return nil, err
	}
	fs.Visit(func(fl *flag.Flag) { f.nSet = f.nSet || fl.Name == "n" })
	if err := positive("tune: ", "-n", f.n, "-reps", f.reps); err != nil {
		return nil, err
	}
	var err error
	if f.format, err = report.CheckFormat(*format, report.Text, report.JSON); err != nil {
		return nil, usagef("tune: -format: %v", err)
	}
	if err := checkProgress("tune: ", f.progress); err != nil {
		return nil, err
	}
	if *only == "all" {
		f.specs = glcompute.FastCandidates()
		return f, nil
	}
	for _, s := range strings.Split(*only, ",") {
		s = strings.TrimSpace(s)
		if !strings.HasPrefix(s, "fast:") || glcompute.CheckKernel(s) != nil {
			return nil, usagef("tune: -candidates: %q is not a fast kernel configuration (e.g. fast:128x128x8_8x8)", s)
		}
		f.specs = append(f.specs, s)
	}
	return f, nil
}

func runTune(args []string, stdout, stderr io.Writer) error {
	f, err := parseTune(args, stderr)
	if err != nil {
		return err
	}
	path, err := tuning.Path()
	if err != nil {
		return err
	}
	if f.show {
		return showTuning(&f.dev, path, stdout)
	}
	if f.save { // before minutes of measuring, not after
		if err := checkWritable("tune: the cache", path, true); err != nil {
			return err
		}
		if _, err := tuning.Load(path); err != nil {
			return err
		}
	}
	f.dev.ignoreTuned = true
	d, err := f.dev.open()
	if err != nil {
		return err
	}
	defer d.Release()
	if !f.nSet && strings.Contains(d.Info().Renderer, "llvmpipe") {
		f.n = llvmpipeTuneN
		fmt.Fprintf(stderr, "tune: on llvmpipe (the CPU) -n defaults to %d: 2048 would take many minutes\n", f.n)
	}
	if _, err := d.Plan(f.n, f.n, f.n, nil); err != nil {
		return err
	}
	started := time.Now()
	baseline, cands := f.sweep(d, stderr)
	if len(cands) == 0 || !cands[0].Valid {
		return fmt.Errorf("tune: no candidate ran and validated on %s", d.Info().Renderer)
	}
	saved, saveErr := "", error(nil)
	if f.save {
		if saveErr = saveTuned(path, d.Info(), cands[0], f.n); saveErr == nil {
			saved = path
		}
	}
	// The results are printed even when saving failed: minutes of
	// measuring are not thrown away.
	if err := f.write(stdout, d.Info(), baseline, cands, saved, time.Since(started)); err != nil {
		return err
	}
	if saveErr != nil {
		return fmt.Errorf("tune: the results above could not be saved to %s: %w", path, saveErr)
	}
	return nil
}

// sweep measures tiled32 as the baseline and every candidate with
// tuning.Sweep, showing progress on stderr.
func (f *tuneFlags) sweep(d *glcompute.Device, stderr io.Writer) (baseline tuning.Candidate, cands []tuning.Candidate) {
	in := measure.NewInputs(f.n, f.n, f.n, 1)
	measureOne := func(spec string) tuning.Candidate {
		c := tuning.Candidate{Kernel: spec}
		if err := d.Fits(spec); err != nil {
			c.Error = err.Error()
			return c
		}
		r, err := measure.Product(d, in, measure.Options{Kernel: spec, Warmup: 1, Reps: f.reps, Validate: validate.Auto})
		if err != nil {
			c.Error = err.Error()
			return c
		}
		c.GFLOPS, c.Valid = r.GFLOPS(measure.Median(r.Times)), r.Validation.OK
		if !c.Valid {
			c.Error = r.Validation.Err().Error()
		}
		return c
	}
	p := newProgress(f.progress, stderr, "tuning", len(f.specs)+1)
	baseline = measureOne("tiled32")
	p.step(fmt.Sprintf("tune 1/%d tiled32: %s", len(f.specs)+1, candidateStatus(baseline)))
	cands = tuning.Sweep(f.specs, measureOne, tuning.Finalists, tuning.Rounds, func(i int, c tuning.Candidate) {
		p.step(fmt.Sprintf("tune %d/%d %s: %s", i+2, len(f.specs)+1, c.Kernel, candidateStatus(c)))
	})
	p.done()
	return baseline, cands
}

func candidateStatus(c tuning.Candidate) string {
	switch {
	case c.Error != "" && c.GFLOPS == 0:
		return "skipped: " + firstLine(c.Error)
	case !c.Valid:
		return report.FormatGFLOPS(c.GFLOPS) + " GFLOPS INVALID"
	}
	return report.FormatGFLOPS(c.GFLOPS) + " GFLOPS"
}

// saveTuned stores best in the cache at path for the driver of info.
func saveTuned(path string, info glcompute.Info, best tuning.Candidate, n int) error {
	cache, err := tuning.Load(path)
	if err != nil {
		return err
	}
	cache.Put(tuning.Entry{Driver: tuning.Driver{Vendor: info.Vendor, Renderer: info.Renderer, Version: info.Version},
		Kernel: best.Kernel, GFLOPS: best.GFLOPS, N: n, When: time.Now().UTC()})
	return cache.Save(path)
}

// write prints the sweep's outcome.
func (f *tuneFlags) write(w io.Writer, info glcompute.Info, baseline tuning.Candidate, cands []tuning.Candidate, saved string, took time.Duration) error {
	best := cands[0]
	builtin, _ := tuning.Builtin(tuning.Driver{Vendor: info.Vendor, Renderer: info.Renderer, Version: info.Version})
	t := report.Table{Header: []string{"rank", "kernel", "GFLOPS", "vs best", "valid"},
		JSON: map[string]any{"device": info, "n": f.n, "reps": f.reps, "best": best, "builtin": builtin,
			"tiled32": baseline, "candidates": cands, "saved_to": saved, "seconds": took.Seconds()},
		Preamble: [][2]string{
			{"device", fmt.Sprintf("%s | %s | %s", info.Vendor, info.Renderer, info.API())},
			{"tuned", fmt.Sprintf("%d×%d×%d, median of %d runs, %d candidates in %.0f s, every product validated", f.n, f.n, f.n, f.reps, len(cands), took.Seconds())},
			{"best", fmt.Sprintf("%s: %s GFLOPS (tiled32: %s; %.1f×)", best.Kernel, report.FormatGFLOPS(best.GFLOPS), report.FormatGFLOPS(baseline.GFLOPS), best.GFLOPS/baseline.GFLOPS)}}}
	if saved != "" {
		t.Preamble = append(t.Preamble, [2]string{"saved", "to " + saved + "; glmul now uses it on this driver"})
	}
	skipped := 0
	for i, c := range cands {
		if c.Error != "" && c.GFLOPS == 0 {
			skipped++
			continue
		}
		mark := ""
		if c.Kernel == builtin {
			mark = " (built-in)"
		}
		t.Rows = append(t.Rows, []string{fmt.Sprint(i + 1), c.Kernel + mark, report.FormatGFLOPS(c.GFLOPS),
			fmt.Sprintf("%.0f%%", 100*c.GFLOPS/best.GFLOPS), fmt.Sprint(c.Valid)})
	}
	if skipped > 0 {
		t.Notes = []string{fmt.Sprintf("skipped  %d candidates that do not fit this device or failed to compile (-format json lists why)", skipped)}
	}
	return t.Write(w, f.format)
}

func firstLine(s string) string {
	s, _, _ = strings.Cut(s, "\n")
	return s
}

// showTuning prints the cache and what this device uses now.
func showTuning(dev *deviceFlags, path string, stdout io.Writer) error {
	cache, err := tuning.Load(path)
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "cache    %s (%d entries)\n", path, len(cache.Entries))
	for _, e := range cache.Entries {
		fmt.Fprintf(stdout, "  %s | %s | %s: %s, %.1f GFLOPS at n=%d, %s\n", e.Vendor, e.Renderer, e.Version, e.Kernel, e.GFLOPS, e.N, e.When.Format("2006-01-02"))
	}
	d, err := dev.open()
	if err != nil {
		return err
	}
	defer d.Release()
	i := d.Info()
	fmt.Fprintf(stdout, "device   %s | %s | %s\n", i.Vendor, i.Renderer, i.API())
	fmt.Fprintf(stdout, "uses     %s: %s\n", i.DefaultKernel, i.DefaultKernelSource)
	return nil
}
