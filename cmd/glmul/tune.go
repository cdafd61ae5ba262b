package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/glmul/glmul/cmd/glmul/internal/measure"
	"github.com/glmul/glmul/cmd/glmul/internal/report"
	"github.com/glmul/glmul/cmd/glmul/internal/sweep"
	"github.com/glmul/glmul/glcompute"
	"github.com/glmul/glmul/glcompute/tuner"
	"github.com/glmul/glmul/glcompute/tuning"
	"github.com/glmul/glmul/shaders"
)

// llvmpipeTuneN is tune's default size on Mesa llvmpipe, where a 2048³
// product takes seconds and a sweep of dozens of candidates many minutes.
const llvmpipeTuneN = 256

// defaultTuneN is tune's default size elsewhere: its square class runs
// 1024³, 2048³ and 4096³.
const defaultTuneN = 2048

// maxTuneN caps tune's -n: the long-k class's largest K is 4N, and
// glcompute takes dimensions up to 2³¹. The host's memory refuses far
// smaller sizes first (checkHostMemory); this bound keeps the classes'
// shapes from overflowing before that check.
const maxTuneN = 1 << 29

// minTuneN is the least -n: tuning.Class.Shapes measures an n under 16 at
// 16, which tune would otherwise run, and cache as n, without a word.
const minTuneN = 16

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
	typ      string // -type: f32 or f64 (dfast's configurations: tune64.go)
}

// classResult is one shape class's sweep.
type classResult struct {
	Class      tuning.Class      `json:"class"`
	Shapes     []string          `json:"shapes"` // a candidate's rate: the geometric mean over them
	Best       sweep.Candidate   `json:"best"`
	Builtin    sweep.Candidate   `json:"builtin"`          // "fast": what glmul runs untuned, shape by shape
	Saved      bool              `json:"beats_builtin"`    // Best beat Builtin by tuning.TunedMargin: the class's tuned choice, cached with -save (not with -save=false)
	Tiled32    sweep.Candidate   `json:"tiled32,omitzero"` // float32's baseline; none in float64 (f64)
	Candidates []sweep.Candidate `json:"candidates"`
	// Interrupted: Ctrl-C stopped the sweep; Candidates are those its
	// first pass measured, Best the fastest of them, and nothing was saved.
	Interrupted bool `json:"interrupted,omitempty"`
	shapes      [][3]int
	n           int    // -n, the size the shapes scale with: the cache's Entry.N
	cached      string // the class's kernel in the cache before this run, if any
	f64         bool   // -type f64: dfast's configurations, no tiled32 baseline
	builtin64   string // -type f64: the device's untuned float64 kernel (Info.Float64Kernel)
}

// beatsBuiltin reports whether r's winner is to be cached: another than
// the built-in choice, faster by tuning.TunedMargin (or the built-in
// choice failed).
func (r *classResult) beatsBuiltin() bool {
	return r.Best.Kernel != r.Builtin.Kernel && (!r.Builtin.Valid || r.Best.GFLOPS >= tuning.TunedMargin*r.Builtin.GFLOPS)
}

// builtinChoice is the candidate standing for glmul's untuned choice,
// shape by shape (the default, the small grid, their K splits).
const builtinChoice = "fast"

// builtin is r's built-in choice: builtinChoice, or in float64 the
// configuration Mul64 runs untold on the device without a tuning cache.
func (r *classResult) builtin() string {
	if r.f64 {
		return r.builtin64
	}
	return builtinChoice
}

// keep is what the sweep of r re-measures with its finalists whatever
// the first pass said: the built-in choice, and the cached kernel.
func (r *classResult) keep() []string {
	if r.cached == "" {
		return []string{r.builtin()}
	}
	return []string{r.builtin(), r.cached}
}

// baselines is how many baselines r's first pass measures before its
// candidates: tiled32 in float32, none in float64.
func (r *classResult) baselines() int {
	if r.f64 {
		return 0
	}
	return 1
}

