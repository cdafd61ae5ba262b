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
	classes  []tuning.Class
	format   report.Format
	progress string
}

// classResult is one shape class's sweep.
type classResult struct {
	Class      tuning.Class       `json:"class"`
	Shape      string             `json:"shape"`
	Best       tuning.Candidate   `json:"best"`
	Tiled32    tuning.Candidate   `json:"tiled32"`
	Candidates []tuning.Candidate `json:"candidates"`
	m, k, n    int
}

func parseTune(args []string, stderr io.Writer) (*tuneFlags, error) {
	fs := newCommand("glmul tune", `glmul tune runs every candidate configuration of the fast kernel on this
device, validates each product, and caches the fastest for this exact GL
vendor, renderer and driver version, for each shape class (square, long-k:
a small result over a long K, thin-k: a large result over a short K);
glmul then uses it for products of that class.`, []string{"[flags]", "-show"}, stderr)
	f := &tuneFlags{}
	f.dev.register(fs)
	fs.IntVar(&f.n, "n", 2048, "size `N` of the classes' products (see -classes; default 2048, 256 on Mesa llvmpipe)")
	fs.IntVar(&f.reps, "reps", 5, "timed runs per candidate; the median counts")
	fs.BoolVar(&f.show, "show", false, "print the tuning cache and the configuration this device uses, and exit")
	fs.BoolVar(&f.save, "save", true, "store the winner in the tuning cache")
	only := fs.String("candidates", "all", "`all`, or a comma-separated list of fast:... specs to try")
	classes := fs.String("classes", "all", "shape classes to tune, each on its own product: `all`, or a comma-separated list of square (N×N×N), long-k ((N/8)×4N×(N/8)) and thin-k (N×64×N)")
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
	f.classes = tuning.Classes
	if *classes != "all" {
		f.classes = nil
		for _, name := range strings.Split(*classes, ",") {
			c, err := tuning.ParseClass(strings.TrimSpace(name))
			if err != nil {
				return nil, usagef("tune: -classes: %v", err)
			}
			f.classes = append(f.classes, c)
		}
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
	var results []classResult
	for _, c := range f.classes {
		r := classResult{Class: c}
		r.m, r.k, r.n = c.Shape(f.n)
		r.Shape = fmt.Sprintf("%d×%d×%d", r.m, r.k, r.n)
		if _, err := d.Plan(r.m, r.k, r.n, nil); err != nil {
			return err
		}
		results = append(results, r)
	}
	started := time.Now()
	p := newProgress(f.progress, stderr, "tuning", len(results)*(len(f.specs)+1))
	var saved []string
	var saveErr error
	for i := range results {
		r := &results[i]
		r.Tiled32, r.Candidates = f.sweep(d, r, p)
		if len(r.Candidates) == 0 || !r.Candidates[0].Valid {
			p.done()
			return fmt.Errorf("tune: no candidate ran and validated on %s for %s products (%s)", d.Info().Renderer, r.Class, r.Shape)
		}
		r.Best = r.Candidates[0]
		if f.save && saveErr == nil {
			if saveErr = saveTuned(path, d.Info(), r.Class, r.Best, f.n); saveErr == nil {
				saved = append(saved, string(r.Class))
			}
		}
	}
	p.done()
	// The results are printed even when saving failed: minutes of
	// measuring are not thrown away.
	if err := f.write(stdout, d.Info(), results, path, saved, time.Since(started)); err != nil {
		return err
	}
	if saveErr != nil {
		return fmt.Errorf("tune: the results above could not be saved to %s: %w", path, saveErr)
	}
	return nil
}

// sweep measures tiled32 as the baseline and every candidate with
// tuning.Sweep on r's product, stepping p.
func (f *tuneFlags) sweep(d *glcompute.Device, r *classResult, p *progress) (baseline tuning.Candidate, cands []tuning.Candidate) {
	in := measure.NewInputs(r.m, r.k, r.n, 1)
	measureOne := func(spec string) tuning.Candidate {
		c := tuning.Candidate{Kernel: spec}
		if err := d.Fits(spec); err != nil {
			c.Error = err.Error()
			return c
		}
		res, err := measure.Product(d, in, measure.Options{Kernel: spec, Warmup: 1, Reps: f.reps, Validate: validate.Auto})
		if err != nil {
			c.Error = err.Error()
			return c
		}
		c.GFLOPS, c.Valid = res.GFLOPS(measure.Median(res.Times)), res.Validation.OK
		if !c.Valid {
			c.Error = res.Validation.Err().Error()
		}
		return c
	}
	total := len(f.specs) + 1
	baseline = measureOne("tiled32")
	p.step(fmt.Sprintf("tune %s %s 1/%d tiled32: %s", r.Class, r.Shape, total, candidateStatus(baseline)))
	cands = tuning.Sweep(f.specs, measureOne, tuning.Finalists, tuning.Rounds, func(i int, c tuning.Candidate) {
		p.step(fmt.Sprintf("tune %s %s %d/%d %s: %s", r.Class, r.Shape, i+2, total, c.Kernel, candidateStatus(c)))
	})
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

// saveTuned stores best in the cache at path for the driver of info and
// shape class c.
func saveTuned(path string, info glcompute.Info, c tuning.Class, best tuning.Candidate, n int) error {
	cache, err := tuning.Load(path)
	if err != nil {
		return err
	}
	cache.Put(tuning.Entry{Driver: tuning.Driver{Vendor: info.Vendor, Renderer: info.Renderer, Version: info.Version},
		Class: c, Kernel: best.Kernel, GFLOPS: best.GFLOPS, N: n, When: time.Now().UTC()})
	return cache.Save(path)
}

// write prints the sweeps' outcome: a line per class with its winner, and
// every candidate's rate by class.
func (f *tuneFlags) write(w io.Writer, info glcompute.Info, results []classResult, path string, saved []string, took time.Duration) error {
	builtin, _ := tuning.Builtin(tuning.Driver{Vendor: info.Vendor, Renderer: info.Renderer, Version: info.Version})
	savedTo := ""
	if len(saved) > 0 {
		savedTo = path
	}
	t := report.Table{Header: []string{"class", "rank", "kernel", "GFLOPS", "vs best", "valid"},
		JSON: map[string]any{"device": info, "n": f.n, "reps": f.reps, "builtin": builtin, "classes": results,
			"saved_to": savedTo, "seconds": took.Seconds()},
		Preamble: [][2]string{
			{"device", fmt.Sprintf("%s | %s | %s", info.Vendor, info.Renderer, info.API())},
			{"tuned", fmt.Sprintf("%d shape class(es), median of %d runs, %d candidates each in %.0f s, every product validated", len(results), f.reps, len(f.specs), took.Seconds())}}}
	skipped := 0
	for _, r := range results {
		t.Preamble = append(t.Preamble, [2]string{"best", fmt.Sprintf("%s %s: %s: %s GFLOPS (tiled32: %s; %.1f×)", r.Class, r.Shape, r.Best.Kernel,
			report.FormatGFLOPS(r.Best.GFLOPS), report.FormatGFLOPS(r.Tiled32.GFLOPS), r.Best.GFLOPS/r.Tiled32.GFLOPS)})
		for i, c := range r.Candidates {
			if c.Error != "" && c.GFLOPS == 0 {
				skipped++
				continue
			}
			mark := ""
			if c.Kernel == builtin {
				mark = " (built-in)"
			}
			t.Rows = append(t.Rows, []string{string(r.Class), fmt.Sprint(i + 1), c.Kernel + mark, report.FormatGFLOPS(c.GFLOPS),
				fmt.Sprintf("%.0f%%", 100*c.GFLOPS/r.Best.GFLOPS), fmt.Sprint(c.Valid)})
		}
	}
	if len(saved) > 0 {
		t.Preamble = append(t.Preamble, [2]string{"saved", fmt.Sprintf("%s to %s; glmul now uses them on this driver", strings.Join(saved, ", "), path)})
	}
	if skipped > 0 {
		t.Notes = []string{fmt.Sprintf("skipped  %d candidate runs that do not fit this device or failed to compile (-format json lists why)", skipped)}
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
		cl := e.Class
		if cl == "" {
			cl = tuning.Square
		}
		fmt.Fprintf(stdout, "  %s | %s | %s, %s: %s, %.1f GFLOPS at n=%d, %s\n", e.Vendor, e.Renderer, e.Version, cl, e.Kernel, e.GFLOPS, e.N, e.When.Format("2006-01-02"))
	}
	d, err := dev.open()
	if err != nil {
		return err
	}
	defer d.Release()
	i := d.Info()
	fmt.Fprintf(stdout, "device   %s | %s | %s\n", i.Vendor, i.Renderer, i.API())
	fmt.Fprintf(stdout, "uses     %s: %s\n", i.DefaultKernel, i.DefaultKernelSource)
	for _, c := range tuning.Classes {
		if k, ok := i.ClassKernels[string(c)]; ok {
			fmt.Fprintf(stdout, "uses     %s for %s products (tuned by glmul tune)\n", k, c)
		}
	}
	return nil
}
