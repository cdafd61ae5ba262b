package main

import (
	"bufio"
	"bytes"
	"encoding/csv"
	"encoding/json"
	"encoding/xml"
	"fmt"
	"image/png"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/glmul/glmul/cmd/glmul/internal/measure"
	"github.com/glmul/glmul/cmd/glmul/internal/table"
	"github.com/glmul/glmul/glcompute/tuning"
)

func TestTableCSV(t *testing.T) {
	needGL(t)
	code, stdout, stderr := glmul("table", "-sizes", "128,256", "-format", "csv", "-backend", "egl", "-reps", "2", "-compare", "paper")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	recs, err := csv.NewReader(strings.NewReader(stdout)).ReadAll()
	if err != nil || len(recs) != 3 {
		t.Fatalf("CSV %v:\n%s", err, stdout)
	}
	col := map[string]int{}
	for i, h := range recs[0] {
		col[h] = i
	}
	for _, h := range []string{"N", "CPU naive ms", "CPU naive GFLOPS", "CPU gonum GFLOPS", "tiled32 ms (mean)", "tiled32 ms (median)",
		"tiled32 GFLOPS", "tiled32 end-to-end ms", "speed-up vs naive", "speed-up vs gonum", "paper GPU GFLOPS", "tiled32 GFLOPS / paper"} {
		if _, ok := col[h]; !ok {
			t.Fatalf("no column %q in %v", h, recs[0])
		}
	}
	for i, n := range []string{"128", "256"} {
		row := recs[i+1]
		if row[col["N"]] != n {
			t.Errorf("row %d is N=%s", i, row[col["N"]])
		}
		// Units: GFLOPS = 2n³ / (ms·10⁶) must agree with the ms columns.
		ms, gf := parse(t, row[col["tiled32 ms (mean)"]]), parse(t, row[col["tiled32 GFLOPS"]])
		if want := table.GFLOPS(int(parse(t, n)), ms); gf/want < 0.95 || gf/want > 1.05 {
			t.Errorf("N=%s: %v GFLOPS from %v ms, want %v", n, gf, ms, want)
		}
		cms, su := parse(t, row[col["CPU naive ms"]]), parse(t, row[col["speed-up vs naive"]])
		if r := cms / ms / su; r < 0.95 || r > 1.05 {
			t.Errorf("N=%s: speed-up %v, CPU %v ms, GPU %v ms", n, su, cms, ms)
		}
	}
}

func parse(t *testing.T, s string) float64 {
	t.Helper()
	var v float64
	if _, err := fmt.Sscan(s, &v); err != nil {
		t.Fatalf("cell %q is not a number", s)
	}
	return v
}

func TestTablePlots(t *testing.T) {
	needGL(t)
	dir := t.TempDir()
	for _, ext := range []string{"png", "svg"} {
		path := filepath.Join(dir, "fig3."+ext)
		code, _, stderr := glmul("table", "-sizes", "128,256", "-backend", "egl", "-reps", "1", "-plot", path)
		if code != 0 {
			t.Fatalf("%s: exit %d: %s", ext, code, stderr)
		}
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		if ext == "png" {
			img, err := png.Decode(bytes.NewReader(b))
			if err != nil {
				t.Fatal(err)
			}
			if w, h := img.Bounds().Dx(), img.Bounds().Dy(); w != int(table.PlotWidth.Dots(96)+0.5) || h != int(table.PlotHeight.Dots(96)+0.5) {
				t.Errorf("PNG %d×%d", w, h)
			}
			continue
		}
		var svg struct {
			XMLName xml.Name
			Width   string `xml:"width,attr"`
		}
		if err := xml.Unmarshal(b, &svg); err != nil || svg.XMLName.Local != "svg" || !strings.HasPrefix(svg.Width, "453.5") {
			t.Errorf("SVG: %v %+v", err, svg)
		}
	}
	// Re-render a saved table without measuring.
	saved := filepath.Join(dir, "t.json")
	code, stdout, stderr := glmul("table", "-sizes", "64", "-backend", "egl", "-reps", "1", "-format", "json")
	if code != 0 {
		t.Fatal(stderr)
	}
	os.WriteFile(saved, []byte(stdout), 0o644)
	code, stdout, stderr = glmul("table", "-from", saved, "-format", "markdown", "-compare", "paper", "-plot", filepath.Join(dir, "a.png")+","+filepath.Join(dir, "a.svg"))
	if code != 0 || !strings.Contains(stdout, "| 64 |") || !strings.Contains(stdout, "paper GPU GFLOPS") {
		t.Fatalf("-from: exit %d %s\n%s", code, stderr, stdout)
	}
	// The saved table's own warm-up rule (llvmpipe's, here), not a fixed text.
	// In words for users: it named measure.Options.Ramp ("or Ramp").
	if !strings.Contains(stdout, "after a warm-up: at least 0.5 s before every product, then until steady.") || strings.Contains(stdout, "Ramp") {
		t.Errorf("-from: the date line lacks the measured warm-up rule:\n%s", stdout)
	}
	for _, f := range []string{"a.png", "a.svg"} {
		if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
			t.Error(err)
		}
	}
	code, _, stderr = glmul("table", "-plot", filepath.Join(dir, "fig3.gif"))
	if code != 2 || !strings.Contains(stderr, ".png or .svg") {
		t.Errorf("-plot .gif: exit %d, %q", code, stderr)
	}
}

