package main

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/glmul/glmul/cmd/glmul/internal/measure"
	"github.com/glmul/glmul/cmd/glmul/internal/report"
	"github.com/glmul/glmul/cmd/glmul/internal/sweep"
	"github.com/glmul/glmul/glcompute"
	"github.com/glmul/glmul/glcompute/tuner"
	"github.com/glmul/glmul/glcompute/tuning"
)

func TestBenchFormats(t *testing.T) {
	needGL(t)
	args := []string{"bench", "-backend", "egl", "-shapes", "33,20x7x9", "-kernels", "tiled32,fast", "-reps", "2", "-progress", "off"}
	code, stdout, stderr := glmul(append(args, "-format", "csv")...)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	recs, err := csv.NewReader(strings.NewReader(stdout)).ReadAll()
	if err != nil || len(recs) != 5 || recs[0][0] != "m" || recs[4][0] != "20" || recs[4][3] != "fast" || recs[4][10] != "true" {
		t.Fatalf("CSV %v: %q", err, recs)
	}
	code, stdout, _ = glmul(append(args, "-format", "json")...)
	var j struct {
		Results []benchRow `json:"results"`
	}
	if code != 0 || json.Unmarshal([]byte(stdout), &j) != nil || len(j.Results) != 4 || len(j.Results[0].Times) != 2 {
		t.Fatalf("JSON exit %d: %s", code, stdout)
	}
	code, stdout, _ = glmul(append(args, "-format", "bench")...)
	if code != 0 || strings.Count(stdout, "BenchmarkGEMM/kernel=fast/shape=33x33x33 \t1\t") != 2 || !strings.Contains(stdout, "flop/s") {
		t.Fatalf("bench format, exit %d:\n%s", code, stdout)
	}
	code, stdout, _ = glmul(append(args, "-format", "text")...)
	if code != 0 || !strings.HasPrefix(stdout, "device ") || !strings.Contains(stdout, "20x7x9") || strings.Count(stdout, "true") != 4 {
		t.Fatalf("text, exit %d:\n%s", code, stdout)
	}
}

