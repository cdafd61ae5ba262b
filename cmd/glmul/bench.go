package main

import (
	"encoding/csv"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"runtime"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/glmul/glmul/cpu"
	"github.com/glmul/glmul/glcompute"
	"github.com/glmul/glmul/internal/report"
	"github.com/glmul/glmul/shaders"
	"github.com/glmul/glmul/validate"
)

// defaultBenchShapes are square sizes 256…8192 and shapes users hit: an odd
// size, products with a short or long inner dimension, and a flat one.
const defaultBenchShapes = "256,512,1024,2048,4096,8192,4097,1000x4096x1000,4096x64x4096,64x4096x64,8192x8192x256"

type benchRow struct {
	M, K, N    int             `json:"-"`
	Shape      string          `json:"shape"`
	Kernel     string          `json:"kernel"` // as asked: "fast", "tiled32"
	Spec       string          `json:"spec"`   // as run: "fast:128x256x8_8x8_db"
	Source     string          `json:"timing_source"`
	Times      []time.Duration `json:"times_ns"`
	MedianMS   float64         `json:"median_ms"`
	GFLOPS     float64         `json:"gflops"` // from the median
	Validation string          `json:"validation"`
	Valid      bool            `json:"valid"`
	Skipped    string          `json:"skipped,omitempty"`
}

func runBench(args []string, stdout, stderr io.Writer) error {
	fs := newCommand("glmul bench", `glmul bench measures each kernel on a list of shapes, validating every product.
On Mesa llvmpipe choose small -shapes: the defaults run for hours there.

Usage:
  glmul bench [flags]

Flags:
`, stderr)
	var dev deviceFlags
	dev.register(fs)
	shapesFlag := fs.String("shapes", defaultBenchShapes, "comma-separated `list` of N (square) or MxKxN")
	kernelsFlag := fs.String("kernels", "tiled32,fast", "comma-separated kernels: tiled32, fast, fast:BMxBNxBK_TMxTN...")
	reps := fs.Int("reps", 10, "timed runs per shape and kernel, after at least 0.3 s of warm-up")
	mode := fs.String("validate", "auto", "auto|full|freivalds|none")
	format := fs.String("format", "text", "output: text|csv|json|bench (Go benchmark lines for benchstat)")
	progress := fs.String("progress", "auto", "progress: auto|on|off (a line per product when not a terminal)")
	if err := parseCommand(fs, args); err != nil {
		return err
	}
	if err := dev.check(); err != nil {
		return err
	}
	var shapes [][3]int
	for _, s := range strings.Split(*shapesFlag, ",") {
		s = strings.TrimSpace(s)
		if v, err := strconv.Atoi(s); err == nil {
			if v < 1 {
				return usagef("bench: -shapes: %d: sizes must be at least 1", v)
			}
			shapes = append(shapes, [3]int{v, v, v})
			continue
		}
		m, k, n, err := parseShape(s)
		if err != nil {
			return usagef("bench: -shapes: %v", err)
		}
		shapes = append(shapes, [3]int{m, k, n})
	}
	var kernels []string
	for _, k := range strings.Split(*kernelsFlag, ",") {
		k = strings.TrimSpace(k)
		if _, err := shaders.Lookup(k); err != nil {
			return usagef("bench: -kernels: %v", err)
		}
		kernels = append(kernels, k)
	}
	if *reps < 1 {
		return usagef("bench: -reps must be at least 1 (got %d)", *reps)
	}
	vmode, err := validate.ParseMode(*mode)
	if err != nil {
		return usagef("bench: -validate: %v", err)
	}
	switch *format {
	case "text", "csv", "json", "bench":
	default:
		return usagef("bench: -format: unknown format %q: use text, csv, json or bench", *format)
	}
	if err := checkProgress("bench: ", *progress); err != nil {
		return err
	}

	d, err := dev.open()
	if err != nil {
		return err
	}
	defer d.Release()
	info := d.Info()
	bar := newBar(*progress, stderr, "bench")
	if bar != nil {
		bar.ChangeMax(len(shapes) * len(kernels))
	}
	var rows []benchRow
	failed := false
	for si, s := range shapes {
		m, k, n := s[0], s[1], s[2]
		shape := fmt.Sprintf("%dx%dx%d", m, k, n)
		if err := d.CheckShape(m, k, n); err != nil {
			for _, kern := range kernels {
				rows = append(rows, benchRow{M: m, K: k, N: n, Shape: shape, Kernel: kern, Skipped: err.Error()})
			}
			continue
		}
		rng := rand.New(rand.NewPCG(uint64(si), 1))
		a, b := cpu.Random(m, k, rng), cpu.Random(k, n, rng)
		c := cpu.New(m, n)
		for _, kern := range kernels {
			row := benchRow{M: m, K: k, N: n, Shape: shape, Kernel: kern}
			t, err := d.Mul(c, a, b, &glcompute.MulOptions{Kernel: kern, Warmup: 1, MinWarmup: minWarmup, Reps: *reps})
			if err != nil {
				row.Skipped = err.Error()
				rows = append(rows, row)
				continue
			}
			row.Spec, row.Times, row.Source = t.Kernel, t.Compute, "wall"
			if t.GPU != nil {
				row.Times, row.Source = t.GPU, "gl-timer"
			}
			med := report.Median(row.Times)
			row.MedianMS = float64(med) / 1e6
			row.GFLOPS = report.GFLOPS(2*float64(m)*float64(n)*float64(k), med)
			res := validate.Check(vmode, a, b, c, rand.New(rand.NewPCG(uint64(si), 2)))
			row.Validation, row.Valid = string(res.Mode), res.OK
			if !res.OK {
				failed = true
				fmt.Fprintf(stderr, "glmul bench: %s %s: %v\n", shape, kern, res.Err())
			}
			rows = append(rows, row)
			if bar != nil {
				bar.Add(1)
			} else if *progress != "off" {
				fmt.Fprintf(stderr, "bench %s %s: %s GFLOPS\n", shape, t.Kernel, report.FormatGFLOPS(row.GFLOPS))
			}
		}
	}
	if bar != nil {
		bar.Finish()
	}
	if err := writeBench(stdout, *format, info, rows); err != nil {
		return err
	}
	if failed {
		return errReported
	}
	return nil
}

