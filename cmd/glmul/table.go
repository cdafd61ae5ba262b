package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/glmul/glmul/cmd/glmul/internal/measure"
	"github.com/glmul/glmul/cmd/glmul/internal/report"
	"github.com/glmul/glmul/cmd/glmul/internal/table"
	"github.com/glmul/glmul/cpu"
	"github.com/glmul/glmul/glcompute"
	"github.com/glmul/glmul/glcompute/tuning"
	"github.com/glmul/glmul/internal/outfile"
)

// errInterrupted ends a table stopped by Ctrl-C after printing what was
// measured.
var errInterrupted = interruptedError{"the table above holds the sizes measured before it"}

// tableFlags are glmul table's flags, checked.
type tableFlags struct {
	dev      deviceFlags
	sizes    []int
	kernels  []string
	reps     int
	cpuMax   int
	format   report.Format
	compare  bool
	plots    []string
	from     string
	progress string
	sizesSet bool   // -sizes was given
	typ      string // -type: f32 or f64
	typeSet  bool   // -type was given (with -from: the type the file must hold)
	// devices is -devices' list (nil: all), where group is set.
	devices []int
	group   bool
}

func parseTable(args []string, help io.Writer) (*tableFlags, error) {
	fs := newCommand("glmul table", `glmul table reproduces Table 1 of the paper: for each size, the naive CPU loop
(Algorithm 3, one thread), gonum's Sgemm on all cores, and each GPU kernel
(mean of -reps runs), with speed-ups. Every GPU product is validated.
With -type f64 every column is float64: the naive loop in float64, gonum's
Dgemm, and the dfast kernel through Device.Mul64, validated in float64.
With -devices the GPU columns are a group of GPUs and its first device alone,
each end to end (host memory to host memory).`, []string{"[flags]"}, help)
	f := &tableFlags{}
	f.dev.register(fs)
	sizes := fs.String("sizes", "128,256,512,1024,2048,4096", "comma-separated square `sizes`")
	kernels := fs.String("kernels", "tiled32", "GPU kernels, the paper's first: tiled32, fast, fast:BMxBNxBK_TMxTN, cpu:LXxLY_TMxTN; with -type f64 dfast (the default there) or dfast:BMxBNxBK_TMxTN")
	fs.IntVar(&f.reps, "reps", 10, fmt.Sprintf("timed GPU runs per size and kernel, 1 to %d, after a warm-up: one run in full, more until 0.5 s has passed, then batches of runs until their times are steady, none begun after 0.8 s; the mean is reported, as in the paper", maxReps))
	fs.IntVar(&f.cpuMax, "cpu-max", 0, "skip the naive CPU loop above `N` (0: never skip; it takes minutes at 4096)")
	format := fs.String("format", "text", "output: text|markdown|csv|json")
	compare := fs.String("compare", "", "`paper`: add the published Table 1 (float32) and our ratios to it; not with -type f64")
	plots := fs.String("plot", "", "also draw Fig. 3 to `FILE`.png or FILE.svg (several: comma-separated)")
	fs.StringVar(&f.from, "from", "", "format a table saved with -format json from `FILE` instead of measuring (with -type, the type FILE must hold)")
	fs.StringVar(&f.progress, "progress", "auto", "progress: auto|on|off (auto: a bar on terminals, lines otherwise)")
	fs.StringVar(&f.typ, "type", typeF32, "element `type` of every column: f32 (float32) or f64 (float64: the naive loop in float64, gonum's Dgemm, and -kernels dfast through Mul64, validated in float64; not on OpenGL ES)")
	devices := fs.String("devices", "", "measure a group of GPUs: `LIST` is all or EGL device indices such as 1,2 (as glmul -devices); the GPU columns become the group's product and its first device's alone, each end to end (host memory to host memory, wall clock), 1 untimed product then -reps timed, the fast kernel")
	if err := f.dev.parse(fs, args); err != nil {
		return nil, err
	}
	kernelsSet := false
	fs.Visit(func(fl *flag.Flag) {
		f.sizesSet = f.sizesSet || fl.Name == "sizes"
		f.typeSet = f.typeSet || fl.Name == "type"
		kernelsSet = kernelsSet || fl.Name == "kernels"
		f.group = f.group || fl.Name == "devices"
	})
	if err := checkType("table: ", f.typ); err != nil {
		return nil, err
	}
	if err := f.checkFrom(fs); err != nil {
		return nil, err
	}
	var err error
	if f.sizes, err = parseSizes(*sizes); err != nil {
		return nil, err
	}
	if f.kernels, err = tableKernels(f.typ, *kernels, kernelsSet); err != nil {
		return nil, err
	}
	if err := f.checkDevices(*devices, kernelsSet); err != nil {
		return nil, err
	}
	if err := checkReps("table: ", f.reps); err != nil {
		return nil, err
	}
	switch {
	case f.cpuMax < 0:
		return nil, usagef("table: -cpu-max must be 0 or more (got %d)", f.cpuMax)
	case *compare != "" && *compare != "paper":
		return nil, usagef("table: -compare: only \"paper\" is known (got %q)", *compare)
	case *compare == "paper" && f.typ == typeF64 && f.from == "":
		return nil, errComparePaper64("-type f64 measures")
	}
	f.compare = *compare == "paper"
	return f, f.checkOutput(*format, *plots)
}