// runs is how many measurements r's first pass makes: tiled32 (float32),
// the specs and the kept ones not among them.
func (r *classResult) runs(specs []string) int {
	n := len(specs) + r.baselines()
	for _, k := range r.keep() {
		if !slices.Contains(specs, k) {
			n++
		}
	}
	return n
}

func parseTune(args []string, help io.Writer) (*tuneFlags, error) {
	fs := newCommand("glmul tune", `glmul tune runs every candidate configuration of the fast kernel on this
device, validates each product, and caches the fastest for this exact GL
vendor, renderer and driver version, for each shape class (square, long-k:
a small result over a long K, thin-k: a large result over a short K);
glmul then uses it for products of that class.
With -type f64 it sweeps the float64 kernel dfast's configurations the same
way and caches each class's fastest for float64 products (Mul64, glmul
-type f64, mul -type f64 and gonum's Dgemm through glblas.Float64).`, []string{"[flags]", "-show"}, help)
	f := &tuneFlags{}
	f.dev.register(fs)
	fs.IntVar(&f.n, "n", defaultTuneN, fmt.Sprintf("size `N` that the classes' products scale with (see -classes; on Mesa llvmpipe %d)", llvmpipeTuneN))
	fs.IntVar(&f.reps, "reps", 5, fmt.Sprintf("timed runs per candidate and product, 1 to %d; the median counts", maxReps))
	fs.BoolVar(&f.show, "show", false, "print the tuning cache and the configuration each shape class uses on this device (in -format), and exit")
	fs.BoolVar(&f.save, "save", true, "store the winner in the tuning cache (with -type f64 as float64's)")
	only := fs.String("candidates", "all", "`all` (the device's kernel family: cpu on Mesa llvmpipe, else fast; with -type f64 dfast's few, shaders.DFastCandidates), or a comma-separated list of fast:... or cpu:... specs to try (dfast:... with -type f64)")
	classes := fs.String("classes", "all", "shape classes to tune, each on three products: `all`, or a comma-separated list of square ((N/2)³, N³, (2N)³), long-k ((N/32)×2N×(N/32), (N/8)×4N×(N/8), (N/2)×2N×(N/2)) and thin-k (N×64×N, 2N×128×2N, (N/2)×32×(N/2))")
	format := fs.String("format", "text", "output: text|json")
	fs.StringVar(&f.progress, "progress", "auto", "progress: auto|on|off (auto: a bar on terminals, a line per candidate otherwise)")
	fs.StringVar(&f.typ, "type", typeF32, "element `type`: f32 (float32) or f64 (float64: dfast's configurations through Mul64, validated in float64, cached as float64's; not on OpenGL ES)")
	if err := f.dev.parse(fs, args); err != nil {
		return nil, err
	}
	fs.Visit(func(fl *flag.Flag) { f.nSet = f.nSet || fl.Name == "n" })
	if err := checkType("tune: ", f.typ); err != nil {
		return nil, err
	}
	if f.dev.unseen {
		return nil, usagef("tune: -unseen is for judging the device model against the tuned choice (glmul bench -unseen); tune measures this device as it is and caches for its driver: run it without -unseen")
	}
	if f.n < minTuneN || f.n > maxTuneN {
		return nil, usagef("tune: -n must be %d to %d (got %d): the classes' smallest products are (N/32)×2N×(N/32) and (N/2)×32×(N/2), and the long-k products' K is 4N, where a dimension may be at most 2³¹", minTuneN, maxTuneN, f.n)
	}
	if err := checkReps("tune: ", f.reps); err != nil {
		return nil, err
	}
	var err error
	if f.format, err = report.CheckFormat(*format, report.Text, report.JSON); err != nil {
		return nil, usagef("tune: -format: %v", err)
	}
	if err := checkProgress("tune: ", f.progress); err != nil {
		return nil, err
	}
	if f.classes, err = parseClasses(*classes); err != nil {
		return nil, err
	}
	if f.typ == typeF64 {
		return f, f.checkTune64(*only)
	}
	if *only == "all" {
		return f, nil // the device's family: settle asks it
	}
	for _, s := range strings.Split(*only, ",") {
		s = strings.TrimSpace(s)
		if strings.HasPrefix(s, "dfast:") {
			return nil, usagef("tune: -candidates: %q is a float64 configuration: sweep dfast with -type f64", s)
		}
		if !strings.HasPrefix(s, "fast:") && !strings.HasPrefix(s, "cpu:") || tuning.CheckKernel(s) != nil {
			return nil, usagef("tune: -candidates: %q is not a fast or cpu kernel configuration (e.g. fast:128x128x8_8x8, cpu:8x8_8x8)", s)
		}
		f.specs = append(f.specs, s)
	}
	return f, nil
}