func writeBench(w io.Writer, format string, info glcompute.Info, rows []benchRow) error {
	switch format {
	case "json":
		e := json.NewEncoder(w)
		e.SetIndent("", "  ")
		return e.Encode(map[string]any{"device": info, "results": rows})
	case "csv":
		cw := csv.NewWriter(w)
		cw.Write([]string{"m", "k", "n", "kernel", "spec", "timing_source", "runs", "median_ms", "gflops", "validation", "valid", "skipped"})
		for _, r := range rows {
			cw.Write([]string{strconv.Itoa(r.M), strconv.Itoa(r.K), strconv.Itoa(r.N), r.Kernel, r.Spec, r.Source,
				strconv.Itoa(len(r.Times)), strconv.FormatFloat(r.MedianMS, 'g', 6, 64), strconv.FormatFloat(r.GFLOPS, 'f', 1, 64),
				r.Validation, strconv.FormatBool(r.Valid), r.Skipped})
		}
		cw.Flush()
		return cw.Error()
	case "bench":
		// Go benchmark format, one line per timed run, so that benchstat
		// sees the distribution: BenchmarkGEMM/kernel=K/shape=MxKxN 1 ns/op flop/s.
		fmt.Fprintf(w, "goos: %s\ngoarch: %s\npkg: github.com/glmul/glmul\ndevice: %s | %s | %s\n",
			runtime.GOOS, runtime.GOARCH, info.Vendor, info.Renderer, info.Version)
		for _, r := range rows {
			if r.Skipped != "" {
				continue
			}
			flop := 2 * float64(r.M) * float64(r.N) * float64(r.K)
			for _, t := range r.Times {
				fmt.Fprintf(w, "BenchmarkGEMM/kernel=%s/shape=%s \t1\t%d ns/op\t%.4g flop/s\n", r.Kernel, r.Shape, t.Nanoseconds(), flop/t.Seconds())
			}
		}
		return nil
	}
	fmt.Fprintf(w, "device  %s | %s | OpenGL %s (%s)\n", info.Vendor, info.Renderer, info.Version, info.Backend)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "shape\tkernel\tmedian ms\tGFLOPS\tvalid\ttimer\t")
	for _, r := range rows {
		if r.Skipped != "" {
			fmt.Fprintf(tw, "%s\t%s\t-\t-\tskipped: %s\t\t\n", r.Shape, r.Kernel, firstLine(r.Skipped))
			continue
		}
		fmt.Fprintf(tw, "%s\t%s\t%.3f\t%s\t%v\t%s\t\n", r.Shape, r.Spec, r.MedianMS, report.FormatGFLOPS(r.GFLOPS), r.Valid, r.Source)
	}
	return tw.Flush()
}