// TestTune runs a small sweep without and with saving, and -show.
func TestTune(t *testing.T) {
	needGL(t)
	cache := filepath.Join(t.TempDir(), "tuned.json")
	t.Setenv("GLMUL_TUNE_CACHE", cache)
	specs := "fast:64x64x8_8x4,fast:32x32x8_4x4"
	args := []string{"tune", "-backend", "egl", "-n", "40", "-reps", "1", "-candidates", specs, "-progress", "on"}
	// One class, not saved.
	code, stdout, stderr := glmul(append(args, "-classes", "thin-k", "-save=false")...)
	if code != 0 || strings.Contains(stdout, "square") || !strings.Contains(stdout, "thin-k (40×10×40, 80×20×80, 20×5×20)") {
		t.Errorf("-classes thin-k: exit %d\n%s%s", code, stdout, stderr)
	}
	if _, err := os.Stat(cache); err == nil {
		t.Fatal("-save=false wrote the cache")
	}
	if code, _, stderr = glmul("tune", "-classes", "wide"); code != 2 || !strings.Contains(stderr, "unknown shape class") {
		t.Errorf("-classes wide: exit %d, %s", code, stderr)
	}
	// Every class, saved.
	code, stdout, stderr = glmul(append(args, "-format", "json")...)
	var j struct {
		Classes []struct {
			Class      string            `json:"class"`
			Shapes     []string          `json:"shapes"`
			Best       sweep.Candidate   `json:"best"`
			Builtin    sweep.Candidate   `json:"builtin"`
			Saved      bool              `json:"beats_builtin"`
			Candidates []sweep.Candidate `json:"candidates"`
		} `json:"classes"`
	}
	if code != 0 || json.Unmarshal([]byte(stdout), &j) != nil || len(j.Classes) != 3 {
		t.Fatalf("exit %d, %s\n%s", code, stderr, stdout)
	}
	saved := 0
	for i, want := range []string{"square 20×20×20, 40×40×40, 80×80×80", "long-k 1×80×1, 5×160×5, 20×80×20", "thin-k 40×10×40, 80×20×80, 20×5×20"} {
		// The two specs and the built-in choice.
		c := j.Classes[i]
		if c.Class+" "+strings.Join(c.Shapes, ", ") != want || len(c.Candidates) != 3 || !c.Best.Valid || !c.Builtin.Valid || c.Builtin.Kernel != "fast" {
			t.Errorf("class %d: %+v, want %s with the 2 specs and the built-in choice, all valid", i, c, want)
		}
		if c.Saved != (c.Best.Kernel != c.Builtin.Kernel && c.Best.GFLOPS >= tuning.TunedMargin*c.Builtin.GFLOPS) {
			t.Errorf("%s: saved %v, best %+v, built-in %+v", c.Class, c.Saved, c.Best, c.Builtin)
		}
		if c.Saved {
			saved++
		}
	}
	// -n 40 is under a quarter of the default (256 on llvmpipe, 2048 on a
	// GPU): the saving run says its winners come from small products;
	// the one with -save=false did not save, so said nothing.
	if !strings.Contains(stderr, "tune: -n 40: the winners are cached for every product of their classes") {
		t.Errorf("tune -n 40 saving: no note on the small products:\n%s", stderr)
	}
	_, _, quiet := glmul(append(args, "-classes", "thin-k", "-save=false")...)
	if strings.Contains(quiet, "the winners are cached") {
		t.Errorf("tune -save=false said the winners are cached:\n%s", quiet)
	}
	// The cache holds exactly the classes whose winner beat the built-in
	// choice, and -show says what each class uses.
	c, err := tuning.Load(cache)
	if err != nil || len(c.Entries) != saved {
		t.Fatalf("%d cache entries (%v), %d classes saved", len(c.Entries), err, saved)
	}
	// A later run over fewer candidates re-measures the cached kernel of
	// its class (so it never removes one it did not beat).
	code, stdout, stderr = glmul("tune", "-backend", "egl", "-n", "40", "-reps", "1", "-candidates", "fast:32x32x8_4x4", "-classes", "long-k", "-format", "json")
	var again struct {
		Classes []struct {
			Candidates []sweep.Candidate `json:"candidates"`
		} `json:"classes"`
	}
	if code != 0 || json.Unmarshal([]byte(stdout), &again) != nil || len(again.Classes) != 1 {
		t.Fatalf("second tune: exit %d, %s", code, stderr)
	}
	var cachedLong tuning.Entry
	hadLong := false
	for _, e := range c.Entries {
		if e.Class == tuning.LongK {
			cachedLong, hadLong = e, true
		}
	}
	want := 2 // the spec and the built-in choice
	if hadLong && cachedLong.Kernel != "fast:32x32x8_4x4" {
		want = 3
	}
	if n := len(again.Classes[0].Candidates); n != want {
		t.Errorf("second tune measured %d candidates, want %d (cached long-k: %v %q)", n, want, hadLong, cachedLong.Kernel)
	}
	// -show says what the cache holds now (the second tune may have
	// removed the long-k entry if the built-in choice beat it this time).
	if c, err = tuning.Load(cache); err != nil {
		t.Fatal(err)
	}
	code, stdout, _ = glmul("tune", "-show", "-backend", "egl")
	if code != 0 || !strings.Contains(stdout, "uses     ") {
		t.Fatalf("-show: exit %d\n%s", code, stdout)
	}
	for _, e := range c.Entries {
		want := "tuned by glmul tune"
		if e.Class != tuning.Square {
			want = "uses     " + e.Kernel + " for " + string(e.Class) + " products"
		}
		if !strings.Contains(stdout, want) {
			t.Errorf("-show lacks %q:\n%s", want, stdout)
		}
	}
}

