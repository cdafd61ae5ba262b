package table

import (
	"bytes"
	"encoding/json"
	"encoding/xml"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// slowGPU is a table shaped like llvmpipe's (docs/results/llvmpipe): the
// naive CPU below 1 GFLOPS at the large sizes, one kernel slower than the
// naive CPU (speed-ups below 1), and sizes that stop short of the paper's
// 4096, with the paper's numbers asked for.
func slowGPU() *Table {
	t := &Table{Device: "Mesa | llvmpipe (LLVM 15.0.6, 256 bits) | OpenGL 4.5 (Core Profile) Mesa 22.3.6",
		CPU: "AMD EPYC, 2 threads", When: time.Date(2026, 11, 21, 0, 0, 0, 0, time.UTC), Reps: 10, ComparePaper: true}
	for i, n := range []int{128, 256, 512, 1024, 2048} {
		cpuGF := 1.5 / float64(i+1)
		r := Row{N: n, CPUms: msAt(n, cpuGF), CPUGFLOPS: cpuGF, GonumMS: msAt(n, 20), GonumGFLOPS: 20}
		for _, k := range []struct {
			name   string
			gflops float64
		}{{"tiled32", 0.4}, {"fast", 8}} {
			ms := msAt(n, k.gflops)
			r.GPU = append(r.GPU, GPUResult{Kernel: k.name, Spec: k.name, MeanMS: ms, MedianMS: ms, GFLOPS: k.gflops, TimingSource: "wall", Valid: true})
		}
		t.Rows = append(t.Rows, r)
	}
	return t
}

// msAt is the time in milliseconds of an n×n×n product at gf GFLOPS.
func msAt(n int, gf float64) float64 {
	f := float64(n)
	return 2 * f * f * f / (gf * 1e6)
}

// svgFigure is what the tests read from an SVG of Fig. 3: every text in
// drawing order, and every path with its style.
type svgFigure struct {
	texts []svgText
	paths []svgPath
}

type svgText struct {
	s string
	// y is the baseline's height above the page's bottom edge, for text
	// that is not rotated; the drawing's group flips y, each text flips back.
	y float64
}

type svgPath struct {
	d     string
	style map[string]string
}

// renderSVG draws tb's Fig. 3 as SVG and parses it.
func renderSVG(t *testing.T, tb *Table) svgFigure {
	t.Helper()
	var b bytes.Buffer
	if err := tb.Fig3(&b, "svg"); err != nil {
		t.Fatal(err)
	}
	var fig svgFigure
	dec := xml.NewDecoder(&b)
	for {
		tok, err := dec.Token()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatalf("SVG: %v", err)
		}
		el, ok := tok.(xml.StartElement)
		if !ok {
			continue
		}
		attr := map[string]string{}
		for _, a := range el.Attr {
			attr[a.Name.Local] = a.Value
		}
		switch el.Name.Local {
		case "text":
			var s string
			if err := dec.DecodeElement(&s, &el); err != nil {
				t.Fatalf("SVG text: %v", err)
			}
			y, _ := strconv.ParseFloat(attr["y"], 64)
			fig.texts = append(fig.texts, svgText{s: s, y: -y})
		case "path":
			p := svgPath{d: attr["d"], style: map[string]string{}}
			for _, kv := range strings.Split(attr["style"], ";") {
				if k, v, ok := strings.Cut(kv, ":"); ok {
					p.style[k] = v
				}
			}
			fig.paths = append(fig.paths, p)
		}
	}
	return fig
}

// count returns how many texts read s.
func (f svgFigure) count(s string) int {
	n := 0
	for _, t := range f.texts {
		if t.s == s {
			n++
		}
	}
	return n
}

// find returns the first text that starts with prefix.
func (f svgFigure) find(prefix string) (svgText, bool) {
	for _, t := range f.texts {
		if strings.HasPrefix(t.s, prefix) {
			return t, true
		}
	}
	return svgText{}, false
}

// sizeLabels returns the whole-number texts that are not powers of ten:
// the N axes' tick labels (the GFLOPS axis's labels are powers of ten, the
// speed-up axis's end in "×").
func (f svgFigure) sizeLabels() []int {
	var ns []int
	for _, t := range f.texts {
		n, err := strconv.Atoi(t.s)
		if err != nil || n <= 0 {
			continue
		}
		if e := math.Log10(float64(n)); e == math.Trunc(e) {
			continue
		}
		ns = append(ns, n)
	}
	slices.Sort(ns)
	return ns
}

// dashed returns the stroked paths with a dash pattern; outlines returns
// the closed stroked paths (open markers: the frame and the grid are open
// lines).
func (f svgFigure) dashed() (n int) {
	for _, p := range f.paths {
		if d := p.style["stroke-dasharray"]; d != "" && d != "none" {
			n++
		}
	}
	return n
}

func (f svgFigure) outlines() (n int) {
	for _, p := range f.paths {
		if p.style["fill"] == "none" && strings.Contains(p.d, "Z") {
			n++
		}
	}
	return n
}

// measuredSizes returns tb's N values, each twice: one N axis per panel.
func measuredSizes(tb *Table) []int {
	var ns []int
	for _, r := range tb.Rows {
		ns = append(ns, r.N, r.N)
	}
	slices.Sort(ns)
	return ns
}