// checkOutput reads -format and -plot into f, and checks -progress.
func (f *tableFlags) checkOutput(format, plots string) error {
	var err error
	if f.format, err = report.CheckFormat(format, table.Formats...); err != nil {
		return usagef("table: -format: %v", err)
	}
	if f.plots, err = parsePlots(plots); err != nil {
		return err
	}
	return checkProgress("table: ", f.progress)
}

// parseSizes reads table's comma-separated -sizes.
func parseSizes(list string) ([]int, error) {
	var sizes []int
	for _, s := range strings.Split(list, ",") {
		v, err := strconv.Atoi(strings.TrimSpace(s))
		if err != nil || v < 1 {
			return nil, usagef("table: -sizes: %q is not a size of at least 1", s)
		}
		sizes = append(sizes, v)
	}
	return sizes, nil
}

// checkFrom refuses, with -from, the flags that choose a measurement:
// they mean nothing to a table already measured (they were ignored
// without a word).
func (f *tableFlags) checkFrom(fs *flag.FlagSet) error {
	if f.from == "" {
		return nil
	}
	var measuring []string
	fs.Visit(func(fl *flag.Flag) {
		switch fl.Name {
		case "from", "format", "compare", "plot", "progress", "type":
		default:
			measuring = append(measuring, "-"+fl.Name)
		}
	})
	if len(measuring) == 0 {
		return nil
	}
	return usagef("table: -from %s prints a table measured before, with its own sizes, kernels and runs: %s would change nothing; leave %s out, or measure anew without -from",
		f.from, strings.Join(measuring, ", "), map[bool]string{true: "it", false: "them"}[len(measuring) == 1])
}

// parsePlots checks -plot's comma-separated files: each a .png or .svg
// that outfile can write.
func parsePlots(list string) ([]string, error) {
	if list == "" {
		return nil, nil
	}
	var plots []string
	for _, p := range strings.Split(list, ",") {
		if ext := strings.ToLower(filepath.Ext(p)); ext != ".png" && ext != ".svg" {
			return nil, usagef("table: -plot %s: the file must end in .png or .svg", p)
		}
		if err := outfile.Check(p); err != nil {
			return nil, usagef("table: -plot: %v", err)
		}
		plots = append(plots, p)
	}
	return plots, nil
}

