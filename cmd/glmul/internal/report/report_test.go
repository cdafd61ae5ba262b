package report

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"errors"
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/glmul/glmul/validate"
)

func TestFormats(t *testing.T) {
	r := Run{M: 3, K: 4, N: 5, Kernel: "tiled32", Timings: Timings{
		Upload: time.Millisecond, Readback: time.Millisecond, Runs: 1},
		Summary:    Summary{TimingSource: "wall"},
		Validation: validate.Result{Mode: validate.Full, OK: true}}
	var b bytes.Buffer
	if err := r.Write(&b, CSV); err != nil {
		t.Fatal(err)
	}
	recs, err := csv.NewReader(&b).ReadAll()
	if err != nil || len(recs) != 2 || len(recs[1]) != len(CSVHeader) || recs[1][0] != "3" {
		t.Fatalf("CSV %v %v", err, recs)
	}
	b.Reset()
	r.Write(&b, Text)
	if !strings.Contains(b.String(), "A 3×4, B 4×5") || !strings.Contains(b.String(), "wall clock after glFinish") {
		t.Fatalf("text:\n%s", b.String())
	}
	if FormatGFLOPS(0.4849) != "0.485" || FormatGFLOPS(11) != "11.00" || FormatGFLOPS(39616.54) != "39616.5" {
		t.Fatal(FormatGFLOPS(0.4849), FormatGFLOPS(11), FormatGFLOPS(39616.54))
	}
	if _, err := CheckFormat("xml", Text, JSON); err == nil || !strings.Contains(err.Error(), "use text, json") {
		t.Fatalf("CheckFormat(xml) = %v", err)
	}
	if f, err := CheckFormat("json", Text, JSON); err != nil || f != JSON {
		t.Fatal(f, err)
	}
}

// failingWriter fails every write, as /dev/full does.
type failingWriter struct{}

func (failingWriter) Write([]byte) (int, error) { return 0, errors.New("no space left on device") }

func TestWriteErrorsAreReturned(t *testing.T) {
	r := Run{Timings: Timings{Runs: 1}, Summary: Summary{TimingSource: "wall"}}
	tb := Table{Preamble: [][2]string{{"device", "x"}}, Header: []string{"a"}, Rows: [][]string{{"1"}}, JSON: 1}
	for _, f := range []Format{Text, CSV, JSON} {
		if err := r.Write(failingWriter{}, f); err == nil {
			t.Errorf("Run.Write %s to a failing writer: no error", f)
		}
		if err := tb.Write(failingWriter{}, f); err == nil {
			t.Errorf("Table.Write %s to a failing writer: no error", f)
		}
	}
	if err := tb.Write(failingWriter{}, Markdown); err == nil {
		t.Error("Table.Write markdown to a failing writer: no error")
	}
}

// TestKernelSlowerThanEndToEnd: separate runs may disagree (a kernel's
// timed runs slower than the whole pipelined product after them); the
// report must say so rather than print the two rates as if consistent.
// The overlapping pass cannot produce it (its compute time is a merge of
// GPU timestamps within the pass: glcompute's TestMergedSpan).
func TestKernelSlowerThanEndToEnd(t *testing.T) {
	r := Run{M: 16384, K: 16384, N: 16384, Kernel: "fast", Timings: Timings{Runs: 3, Steps: 4},
		Summary: Summary{TimingSource: "gl-timer", KernelMeanMS: 584, KernelMedMS: 300, KernelMinMS: 190, EndToEndMS: 297}}
	var b bytes.Buffer
	r.Write(&b, Text)
	if !strings.Contains(b.String(), "note       the compute runs' mean (584.00 ms, the whole product at once) is longer than the whole pipelined product (297.00 ms") {
		t.Errorf("no note on a kernel mean longer than end to end:\n%s", b.String())
	}
	r.Summary.KernelMeanMS = 190
	b.Reset()
	r.Write(&b, Text)
	if strings.Contains(b.String(), "note ") {
		t.Errorf("a note on consistent figures:\n%s", b.String())
	}
}

// TestNoTimerSaysWhy: the wall-clock note names the real reason: OpenGL ES
// has no GL timer; a desktop driver's timer gave nothing plausible (issue
// 23: desktop GL reports said "OpenGL ES has none").
func TestNoTimerSaysWhy(t *testing.T) {
	for version, want := range map[string]string{
		"OpenGL 4.5 (Core Profile) Mesa 22.3.6": "this driver's GL timer gave no plausible times",
		"OpenGL ES 3.2 Mesa 22.3.6":             "OpenGL ES has no GL timer",
	} {
		for _, overlapping := range []bool{false, true} {
			r := Run{M: 3, K: 4, N: 5, Device: Device{Version: version}, Timings: Timings{Runs: 1, Overlapping: overlapping},
				Summary: Summary{TimingSource: "wall"}}
			var b bytes.Buffer
			r.Write(&b, Text)
			if !strings.Contains(b.String(), want) || strings.Contains(version, "ES") != strings.Contains(b.String(), "OpenGL ES") {
				t.Errorf("%s (overlapping %v): want %q:\n%s", version, overlapping, want, b.String())
			}
		}
	}
}

