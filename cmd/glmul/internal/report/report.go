// Package report formats glmul's results: the main command's product
// (Run) and the tables of bench, tune and table (Table), as aligned text,
// Markdown, JSON or CSV. It is pure Go: it never touches GL; what it prints
// is measured elsewhere (package measure).
package report

import (
	"encoding/csv"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/glmul/glmul/validate"
)

// Format is an output format.
type Format string

const (
	Text Format = "text"
	JSON Format = "json"
	CSV  Format = "csv"
)

// Device is the GPU and driver as a report shows them. Its JSON is Full,
// the complete description (glcompute.Info: limits, kernels, ...).
type Device struct {
	Vendor, Renderer, Version, GLSLVersion string
	Backend, BackendNote                   string
	Full                                   any
}

// MarshalJSON writes Full.
func (d Device) MarshalJSON() ([]byte, error) { return json.Marshal(d.Full) }

// Timings are what a report shows of one product's timings. Their JSON is
// Full, the complete record (glcompute.Timings: every run).
type Timings struct {
	Dispatches                 int
	Groups                     [2]int
	Runs                       int
	Upload, Readback           time.Duration
	UploadBytes, ReadbackBytes int64
	Panels                     string // the panel plan; "" for one piece
	// WarmupTime is how long the warm-up ran, WarmupCount its runs;
	// Splits, the slices of K.
	WarmupTime  time.Duration
	WarmupCount int
	WarmupRule  string // what ended the warm-up (measure.Timings.WarmupRule)
	// RunsAsked, where not 0, is the timed runs asked of which Ctrl-C let
	// Runs be made; no pipelined pass followed.
	RunsAsked int
	Splits    int
	// EdgeKernel computed EdgeGroups work groups of strips past whole
	// tiles ("" for none).
	EdgeKernel string
	EdgeGroups int
	// StreamKTiles tiles were shared by StreamKGroups work groups after
	// whole waves of tiles (stream-K; 0 for none).
	StreamKTiles, StreamKGroups int
	// Steps of the pipelined product; Streamed: it ran as a streamed pass
	// (copies beside the kernel); Overlapping: the stage times were
	// measured within it (glcompute.Timings).
	Steps       int
	Streamed    bool
	Overlapping bool
	Full        any
}

// MarshalJSON writes Full.
func (t Timings) MarshalJSON() ([]byte, error) { return json.Marshal(t.Full) }

// Run is the result of one glmul product.
type Run struct {
	Device Device `json:"device"`
	// Type is the element type: "float32", or "float64" (glmul -type
	// f64: each run one whole pipelined pass of Mul64).
	Type   string `json:"type"`
	Kernel string `json:"kernel"`
	M      int    `json:"m"`
	K      int    `json:"k"`
	N      int    `json:"n"`
	// Seed drew the random inputs (and Freivalds' vectors): for inputs
	// read from files (Inputs), only the vectors.
	Seed uint64 `json:"seed"`
	// Inputs names the files A and B were read from (glmul mul); empty
	// for random inputs, which the product line names by their seed.
	Inputs    []string `json:"inputs,omitempty"`
	Warmup    int      `json:"warmup"`
	MaxGroups int      `json:"max_groups"`
	// SplitKAsked is -split-k where it asked for slices (0: automatic);
	// the kernel line says where the product took fewer (Timings.Splits).
	SplitKAsked int             `json:"split_k_asked,omitempty"`
	Timings     Timings         `json:"timings"`
	Staging     string          `json:"staging"` // how host matrices reach the GPU
	Validation  validate.Result `json:"validation"`
	Summary     Summary         `json:"summary"`
}