func runTable(args []string, stdout, stderr io.Writer) error {
	f, err := parseTable(args, stdout)
	if err != nil {
		return err
	}
	if f.from != "" {
		return f.reformat(stdout, stderr)
	}
	on, err := f.hold(stderr)
	if err != nil {
		return err
	}
	defer on.release()
	info := on.info()
	f.warnOnCPU(info, stderr)
	t := &table.Table{
		Device:       on.describe(),
		CPU:          cpuName(),
		Command:      strings.TrimSpace("glmul table " + strings.Join(args, " ")),
		When:         time.Now().UTC(),
		Reps:         f.reps,
		ComparePaper: f.compare,
		Type:         typeName(f.typ),
	}
	ctx, stop := notifyInterrupt()
	defer stop()
	m := &tableMeasurer{dev: on.device(), group: on.group, ctx: ctx, stderr: stderr, progress: f.progress, reps: f.reps, f64: f.typ == typeF64}
	var measureErr error
	var abandoned bool
	t.Rows, measureErr, abandoned = m.measure(f.sizes, f.kernels, f.cpuMax)
	on.abandon(abandoned)
	if w, ok := m.warmup.Load().(string); ok {
		t.Warmup = w
	}
	t.Interrupted = errors.Is(measureErr, errInterrupted)
	if len(t.Rows) > 0 {
		if err := writeTable(t, stdout, stderr, f.format, f.plots); err != nil {
			return err
		}
	}
	if measureErr != nil {
		return measureErr
	}
	for _, r := range t.Rows {
		for _, g := range r.GPU {
			if !g.Valid {
				fmt.Fprintf(stderr, "glmul table: N=%d %s: the GPU product failed validation\n", r.N, g.Kernel)
				return errReported
			}
		}
	}
	return nil
}

// reformat prints a table saved with -format json.
func (f *tableFlags) reformat(stdout, stderr io.Writer) error {
	b, err := os.ReadFile(f.from)
	if err != nil {
		return err
	}
	var t table.Table
	if err := json.Unmarshal(b, &t); err != nil {
		return fmt.Errorf("table: %s is not a table saved with -format json: %w", f.from, err)
	}
	if len(t.Rows) == 0 {
		return fmt.Errorf("table: %s holds no rows: it is not a table saved with glmul table -format json", f.from)
	}
	if err := f.checkFromType(&t); err != nil {
		return err
	}
	if f.compare {
		t.ComparePaper = true
	}
	return writeTable(&t, stdout, stderr, f.format, f.plots)
}

// writeTable prints t and draws it to each plot file through outfile (a
// link's target replaced atomically, a device written in place). A plot
// never goes to stdout: the table does, and the file's extension picks
// the plot's format, so "-" is refused.
func writeTable(t *table.Table, stdout, stderr io.Writer, format report.Format, plots []string) error {
	if err := t.Write(stdout, format); err != nil {
		return err
	}
	// A plot that cannot be written does not keep the others from being
	// written: each error is returned, after every plot was tried.
	var errs []error
	for _, p := range plots {
		ext := strings.TrimPrefix(strings.ToLower(filepath.Ext(p)), ".")
		if err := outfile.WriteWith(p, nil, func(w io.Writer) error { return t.Fig3(w, ext) }); err != nil {
			errs = append(errs, err)
			continue
		}
		fmt.Fprintf(stderr, "glmul table: wrote Fig. 3 to %s\n", p)
	}
	return errors.Join(errs...)
}

// tableMeasurer measures one row at a time.
type tableMeasurer struct {
	dev      *glcompute.Device
	group    *heldGroup // -devices: the GPU columns are its (dev nil)
	ctx      context.Context
	stderr   io.Writer
	progress string
	reps     int
	f64      bool                // -type f64: rows of float64 products (row64)
	done     finished[table.Row] // the rows measured so far
	warmup   atomic.Value        // string: the first product's warm-up rule
}

// measure measures a row per size, stopping at the first error. It runs
// them through awaitWork so that Ctrl-C acts within a second even when what
// runs cannot stop (a GPU dispatch, gonum's product): a second after
// Ctrl-C, a row still in progress is abandoned (the caller must then not
// wait for the device, and exits). It returns the rows measured and, on
// Ctrl-C, errInterrupted.
func (m *tableMeasurer) measure(sizes []int, kernels []string, cpuMax int) (rows []table.Row, err error, abandoned bool) {
	err, abandoned = awaitWork(m.ctx, m.stderr, "table", func() error { return m.rows(sizes, kernels, cpuMax) })
	rows = m.done.take()
	if errors.Is(err, context.Canceled) {
		err = errInterrupted
		if len(rows) == 0 {
			err = interruptedError{"before the first size was measured: nothing to print"}
		}
	}
	return rows, err, abandoned
}

