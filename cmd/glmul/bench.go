package main

import (
	"cmp"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/glmul/glmul/cmd/glmul/internal/measure"
	"github.com/glmul/glmul/cmd/glmul/internal/report"
	"github.com/glmul/glmul/glcompute"
	"github.com/glmul/glmul/glcompute/tuning"
	"github.com/glmul/glmul/validate"
)

// defaultBenchShapes are square sizes 256…8192 and shapes users hit: an odd
// size, products with a short or long inner dimension, and a flat one.
const defaultBenchShapes = "256,512,1024,2048,4096,8192,4097,1000x4096x1000,4096x64x4096,64x4096x64,8192x8192x256"

// benchFormat is Go's benchmark output, for benchstat.
const benchFormat report.Format = "bench"

type benchRow struct {
	M, K, N    int             `json:"-"`
	Shape      string          `json:"shape"`
	Type       string          `json:"type"`   // "float32" or "float64" (-type)
	Kernel     string          `json:"kernel"` // as asked: "fast", "tiled32"
	Spec       string          `json:"spec"`   // as run: "fast:128x256x8_8x8_db"
	Source     string          `json:"timing_source"`
	Times      []time.Duration `json:"times_ns"`
	MedianMS   float64         `json:"median_ms"`
	GFLOPS     float64         `json:"gflops"` // from the median
	Validation string          `json:"validation"`
	Valid      bool            `json:"valid"`
	Skipped    string          `json:"skipped,omitempty"`
	Splits     int             `json:"k_splits"` // slices of K the measured runs had (-split-k; 1: none)
	// StreamK is how many tiles the measured runs shared stream-K (0: none;
	// glcompute.Layout.StreamKTiles).
	StreamK int `json:"stream_k_tiles"`
	// Failed marks a row whose product was attempted and failed (Skipped
	// then holds the error): bench then exits 1.
	Failed bool `json:"failed,omitempty"`
	// With -devices (Kernel groupKernel or groupOneKernel): the column
	// panels C was shared out in, each device's share of the last timed
	// run, and, on the group's row, its speed over the one-device row's
	// of the same shape (their medians; 0: not measured).
	Panels      int              `json:"panels,omitempty"`
	Devices     []groupDeviceRow `json:"devices,omitempty"`
	VsOneDevice float64          `json:"vs_one_device,omitempty"`
}

// benchFlags are glmul bench's flags, checked.
type benchFlags struct {
	dev      deviceFlags
	shapes   [][3]int
	kernels  []string
	reps     int
	splitK   int
	mode     validate.Mode
	format   report.Format
	progress string
	// shapesSet: -shapes was given (else the defaults, which run for
	// hours on llvmpipe).
	shapesSet bool
	typ       string // -type: f32 or f64
	// devices is -devices' list (nil: all), where group is set.
	devices []int
	group   bool
}

