package table

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"encoding/xml"
	"image/png"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/glmul/glmul/cmd/glmul/internal/report"
)

// example is a table with made-up but consistent figures: formatting tests
// need no GPU. Measured tables come from cmd/glmul's tests.
func example() *Table {
	t := &Table{Device: "Test | renderer | 4.5", CPU: "test cpu", Command: "glmul table", When: time.Date(2026, 11, 21, 0, 0, 0, 0, time.UTC), Reps: 10, ComparePaper: true}
	for i, n := range []int{128, 256, 512, 1024} {
		cpuMS := float64(n*n*n) * 2 / 0.5e9 * 1e3
		r := Row{N: n, CPUms: cpuMS, CPUGFLOPS: GFLOPS(n, cpuMS), GonumMS: cpuMS / 20, GonumGFLOPS: GFLOPS(n, cpuMS/20)}
		if i == 3 {
			r.CPUms, r.CPUGFLOPS, r.CPUSkipped = 0, 0, "above -cpu-max 512"
		}
		for j, k := range []string{"tiled32", "fast:128x128x8_8x8"} {
			ms := cpuMS / float64(100*(j+1))
			r.GPU = append(r.GPU, GPUResult{Kernel: k, MeanMS: ms, MedianMS: ms, GFLOPS: GFLOPS(n, ms), EndToEndMS: ms * 2, TimingSource: "wall", Valid: true, Validation: "full"})
		}
		t.Rows = append(t.Rows, r)
	}
	return t
}

func TestPaperTranscription(t *testing.T) {
	td, err := os.ReadFile("../../../../testdata/paper_table1.csv")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(td, PaperCSV()) {
		t.Fatal("internal/table/paper_table1.csv differs from testdata/paper_table1.csv: keep them identical")
	}
	rows := PaperRows()
	if len(rows) != 6 || rows[0].N != 128 || rows[5].N != 4096 || rows[5].GPUGF != 75.05 || rows[5].Speedup != 208 {
		t.Fatalf("paper rows %+v", rows)
	}
	// The CPU columns from the times are half the published ones, the
	// speed-ups from the times twice (the CSV's note): 417 at 4096.
	for _, p := range rows {
		if r := p.CPUGFLOPSFromTime() / p.CPUGFLOPS; r < 0.48 || r > 0.52 {
			t.Errorf("N=%d: CPU %.3f GFLOPS from the time, %.2f published", p.N, p.CPUGFLOPSFromTime(), p.CPUGFLOPS)
		}
	}
	if s := rows[5].SpeedupFromTimes(); s < 416 || s > 418 {
		t.Errorf("speed-up at 4096 from the times %.1f, want 417", s)
	}
	// The GPU columns agree with the paper's equation (2) to the printed digits.
	for _, p := range rows {
		if g := GFLOPS(p.N, p.GPUms); g/p.GPUGF < 0.98 || g/p.GPUGF > 1.02 {
			t.Errorf("N=%d: GPU %.2f GFLOPS from the time, %.2f published", p.N, g, p.GPUGF)
		}
	}
}