// parseClasses reads -classes: all, or a comma-separated list.
func parseClasses(list string) ([]tuning.Class, error) {
	if list == "all" {
		return tuning.Classes, nil
	}
	var classes []tuning.Class
	for _, name := range strings.Split(list, ",") {
		c, err := tuning.ParseClass(strings.TrimSpace(name))
		if err != nil {
			return nil, usagef("tune: -classes: %v", err)
		}
		classes = append(classes, c)
	}
	return classes, nil
}

// runTune runs glmul tune: it sweeps the candidates of each shape class
// on the device, prints the outcome and caches the winners (-save), or,
// with -show, prints the cache.
func runTune(args []string, stdout, stderr io.Writer) error {
	f, err := parseTune(args, stdout)
	if err != nil {
		return err
	}
	path, err := tuning.Path()
	if err != nil {
		return err
	}
	if f.show {
		return showTuning(&f.dev, path, stdout, f.format)
	}
	if err := f.preflight(path); err != nil {
		return err
	}
	f.dev.ignoreTuned = true
	h, err := f.dev.hold(stderr, nil)
	if err != nil {
		return err
	}
	defer h.release()
	d := h.Device
	if f.typ == typeF64 {
		if err := probeFloat64(d, ""); err != nil {
			return err
		}
	}
	if err := f.settle(d, stderr); err != nil {
		return err
	}
	results, err := f.classResults(d, path)
	if err != nil {
		return err
	}
	started := time.Now()
	ctx, stop := notifyInterrupt()
	defer stop()
	var st tuneState
	var done []classResult
	var interrupted bool
	done, interrupted, h.abandoned, err = f.tuneAll(ctx, d, results, path, &st, stderr)
	if err != nil {
		return err
	}
	return f.finish(stdout, stderr, d, results, done, path, &st, interrupted, started)
}

// preflight refuses at once what would fail only after minutes of
// measuring: products the machine cannot hold, as the other commands do
// (a default -n is checked once the device has settled it: settle), and,
// with -save, a cache at path that cannot be written or read.
func (f *tuneFlags) preflight(path string) error {
	if f.nSet {
		if err := f.checkHostMemory(); err != nil {
			return err
		}
	}
	if f.save { // before minutes of measuring, not after
		if err := checkWritable("tune: the cache", path, true); err != nil {
			return err
		}
		if _, err := tuning.Load(path); err != nil {
			return err
		}
	}
	return nil
}

// settle completes the flags from the device d: the candidates of its
// family where -candidates was all, and, where -n was left out, a smaller
// default on llvmpipe (said on stderr), checked against the host's
// memory.
func (f *tuneFlags) settle(d *glcompute.Device, stderr io.Writer) error {
	switch {
	case f.specs != nil:
	case f.typ == typeF64:
		f.specs = dfastCandidates()
	default:
		f.specs = tuner.Of(d).Candidates()
	}
	if !f.nSet && strings.Contains(d.Info().Renderer, "llvmpipe") {
		f.n = llvmpipeTuneN
		fmt.Fprintf(stderr, "tune: on llvmpipe (the CPU) -n defaults to %d: %d would take many minutes\n", f.n, defaultTuneN)
	}
	if !f.nSet {
		if err := f.checkHostMemory(); err != nil {
			return err
		}
	}
	// The cache gives each class's winner to products of every size in
	// it: one measured only on small products (launch-bound, another
	// kernel's ground) may slow large ones. Said, not refused: a user may
	// tune for the small products they run.
	if f.nSet && f.save && f.n < f.defaultN(d)/4 {
		fmt.Fprintf(stderr, "tune: -n %d: the winners are cached for every product of their classes, the largest too, though measured on small products (the largest %s); -save=false tries without caching, and -n %d (the default here) measures larger ones\n",
			f.n, largestTuned(f.classes, f.n), f.defaultN(d))
	}
	return nil
}