func parseBench(args []string, help io.Writer) (*benchFlags, error) {
	fs := newCommand("glmul bench", `glmul bench measures each kernel on a list of shapes, validating every product.
With -devices it measures a group of GPUs instead: each shape's product over the
group and over its first device alone, end to end, and the group's speed-up.
On Mesa llvmpipe choose small -shapes: the defaults run for hours there.`, []string{"[flags]"}, help)
	f := &benchFlags{}
	f.dev.register(fs)
	shapes := fs.String("shapes", defaultBenchShapes, "comma-separated `list` of N (square) or MxKxN")
	kernels := fs.String("kernels", "tiled32,fast", "comma-separated kernels: tiled32, fast, fast:BMxBNxBK_TMxTN, cpu:LXxLY_TMxTN...")
	fs.IntVar(&f.reps, "reps", 10, fmt.Sprintf("timed runs per shape and kernel, 1 to %d, after a warm-up: one run in full, more until 0.5 s has passed, then batches of runs until their times are steady, none begun after 0.8 s", maxReps))
	fs.IntVar(&f.splitK, "split-k", 0, "split the inner dimension `S` ways (fast kernel); 0: automatic, as a product without the flag; 1: no split")
	mode := fs.String("validate", "auto", "auto|full|freivalds|none")
	format := fs.String("format", "text", "output: text|csv|json|bench (Go benchmark lines for benchstat)")
	fs.StringVar(&f.progress, "progress", "auto", "progress: auto|on|off (a line per product when not a terminal)")
	fs.StringVar(&f.typ, "type", typeF32, "element `type`: f32 (float32) or f64 (float64: -kernels default to dfast, the fast kernel in float64; not on OpenGL ES)")
	devices := fs.String("devices", "", "measure a group of GPUs: `LIST` is all or EGL device indices such as 1,2 (as glmul -devices); each shape's product over the group and over its first device alone, each end to end (host memory to host memory, wall clock), 1 untimed product then -reps timed, the fast kernel")
	if err := f.dev.parse(fs, args); err != nil {
		return nil, err
	}
	kernelsSet := false
	fs.Visit(func(fl *flag.Flag) {
		f.shapesSet = f.shapesSet || fl.Name == "shapes"
		kernelsSet = kernelsSet || fl.Name == "kernels"
		f.group = f.group || fl.Name == "devices"
	})
	if err := f.checkDevices(*devices, kernels, kernelsSet); err != nil {
		return nil, err
	}
	if err := checkType("bench: ", f.typ); err != nil {
		return nil, err
	}
	if f.typ == typeF64 && !kernelsSet {
		*kernels = "dfast"
	}
	var err error
	if f.shapes, err = parseShapes("bench: -shapes", *shapes); err != nil {
		return nil, err
	}
	if f.typ == typeF64 {
		f.kernels, err = parseKernels64("bench: -kernels", *kernels, f.splitK)
	} else {
		f.kernels, err = parseKernels("bench: -kernels", *kernels)
	}
	if err != nil {
		return nil, err
	}
	if err := checkReps("bench: ", f.reps); err != nil {
		return nil, err
	}
	if f.splitK < 0 {
		return nil, usagef("bench: -split-k must be 0 (automatic) or more (got %d)", f.splitK)
	}
	if f.splitK > 1 && slices.Contains(f.kernels, "tiled32") {
		return nil, usagef("bench: -split-k %d needs fast or cpu kernels; tiled32 cannot split K: leave it out of -kernels", f.splitK)
	}
	if f.mode, err = validate.ParseMode(*mode); err != nil {
		return nil, usagef("bench: -validate: %v", err)
	}
	if f.format, err = report.CheckFormat(*format, report.Text, report.CSV, report.JSON, benchFormat); err != nil {
		return nil, usagef("bench: -format: %v", err)
	}
	return f, checkProgress("bench: ", f.progress)
}

// parseShapes reads a comma-separated list of N (square) or MxKxN.
func parseShapes(flag, list string) ([][3]int, error) {
	var shapes [][3]int
	for _, s := range strings.Split(list, ",") {
		s = strings.TrimSpace(s)
		if s == "" {
			return nil, usagef("%s %q: an empty item: give sizes separated by commas, such as 256,512,1000x4096x1000", flag, list)
		}
		if v, err := strconv.Atoi(s); err == nil {
			if v < 1 {
				return nil, usagef("%s: %d: sizes must be at least 1", flag, v)
			}
			shapes = append(shapes, [3]int{v, v, v})
			continue
		}
		m, k, n, err := parseShapeOf(flag, s)
		if err != nil {
			return nil, err
		}
		shapes = append(shapes, [3]int{m, k, n})
	}
	return shapes, nil
}

// parseKernels reads a comma-separated list of kernel specs.
func parseKernels(flag, list string) ([]string, error) {
	var kernels []string
	for _, k := range strings.Split(list, ",") {
		k = strings.TrimSpace(k)
		if err := tuning.CheckKernel(k); err != nil {
			return nil, usagef("%s: %v", flag, err)
		}
		kernels = append(kernels, k)
	}
	return kernels, nil
}

func runBench(args []string, stdout, stderr io.Writer) error {
	f, err := parseBench(args, stdout)
	if err != nil {
		return err
	}
	if f.group {
		return f.runGroup(stdout, stderr)
	}
	h, err := f.dev.hold(stderr, nil)
	if err != nil {
		return err
	}
	defer h.release()
	d := h.Device
	if f.typ == typeF64 {
		if err := probeFloat64(d, f.kernels[0]); err != nil {
			return err
		}
	}
	f.warnDefaultShapes(d.Info(), stderr)
	return f.measureShapes(stdout, stderr, d.Info(), &h.abandoned,
		func(ctx context.Context, s [3]int, seed uint64, p *progress, done *finished[benchRow]) error {
			return f.shape(ctx, d, s, seed, p, done, stderr)
		})
}