func TestFormats(t *testing.T) {
	tb := example()
	var b bytes.Buffer
	if err := tb.Write(&b, report.CSV); err != nil {
		t.Fatal(err)
	}
	recs, err := csv.NewReader(&b).ReadAll()
	if err != nil || len(recs) != 5 {
		t.Fatalf("CSV: %v, %d records", err, len(recs))
	}
	head := strings.Join(recs[0], ",")
	for _, col := range []string{"CPU naive ms", "CPU gonum GFLOPS", "tiled32 GFLOPS", "tiled32 end-to-end ms", "speed-up vs naive", "paper GPU GFLOPS", "tiled32 GFLOPS / paper"} {
		if !strings.Contains(head, col) {
			t.Errorf("CSV header lacks %q: %s", col, head)
		}
	}
	if recs[4][1] != "skipped" || recs[1][0] != "128" {
		t.Errorf("rows: %v / %v", recs[1], recs[4])
	}
	// The comparison with the paper is like for like: tiled32 against
	// the paper's tiled kernel, speed-ups from times on both sides. At 128 the example's tiled32 runs 100× its naive loop;
	// the paper's times give 2.35 / 0.31 = 7.58×.
	col := map[string]int{}
	for i, h := range recs[0] {
		col[h] = i
	}
	ci, si := col["tiled32 GFLOPS / paper"], col["tiled32 speed-up / paper"]
	if ci == 0 || si == 0 || col["paper speed-up (its times)"] == 0 {
		t.Fatalf("CSV header lacks the paper's comparison columns for tiled32: %s", head)
	}
	if got := recs[1][col["paper speed-up (its times)"]]; !strings.HasPrefix(got, "7.58") {
		t.Errorf("paper speed-up at 128 %s, want 7.58 (its times)", got)
	}
	if got := recs[1][si]; !strings.HasPrefix(got, "13.19") {
		t.Errorf("tiled32 speed-up / paper at 128: %s, want 100 / 7.58 = 13.19", got)
	}
	// CSV is for programs: every figure reads back as the float64 the
	// table holds (it was rounded to 3 or 4 digits, as the text is), and
	// a figure the clock could not tell is an empty cell, not "—".
	for i, r := range tb.Rows {
		rec := recs[i+1]
		g := r.GPU[0]
		for name, want := range map[string]float64{"CPU gonum ms": r.GonumMS, "CPU gonum GFLOPS": r.GonumGFLOPS,
			"tiled32 ms (mean)": g.MeanMS, "tiled32 GFLOPS": g.GFLOPS, "tiled32 end-to-end ms": g.EndToEndMS} {
			if got, err := strconv.ParseFloat(rec[col[name]], 64); err != nil || got != want {
				t.Errorf("N=%d %s: CSV %q, want %v exactly", r.N, name, rec[col[name]], want)
			}
		}
	}
	zero := example()
	zero.Rows[0].GPU[0].MeanMS = 0
	b.Reset()
	zero.Write(&b, report.CSV)
	if zr, _ := csv.NewReader(&b).ReadAll(); len(zr) < 2 || zr[1][col["tiled32 ms (mean)"]] != "" {
		t.Errorf("a time of 0 in CSV: %q, want an empty cell", zr[1])
	}
	b.Reset()
	tb.Write(&b, report.JSON)
	var back Table
	if err := json.Unmarshal(b.Bytes(), &back); err != nil || len(back.Rows) != 4 || back.Rows[3].CPUSkipped == "" {
		t.Fatalf("JSON: %v %+v", err, back)
	}
	b.Reset()
	tb.Write(&b, report.Markdown)
	md := b.String()
	if !strings.Contains(md, "| N | CPU naive ms") || strings.Count(md, "\n| ") != 5 || !strings.Contains(md, "Command: `glmul table`") {
		t.Errorf("Markdown:\n%s", md)
	}
	b.Reset()
	tb.Write(&b, report.Text)
	if !strings.Contains(b.String(), "device  Test") || !strings.Contains(b.String(), "skipped") {
		t.Errorf("text:\n%s", b.String())
	}
}