// rows measures a row per size into m.done, stopping at the first error
// (a Ctrl-C's context.Canceled).
func (m *tableMeasurer) rows(sizes []int, kernels []string, cpuMax int) error {
	measureRow := m.row
	switch {
	case m.f64:
		measureRow = m.row64
	case m.group != nil:
		measureRow = m.rowGroup
	}
	for i, n := range sizes {
		row, err := measureRow(n, kernels, cpuMax, uint64(i))
		if err != nil {
			return err
		}
		m.done.add(row, nil)
	}
	return nil
}

func (m *tableMeasurer) row(n int, kernels []string, cpuMax int, seed uint64) (table.Row, error) {
	return m.rowWith(n, kernels, cpuMax, seed, func(in *measure.Inputs, k string) (measure.Result, error) {
		return measure.Product(m.dev, in, measure.Options{Kernel: k, Warmup: 1, Reps: m.reps, Context: m.ctx, Ramp: true})
	})
}

// rowWith measures size n's row: the CPU columns, then a GPU column a
// kernel, each product's (product) on the same seeded inputs.
func (m *tableMeasurer) rowWith(n int, kernels []string, cpuMax int, seed uint64, product func(in *measure.Inputs, kernel string) (measure.Result, error)) (table.Row, error) {
	r := table.Row{N: n}
	in := measure.NewInputs(n, n, n, seed)
	a, b, c := in.A, in.B, in.C
	err := m.cpuColumns(&r, cpuMax, func(i0, i1 int) { cpu.NaiveRows(c, a, b, i0, i1) }, func() { cpu.Sgemm(c, a, b) })
	if err != nil {
		return r, err
	}
	return r, m.gpuColumns(&r, kernels, func(k string) (measure.Result, error) { return product(in, k) })
}

// gpuColumns fills r's GPU columns, a kernel at a time through product,
// and reports the row done.
func (m *tableMeasurer) gpuColumns(r *table.Row, kernels []string, product func(kernel string) (measure.Result, error)) error {
	for _, k := range kernels {
		res, err := product(k)
		if err != nil {
			return err
		}
		if err := m.addGPU(r, k, res); err != nil {
			return err
		}
	}
	m.rowDone(r.N)
	return nil
}

// cpuColumns fills r's CPU columns: the naive loop (naive computes rows
// [i0, i1) of C), unless r.N is over cpuMax, and gonum's product (gemm).
// It returns ctx's error once Ctrl-C stopped them.
func (m *tableMeasurer) cpuColumns(r *table.Row, cpuMax int, naive func(i0, i1 int), gemm func()) error {
	n := r.N
	if cpuMax > 0 && n > cpuMax {
		r.CPUSkipped = fmt.Sprintf("above -cpu-max %d", cpuMax)
	} else {
		ms, err := m.naive(n, naive)
		if err != nil {
			return err
		}
		r.CPUms, r.CPUGFLOPS = ms, table.GFLOPS(n, ms)
	}
	r.GonumMS = repeatMS(gemm)
	r.GonumGFLOPS = table.GFLOPS(n, r.GonumMS)
	return m.ctx.Err()
}

// addGPU adds to r kernel k's result res, noting the first warm-up rule;
// it returns ctx's error once Ctrl-C stopped the table.
func (m *tableMeasurer) addGPU(r *table.Row, k string, res measure.Result) error {
	mean := measure.Mean(res.Times)
	m.warmup.CompareAndSwap(nil, res.Timings.WarmupRule)
	r.GPU = append(r.GPU, table.GPUResult{
		Kernel: k, Spec: res.Kernel, MeanMS: table.MS(mean), MedianMS: table.MS(measure.Median(res.Times)),
		GFLOPS: table.GFLOPS(r.N, table.MS(mean)), EndToEndMS: table.MS(res.EndToEnd()),
		TimingSource: res.Source, Valid: res.Validation.OK, Validation: string(res.Validation.Mode),
	})
	return m.ctx.Err()
}