// warnDefaultShapes says, where -shapes was not given, that the default
// shapes run for hours on a device on the CPU (warnOnCPU).
func (f *benchFlags) warnDefaultShapes(info glcompute.Info, stderr io.Writer) {
	if f.shapesSet {
		return
	}
	largest := slices.MaxFunc(f.shapes, func(a, b [3]int) int { return cmp.Compare(a[0]*a[1]*a[2], b[0]*b[1]*b[2]) })
	warnOnCPU(info, stderr, "bench", largest,
		fmt.Sprintf("the default shapes, up to %dx%dx%d, run for hours here", largest[0], largest[1], largest[2]),
		"-shapes 256,512,1000x1024x1000")
}

// measureShapes measures each of f's shapes through shape (a row a
// kernel of f.kernels, added to done, seeded by the shape's place) under
// awaitWork, and prints the rows finished, on info's device: at Ctrl-C
// those before it. *abandoned is set where the work was abandoned.
func (f *benchFlags) measureShapes(stdout, stderr io.Writer, info glcompute.Info, abandoned *bool,
	shape func(ctx context.Context, s [3]int, seed uint64, p *progress, done *finished[benchRow]) error) error {
	ctx, stop := notifyInterrupt()
	defer stop()
	p := newProgress(f.progress, stderr, "bench", len(f.shapes)*len(f.kernels))
	var done finished[benchRow]
	var err error
	err, *abandoned = awaitWork(ctx, stderr, "bench", func() error {
		for si, s := range f.shapes {
			if err := shape(ctx, s, uint64(si), p, &done); err != nil {
				return err
			}
		}
		return nil
	})
	rows := done.take()
	if !*abandoned {
		p.done()
	}
	interrupted := errors.Is(err, context.Canceled) && ctx.Err() != nil
	if err != nil && !interrupted {
		return err
	}
	if len(rows) > 0 {
		if err := writeBench(stdout, f.format, info, rows, interrupted); err != nil {
			return err
		}
	}
	if interrupted {
		if len(rows) == 0 {
			return interruptedError{"no product had finished: nothing to print"}
		}
		return interruptedError{fmt.Sprintf("the rows above are the %d of %d products that finished", len(rows), len(f.shapes)*len(f.kernels))}
	}
	return benchOutcome(rows)
}

// benchOutcome is bench's error once its rows are printed: a product that
// failed or did not validate (said on stderr as it happened), or none
// measured at all.
func benchOutcome(rows []benchRow) error {
	measured := 0
	for _, r := range rows {
		if r.Failed || r.Skipped == "" && !r.Valid {
			return errReported
		}
		if r.Skipped == "" {
			measured++
		}
	}
	if measured == 0 {
		return errors.New("bench: nothing was measured: every product was skipped (the lines under the table say why)")
	}
	return nil
}

// shape measures every kernel on one shape, adding a row to done for each
// (skipped where it cannot run) and stepping p. It stops at Ctrl-C (ctx
// done), returning context.Canceled.
func (f *benchFlags) shape(ctx context.Context, d *glcompute.Device, s [3]int, seed uint64, p *progress, done *finished[benchRow], stderr io.Writer) error {
	m, k, n := s[0], s[1], s[2]
	shape := fmt.Sprintf("%dx%dx%d", m, k, n)
	var in *measure.Inputs
	var in64 *measure.Inputs64
	for _, kern := range f.kernels {
		if err := ctx.Err(); err != nil {
			return err
		}
		row := benchRow{M: m, K: k, N: n, Shape: shape, Kernel: kern, Type: "float32"}
		if f.typ == typeF64 {
			row.Type = "float64"
		}
		if f.typ == typeF64 {
			if in64 == nil {
				if err := checkHostMemory64(m, k, n); err != nil {
					row.Skipped = err.Error()
					done.add(row, nil)
					continue
				}
				in64 = measure.NewInputs64(m, k, n, seed, nil)
			}
			r, err := measure.Product64(d, in64, measure.Options{Kernel: kern, Warmup: 1, Reps: f.reps, Validate: f.mode, Context: ctx})
			if !f.addRow(ctx, row, r, err, p, done, stderr) {
				return err
			}
			continue
		}
		if err := checkHostMemory(m, k, n); err != nil {
			row.Skipped = err.Error()
			done.add(row, nil)
			continue
		}
		if _, err := d.Plan(m, k, n, &glcompute.MulOptions{Kernel: kern, SplitK: f.splitK}); err != nil {
			row.Skipped = err.Error()
			done.add(row, nil)
			continue
		}
		if in == nil {
			in = measure.NewInputs(m, k, n, seed)
		}
		r, err := measure.Product(d, in, measure.Options{Kernel: kern, Warmup: 1, Reps: f.reps, SplitK: f.splitK, Validate: f.mode, Ramp: true, Context: ctx})
		if !f.addRow(ctx, row, r, err, p, done, stderr) {
			return err
		}
	}
	return nil
}