// TestOutputsCheckedBeforeWork: output paths that cannot be written fail
// at once, before any measuring, naming the path and not a temporary file.
func TestOutputsCheckedBeforeWork(t *testing.T) {
	dir := t.TempDir()
	corrupt := filepath.Join(dir, "corrupt.json")
	os.WriteFile(corrupt, []byte("garbage"), 0o644)
	for _, c := range []struct {
		env, args []string
		code      int
		want      string
	}{
		{nil, []string{"table", "-plot", "/no/such/dir/f.png", "-sizes", "8"}, 2, "there is no directory /no/such/dir"},
		{nil, []string{"-n", "8", "-dump-program", "/no/such/x.bin"}, 2, "there is no directory /no/such"},
		{[]string{"GLMUL_TUNE_CACHE", dir}, []string{"tune", "-n", "16"}, 1, "is a directory"},
		{[]string{"GLMUL_TUNE_CACHE", corrupt}, []string{"tune", "-n", "16"}, 1, "is not a glmul tuning cache"},
	} {
		if c.env != nil {
			t.Setenv(c.env[0], c.env[1])
		}
		code, stdout, stderr := glmul(c.args...)
		if code != c.code || stdout != "" || !strings.Contains(stderr, c.want) || strings.Contains(stderr, "write-check") {
			t.Errorf("glmul %v: exit %d, stderr %q; want exit %d and %q", c.args, code, stderr, c.code, c.want)
		}
	}
}

// TestCorruptCacheIsNoted: the main command says, in one line, that it
// ignores a corrupt tuning cache.
func TestCorruptCacheIsNoted(t *testing.T) {
	needGL(t)
	bad := filepath.Join(t.TempDir(), "tuned.json")
	os.WriteFile(bad, []byte("garbage"), 0o644)
	t.Setenv("GLMUL_TUNE_CACHE", bad)
	code, _, stderr := glmul("-n", "16", "-backend", "egl")
	if code != 0 || strings.Count(stderr, "note: the built-in kernel configuration is used") != 1 || !strings.Contains(stderr, "not a glmul tuning cache") {
		t.Fatalf("exit %d, stderr %q", code, stderr)
	}
}

