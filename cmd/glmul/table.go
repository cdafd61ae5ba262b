package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/signal"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"time"

	"github.com/google/renameio/v2"
	"gonum.org/v1/gonum/blas/blas32"

	"github.com/glmul/glmul/cpu"
	"github.com/glmul/glmul/glcompute"
	"github.com/glmul/glmul/internal/report"
	"github.com/glmul/glmul/internal/table"
	"github.com/glmul/glmul/shaders"
	"github.com/glmul/glmul/validate"
)

// errInterrupted ends a table stopped by Ctrl-C after printing what was
// measured.
var errInterrupted = errors.New("interrupted: the table above holds the sizes measured before Ctrl-C")

func runTable(args []string, stdout, stderr io.Writer) error {
	fs := newCommand("glmul table", `glmul table reproduces Table 1 of the paper: for each size, the naive CPU loop
(Algorithm 3, one thread), gonum's Sgemm on all cores, and each GPU kernel
(mean of -reps runs), with speed-ups. Every GPU product is validated.

Usage:
  glmul table [flags]

Flags:
`, stderr)
	var dev deviceFlags
	dev.register(fs)
	sizesFlag := fs.String("sizes", "128,256,512,1024,2048,4096", "comma-separated square `sizes`")
	kernelsFlag := fs.String("kernels", "tiled32", "GPU kernels, the paper's first: tiled32, fast, fast:BMxBNxBK_TMxTN")
	reps := fs.Int("reps", 10, "timed GPU runs per size and kernel, after at least 0.3 s of warm-up; the mean is reported, as in the paper")
	cpuMax := fs.Int("cpu-max", 0, "skip the naive CPU loop above `N` (0: never skip; it takes minutes at 4096)")
	format := fs.String("format", "text", "output: text|markdown|csv|json")
	compare := fs.String("compare", "", "`paper`: add the published Table 1 and our ratios to it")
	plotPath := fs.String("plot", "", "also draw Fig. 3 to `FILE`.png or FILE.svg (several: comma-separated)")
	from := fs.String("from", "", "format a table saved with -format json from `FILE` instead of measuring")
	progress := fs.String("progress", "auto", "progress: auto|on|off (auto: a bar on terminals, lines otherwise)")
	if err := parseCommand(fs, args); err != nil {
		return err
	}
	if err := dev.check(); err != nil {
		return err
	}
	var sizes []int
	for _, s := range strings.Split(*sizesFlag, ",") {
		v, err := strconv.Atoi(strings.TrimSpace(s))
		if err != nil || v < 1 {
			return usagef("table: -sizes: %q is not a size of at least 1", s)
		}
		sizes = append(sizes, v)
	}
	var kernels []string
	for _, k := range strings.Split(*kernelsFlag, ",") {
		k = strings.TrimSpace(k)
		if _, err := shaders.Lookup(k); err != nil {
			return usagef("table: -kernels: %v", err)
		}
		kernels = append(kernels, k)
	}
	switch {
	case *reps < 1:
		return usagef("table: -reps must be at least 1 (got %d)", *reps)
	case *cpuMax < 0:
		return usagef("table: -cpu-max must be 0 or more (got %d)", *cpuMax)
	case *compare != "" && *compare != "paper":
		return usagef("table: -compare: only \"paper\" is known (got %q)", *compare)
	}
	switch *format {
	case table.Text, table.Markdown, table.CSV, table.JSON:
	default:
		return usagef("table: -format: unknown format %q: use text, markdown, csv or json", *format)
	}
	var plots []string
	if *plotPath != "" {
		for _, p := range strings.Split(*plotPath, ",") {
			switch strings.ToLower(filepath.Ext(p)) {
			case ".png", ".svg":
				plots = append(plots, p)
			default:
				return usagef("table: -plot %s: the file must end in .png or .svg", p)
			}
		}
	}
	if err := checkProgress("table: ", *progress); err != nil {
		return err
	}

	if *from != "" {
		b, err := os.ReadFile(*from)
		if err != nil {
			return err
		}
		var t table.Table
		if err := json.Unmarshal(b, &t); err != nil {
			return fmt.Errorf("table: %s is not a table saved with -format json: %v", *from, err)
		}
		if *compare == "paper" {
			t.ComparePaper = true
		}
		return writeTable(&t, stdout, stderr, *format, plots)
	}

	d, err := dev.open()
	if err != nil {
		return err
	}
	defer d.Release()
	for _, n := range sizes {
		if err := d.CheckShape(n, n, n); err != nil {
			return err
		}
	}
	info := d.Info()
	t := &table.Table{
		Device:       fmt.Sprintf("%s | %s | OpenGL %s", info.Vendor, info.Renderer, info.Version),
		CPU:          cpuName(),
		Command:      strings.TrimSpace("glmul table " + strings.Join(args, " ")),
		When:         time.Now().UTC(),
		Reps:         *reps,
		ComparePaper: *compare == "paper",
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	m := &tableMeasurer{dev: d, ctx: ctx, stderr: stderr, progress: *progress, reps: *reps}
	var measureErr error
	for i, n := range sizes {
		row, err := m.row(n, kernels, *cpuMax, uint64(i))
		if err != nil {
			measureErr = err
			break
		}
		t.Rows = append(t.Rows, row)
	}
	if errors.Is(measureErr, context.Canceled) {
		t.Interrupted = true
		measureErr = errInterrupted
	}
	if len(t.Rows) > 0 {
		if err := writeTable(t, stdout, stderr, *format, plots); err != nil {
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

// writeTable prints t and draws it to each plot file, atomically.
func writeTable(t *table.Table, stdout, stderr io.Writer, format string, plots []string) error {
	if err := t.Write(stdout, format); err != nil {
		return err
	}
	for _, p := range plots {
		var b bytes.Buffer
		if err := t.Fig3(&b, strings.TrimPrefix(strings.ToLower(filepath.Ext(p)), ".")); err != nil {
			return err
		}
		if err := renameio.WriteFile(p, b.Bytes(), 0o644); err != nil {
			return err
		}
		fmt.Fprintf(stderr, "glmul table: wrote Fig. 3 to %s\n", p)
	}
	return nil
}

// tableMeasurer measures one row at a time.
type tableMeasurer struct {
	dev      *glcompute.Device
	ctx      context.Context
	stderr   io.Writer
	progress string
	reps     int
}

func (m *tableMeasurer) row(n int, kernels []string, cpuMax int, seed uint64) (table.Row, error) {
	r := table.Row{N: n}
	rng := rand.New(rand.NewPCG(seed, 1))
	a, b := cpu.Random(n, n, rng), cpu.Random(n, n, rng)
	c := cpu.New(n, n)

	if cpuMax > 0 && n > cpuMax {
		r.CPUSkipped = fmt.Sprintf("above -cpu-max %d", cpuMax)
	} else {
		ms, err := m.naive(c, a, b)
		if err != nil {
			return r, err
		}
		r.CPUms, r.CPUGFLOPS = ms, table.GFLOPS(n, ms)
	}
	r.GonumMS = repeatMS(func() { cpu.Sgemm(c, a, b) })
	r.GonumGFLOPS = table.GFLOPS(n, r.GonumMS)
	if err := m.ctx.Err(); err != nil {
		return r, err
	}

	for _, k := range kernels {
		t, err := m.dev.Mul(c, a, b, &glcompute.MulOptions{Kernel: k, Warmup: 1, MinWarmup: minWarmup, Reps: m.reps})
		if err != nil {
			return r, err
		}
		times, src := t.Compute, "wall"
		if t.GPU != nil {
			times, src = t.GPU, "gl-timer"
		}
		mean := report.Mean(times)
		res := validate.Check(validate.Auto, a, b, c, rand.New(rand.NewPCG(seed, 2)))
		r.GPU = append(r.GPU, table.GPUResult{
			Kernel: k, Spec: t.Kernel, MeanMS: table.MS(mean), MedianMS: table.MS(report.Median(times)),
			GFLOPS: table.GFLOPS(n, table.MS(mean)), EndToEndMS: table.MS(t.Upload + report.Mean(t.Compute) + t.Readback),
			TimingSource: src, Valid: res.OK, Validation: string(res.Mode),
		})
		if err := m.ctx.Err(); err != nil {
			return r, err
		}
	}
	if m.progress != "off" && !wantBar(m.progress, m.stderr) {
		fmt.Fprintf(m.stderr, "table: N=%d done\n", n)
	}
	return r, nil
}

// naive times the paper's Algorithm 3 on c = a·b: once for large sizes
// (with progress and Ctrl-C between chunks of rows), repeated while short.
func (m *tableMeasurer) naive(c, a, b blas32.General) (float64, error) {
	n := a.Rows
	if n <= 256 {
		return repeatMS(func() { cpu.Naive(c, a, b) }), nil
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
		cpu.NaiveRows(c, a, b, i, min(i+chunk, n))
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