// startUntil runs test in a child process with GLMUL_TEST_CHILD=child and
// returns once its stderr shows marker (failing the test if the child ends
// first or 60 s pass), with the buffer its stdout goes to.
func startUntil(t *testing.T, test, child, marker string) (*exec.Cmd, *bytes.Buffer) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^"+test+"$")
	cmd.Env = append(os.Environ(), "GLMUL_TEST_CHILD="+child)
	stdout := new(bytes.Buffer)
	cmd.Stdout = stdout
	errPipe, _ := cmd.StderrPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	sc := bufio.NewScanner(errPipe)
	sc.Split(bufio.ScanRunes)
	var seen strings.Builder
	found := make(chan bool, 1)
	go func() {
		for sc.Scan() {
			seen.WriteString(sc.Text())
			if strings.Contains(seen.String(), marker) {
				found <- true
				for sc.Scan() {
				}
				return
			}
		}
		found <- false
	}()
	select {
	case ok := <-found:
		if !ok {
			t.Fatalf("child ended before %q:\n%s", marker, seen.String())
		}
	case <-time.After(60 * time.Second):
		cmd.Process.Kill()
		t.Fatalf("no %q within 60 s", marker)
	}
	return cmd, stdout
}

// TestTableCtrlC interrupts a table during the naive CPU loop of its second
// size: the first size must still be printed, and the exit status is 130,
// as every command's after Ctrl-C.
func TestTableCtrlC(t *testing.T) {
	if os.Getenv("GLMUL_TEST_CHILD") == "table" {
		os.Exit(exitCode(run([]string{"table", "-sizes", "64,3000", "-backend", "egl", "-reps", "1", "-progress", "on", "-format", "csv"}, os.Stdout, os.Stderr), os.Stderr))
	}
	needGL(t)
	cmd, stdout := startUntil(t, "TestTableCtrlC", "table", "N=3000")
	cmd.Process.Signal(syscall.SIGINT)
	err := cmd.Wait()
	ee, ok := err.(*exec.ExitError)
	if !ok || ee.ExitCode() != 130 {
		t.Fatalf("exit: %v, want status 130", err)
	}
	out := stdout.String()
	if !strings.Contains(out, "\n64,") || strings.Contains(out, "\n3000,") {
		t.Fatalf("stdout should hold N=64 and not N=3000:\n%s", out)
	}
}

