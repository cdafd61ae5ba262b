// Package table holds the CPU-vs-GPU table of the paper (seed 001, Table 1)
// as glmul measures it: its rows, the published numbers to compare with,
// text/Markdown/CSV/JSON output, and Fig. 3 as PNG or SVG. It is pure Go;
// the measuring is cmd/glmul's.
package table

import (
	"bytes"
	_ "embed"
	"encoding/csv"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/glmul/glmul/cmd/glmul/internal/report"
)

// Row is one matrix size. Times are in milliseconds; a zero time means the
// cell was not measured (Skipped says why for the naive CPU).
type Row struct {
	N int `json:"n"`

	// The paper's Algorithm 3: naive i-j-k loop, one thread.
	CPUms      float64 `json:"cpu_naive_ms,omitempty"`
	CPUGFLOPS  float64 `json:"cpu_naive_gflops,omitempty"`
	CPUSkipped string  `json:"cpu_naive_skipped,omitempty"`
	// gonum's Sgemm on every core (Dgemm in a float64 table): the
	// optimized CPU baseline the paper lacked.
	GonumMS     float64 `json:"cpu_gonum_ms"`
	GonumGFLOPS float64 `json:"cpu_gonum_gflops"`

	// GPU results, one per kernel, the paper's kernel (tiled32) first.
	GPU []GPUResult `json:"gpu"`
}

// GPUResult is one kernel at one size.
type GPUResult struct {
	Kernel       string  `json:"kernel"` // as asked: "tiled32", "fast"
	Spec         string  `json:"spec"`   // as run: "fast:128x256x8_8x8_db" (fast picks by size)
	MeanMS       float64 `json:"mean_ms"`
	MedianMS     float64 `json:"median_ms"`
	GFLOPS       float64 `json:"gflops"` // from the mean, as the paper did
	EndToEndMS   float64 `json:"end_to_end_ms"`
	TimingSource string  `json:"timing_source"` // "gl-timer" or "wall"
	Valid        bool    `json:"valid"`
	Validation   string  `json:"validation"`
	// Devices, in a table measured with -devices, lists the EGL indices
	// of the devices of the column, "1,2": every time of such a column
	// is a whole product's, host memory to host memory (TimingSource
	// "wall-end-to-end"; EndToEndMS is then the median). Empty for one
	// device's kernel, and in tables saved before 2026-12. Its key is
	// egl_devices: elsewhere in glmul's JSON, devices is a list of rows.
	Devices string `json:"egl_devices,omitempty"`
}

// SpeedupNaive is the naive CPU time over this kernel's mean time (0 if the
// CPU was skipped).
func (r Row) SpeedupNaive(g GPUResult) float64 {
	if r.CPUms == 0 || g.MeanMS == 0 {
		return 0
	}
	return r.CPUms / g.MeanMS
}

// SpeedupGonum is gonum's time over this kernel's mean time.
func (r Row) SpeedupGonum(g GPUResult) float64 {
	if r.GonumMS == 0 || g.MeanMS == 0 {
		return 0
	}
	return r.GonumMS / g.MeanMS
}

// GFLOPS is 2n³ / t, the paper's equation (2) for t in milliseconds.
func GFLOPS(n int, ms float64) float64 {
	if ms <= 0 {
		return 0
	}
	f := float64(n)
	return 2 * f * f * f / (ms * 1e6)
}

// MS converts a duration to milliseconds.
func MS(d time.Duration) float64 { return float64(d) / 1e6 }

// Paper is one row of the published Table 1.
type Paper struct {
	N                              int
	CPUms, CPUGFLOPS, GPUms, GPUGF float64
	Speedup                        float64
}

// CPUGFLOPSFromTime is the paper's CPU rate by its own equation (2) from
// its CPU time: half the published CPU GFLOPS, on every row (the CSV's
// note), so glmul compares its own figures, all from times, with these.
func (p Paper) CPUGFLOPSFromTime() float64 { return GFLOPS(p.N, p.CPUms) }

// SpeedupFromTimes is the paper's CPU time over its GPU time: twice the
// published speed-up, which is a ratio of GFLOPS and carries the CPU
// column's factor (417 at 4096, published 208).
func (p Paper) SpeedupFromTimes() float64 { return p.CPUms / p.GPUms }

//go:embed paper_table1.csv
var paperCSV []byte

// PaperCSV is the transcription of the published table, the same bytes as
// testdata/paper_table1.csv.
func PaperCSV() []byte { return paperCSV }

// PaperRows parses the published table.
func PaperRows() []Paper {
	r := csv.NewReader(bytes.NewReader(paperCSV))
	r.Comment = '#'
	recs, err := r.ReadAll()
	if err != nil || len(recs) < 2 {
		panic("table: bad embedded paper_table1.csv")
	}
	var out []Paper
	for _, rec := range recs[1:] {
		f := make([]float64, len(rec))
		for i, s := range rec {
			v, err := strconv.ParseFloat(s, 64)
			if err != nil {
				panic("table: bad number in paper_table1.csv: " + s)
			}
			f[i] = v
		}
		out = append(out, Paper{N: int(f[0]), CPUms: f[1], CPUGFLOPS: f[2], GPUms: f[3], GPUGF: f[4], Speedup: f[5]})
	}
	return out
}