// defaultN is -n's default on d: llvmpipeTuneN on llvmpipe, else 2048.
func (f *tuneFlags) defaultN(d *glcompute.Device) int {
	if strings.Contains(d.Info().Renderer, "llvmpipe") {
		return llvmpipeTuneN
	}
	return defaultTuneN
}

// largestTuned names the product with the most multiply-adds among the
// classes' products at size n, as "M×K×N".
func largestTuned(classes []tuning.Class, n int) string {
	best, most := "", 0.0
	for _, c := range classes {
		for _, s := range c.Shapes(n) {
			if macs := float64(s[0]) * float64(s[1]) * float64(s[2]); macs > most {
				best, most = fmt.Sprintf("%d×%d×%d", s[0], s[1], s[2]), macs
			}
		}
	}
	return best
}

// tuneAll sweeps the classes of results on d (tuneClasses, into st)
// through awaitWork, with progress on stderr, so that Ctrl-C (ctx done)
// acts within a second. It returns the classes to print: those that
// finished and, where Ctrl-C interrupted one, that one with the
// candidates it measured so far (interruptedClass). With abandoned set
// the caller must neither release d nor wait for it. An error other than
// Ctrl-C's comes back alone.
func (f *tuneFlags) tuneAll(ctx context.Context, d *glcompute.Device, results []classResult, path string, st *tuneState, stderr io.Writer) (done []classResult, interrupted, abandoned bool, err error) {
	total := 0
	for i := range results {
		total += results[i].runs(f.specs)
	}
	p := newProgress(f.progress, stderr, "tuning", total)
	err, abandoned = awaitWork(ctx, stderr, "tune", func() error { return f.tuneClasses(ctx, d, results, path, p, st) })
	done, measured := st.classes.take(), st.measured.take() // in this order: see tuneState
	if !abandoned {
		p.done()
	}
	interrupted = errors.Is(err, context.Canceled) && ctx.Err() != nil
	if err != nil && !interrupted {
		return nil, false, abandoned, err
	}
	if interrupted && len(done) < len(results) {
		if cut := interruptedClass(results[len(done)], measured); len(cut.Candidates) > 0 {
			done = append(done, cut)
		}
	}
	return done, interrupted, abandoned, nil
}

// checkHostMemory returns an error if a class's products, whose inputs
// its sweep holds together (sweep), take more than the machine's memory:
// the error checkHostMemory gives the other commands, for a class.
func (f *tuneFlags) checkHostMemory() error {
	total, ok := hostMemory()
	if !ok {
		return nil
	}
	for _, c := range f.classes {
		need := 0.0
		var shapes []string
		for _, s := range c.Shapes(f.n) {
			need += productBytes(s[0], s[1], s[2])
			if f.typ == typeF64 {
				need += productBytes(s[0], s[1], s[2]) // doubles: twice the bytes
			}
			shapes = append(shapes, fmt.Sprintf("%d×%d×%d", s[0], s[1], s[2]))
		}
		if need > total {
			return fmt.Errorf("tune: -n %d: the %s products (%s), measured together, need %.1f GiB of host memory for their A, B and C; this machine has %.1f GiB",
				f.n, map[string]string{typeF32: "", typeF64: "float64 "}[f.typ]+string(c), strings.Join(shapes, ", "), need/(1<<30), total/(1<<30))
		}
	}
	return nil
}