// Summary holds the figures derived from the timings.
type Summary struct {
	// TimingSource is "gl-timer" when kernel times come from GL_TIME_ELAPSED,
	// "wall" when from the CPU clock after glFinish.
	TimingSource string  `json:"timing_source"`
	KernelMeanMS float64 `json:"kernel_mean_ms"`
	KernelMedMS  float64 `json:"kernel_median_ms"`
	KernelMinMS  float64 `json:"kernel_min_ms"`
	WallMeanMS   float64 `json:"wall_mean_ms"`
	UploadMS     float64 `json:"upload_ms"`
	ReadbackMS   float64 `json:"readback_ms"`
	// FirstUploadMS and FirstReadbackMS are the cold transfers before the
	// warm ones above (0 without warm-up): see glcompute.Timings.
	FirstUploadMS   float64 `json:"first_upload_ms,omitempty"`
	FirstReadbackMS float64 `json:"first_readback_ms,omitempty"`
	// GFLOPS = 2·M·N·K / time, as the paper defines it (its eq. 1).
	GFLOPSMean   float64 `json:"gflops_mean"`
	GFLOPSMedian float64 `json:"gflops_median"`
	// GFLOPSEndToEnd is the rate of the pipelined product, host memory to
	// host memory: EndToEndMS. OverlapMS is how much less that is than
	// upload, one mean run and readback one after another; 0 when the
	// pipelined product was no shorter (never negative).
	GFLOPSEndToEnd float64 `json:"gflops_end_to_end"`
	EndToEndMS     float64 `json:"end_to_end_ms"`
	OverlapMS      float64 `json:"overlap_ms"`
}

// FormatGFLOPS prints a rate with three significant digits at least, so
// that 0.48 (llvmpipe) and 7468.7 (an H100) both read well.
func FormatGFLOPS(x float64) string {
	switch {
	case x >= 100:
		return strconv.FormatFloat(x, 'f', 1, 64)
	case x >= 1:
		return strconv.FormatFloat(x, 'f', 2, 64)
	}
	return strconv.FormatFloat(x, 'g', 3, 64)
}

func ms(d time.Duration) float64 { return float64(d) / 1e6 }

// Write formats r to w.
func (r *Run) Write(w io.Writer, f Format) error {
	switch f {
	case JSON:
		e := json.NewEncoder(w)
		e.SetIndent("", "  ")
		return e.Encode(r)
	case CSV:
		return r.writeCSV(w)
	}
	return r.writeText(w)
}

// lineFunc prints one labelled line of a text report: the label in a
// column of its own, then the value.
type lineFunc func(label, format string, args ...any)

// writeText formats r as labelled lines: what was multiplied and how, the
// stages' times, the rates, and the validation.
func (r *Run) writeText(out io.Writer) error {
	w := &errWriter{w: out}
	p := func(label, format string, args ...any) {
		fmt.Fprintf(w, "%-10s %s\n", label, fmt.Sprintf(format, args...))
	}
	r.writeSetup(p)
	r.writeStages(p)
	r.writeRates(p)
	p("validate", "%s", r.Validation)
	return w.err
}

// writeSetup prints what was multiplied, on what device and backend, with
// which kernel, staging and panels.
func (r *Run) writeSetup(p lineFunc) {
	i, t := r.Device, r.Timings
	if len(r.Inputs) == 2 {
		p("product", "C = A·B in %s, A %d×%d from %s, B %d×%d from %s", r.typeName(), r.M, r.K, r.Inputs[0], r.K, r.N, r.Inputs[1])
	} else {
		p("product", "C = A·B in %s, A %d×%d, B %d×%d, seed %d", r.typeName(), r.M, r.K, r.K, r.N, r.Seed)
	}
	p("device", "%s | %s | %s | %s", i.Vendor, i.Renderer, i.Version, i.GLSLVersion)
	if i.BackendNote != "" {
		p("backend", "%s (%s)", i.Backend, i.BackendNote)
	} else {
		p("backend", "%s", i.Backend)
	}
	split := ""
	if t.Splits > 1 {
		split = fmt.Sprintf(", K split %d ways (a second pass sums them)", t.Splits)
	}
	switch {
	case r.SplitKAsked > 1 && t.Splits > 1 && t.Splits < r.SplitKAsked:
		split += fmt.Sprintf(", not the %d -split-k asked: a slice holds at least one of the kernel's K steps", r.SplitKAsked)
	case r.SplitKAsked > 1 && t.Splits <= 1:
		split += fmt.Sprintf(", K not split though -split-k %d asked: a slice holds at least one of the kernel's K steps, and a paced pass does not split", r.SplitKAsked)
	}
	if t.EdgeKernel != "" {
		split += fmt.Sprintf(", and %s in %d work groups over the strips past whole tiles", t.EdgeKernel, t.EdgeGroups)
	}
	if t.StreamKTiles > 0 {
		split += fmt.Sprintf(", the last %d tiles' K steps shared by %d work groups (stream-K; a second pass sums them)", t.StreamKTiles, t.StreamKGroups)
	}
	p("kernel", "%s: %d×%d work groups in %s of at most %d×%d%s", r.Kernel, t.Groups[0], t.Groups[1], Plural(t.Dispatches, "dispatch"), r.MaxGroups, r.MaxGroups, split)
	if r.Staging != "" {
		p("staging", "%s", r.Staging)
	}
	if t.Panels != "" {
		p("panels", "%s", t.Panels)
	}
}