// TestTuneShowFormats: tune -show honours -format (issue 23, item 7):
// json is an object with the cache's entries, the device and the kernel
// each shape class uses; text is as before; tune has no csv.
func TestTuneShowFormats(t *testing.T) {
	info := needGL(t)
	d, err := glcompute.Open(&glcompute.Options{Backend: glcompute.BackendEGL, IgnoreTuned: true})
	if err != nil {
		t.Fatal(err)
	}
	spec := ""
	for _, c := range tuner.Of(d).Candidates() {
		if c != info.DefaultKernel && tuner.Of(d).Fits(c) == nil {
			spec = c
			break
		}
	}
	d.Release()
	if spec == "" {
		t.Fatalf("no candidate but the default %s fits %s", info.DefaultKernel, info.Renderer)
	}
	cache := filepath.Join(t.TempDir(), "tuned.json")
	t.Setenv("GLMUL_TUNE_CACHE", cache)
	var c tuning.Cache
	c.Put(tuning.Entry{Driver: measure.Driver(info), Class: tuning.LongK, Kernel: spec, GFLOPS: 1, N: 64})
	c.Put(tuning.Entry{Driver: tuning.Driver{Vendor: "Other", Renderer: "GPU", Version: "1.0"}, Kernel: "fast:64x64x8_8x4", GFLOPS: 2, N: 64}) // before classes: square
	if err := c.Save(cache); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		format string
		check  func(code int, stdout, stderr string) string // what is wrong, or ""
	}{
		{"text", func(code int, stdout, stderr string) string {
			for _, w := range []string{"cache    " + cache + " (2 entries)", "Other | GPU | 1.0, square: fast:64x64x8_8x4", "device   " + info.Vendor,
				"uses     " + info.DefaultKernel + ": ", "uses     " + spec + " for long-k products (tuned by glmul tune)"} {
				if code != 0 || !strings.Contains(stdout, w) {
					return fmt.Sprintf("exit %d, lacks %q", code, w)
				}
			}
			return ""
		}},
		{"json", func(code int, stdout, stderr string) string {
			type class struct{ Class, Kernel, Source string }
			var j struct {
				Cache   string
				Entries []tuning.Entry
				Device  glcompute.Info
				Classes []class
			}
			if err := json.Unmarshal([]byte(stdout), &j); code != 0 || err != nil {
				return fmt.Sprintf("exit %d, not JSON: %v", code, err)
			}
			if j.Cache != cache || len(j.Entries) != 2 || j.Entries[0].Class != tuning.LongK || j.Entries[1].Class != tuning.Square || j.Device.Renderer != info.Renderer {
				return fmt.Sprintf("cache %q, entries %+v, device %+v", j.Cache, j.Entries, j.Device)
			}
			want := []class{{"square", info.DefaultKernel, info.DefaultKernelSource}, {"long-k", spec, "tuned by glmul tune"}}
			if len(j.Classes) != 3 || j.Classes[0] != want[0] || j.Classes[1] != want[1] || j.Classes[2].Class != "thin-k" || j.Classes[2].Kernel != info.DefaultKernel {
				return fmt.Sprintf("classes %+v, want %+v and thin-k on %s", j.Classes, want, info.DefaultKernel)
			}
			return ""
		}},
		{"csv", func(code int, stdout, stderr string) string {
			if code != 2 || stdout != "" || !strings.Contains(stderr, "use text, json") {
				return fmt.Sprintf("exit %d, want 2 and %q", code, "use text, json")
			}
			return ""
		}},
	} {
		code, stdout, stderr := glmul("tune", "-show", "-backend", "egl", "-format", tc.format)
		if wrong := tc.check(code, stdout, stderr); wrong != "" {
			t.Errorf("tune -show -format %s: %s\n%s%s", tc.format, wrong, stdout, stderr)
		}
	}
	// A write that fails (a full disk) is an error, as every command's
	// is: the text once ended with status 0.
	for _, format := range []string{"text", "json"} {
		var errb bytes.Buffer
		code := exitCode(run([]string{"tune", "-show", "-backend", "egl", "-format", format}, failingWriter{}, &errb), &errb)
		if code != 1 || !strings.Contains(errb.String(), "no space left") {
			t.Errorf("tune -show -format %s to a full disk: exit %d, %q", format, code, errb.String())
		}
	}
}

// failingWriter fails every write, as a full disk does.
type failingWriter struct{}

func (failingWriter) Write([]byte) (int, error) { return 0, syscall.ENOSPC }