// addRow adds to done the row of the product measured as r (err: how it
// failed; a float64 one over a binding, glcompute.ErrTooLarge, is
// skipped, as Plan skips a float32 one), and steps p. It reports false
// where Ctrl-C stopped the product: the caller returns err.
func (f *benchFlags) addRow(ctx context.Context, row benchRow, r measure.Result, err error, p *progress, done *finished[benchRow], stderr io.Writer) bool {
	shape, kern := row.Shape, row.Kernel
	switch {
	case errors.Is(err, context.Canceled) && ctx.Err() != nil:
		return false
	case f.typ == typeF64 && errors.Is(err, glcompute.ErrTooLarge):
		row.Skipped = err.Error()
		done.add(row, nil)
		return true
	case err != nil:
		row.Skipped, row.Failed = err.Error(), true
		done.add(row, func() {
			fmt.Fprintf(stderr, "glmul bench: %s %s: failed: %v\n", shape, kern, err)
			p.step(fmt.Sprintf("bench %s %s: failed", shape, kern))
		})
		return true
	}
	med := measure.Median(r.Times)
	row.Spec, row.Times, row.Source = r.Kernel, r.Times, r.Source
	row.MedianMS, row.GFLOPS = float64(med)/1e6, r.GFLOPS(med)
	row.Validation, row.Valid, row.Splits, row.StreamK = string(r.Validation.Mode), r.Validation.OK, r.Timings.Splits, r.Timings.StreamKTiles
	done.add(row, func() {
		if !row.Valid {
			fmt.Fprintf(stderr, "glmul bench: %s %s: %v\n", shape, kern, r.Validation.Err())
		}
		p.step(fmt.Sprintf("bench %s %s: %s GFLOPS", shape, r.Kernel, report.FormatGFLOPS(row.GFLOPS)))
	})
	return true
}

// writeBench prints rows in format; interrupted (by Ctrl-C) says that the
// products after them were not measured.
func writeBench(w io.Writer, format report.Format, info glcompute.Info, rows []benchRow, interrupted bool) error {
	if format == benchFormat {
		return writeGoBench(w, info, rows)
	}
	group := setVsOneDevice(rows)
	js := map[string]any{"device": info, "results": rows}
	t := report.Table{JSON: js}
	if interrupted {
		js["interrupted"] = true
		t.Notes = []string{"interrupted: products after the last row were not measured"}
	}
	if format == report.CSV {
		benchCSV(&t, rows, group)
		return t.Write(w, format)
	}
	t.Preamble = [][2]string{{"device", fmt.Sprintf("%s | %s | %s (%s)", info.Vendor, info.Renderer, measure.API(info), info.Backend)}}
	if len(rows) > 0 && rows[0].Type == "float64" {
		t.Preamble = append(t.Preamble, [2]string{"type", "float64 (dfast through Device.Mul64)"})
	}
	if group {
		t.Preamble = append(t.Preamble, [2]string{"group", groupPreamble(rows)})
	}
	benchText(&t, rows, group)
	return t.Write(w, format)
}