// typeName is Type, "float32" where unset.
func (r *Run) typeName() string {
	if r.Type == "" {
		return "float32"
	}
	return r.Type
}

// writeStages prints the stages' times: upload, compute and readback,
// each measured alone or, in a pipelined product, as its busy time within
// it.
func (r *Run) writeStages(p lineFunc) {
	t, s := r.Timings, r.Summary
	if t.Overlapping {
		p("", "stage times below: each stage's busy time within the pipelined product")
		p("upload", "%8.2f ms  host copies into staging %s", s.UploadMS, rate(t.UploadBytes, t.Upload))
	} else {
		p("upload", "%8.2f ms  %s%s", s.UploadMS, rate(t.UploadBytes, t.Upload), cold(s.FirstUploadMS))
	}
	r.writeCompute(p)
	if t.Overlapping {
		p("readback", "%8.2f ms  host copies out of staging %s", s.ReadbackMS, rate(t.ReadbackBytes, t.Readback))
	} else {
		p("readback", "%8.2f ms  %s%s", s.ReadbackMS, rate(t.ReadbackBytes, t.Readback), cold(s.FirstReadbackMS))
	}
}

// writeCompute prints the kernel's time and where it comes from: the GL
// timer or the wall clock.
func (r *Run) writeCompute(p lineFunc) {
	i, t, s := r.Device, r.Timings, r.Summary
	src := "GL timer"
	switch {
	case s.TimingSource == "gl-timer" && r.Type == "float64":
		src = "GL timer: each pass's time with its dispatches in flight"
	case s.TimingSource == "wall" && r.Type == "float64":
		src = "each pass's dispatch calls' wall time: " + noTimer(i.Version)
	case s.TimingSource == "wall":
		src = "wall clock after glFinish: " + noTimer(i.Version)
	}
	switch {
	case t.Overlapping && s.TimingSource == "wall":
		p("compute", "%8.2f ms: the dispatch calls' wall time, summed (%s)", s.KernelMeanMS, noTimer(i.Version))
	case t.Overlapping:
		p("compute", "%8.2f ms: the GPU's time with the steps' dispatches in flight (GL timestamps around each step; time two steps share counts once); %s", s.KernelMeanMS, onePass(t, r.Warmup))
	default:
		warm := "without warm-up"
		if r.Warmup > 0 {
			warm = fmt.Sprintf("after %s, %s in all (%s)", Plural(t.WarmupCount, "warm-up run"), millis(t.WarmupTime), t.WarmupRule)
		}
		runs := Plural(t.Runs, "run")
		if t.RunsAsked > 0 {
			runs = fmt.Sprintf("%d of the %d runs asked (interrupted)", t.Runs, t.RunsAsked)
		}
		p("compute", "%8.2f ms mean, %.2f median, %.2f min over %s %s (%s)",
			s.KernelMeanMS, s.KernelMedMS, s.KernelMinMS, runs, warm, src)
		if s.TimingSource != "wall" {
			p("", "%8.2f ms mean wall clock after glFinish", s.WallMeanMS)
		}
	}
}