// TestBenchTextAligned: bench's text table keeps its columns aligned
// when a product is skipped (issue 23, item 8): the reason goes on a line
// under the table, once for the kernels skipped alike, and not in a cell,
// where it widened its column by a sentence.
func TestBenchTextAligned(t *testing.T) {
	info := needGL(t)
	big := int(math.Sqrt(float64(info.MaxSSBOBlockSize/4))) + 1 // over one storage binding
	for _, c := range []struct {
		shapes, kernels string
		skipped         []string // the note lines wanted, each in full up to "..."
	}{
		{"16,20x7x9", "tiled32,fast", nil},
		{"16,99999999,20x7x9", "tiled32,fast", []string{"skipped 99999999x99999999x99999999 tiled32, fast: the 99999999×99999999 by 99999999×99999999 product needs ... GiB of host memory for A, B and C; this machine has ..."}},
		{"99999999x99999999x1,16,1x99999999x99999999", "fast", []string{"skipped 99999999x99999999x1 fast: the 99999999×99999999 by 99999999×1 product needs ...", "skipped 1x99999999x99999999 fast: the 1×99999999 by 99999999×99999999 product needs ..."}},
		// tiled32 cannot run in panels: refused before its inputs are made.
		{fmt.Sprintf("16,%d", big), "tiled32", []string{fmt.Sprintf("skipped %[1]dx%[1]dx%[1]d tiled32: glcompute: matrix too large: ...does not fit one shader storage binding...", big)}},
	} {
		code, stdout, stderr := glmul("bench", "-backend", "egl", "-shapes", c.shapes, "-kernels", c.kernels, "-reps", "1", "-progress", "off", "-validate", "full")
		if code != 0 {
			t.Errorf("-shapes %s: exit %d: %s", c.shapes, code, stderr)
			continue
		}
		lines := strings.Split(strings.TrimSuffix(stdout, "\n"), "\n")
		rows := strings.Count(c.shapes, ",") + 1
		rows *= strings.Count(c.kernels, ",") + 1
		if len(lines) != 2+rows+len(c.skipped) || !strings.HasPrefix(lines[0], "device ") {
			t.Errorf("-shapes %s: want the device, a header, %d rows and %d notes:\n%s", c.shapes, rows, len(c.skipped), stdout)
			continue
		}
		// Every cell of a row is one word, right-aligned: the words of
		// every row end at the same columns, and the header's last too.
		header, table := lines[1], lines[2:2+rows]
		for _, row := range table {
			if got, want := wordEnds(row), wordEnds(table[0]); fmt.Sprint(got) != fmt.Sprint(want) || len(got) != 6 {
				t.Errorf("-shapes %s: the cells of %q end at %v, those of %q at %v:\n%s", c.shapes, row, got, table[0], want, stdout)
			}
			if e := wordEnds(header); e[len(e)-1] != wordEnds(row)[len(wordEnds(row))-1] {
				t.Errorf("-shapes %s: header %q and row %q end apart:\n%s", c.shapes, header, row, stdout)
			}
		}
		for i, want := range c.skipped {
			if note := lines[2+rows+i]; !matchDots(note, want) {
				t.Errorf("-shapes %s: note %d is %q, want %q", c.shapes, i, note, want)
			}
		}
	}
}

// matchDots reports whether s starts with the parts of pattern between
// "..." in order, each "..." standing for any text.
func matchDots(s, pattern string) bool {
	parts := strings.Split(pattern, "...")
	if !strings.HasPrefix(s, parts[0]) {
		return false
	}
	s = s[len(parts[0]):]
	for _, p := range parts[1:] {
		i := strings.Index(s, p)
		if i < 0 {
			return false
		}
		s = s[i+len(p):]
	}
	return true
}

// wordEnds returns the column (in runes) after each word of line.
func wordEnds(line string) []int {
	var ends []int
	col, in := 0, false
	for _, r := range line {
		if r == ' ' && in {
			ends = append(ends, col)
		}
		in = r != ' '
		col++
	}
	if in {
		ends = append(ends, col)
	}
	return ends
}