func TestPlotFig3PNGAndSVG(t *testing.T) {
	tb := example()
	var b bytes.Buffer
	if err := tb.Fig3(&b, "png"); err != nil {
		t.Fatal(err)
	}
	if out := os.Getenv("GLMUL_FIG3_OUT"); out != "" {
		os.WriteFile(out, b.Bytes(), 0o644)
	}
	img, err := png.Decode(bytes.NewReader(b.Bytes()))
	if err != nil {
		t.Fatal(err)
	}
	w, h := img.Bounds().Dx(), img.Bounds().Dy()
	wantW, wantH := int(PlotWidth.Dots(96)+0.5), int(PlotHeight.Dots(96)+0.5)
	if abs(w-wantW) > 1 || abs(h-wantH) > 1 {
		t.Errorf("PNG %d×%d, want %d×%d", w, h, wantW, wantH)
	}
	b.Reset()
	if err := tb.Fig3(&b, "svg"); err != nil {
		t.Fatal(err)
	}
	var svg struct {
		XMLName xml.Name
		Width   string `xml:"width,attr"`
		Height  string `xml:"height,attr"`
	}
	if err := xml.Unmarshal(b.Bytes(), &svg); err != nil || svg.XMLName.Local != "svg" {
		t.Fatalf("SVG: %v %v", err, svg.XMLName)
	}
	if !strings.HasPrefix(svg.Width, "453.5") || !strings.HasPrefix(svg.Height, "566.9") {
		t.Errorf("SVG %s × %s, want 16 cm × 20 cm in points", svg.Width, svg.Height)
	}
	for _, want := range []string{"speed-up over naive CPU", "GPU: kernel tiled32", "GPU: Quadro 4000"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("SVG lacks %q", want)
		}
	}
}

func abs(x int) int {
	if x < 0 {
		return -x
	}
	return x
}

// TestZeroTimeIsUnknown: a time the clock read as 0 (Windows, Wine) and
// the rates made from it print as unknown, not as 0 GFLOPS or 0× (issue 26).
func TestZeroTimeIsUnknown(t *testing.T) {
	if num(0) != "—" || num(0.5) != "0.5" || num(12.345) != "12.35" {
		t.Errorf("num(0) %q, num(0.5) %q, num(12.345) %q", num(0), num(0.5), num(12.345))
	}
}

// A table says the warm-up rule it was measured with, not today's: -from
// re-renders saved tables, and one saved without a rule says so.
func TestWarmupRecorded(t *testing.T) {
	tb := example()
	for _, c := range []struct{ rule, want string }{
		{"at least 0.3 s", "mean of 10 runs after a warm-up: at least 0.3 s."},
		{"", "after a warm-up: its rule is not recorded in this table."},
		// Saved before 2026-12, naming measure.Options.Ramp: in words.
		{"at least 0.5 s (idle 0.5 s or more before, or Ramp), then until steady", "after a warm-up: at least 0.5 s before every product, then until steady."},
	} {
		tb.Warmup = c.rule
		var b bytes.Buffer
		if err := tb.Write(&b, report.Markdown); err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(b.String(), c.want) {
			t.Errorf("rule %q: markdown lacks %q:\n%s", c.rule, c.want, b.String()[:300])
		}
	}
}

// TestFloat64Labelled: a float64 table says so in its text preamble, its
// CSV's type column and Fig. 3's title, and names gonum's Dgemm; a table
// without a type (saved before -type) is float32, with Sgemm.
func TestFloat64Labelled(t *testing.T) {
	for _, c := range []struct{ typ, want, gemm string }{{"", "float32", "Sgemm"}, {Float64, "float64", "Dgemm"}} {
		tb := example()
		tb.ComparePaper, tb.Type = false, c.typ
		var text, csv bytes.Buffer
		if err := tb.Write(&text, report.Text); err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(text.String(), "type    "+c.want+": the naive CPU loop, gonum's "+c.gemm) {
			t.Errorf("type %q: text lacks the type line:\n%s", c.typ, text.String())
		}
		if err := tb.Write(&csv, report.CSV); err != nil {
			t.Fatal(err)
		}
		lines := strings.Split(strings.TrimSpace(csv.String()), "\n")
		if !strings.HasSuffix(lines[0], ",type") || !strings.HasSuffix(lines[1], ","+c.want) {
			t.Errorf("type %q: CSV lacks the type column:\n%s", c.typ, csv.String())
		}
		fig := renderSVG(t, tb)
		for _, s := range []string{"CPU vs GPU matrix multiplication in " + c.want + ": ", "CPU: gonum " + c.gemm} {
			if _, ok := fig.find(s); !ok {
				t.Errorf("type %q: Fig. 3 lacks %q", c.typ, s)
			}
		}
	}
}