func TestPlotFig3TwoPanels(t *testing.T) {
	tb := slowGPU()
	fig := renderSVG(t, tb)
	// One panel in GFLOPS, one in speed-up, each with its own N axis.
	if fig.count("GFLOPS") != 1 {
		t.Errorf("%d y labels \"GFLOPS\", want 1", fig.count("GFLOPS"))
	}
	if _, ok := fig.find("speed-up over"); !ok {
		t.Error("no speed-up y label")
	}
	if got, want := fig.sizeLabels(), measuredSizes(tb); !slices.Equal(got, want) {
		t.Errorf("N tick labels %v, want each measured N once per panel: %v (none for the paper's 4096, not measured here)", got, want)
	}
	// Every decade labelled, those below 1 too, on both axes: the naive CPU
	// falls to 0.3 GFLOPS and tiled32's speed-up to 0.27.
	for _, tick := range []string{"0.1", "1", "10", "100", "0.1×", "1×", "10×", "100×"} {
		if fig.count(tick) != 1 {
			t.Errorf("tick label %q drawn %d times, want once", tick, fig.count(tick))
		}
	}
	// The machine is named.
	for _, s := range []string{"GPU: llvmpipe (LLVM 15.0.6, 256 bits)", "CPU: AMD EPYC, 2 threads"} {
		if _, ok := fig.find(s); !ok {
			t.Errorf("no text names the machine with %q", s)
		}
	}
	// The legend sits under both panels: below the N label of the lower
	// one, the lowest thing a panel draws.
	nLabel, ok := fig.find("N (N×N matrices")
	if !ok {
		t.Fatal("no N axis label")
	}
	for _, name := range []string{"GPU: kernel tiled32", "GPU: kernel fast", "CPU: naive loop", "GPU: Quadro 4000"} {
		if e, ok := fig.find(name); !ok || e.y >= nLabel.y {
			t.Errorf("legend entry %q (found %v) at y=%.1f, not under the N label at y=%.1f", name, ok, e.y, nLabel.y)
		}
	}
}

// Ours solid with filled markers, the paper's dashed with open ones: the
// two stay apart without colour.
func TestPlotFig3PaperDashedOursSolid(t *testing.T) {
	tb := slowGPU()
	tb.ComparePaper = false
	ours := renderSVG(t, tb)
	if n := ours.dashed(); n != 0 {
		t.Errorf("without the paper, %d dashed paths: only the paper's curves may be dashed", n)
	}
	if n := ours.outlines(); n != 0 {
		t.Errorf("without the paper, %d open markers: ours are filled", n)
	}
	tb.ComparePaper = true
	both := renderSVG(t, tb)
	// GPU and CPU GFLOPS and the speed-up, and two legend lines.
	if n := both.dashed(); n != 5 {
		t.Errorf("with the paper, %d dashed paths, want 5: its three curves and two legend lines", n)
	}
	// Five sizes on three curves, and two legend markers.
	if n := both.outlines(); n != 17 {
		t.Errorf("with the paper, %d open markers, want 17", n)
	}
}

func TestPlotFig3EdgeCases(t *testing.T) {
	// One size the paper lacks (cmd/glmul's -sizes 64 test): no paper curve,
	// one N tick.
	one := slowGPU()
	one.Rows = one.Rows[:1]
	one.Rows[0].N = 64
	fig := renderSVG(t, one)
	if got := fig.sizeLabels(); !slices.Equal(got, []int{64, 64}) {
		t.Errorf("N tick labels %v, want [64 64]", got)
	}
	if fig.dashed() != 0 {
		t.Error("a paper curve drawn with no size in common")
	}
	// The naive CPU skipped everywhere: no speed-ups, said so.
	skipped := slowGPU()
	for i := range skipped.Rows {
		r := &skipped.Rows[i]
		r.CPUms, r.CPUGFLOPS, r.CPUSkipped = 0, 0, "above -cpu-max 64"
	}
	skipped.ComparePaper = false
	fig = renderSVG(t, skipped)
	if _, ok := fig.find("no speed-ups"); !ok {
		t.Error("empty speed-up panel without a note")
	}
	if _, ok := fig.find("CPU: naive loop"); ok {
		t.Error("the legend names the naive CPU loop, which has no point")
	}
	// Nothing measured: an error, not a blank figure.
	if err := (&Table{Rows: []Row{{N: 128}}}).Fig3(io.Discard, "svg"); err == nil {
		t.Error("a table with no GFLOPS drew a figure")
	}
}

// The committed tables (docs/results/*/table.json) draw with one N tick per
// measured size and name their GPU.
func TestPlotFig3CommittedTables(t *testing.T) {
	files, _ := filepath.Glob("../../../../docs/results/*/table.json")
	if len(files) == 0 {
		t.Fatal("no docs/results/*/table.json: the committed tables are missing (or this test moved)")
	}
	for _, file := range files {
		b, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		var tb Table
		if err := json.Unmarshal(b, &tb); err != nil {
			t.Fatalf("%s: %v", file, err)
		}
		tb.ComparePaper = true
		fig := renderSVG(t, &tb)
		if got, want := fig.sizeLabels(), measuredSizes(&tb); !slices.Equal(got, want) {
			t.Errorf("%s: N tick labels %v, want %v", file, got, want)
		}
		renderer := strings.Split(tb.Device, " | ")[1]
		if _, ok := fig.find("GPU: " + renderer); !ok {
			t.Errorf("%s: no title names %q", file, renderer)
		}
	}
}