// writeRates prints the pipelined product's time and the GFLOPS, with a
// note where the kernel's runs alone took longer than the whole pipelined
// product.
func (r *Run) writeRates(p lineFunc) {
	t, s := r.Timings, r.Summary
	if t.RunsAsked > 0 {
		p("pipelined", "not run: the timed runs were interrupted, and glmul ends without the pass that moves C end to end")
		if s.KernelMeanMS > 0 {
			p("GFLOPS", "%s kernel (mean), %s (median) over the runs made", FormatGFLOPS(s.GFLOPSMean), FormatGFLOPS(s.GFLOPSMedian))
		} else {
			p("GFLOPS", "kernel unknown (its runs took less than the clock can tell)")
		}
		return
	}
	switch {
	case r.Type == "float64":
		p("pipelined", "%8.2f ms end to end, the timed runs' mean: each run one Mul64 call: a pipelined pass, the next step's upload and the last one's readback overlapping compute", s.EndToEndMS)
		p("GFLOPS", "%s kernel (mean), %s (median); %s end to end (host memory to host memory)",
			FormatGFLOPS(s.GFLOPSMean), FormatGFLOPS(s.GFLOPSMedian), FormatGFLOPS(s.GFLOPSEndToEnd))
		return
	case t.Steps > 1 && t.Streamed:
		p("pipelined", "%8.2f ms end to end in %d steps, streamed (the GPU moving the next step's A in and the last one's C out beside the kernel): %s",
			s.EndToEndMS, t.Steps, overlap(s))
	case t.Steps > 1:
		p("pipelined", "%8.2f ms end to end in %d steps, the next step's upload and the last one's readback overlapping compute: %s",
			s.EndToEndMS, t.Steps, overlap(s))
	default:
		p("pipelined", "%8.2f ms end to end in one step (too few rows of tiles to pipeline)", s.EndToEndMS)
	}
	if s.KernelMeanMS > 0 && t.Overlapping {
		// One pass in panels: its rate, no mean or median of runs.
		p("GFLOPS", "%s kernel (one pass); %s end to end (pipelined, host memory to host memory)",
			FormatGFLOPS(s.GFLOPSMean), FormatGFLOPS(s.GFLOPSEndToEnd))
	} else if s.KernelMeanMS > 0 {
		med := FormatGFLOPS(s.GFLOPSMedian)
		if s.KernelMedMS == 0 {
			med = "unknown" // most runs shorter than the clock's step
		}
		p("GFLOPS", "%s kernel (mean), %s (median); %s end to end (pipelined, host memory to host memory)",
			FormatGFLOPS(s.GFLOPSMean), med, FormatGFLOPS(s.GFLOPSEndToEnd))
	} else {
		// A run shorter than the clock's step (Windows, Wine): no rate.
		p("GFLOPS", "kernel unknown (its runs took less than the clock can tell); %s end to end (pipelined, host memory to host memory)",
			FormatGFLOPS(s.GFLOPSEndToEnd))
	}
	if s.EndToEndMS > 0 && s.KernelMeanMS > s.EndToEndMS {
		// Only separate runs can disagree so: the kernel's runs alone, the
		// pipelined pass after them. The figures stand as measured (on the
		// H100 at 16384³: runs alone 213–465 ms at a steady 1980 MHz and
		// 400 W, the pipelined pass 269–329 ms; docs/PERFORMANCE.md).
		p("note", "the compute runs' mean (%.2f ms, the whole product at once) is longer than the whole pipelined product (%.2f ms, the same work in row bands, transfers included): measured, not a slip of arithmetic; the GPU did the bands faster than the whole",
			s.KernelMeanMS, s.EndToEndMS)
	}
}

// noTimer says why kernel times come from the wall clock on the context
// whose GL_VERSION is version.
func noTimer(version string) string {
	if strings.HasPrefix(version, "OpenGL ES") {
		return "OpenGL ES has no GL timer"
	}
	return "this driver's GL timer gave no plausible times (llvmpipe's read ≈0)"
}

// onePass says that a product measured within its pipelined pass ran
// once: in panels, whatever -reps asked, after the warm-up's panels.
func onePass(t Timings, warmup int) string {
	if t.Panels == "" {
		return "one pass"
	}
	if warmup == 0 || t.WarmupCount == 0 {
		return "one pass: -reps is not used in panels; no warm-up"
	}
	return fmt.Sprintf("one pass: -reps is not used in panels; after %s of a panel, %s", Plural(t.WarmupCount, "warm-up run"), millis(t.WarmupTime))
}