// tuneState is what the sweeps finished, shared between the goroutine
// that runs them and runTune, which prints it when they end or Ctrl-C
// stops them. tuneAll takes classes before measured: a class's first-pass
// candidates are recorded before the class, so measured then holds every
// candidate of the class that Ctrl-C interrupted.
type tuneState struct {
	classes  finished[classResult]    // the classes whose sweep finished, each saved (-save) as it is added
	measured finished[classCandidate] // every first-pass measurement, tiled32's included
	saved    []string                 // the classes whose winner was cached; written under classes' lock
	saveErr  error                    // the first save error, after which none is saved; likewise
}

// classCandidate is a candidate measured in the first pass of class's
// sweep.
type classCandidate struct {
	class tuning.Class
	sweep.Candidate
}

// tuneClasses sweeps each class of results, adding each finished one to
// st and saving its outcome to the cache at path (with -save): a class's
// winner, or the removal of its entry where the built-in choice stays. It
// saves no more after the first save error (st.saveErr), fails if a class
// has no valid candidate, and stops at Ctrl-C (ctx done) with
// context.Canceled, neither keeping nor saving the class it interrupted.
func (f *tuneFlags) tuneClasses(ctx context.Context, d *glcompute.Device, results []classResult, path string, p *progress, st *tuneState) error {
	for _, r := range results { // r is a copy: st holds what runTune prints
		r.Tiled32, r.Candidates = f.sweep(ctx, d, &r, p, &st.measured)
		if err := ctx.Err(); err != nil {
			return err // the sweep was cut short: its ranking means nothing
		}
		if len(r.Candidates) == 0 || !r.Candidates[0].Valid {
			return fmt.Errorf("tune: no candidate ran and validated on %s for %s products (%s)", d.Info().Renderer, r.Class, strings.Join(r.Shapes, ", "))
		}
		r.Best = r.Candidates[0]
		r.Saved = r.beatsBuiltin()
		st.classes.add(r, func() {
			if f.save && st.saveErr == nil {
				if st.saveErr = saveTuned(path, d.Info(), &r); st.saveErr == nil && r.Saved {
					st.saved = append(st.saved, string(r.Class))
				}
			}
		})
	}
	return nil
}

// interruptedClass returns r, the class Ctrl-C interrupted, with the
// candidates of its first pass measured so far, ranked (Best: the first),
// and marked Interrupted: printed, never saved.
func interruptedClass(r classResult, measured []classCandidate) classResult {
	r.Interrupted = true
	for _, m := range measured {
		switch {
		case m.class != r.Class:
		case m.Kernel == "tiled32" && r.Tiled32.Kernel == "":
			r.Tiled32 = m.Candidate
		default:
			r.Candidates = append(r.Candidates, m.Candidate)
			if m.Kernel == r.builtin() {
				r.Builtin = m.Candidate
			}
		}
	}
	sweep.Rank(r.Candidates)
	if len(r.Candidates) > 0 {
		r.Best = r.Candidates[0]
	}
	return r
}

// classResults returns the classes to tune, with their products, checked
// against d, and each class's kernel in the cache at path (which the sweep
// re-measures, so that a run over a few -candidates never replaces or
// removes a better one it did not measure).
func (f *tuneFlags) classResults(d *glcompute.Device, path string) ([]classResult, error) {
	cache, _ := tuning.Load(path) // checked before; a missing one is empty
	info := d.Info()
	drv := measure.Driver(info)
	var results []classResult
	for _, c := range f.classes {
		r := classResult{Class: c, shapes: c.Shapes(f.n), n: f.n, f64: f.typ == typeF64, builtin64: info.Float64Kernel}
		if e, ok := cache.LookupClass(drv, c); ok && !r.f64 && tuner.Of(d).Fits(e.Kernel) == nil {
			r.cached = e.Kernel
		}
		if e, ok := cache.LookupClass64(drv, c); ok && r.f64 {
			if _, err := shaders.LookupFloat64(e.Kernel); err == nil {
				r.cached = e.Kernel // measured again: one that does not fit fails there
			}
		}
		for _, s := range r.shapes {
			if _, err := d.Plan(s[0], s[1], s[2], nil); err != nil && !r.f64 { // Plan plans float32
				return nil, err
			}
			r.Shapes = append(r.Shapes, fmt.Sprintf("%d×%d×%d", s[0], s[1], s[2]))
		}
		results = append(results, r)
	}
	return results, nil
}