// TestKernelFasterThanTheClock: runs the clock read as 0 ms (Windows'
// and Wine's coarse clock) give no kernel rate, not 0 or millions.
func TestKernelFasterThanTheClock(t *testing.T) {
	r := Run{M: 64, K: 64, N: 64, Timings: Timings{Runs: 10}, Summary: Summary{TimingSource: "wall", EndToEndMS: 0.57, GFLOPSEndToEnd: 0.915}}
	var b bytes.Buffer
	r.Write(&b, Text)
	if !strings.Contains(b.String(), "GFLOPS     kernel unknown (its runs took less than the clock can tell); 0.915 end to end") {
		t.Errorf("report:\n%s", b.String())
	}
}

// TestStreamedSaid: the text report says when the pipelined pass ran
// streamed, which before it said only in JSON.
func TestStreamedSaid(t *testing.T) {
	for _, streamed := range []bool{false, true} {
		r := Run{M: 4096, K: 4096, N: 4096, Kernel: "fast", Timings: Timings{Runs: 3, Steps: 4, Streamed: streamed},
			Summary: Summary{TimingSource: "gl-timer", KernelMeanMS: 2.8, KernelMedMS: 2.8, KernelMinMS: 2.8, EndToEndMS: 9.2}}
		var b bytes.Buffer
		r.Write(&b, Text)
		if got := strings.Contains(b.String(), "in 4 steps, streamed ("); got != streamed {
			t.Errorf("streamed %v: the pipelined line says streamed: %v\n%s", streamed, got, b.String())
		}
	}
}

// TestSplitKAsked: the kernel line says where -split-k asked for more
// slices than the product took (before: silently fewer).
func TestSplitKAsked(t *testing.T) {
	for _, c := range []struct {
		asked, splits int
		want, not     string
	}{
		{1000, 16, "K split 16 ways (a second pass sums them), not the 1000 -split-k asked", "K not split"},
		{3, 1, "K not split though -split-k 3 asked", "not the"},
		{4, 4, "K split 4 ways (a second pass sums them)\n", "asked"},
		{0, 2, "K split 2 ways (a second pass sums them)\n", "asked"},
	} {
		r := Run{M: 64, K: 64, N: 64, Kernel: "fast", SplitKAsked: c.asked, Timings: Timings{Runs: 1, Splits: c.splits},
			Summary: Summary{TimingSource: "wall", KernelMeanMS: 1, KernelMedMS: 1, KernelMinMS: 1, EndToEndMS: 2}}
		var b bytes.Buffer
		r.Write(&b, Text)
		if s := b.String(); !strings.Contains(s, c.want) || strings.Contains(s, c.not) {
			t.Errorf("-split-k %d, %d slices: want %q, not %q:\n%s", c.asked, c.splits, c.want, c.not, s)
		}
	}
}

// TestNoOverlapSum: a pipelined pass no shorter than its stages names
// their sum (upload, a run, readback), not its own time, which once
// stood in the parentheses (45.37 ms where the stages added to 43.67).
func TestNoOverlapSum(t *testing.T) {
	r := Run{M: 512, K: 512, N: 512, Kernel: "fast", Timings: Timings{Runs: 3, Steps: 4},
		Summary: Summary{TimingSource: "wall", KernelMeanMS: 20, KernelMedMS: 20, KernelMinMS: 20, WallMeanMS: 20,
			UploadMS: 10, ReadbackMS: 13.67, EndToEndMS: 45.37}}
	var b bytes.Buffer
	r.Write(&b, Text)
	if !strings.Contains(b.String(), "no shorter than the stages above one after another (43.67 ms)") {
		t.Errorf("the pipelined line should name the stages' 43.67 ms:\n%s", b.String())
	}
}

// TestOnePass: a product measured within its pass in panels ran once:
// its rate is one pass's, not a mean and median of -reps runs.
func TestOnePass(t *testing.T) {
	r := Run{M: 512, K: 512, N: 512, Kernel: "fast", Timings: Timings{Runs: 1, Steps: 16, Overlapping: true, Panels: "8×2 panels of 64×256"},
		Summary: Summary{TimingSource: "gl-timer", KernelMeanMS: 12.3, KernelMedMS: 12.3, KernelMinMS: 12.3, EndToEndMS: 18.5, GFLOPSMean: 21.8, GFLOPSMedian: 21.8, GFLOPSEndToEnd: 14.5}}
	var b bytes.Buffer
	r.Write(&b, Text)
	out := b.String()
	for _, w := range []string{"one pass: -reps is not used in panels", "GFLOPS     21.80 kernel (one pass); 14.50 end to end"} {
		if !strings.Contains(out, w) {
			t.Errorf("lacks %q:\n%s", w, out)
		}
	}
	if strings.Contains(out, "(mean)") {
		t.Errorf("a mean of one pass:\n%s", out)
	}
	if !strings.Contains(out, "panels; no warm-up") {
		t.Errorf("no warm-up ran, and the report does not say so:\n%s", out)
	}
	r.Warmup, r.Timings.WarmupCount, r.Timings.WarmupTime = 1, 1, 372*time.Millisecond
	b.Reset()
	r.Write(&b, Text)
	if w := "panels; after 1 warm-up run of a panel, 372 ms"; !strings.Contains(b.String(), w) {
		t.Errorf("lacks %q:\n%s", w, b.String())
	}
}