// TestBenchNothingMeasured: a bench whose every product is skipped exits 1
// and says so (before: exit 0, as if it had measured something).
func TestBenchNothingMeasured(t *testing.T) {
	needGL(t)
	code, stdout, stderr := glmul("bench", "-backend", "egl", "-shapes", "99999999", "-kernels", "tiled32,fast", "-progress", "off")
	if code != 1 || !strings.Contains(stderr, "bench: nothing was measured: every product was skipped") || !strings.Contains(stdout, "skipped 99999999x99999999x99999999 tiled32, fast: ") {
		t.Errorf("exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
}

// TestBenchSplitKSkips: a shape that -split-k cannot run (the split does
// not run in panels) is skipped, as before bench told failed products from
// skipped ones: its plan is checked with the split.
func TestBenchSplitKSkips(t *testing.T) {
	info := needGL(t)
	big := int(math.Sqrt(float64(info.MaxSSBOBlockSize/4))) + 1 // over one storage binding: panels
	code, stdout, stderr := glmul("bench", "-backend", "egl", "-shapes", fmt.Sprintf("64,%d", big), "-split-k", "4", "-kernels", "fast", "-reps", "1", "-progress", "off")
	if code != 0 || !strings.Contains(stdout, fmt.Sprintf("skipped %[1]dx%[1]dx%[1]d fast: ", big)) || strings.Contains(stdout+stderr, "failed") {
		t.Errorf("exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
}

// TestBenchCSVSkippedRows: a product not measured has empty figure and
// verdict cells in CSV (it had median 0, gflops 0, valid false: a product
// measured and found wrong, to a program reading the file), and a measured
// one's figures carry every digit.
func TestBenchCSVSkippedRows(t *testing.T) {
	rows := []benchRow{
		{M: 16, K: 16, N: 16, Shape: "16x16x16", Type: "float32", Kernel: "fast", Spec: "fast:64x64x8_8x4", Source: "wall", Times: []time.Duration{1234567},
			MedianMS: 1.234567, GFLOPS: 0.0066355801, Validation: "full", Valid: true, Splits: 1},
		{M: 99999999, K: 99999999, N: 99999999, Shape: "99999999x99999999x99999999", Kernel: "fast", Skipped: "needs 112 PiB of host memory"},
	}
	var b strings.Builder
	if err := writeBench(&b, report.CSV, glcompute.Info{}, rows, false); err != nil {
		t.Fatal(err)
	}
	recs, err := csv.NewReader(strings.NewReader(b.String())).ReadAll()
	if err != nil || len(recs) != 3 {
		t.Fatalf("CSV %v: %q", err, recs)
	}
	col := map[string]int{}
	for i, h := range recs[0] {
		col[h] = i
	}
	if m := recs[1]; m[col["median_ms"]] != "1.234567" || m[col["gflops"]] != "0.0066355801" || m[col["valid"]] != "true" || m[col["skipped"]] != "" || m[col["type"]] != "float32" {
		t.Errorf("measured row %q", m)
	}
	s := recs[2]
	for _, c := range []string{"timing_source", "median_ms", "gflops", "validation", "valid", "k_splits", "stream_k_tiles"} {
		if s[col[c]] != "" {
			t.Errorf("skipped row: %s = %q, want empty", c, s[col[c]])
		}
	}
	if s[col["skipped"]] != "needs 112 PiB of host memory" || s[col["runs"]] != "0" {
		t.Errorf("skipped row %q", s)
	}
}

// TestBenchSaysCPUIsSlow: glmul bench's default shapes on a device that
// computes on the CPU say, before the first product, that they run for
// hours there and how to choose shapes, as glmul table does (it started
// without a word); on a GPU, or with -shapes, nothing is said.
func TestBenchSaysCPUIsSlow(t *testing.T) {
	if os.Getenv("GLMUL_TEST_CHILD") == "bench-default" {
		os.Exit(exitCode(run([]string{"bench", "-backend", "egl", "-reps", "1", "-progress", "on", "-format", "csv"}, os.Stdout, os.Stderr), os.Stderr))
	}
	info := needGL(t)
	if tuning.OnCPU(measure.Driver(info)) {
		cmd, _ := startUntil(t, "TestBenchSaysCPUIsSlow", "bench-default", "the default shapes, up to 8192x8192x8192, run for hours here (Ctrl-C keeps the rows finished); -shapes 256,512,1000x1024x1000 is quicker")
		cmd.Process.Signal(syscall.SIGINT)
		cmd.Wait()
	}
	code, _, stderr := glmul("bench", "-backend", "egl", "-shapes", "16", "-kernels", "tiled32", "-reps", "1", "-progress", "off")
	if code != 0 || strings.Contains(stderr, "computes on the CPU") {
		t.Errorf("-shapes 16 on %s: exit %d, and the note: %s", info.Renderer, code, stderr)
	}
}