// benchCSV fills t's CSV header and rows; a group's (-devices) add its
// EGL indices and vs_one_device.
func benchCSV(t *report.Table, rows []benchRow, group bool) {
	t.Header = []string{"m", "k", "n", "kernel", "spec", "timing_source", "runs", "median_ms", "gflops", "validation", "valid", "skipped", "k_splits", "stream_k_tiles", "type"}
	if group {
		t.Header = append(t.Header, "devices", "vs_one_device")
	}
	for _, r := range rows {
		var cells []string
		if r.Skipped != "" {
			// Not measured: no figures, where "0" reads as measured;
			// valid is false for a product that failed (it ran and
			// gave no valid C), empty for one skipped (never ran).
			valid := ""
			if r.Failed {
				valid = "false"
			}
			cells = []string{strconv.Itoa(r.M), strconv.Itoa(r.K), strconv.Itoa(r.N), r.Kernel, r.Spec, "",
				"0", "", "", "", valid, r.Skipped, "", "", r.Type}
		} else {
			cells = []string{strconv.Itoa(r.M), strconv.Itoa(r.K), strconv.Itoa(r.N), r.Kernel, r.Spec, r.Source,
				strconv.Itoa(len(r.Times)), strconv.FormatFloat(r.MedianMS, 'g', -1, 64), strconv.FormatFloat(r.GFLOPS, 'g', -1, 64),
				r.Validation, strconv.FormatBool(r.Valid), "", strconv.Itoa(r.Splits), strconv.Itoa(r.StreamK), r.Type}
		}
		if group {
			vs := ""
			if r.VsOneDevice > 0 {
				vs = strconv.FormatFloat(r.VsOneDevice, 'g', -1, 64)
			}
			cells = append(cells, groupIndices(r.Devices), vs)
		}
		t.Rows = append(t.Rows, cells)
	}
}

// benchText fills t's text or Markdown header, rows and notes; a
// group's (-devices) add a column of its speed over one device.
func benchText(t *report.Table, rows []benchRow, group bool) {
	t.Header = []string{"shape", "kernel", "median ms", "GFLOPS", "valid", "timer"}
	if group {
		t.Header = append(t.Header, "vs one device")
	}
	// A skipped row says why below the table, not in a cell: a reason
	// (a sentence) in a column widened it, and every row with it, by the
	// sentence's length. Kernels of a shape skipped alike share a line.
	var skips []benchSkip
	for _, r := range rows {
		var cells []string
		if r.Skipped == "" {
			cells = []string{r.Shape, r.Spec, fmt.Sprintf("%.3f", r.MedianMS), report.FormatGFLOPS(r.GFLOPS), fmt.Sprint(r.Valid), r.Source}
			if group {
				cells[1] = r.Kernel + " " + r.Spec
				cells = append(cells, vsOneDevice(r))
			}
			t.Rows = append(t.Rows, cells)
			continue
		}
		what := "skipped"
		if r.Failed {
			what = "failed"
		}
		cells = []string{r.Shape, r.Kernel, "-", "-", what, "-"}
		if group {
			cells = append(cells, "-")
		}
		t.Rows = append(t.Rows, cells)
		why := firstLine(r.Skipped)
		if n := len(skips); n > 0 && skips[n-1].shape == r.Shape && skips[n-1].what == what && skips[n-1].why == why {
			skips[n-1].kernels = append(skips[n-1].kernels, r.Kernel)
		} else {
			skips = append(skips, benchSkip{what, r.Shape, []string{r.Kernel}, why})
		}
	}
	for _, s := range skips {
		t.Notes = append(t.Notes, fmt.Sprintf("%s %s %s: %s", s.what, s.shape, strings.Join(s.kernels, ", "), s.why))
	}
}

// benchSkip is the reason kernels of a shape were skipped (or failed:
// what), for the line under bench's text table.
type benchSkip struct {
	what    string // "skipped" or "failed"
	shape   string
	kernels []string
	why     string
}

// writeGoBench writes Go benchmark lines, one per timed run, so that
// benchstat sees the distribution: BenchmarkGEMM/kernel=K/shape=MxKxN 1
// ns/op flop/s.
func writeGoBench(w io.Writer, info glcompute.Info, rows []benchRow) error {
	fmt.Fprintf(w, "goos: %s\ngoarch: %s\npkg: github.com/glmul/glmul\ndevice: %s | %s | %s\n",
		runtime.GOOS, runtime.GOARCH, info.Vendor, info.Renderer, info.Version)
	for _, r := range rows {
		if r.Skipped != "" {
			continue
		}
		flop := 2 * float64(r.M) * float64(r.N) * float64(r.K)
		for _, t := range r.Times {
			name := "BenchmarkGEMM" // float64: BLAS's name for it, so benchstat never pairs the two
			if r.Type == "float64" {
				name = "BenchmarkDGEMM"
			}
			if _, err := fmt.Fprintf(w, "%s/kernel=%s/shape=%s \t1\t%d ns/op\t%.4g flop/s\n", name, r.Kernel, r.Shape, t.Nanoseconds(), flop/t.Seconds()); err != nil {
				return err
			}
		}
	}
	return nil
}