// TestTableSaysCPUIsSlow: a table of the paper's default sizes on a device
// that computes on the CPU says, before it starts, that N = 4096 runs long
// there and how to choose sizes (it ran about an hour without a word); on
// a GPU, or with -sizes, nothing is said.
func TestTableSaysCPUIsSlow(t *testing.T) {
	if os.Getenv("GLMUL_TEST_CHILD") == "table-default" {
		os.Exit(exitCode(run([]string{"table", "-backend", "egl", "-reps", "1", "-progress", "on", "-format", "csv"}, os.Stdout, os.Stderr), os.Stderr))
	}
	info := needGL(t)
	if !tuning.OnCPU(measure.Driver(info)) {
		code, _, stderr := glmul("table", "-backend", "egl", "-sizes", "64", "-reps", "1", "-progress", "off")
		if code != 0 || strings.Contains(stderr, "computes on the CPU") {
			t.Errorf("on %s: exit %d, %s", info.Renderer, code, stderr)
		}
		return
	}
	cmd, _ := startUntil(t, "TestTableSaysCPUIsSlow", "table-default", "-sizes 128,256,512,1024 -cpu-max 1024 is quicker")
	cmd.Process.Signal(syscall.SIGINT)
	cmd.Wait()
	code, _, stderr := glmul("table", "-backend", "egl", "-sizes", "64", "-reps", "1", "-progress", "off")
	if code != 0 || strings.Contains(stderr, "computes on the CPU") {
		t.Errorf("-sizes 64: exit %d, and still the note: %s", code, stderr)
	}
}

// TestTableCtrlCDuringGPU interrupts a table while a GPU product that
// runs for seconds (tiled32 at N=1024 on llvmpipe, one dispatch) cannot be
// stopped: glmul must still exit within a second or so, with the first
// size printed and status 130.
func TestTableCtrlCDuringGPU(t *testing.T) {
	if os.Getenv("GLMUL_TEST_CHILD") == "table-gpu" {
		os.Exit(exitCode(run([]string{"table", "-sizes", "64,1024", "-kernels", "tiled32", "-cpu-max", "64", "-backend", "egl", "-reps", "1", "-format", "csv"}, os.Stdout, os.Stderr), os.Stderr))
	}
	needGL(t)
	cmd, stdout := startUntil(t, "TestTableCtrlCDuringGPU", "table-gpu", "N=64 done")
	time.Sleep(1500 * time.Millisecond) // into N=1024's GPU product (seconds long on llvmpipe)
	sent := time.Now()
	cmd.Process.Signal(syscall.SIGINT)
	err := cmd.Wait()
	took := time.Since(sent)
	if err == nil && strings.Contains(stdout.String(), "\n1024,") {
		t.Skip("the GPU finished N=1024 before Ctrl-C; the abandoned run needs a slow device (llvmpipe in CI)")
	}
	ee, ok := err.(*exec.ExitError)
	if !ok || ee.ExitCode() != 130 {
		t.Fatalf("exit: %v, want status 130", err)
	}
	if took > 2*time.Second {
		t.Errorf("exited %v after Ctrl-C, want about a second", took.Round(time.Millisecond))
	}
	if out := stdout.String(); !strings.Contains(out, "\n64,") || strings.Contains(out, "\n1024,") {
		t.Fatalf("stdout should hold N=64 and not N=1024:\n%s", out)
	}
}

func TestTableFromEmpty(t *testing.T) {
	path := filepath.Join(t.TempDir(), "empty.json")
	os.WriteFile(path, []byte("{}"), 0o644)
	code, stdout, stderr := glmul("table", "-from", path)
	if code != 1 || stdout != "" || !strings.Contains(stderr, "holds no rows") {
		t.Fatalf("table -from {}: exit %d, stdout %q, stderr %q", code, stdout, stderr)
	}
}