// PaperAt returns the published row for size n.
func PaperAt(n int) (Paper, bool) {
	for _, p := range PaperRows() {
		if p.N == n {
			return p, true
		}
	}
	return Paper{}, false
}

// Table is a measured table and what it was measured on.
type Table struct {
	Device  string    `json:"device"`  // GL vendor | renderer | version
	CPU     string    `json:"cpu"`     // CPU model and thread count
	Command string    `json:"command"` // the command line that made it
	When    time.Time `json:"when"`
	Reps    int       `json:"reps"`
	// Warmup is the rule that ended the GPU runs' warm-up
	// (measure.Timings.WarmupRule), as the measuring glmul applied it;
	// tables saved before 2026-11-28 lack it.
	Warmup string `json:"warmup,omitempty"`
	// Type is the element type of every product in the table, the CPU's
	// and the GPU's: "float32", or "float64" (glmul table -type f64: the
	// naive loop in float64, gonum's Dgemm, and dfast through
	// glcompute.Device.Mul64, validated in float64). Tables saved before
	// 2026-12 lack it: they are float32 (ElemType).
	Type string `json:"type"`
	Rows []Row  `json:"rows"`
	// ComparePaper adds the published numbers and our ratios to them.
	ComparePaper bool `json:"compare_paper"`
	// Interrupted is set when the run was stopped before every size.
	Interrupted bool `json:"interrupted,omitempty"`
}

// The element types of a table (Table.Type).
const (
	Float32 = "float32"
	Float64 = "float64"
)

// ElemType is the table's element type: Type, Float32 where unset (a
// table saved before glmul table took -type).
func (t *Table) ElemType() string {
	if t.Type == "" {
		return Float32
	}
	return t.Type
}

// Gemm names gonum's product of the table's element type, its optimized
// CPU baseline: "Sgemm" or "Dgemm".
func (t *Table) Gemm() string {
	if t.ElemType() == Float64 {
		return "Dgemm"
	}
	return "Sgemm"
}

// typeLine says what ran in the table's element type, for its preamble.
func (t *Table) typeLine() string {
	if t.ElemType() == Float64 {
		return "float64: the naive CPU loop, gonum's Dgemm and the GPU's dfast kernel (glcompute.Device.Mul64), every GPU product validated in float64"
	}
	return t.ElemType() + ": the naive CPU loop, gonum's Sgemm and the GPU kernels"
}

// Formats: text, markdown, csv and json (report's).
var Formats = []report.Format{report.Text, report.Markdown, report.CSV, report.JSON}

// columns returns the header and the cells of every row, each figure
// printed by num.
func (t *Table) columns(num func(float64) string) (header []string, cells [][]string) {
	header = []string{"N", "CPU naive ms", "CPU naive GFLOPS", "CPU gonum ms", "CPU gonum GFLOPS"}
	kernels := t.kernels()
	for _, k := range kernels {
		header = append(header, k+" ms (mean)", k+" ms (median)", k+" GFLOPS", k+" end-to-end ms", "speed-up vs naive", "speed-up vs gonum")
	}
	cmp := t.paperKernel()
	if t.ComparePaper {
		header = append(header, "paper CPU GFLOPS (its times)", "paper GPU GFLOPS", "paper speed-up (its times)",
			cmp+" GFLOPS / paper", cmp+" speed-up / paper")
	}
	for _, r := range t.Rows {
		row := []string{strconv.Itoa(r.N)}
		if r.CPUSkipped != "" {
			row = append(row, "skipped", "skipped")
		} else {
			row = append(row, num(r.CPUms), num(r.CPUGFLOPS))
		}
		row = append(row, num(r.GonumMS), num(r.GonumGFLOPS))
		for _, k := range kernels {
			g, ok := r.gpu(k)
			if !ok {
				row = append(row, "", "", "", "", "", "")
				continue
			}
			sn := "skipped"
			if r.CPUSkipped == "" {
				sn = num(r.SpeedupNaive(g))
			}
			gf := num(g.GFLOPS)
			if !g.Valid {
				gf += " INVALID"
			}
			row = append(row, num(g.MeanMS), num(g.MedianMS), gf, num(g.EndToEndMS), sn, num(r.SpeedupGonum(g)))
		}
		if t.ComparePaper {
			// The paper's CPU rate and speed-up from its times, as glmul's
			// own are: its published ones carry a factor of 2 (the CSV's note).
			p, ok := PaperAt(r.N)
			g, has := r.gpu(cmp)
			if !ok || !has {
				row = append(row, "", "", "", "", "")
			} else {
				su := ""
				if r.CPUSkipped == "" {
					su = num(r.SpeedupNaive(g) / p.SpeedupFromTimes())
				}
				row = append(row, num(p.CPUGFLOPSFromTime()), num(p.GPUGF), num(p.SpeedupFromTimes()), num(g.GFLOPS/p.GPUGF), su)
			}
		}
		cells = append(cells, row)
	}
	return header, cells
}