// sweep measures tiled32 as the baseline, the built-in choice and every
// candidate with sweep.Sweep on r's products, stepping p; a candidate's
// rate is its geometric mean over them, valid if every product was. Each
// measurement has a context of its own, which starts at the GPU's highest
// clock: in one context, compiling candidate after candidate with short
// products between them left the H100 at 570-645 MHz of its 1980
// (128x256x8_8x8_db: 39.8 TFLOPS first, 14.4 after 135 other candidates),
// and a sweep cached 64x64 tiles at 31 TFLOPS over it (docs/PERFORMANCE.md,
// "Clocks in a stream of short products").
//
// Each first-pass measurement goes to measured as it ends. Once ctx is done
// (Ctrl-C), the product in progress stops after its run and every further
// measurement returns at once with ctx's error, unrecorded; the ranking
// returned then means nothing.
func (f *tuneFlags) sweep(ctx context.Context, d *glcompute.Device, r *classResult, p *progress, measured *finished[classCandidate]) (baseline sweep.Candidate, cands []sweep.Candidate) {
	ins := f.products(ctx, r)
	measureOne := func(spec string) sweep.Candidate {
		c := sweep.Candidate{Kernel: spec}
		if err := ctx.Err(); err != nil {
			c.Error = err.Error()
			return c
		}
		if err := tuner.Of(d).Fits(spec); !r.f64 && spec != builtinChoice && err != nil {
			c.Error = err.Error()
			return c
		}
		fresh, err := f.dev.open()
		if err != nil {
			c.Error = err.Error()
			return c
		}
		defer fresh.Release()
		logSum := 0.0
		for _, product := range ins {
			res, err := product(fresh, spec)
			if err != nil {
				c.Error = err.Error()
				return c
			}
			rate := res.GFLOPS(measure.Median(res.Times))
			if !res.Validation.OK { // reported INVALID, with the rate it ran at
				c.GFLOPS, c.Error = rate, res.Validation.Err().Error()
				return c
			}
			logSum += math.Log(rate)
		}
		c.GFLOPS, c.Valid = math.Exp(logSum/float64(len(ins))), true
		return c
	}
	total, label := r.runs(f.specs), fmt.Sprintf("tune %s", r.Class)
	record := func(i int, c sweep.Candidate) {
		if c.Error != "" && ctx.Err() != nil {
			return // stopped by Ctrl-C, not measured
		}
		measured.add(classCandidate{r.Class, c}, func() {
			p.step(fmt.Sprintf("%s %d/%d %s: %s", label, i+1, total, c.Kernel, candidateStatus(c)))
		})
	}
	if !r.f64 {
		baseline = measureOne("tiled32")
		record(0, baseline)
	}
	cands = sweep.Sweep(f.specs, measureOne, sweep.Finalists, sweep.Rounds, func(i int, c sweep.Candidate) { record(i+r.baselines(), c) }, r.keep()...)
	for _, c := range cands {
		if c.Kernel == r.builtin() {
			r.Builtin = c
		}
	}
	return baseline, cands
}

func candidateStatus(c sweep.Candidate) string {
	switch {
	case c.Error != "" && c.GFLOPS == 0:
		return "skipped: " + firstLine(c.Error)
	case !c.Valid:
		return report.FormatGFLOPS(c.GFLOPS) + " GFLOPS INVALID"
	}
	return report.FormatGFLOPS(c.GFLOPS) + " GFLOPS"
}

func firstLine(s string) string {
	s, _, _ = strings.Cut(s, "\n")
	return s
}