// TestTableFromRefusesMeasuring: -from prints a table measured before, so
// the flags that choose what to measure are refused, naming each (they
// were ignored without a word); the ones that shape the output are taken.
func TestTableFromRefusesMeasuring(t *testing.T) {
	saved := savedTable(t, t.TempDir())
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"-sizes", "128"}, ": -sizes would change nothing; leave it out"},
		{[]string{"-kernels", "fast", "-reps", "3"}, ": -kernels, -reps would change nothing; leave them out"},
		{[]string{"-cpu-max", "64", "-backend", "egl"}, ": -backend, -cpu-max would change nothing"},
	} {
		code, stdout, stderr := glmul(append([]string{"table", "-from", saved}, c.args...)...)
		if code != 2 || stdout != "" || !strings.Contains(stderr, c.want) {
			t.Errorf("table -from %v: exit %d, stdout %q, stderr %q; want exit 2 and %q", c.args, code, stdout, stderr, c.want)
		}
	}
	code, stdout, stderr := glmul("table", "-from", saved, "-format", "csv", "-compare", "paper", "-progress", "off")
	if code != 0 || !strings.Contains(stdout, "\n64,") {
		t.Errorf("table -from with output flags: exit %d, stdout %q, stderr %q", code, stdout, stderr)
	}
}

// TestTablePlotFailureWritesOthers: a plot that cannot be written (a link
// to /dev/full) fails the command, but the plots after it are written (the
// first failure ended the loop).
func TestTablePlotFailureWritesOthers(t *testing.T) {
	if _, err := os.Stat("/dev/full"); err != nil {
		t.Skip("no /dev/full")
	}
	dir := t.TempDir()
	saved := savedTable(t, dir)
	full := filepath.Join(dir, "full.png")
	if err := os.Symlink("/dev/full", full); err != nil {
		t.Fatal(err)
	}
	good := filepath.Join(dir, "good.svg")
	code, stdout, stderr := glmul("table", "-from", saved, "-plot", full+","+good)
	if code != 1 || !strings.Contains(stdout, "64") || !strings.Contains(stderr, "full.png") {
		t.Errorf("exit %d, stdout %q, stderr %q; want exit 1 naming full.png", code, stdout, stderr)
	}
	if fi, err := os.Stat(good); err != nil || fi.Size() == 0 {
		t.Errorf("the plot after the failed one: %v", err)
	}
}