// paperKernel is the kernel compared with the paper's: its own, tiled32,
// where the table has it, else the first.
func (t *Table) paperKernel() string {
	ks := t.kernels()
	for _, k := range ks {
		if k == "tiled32" {
			return k
		}
	}
	if len(ks) == 0 {
		return ""
	}
	return ks[0]
}

// kernels lists the kernels in the order of the first row that has them.
func (t *Table) kernels() []string {
	var ks []string
	seen := map[string]bool{}
	for _, r := range t.Rows {
		for _, g := range r.GPU {
			if !seen[g.Kernel] {
				seen[g.Kernel] = true
				ks = append(ks, g.Kernel)
			}
		}
	}
	return ks
}

// devices returns the EGL indices of kernel's column (GPUResult.Devices)
// in the first row that has them: "" but for a group's columns.
func (t *Table) devices(kernel string) string {
	for _, r := range t.Rows {
		if g, ok := r.gpu(kernel); ok && g.Devices != "" {
			return g.Devices
		}
	}
	return ""
}

// groupLine says, for a table measured with -devices, which devices each
// GPU column ran on and how it was timed; "" for other tables.
func (t *Table) groupLine() string {
	var cols []string
	for _, k := range t.kernels() {
		if d := t.devices(k); d != "" {
			cols = append(cols, fmt.Sprintf("%s on EGL %s", k, d))
		}
	}
	if len(cols) == 0 {
		return ""
	}
	return strings.Join(cols, ", ") + "; each GPU time a whole product, host memory to host memory (wall clock)"
}

func (r Row) gpu(kernel string) (GPUResult, bool) {
	for _, g := range r.GPU {
		if g.Kernel == kernel {
			return g, true
		}
	}
	return GPUResult{}, false
}

// exact prints a figure for a program to read (CSV): every digit
// (strconv's shortest form that reads back as the same float64), and an
// empty cell for an unknown figure (0, as in num).
func exact(x float64) string {
	if x == 0 {
		return ""
	}
	return strconv.FormatFloat(x, 'g', -1, 64)
}

// num prints a figure with about four significant digits. No time, rate
// or speed-up measured is exactly 0: a 0 is a run shorter than the clock
// can tell (Windows' and Wine's clocks step in about a millisecond), and a
// rate or ratio made from it, so it prints as "—", unknown.
func num(x float64) string {
	switch {
	case x == 0:
		return "—"
	case math.Abs(x) >= 1000:
		return strconv.FormatFloat(x, 'f', 0, 64)
	case math.Abs(x) >= 100:
		return strconv.FormatFloat(x, 'f', 1, 64)
	case math.Abs(x) >= 1:
		return strconv.FormatFloat(x, 'f', 2, 64)
	}
	return strconv.FormatFloat(x, 'g', 3, 64)
}

// legacyWarmup is the rule glmul table recorded before 2026-12, naming
// an option of the code (measure.Options.Ramp), and what it meant in a
// table, whose products all had it: measure.WarmupAlways.
var legacyWarmup = [2]string{
	"at least 0.5 s (idle 0.5 s or more before, or Ramp), then until steady",
	"at least 0.5 s before every product, then until steady",
}

// warmup says how the GPU runs were warmed up, from the table itself:
// a table re-rendered with -from keeps its own rule.
func (t *Table) warmup() string {
	switch t.Warmup {
	case "":
		return "its rule is not recorded in this table"
	case legacyWarmup[0]:
		return legacyWarmup[1]
	}
	return t.Warmup
}

// Write formats the table in one of Formats.
func (t *Table) Write(w io.Writer, format report.Format) error {
	figure := num
	if format == report.CSV {
		figure = exact // for programs: every digit, as JSON gives them (it rounded to 3 or 4)
	}
	header, cells := t.columns(figure)
	if format == report.CSV { // the preamble's type line, for programs
		header = append(header, "type")
		for i := range cells {
			cells[i] = append(cells[i], t.ElemType())
		}
	}
	out := report.Table{Header: header, Rows: cells, JSON: t,
		Preamble: [][2]string{{"device", t.Device}, {"CPU", t.CPU}, {"type", t.typeLine()}}}
	if g := t.groupLine(); g != "" {
		out.Preamble = append(out.Preamble, [2]string{"GPUs", g})
	}
	if format == report.Markdown {
		out.Preamble = append(out.Preamble, [2]string{"command", "`" + t.Command + "`"},
			[2]string{"date", fmt.Sprintf("%s; GPU times: mean of %d runs after a warm-up: %s.", t.When.Format("2006-01-02"), t.Reps, t.warmup())})
	}
	if t.Interrupted {
		out.Notes = []string{"interrupted: sizes after the last row were not measured"}
	}
	return out.Write(w, format)
}