// rowDone says, where no bar shows progress, that size n is done.
func (m *tableMeasurer) rowDone(n int) {
	if m.progress != "off" && !wantBar(m.progress, m.stderr) {
		fmt.Fprintf(m.stderr, "table: N=%d done\n", n)
	}
}

// naive times the paper's Algorithm 3 on an n×n product, rows computing
// rows [i0, i1) of C: once for large sizes (with progress and Ctrl-C
// between chunks of rows), repeated while short.
func (m *tableMeasurer) naive(n int, rows func(i0, i1 int)) (float64, error) {
	if n <= 256 {
		return repeatMS(func() { rows(0, n) }), nil
	}
	bar := newBar(m.progress, m.stderr, fmt.Sprintf("naive CPU, N=%d", n))
	if bar != nil {
		bar.ChangeMax(n)
	}
	lines := bar == nil && m.progress != "off"
	chunk := max(1, n/100)
	start := time.Now()
	lastLine := start
	for i := 0; i < n; i += chunk {
		if err := m.ctx.Err(); err != nil {
			if bar != nil {
				bar.Exit()
			}
			return 0, err
		}
		rows(i, min(i+chunk, n))
		done := min(i+chunk, n)
		if bar != nil {
			bar.Set(done)
		} else if lines && time.Since(lastLine) > 10*time.Second {
			el := time.Since(start)
			eta := time.Duration(float64(el) * float64(n-done) / float64(done))
			fmt.Fprintf(m.stderr, "table: naive CPU N=%d: %d%% after %v, about %v left\n", n, 100*done/n, el.Round(time.Second), eta.Round(time.Second))
			lastLine = time.Now()
		}
	}
	elapsed := time.Since(start)
	if bar != nil {
		bar.Finish()
	}
	return table.MS(elapsed), nil
}

// repeatMS returns the mean time of f in ms, repeating it up to 10 times
// while the total stays under 200 ms.
func repeatMS(f func()) float64 {
	var total time.Duration
	runs := 0
	for runs < 10 && (runs == 0 || total < 200*time.Millisecond) {
		start := time.Now()
		f()
		total += time.Since(start)
		runs++
	}
	return table.MS(total / time.Duration(runs))
}

// cpuName returns the CPU model and the number of threads Go uses.
func cpuName() string {
	name := runtime.GOARCH
	if b, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		for _, line := range strings.Split(string(b), "\n") {
			if k, v, ok := strings.Cut(line, ":"); ok && strings.TrimSpace(k) == "model name" {
				name = strings.TrimSpace(v)
				break
			}
		}
	}
	return fmt.Sprintf("%s, %d threads", name, runtime.NumCPU())
}

// warnOnCPU says, before a table of the default sizes starts on a device
// that computes on the CPU, that its largest run for a long time (a
// reviewer's table ran about an hour on 2 cores), with the way out. The
// paper's sizes stay the default everywhere: the table is its Table 1.
func (f *tableFlags) warnOnCPU(info glcompute.Info, stderr io.Writer) {
	if f.sizesSet {
		return
	}
	n := slices.Max(f.sizes)
	warnOnCPU(info, stderr, "table", [3]int{n, n, n},
		fmt.Sprintf("the paper's sizes up to %d run long here, each product at N = %d for seconds to minutes", n, n),
		"-sizes 128,256,512,1024 -cpu-max 1024")
}

// warnOnCPU says on stderr, before cmd works through its default list of
// products on a device that computes on the CPU (llvmpipe), that they
// (long: how long, largest the largest product) run long there, and
// which flags (quicker) choose less, where largest is more than 1024³
// multiply-adds: glmul table and glmul bench ran for an hour or more
// without a word.
func warnOnCPU(info glcompute.Info, stderr io.Writer, cmd string, largest [3]int, long, quicker string) {
	if !tuning.OnCPU(measure.Driver(info)) || float64(largest[0])*float64(largest[1])*float64(largest[2]) <= 1<<30 {
		return
	}
	fmt.Fprintf(stderr, "%s: %s computes on the CPU: %s (Ctrl-C keeps the rows finished); %s is quicker\n",
		cmd, info.Renderer, long, quicker)
}