// savedTable writes a one-row table as glmul table -format json saves it
// and returns its path: glmul table -from needs no GL.
func savedTable(t *testing.T, dir string) string {
	t.Helper()
	tab := table.Table{
		Device: "Test | Fake GPU | 4.6", CPU: "test CPU, 2 threads", Command: "glmul table -sizes 64",
		When: time.Date(2026, 11, 22, 0, 0, 0, 0, time.UTC), Reps: 1,
		Rows: []table.Row{{N: 64, CPUms: 2, CPUGFLOPS: table.GFLOPS(64, 2), GonumMS: 0.1, GonumGFLOPS: table.GFLOPS(64, 0.1),
			GPU: []table.GPUResult{{Kernel: "tiled32", Spec: "tiled32", MeanMS: 0.05, MedianMS: 0.05, GFLOPS: table.GFLOPS(64, 0.05),
				EndToEndMS: 0.2, TimingSource: "wall", Valid: true, Validation: "full"}}}},
	}
	b, err := json.Marshal(tab)
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(dir, "t.json")
	if err := os.WriteFile(p, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestTableFloat64: glmul table -type f64 measures every column in
// float64 (the naive loop, gonum's Dgemm, dfast through Mul64, validated
// in full in float64) and says so in each format; the JSON it saves reads
// back with -from as float64, with or without -type f64.
func TestTableFloat64(t *testing.T) {
	needGL(t)
	code, stdout, stderr := glmul("table", "-type", "f64", "-sizes", "64,100", "-reps", "1", "-backend", "egl", "-format", "json", "-progress", "off")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	var tab table.Table
	if err := json.Unmarshal([]byte(stdout), &tab); err != nil || len(tab.Rows) != 2 {
		t.Fatalf("%v\n%s", err, stdout)
	}
	if tab.Type != "float64" || tab.Warmup != measure.WarmupRuns64 {
		t.Errorf("type %q, warm-up %q", tab.Type, tab.Warmup)
	}
	for _, r := range tab.Rows {
		if len(r.GPU) != 1 || !(r.CPUGFLOPS > 0) || !(r.GonumGFLOPS > 0) {
			t.Fatalf("N=%d: %+v", r.N, r)
		}
		if g := r.GPU[0]; g.Kernel != "dfast" || !strings.HasPrefix(g.Spec, "dfast:") || !g.Valid || g.Validation != "full" || g.TimingSource != "wall" && g.TimingSource != "gl-timer" || !(g.GFLOPS > 0) {
			t.Errorf("N=%d: GPU %+v", r.N, g)
		}
	}
	saved := filepath.Join(t.TempDir(), "t64.json")
	if err := os.WriteFile(saved, []byte(stdout), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{{"-from", saved}, {"-from", saved, "-type", "f64"}} {
		code, stdout, stderr := glmul(append([]string{"table"}, args...)...)
		if code != 0 || !strings.Contains(stdout, "type    float64: the naive CPU loop, gonum's Dgemm and the GPU's dfast kernel") || !strings.Contains(stdout, "dfast GFLOPS") {
			t.Errorf("table %v: exit %d\n%s%s", args, code, stdout, stderr)
		}
	}
	code, stdout, stderr = glmul("table", "-from", saved, "-format", "csv")
	if recs, err := csv.NewReader(strings.NewReader(stdout)).ReadAll(); code != 0 || err != nil || len(recs) != 3 || recs[0][len(recs[0])-1] != "type" || recs[1][len(recs[1])-1] != "float64" {
		t.Errorf("csv: exit %d, %v\n%s%s", code, err, stdout, stderr)
	}
}

// TestTableFloat64Refusals: a float64 table is neither printed as the
// float32 one asked for nor a float32 one as float64 (-from with -type),
// nor compared with the paper's float32 table; -type f64 takes only dfast
// kernels, and on OpenGL ES fails at once with the hint.
func TestTableFloat64Refusals(t *testing.T) {
	dir := t.TempDir()
	saved32 := savedTable(t, dir) // no "type": a table saved before -type, float32
	saved64 := filepath.Join(dir, "t64.json")
	b, _ := os.ReadFile(saved32)
	if err := os.WriteFile(saved64, bytes.Replace(b, []byte(`"type":""`), []byte(`"type":"float64"`), 1), 0o644); err != nil {
		t.Fatal(err)
	}
	code, stdout, stderr := glmul("table", "-from", saved32)
	if code != 0 || !strings.Contains(stdout, "type    float32: the naive CPU loop, gonum's Sgemm") {
		t.Errorf("-from a float32 table: exit %d\n%s%s", code, stdout, stderr)
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"-from", saved32, "-type", "f64"}, "holds a float32 table (glmul table -sizes 64), not float64: leave -type out"},
		{[]string{"-from", saved64, "-type", "f32"}, "holds a float64 table (glmul table -sizes 64), not float32"},
		{[]string{"-from", saved64, "-compare", "paper"}, "the paper's Table 1 is float32"},
		{[]string{"-type", "f64", "-compare", "paper"}, "-type f64 measures a float64 table, and the paper's Table 1 is float32"},
		{[]string{"-type", "f64", "-kernels", "tiled32"}, "-kernels tiled32: -type f64 runs dfast"},
		{[]string{"-type", "f64", "-kernels", "dfast,fast:64x64x8_4x4"}, "-type f64 runs dfast"},
		{[]string{"-type", "f16"}, `table: -type "f16": use f32`},
	} {
		code, stdout, stderr := glmul(append([]string{"table"}, c.args...)...)
		if code != 2 || stdout != "" || !strings.Contains(stderr, c.want) {
			t.Errorf("table %v: exit %d, stdout %q, stderr %q; want exit 2 and %q", c.args, code, stdout, stderr, c.want)
		}
	}
	needGL(t)
	code, stdout, stderr = glmul("table", "-type", "f64", "-sizes", "64", "-backend", "gles", "-progress", "off")
	if code != 1 || stdout != "" || !strings.Contains(stderr, "have no float64") || !strings.Contains(stderr, "hint: -type f64 needs desktop OpenGL") {
		t.Errorf("-backend gles: exit %d\n%s%s", code, stdout, stderr)
	}
}