// TestWarmupCounted: the compute line gives the warm-up's runs as counted
// ("1+ warm-up run(s)" gave -warmup alone, a lower bound) and its time to
// two digits ("0 ms" for a warm-up under half a millisecond).
func TestWarmupCounted(t *testing.T) {
	for _, c := range []struct {
		runs, warm int
		took       time.Duration
		want       string
	}{
		{10, 31, 27 * time.Millisecond, "over 10 runs after 31 warm-up runs, 27 ms in all"},
		{1, 1, 400 * time.Microsecond, "over 1 run after 1 warm-up run, 0.40 ms in all"},
		{2, 3, 3200 * time.Microsecond, "over 2 runs after 3 warm-up runs, 3.2 ms in all"},
	} {
		r := Run{M: 64, K: 64, N: 64, Warmup: 1, Timings: Timings{Runs: c.runs, WarmupCount: c.warm, WarmupTime: c.took, WarmupRule: "until steady"},
			Summary: Summary{TimingSource: "gl-timer", KernelMeanMS: 1, KernelMedMS: 1, KernelMinMS: 1}}
		var b bytes.Buffer
		r.Write(&b, Text)
		if !strings.Contains(b.String(), c.want) {
			t.Errorf("want %q:\n%s", c.want, b.String())
		}
	}
}

func TestPlural(t *testing.T) {
	for _, c := range []struct {
		n          int
		noun, want string
	}{{1, "run", "1 run"}, {0, "run", "0 runs"}, {3, "shape class", "3 shape classes"}, {2, "batch", "2 batches"}, {1, "shape class", "1 shape class"}} {
		if got := Plural(c.n, c.noun); got != c.want {
			t.Errorf("Plural(%d, %q) = %q, want %q", c.n, c.noun, got, c.want)
		}
	}
}

// TestQuotedPaths: a path that is not UTF-8 (Linux allows any bytes but
// '/' and NUL) reaches the JSON report faithfully, as a Go string literal
// beside the lossy string (it was the lossy string alone, U+FFFD for the
// byte); UTF-8 paths add nothing.
func TestQuotedPaths(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	bad := "c" + string([]byte{0x80 + byte(rng.IntN(0x40)), 0xff}) + "é.npy"
	for _, c := range []struct {
		inputs []string
		output string
	}{{[]string{"a.npy", "b.npy"}, bad}, {[]string{"a.npy", bad}, "c.npy"}, {[]string{"a.npy", "b.npy"}, "ç.npy"}} {
		r := Mul{Inputs: c.inputs, Output: c.output}
		var b bytes.Buffer
		if err := r.Write(&b, JSON); err != nil {
			t.Fatal(err)
		}
		var got struct {
			Inputs       []string
			Output       string
			InputsQuoted []string `json:"inputs_quoted"`
			OutputQuoted string   `json:"output_quoted"`
		}
		if err := json.Unmarshal(b.Bytes(), &got); err != nil {
			t.Fatal(err)
		}
		out, err := strconv.Unquote(got.OutputQuoted)
		switch {
		case c.output == bad && (err != nil || out != bad):
			t.Errorf("output %q: output_quoted %q unquotes to %q, %v", c.output, got.OutputQuoted, out, err)
		case c.output != bad && (got.OutputQuoted != "" || got.Output != c.output):
			t.Errorf("output %q: %q, output_quoted %q", c.output, got.Output, got.OutputQuoted)
		}
		if c.inputs[1] != bad {
			if got.InputsQuoted != nil {
				t.Errorf("inputs %q: inputs_quoted %q", c.inputs, got.InputsQuoted)
			}
			continue
		}
		for i, q := range got.InputsQuoted {
			if p, err := strconv.Unquote(q); err != nil || p != c.inputs[i] {
				t.Errorf("inputs_quoted[%d] %q unquotes to %q, %v; want %q", i, q, p, err, c.inputs[i])
			}
		}
		if len(got.InputsQuoted) != 2 {
			t.Errorf("inputs_quoted %q, want both inputs", got.InputsQuoted)
		}
	}
}