// errWriter keeps the first write error (a full disk, a closed pipe), so
// that a report made of many small writes can return it.
type errWriter struct {
	w   io.Writer
	err error
}

func (e *errWriter) Write(p []byte) (int, error) {
	if e.err != nil {
		return 0, e.err
	}
	n, err := e.w.Write(p)
	e.err = err
	return n, err
}

// overlap says how much the pipelined product saved against its stages
// one after another.
func overlap(s Summary) string {
	// The stages' sum as Overlap counts it (upload, one run on the wall
	// clock, readback): with no overlap, not the end-to-end time.
	sum := s.UploadMS + s.WallMeanMS + s.ReadbackMS
	if s.OverlapMS <= 0 || sum <= 0 {
		return fmt.Sprintf("no shorter than the stages above one after another (%.2f ms)", sum)
	}
	return fmt.Sprintf("%.2f ms (%.0f%%) less than the stages above one after another", s.OverlapMS, 100*s.OverlapMS/sum)
}

// cold describes the first, cold transfer before a warm one.
func cold(ms float64) string {
	if ms == 0 {
		return ""
	}
	return fmt.Sprintf("; the first (cold): %.2f ms", ms)
}

func rate(bytes int64, d time.Duration) string {
	return fmt.Sprintf("(%.1f MiB, %.2f GB/s)", float64(bytes)/(1<<20), float64(bytes)/d.Seconds()/1e9)
}

// CSVHeader names the columns of Run's CSV row.
var CSVHeader = []string{"m", "k", "n", "kernel", "backend", "renderer", "version", "dispatches", "runs",
	"timing_source", "upload_ms", "kernel_mean_ms", "kernel_median_ms", "kernel_min_ms", "readback_ms",
	"end_to_end_ms", "overlap_ms", "gflops_mean", "gflops_median", "gflops_end_to_end", "validation", "valid", "worst_ratio", "type"}

func (r *Run) writeCSV(w io.Writer) error {
	s := r.Summary
	f := func(x float64) string { return strconv.FormatFloat(x, 'g', 6, 64) }
	cw := csv.NewWriter(w)
	cw.Write(CSVHeader)
	cw.Write([]string{strconv.Itoa(r.M), strconv.Itoa(r.K), strconv.Itoa(r.N), r.Kernel, r.Device.Backend,
		r.Device.Renderer, r.Device.Version, strconv.Itoa(r.Timings.Dispatches), strconv.Itoa(r.Timings.Runs),
		s.TimingSource, f(s.UploadMS), f(s.KernelMeanMS), f(s.KernelMedMS), f(s.KernelMinMS), f(s.ReadbackMS),
		f(s.EndToEndMS), f(s.OverlapMS), f(s.GFLOPSMean), f(s.GFLOPSMedian), f(s.GFLOPSEndToEnd), string(r.Validation.Mode),
		strconv.FormatBool(r.Validation.OK), f(r.Validation.WorstRatio), r.typeName()})
	cw.Flush()
	return cw.Error()
}

// Plural gives n and noun, with an s (es after s, x, ch, sh) where n is
// not 1: "1 run", "10 runs", "3 shape classes".
func Plural(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	for _, end := range []string{"s", "x", "ch", "sh"} {
		if strings.HasSuffix(noun, end) {
			return fmt.Sprintf("%d %ses", n, noun)
		}
	}
	return fmt.Sprintf("%d %ss", n, noun)
}

// millis prints a duration in milliseconds with two significant digits
// below 10 ms (a warm-up of 0.4 ms printed as "0 ms").
func millis(d time.Duration) string {
	ms := float64(d) / 1e6
	if ms < 10 {
		return strconv.FormatFloat(ms, 'f', 1+max(0, -int(math.Floor(math.Log10(max(ms, 1e-3))))), 64) + " ms"
	}
	return fmt.Sprintf("%.0f ms", ms)
}
