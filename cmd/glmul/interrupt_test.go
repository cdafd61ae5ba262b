package main

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/glmul/glmul/cmd/glmul/internal/matfile"
	"github.com/glmul/glmul/cmd/glmul/internal/measure"
	"github.com/glmul/glmul/cpu"
	"github.com/glmul/glmul/glcompute/tuning"
)

// Ctrl-C in glmul -n, bench and tune: each child is this test binary
// running the command, interrupted once a progress line says a first unit
// finished. tiled32 runs at about 0.13 GFLOPS on Mesa llvmpipe (a 512³
// dispatch takes about 2 s), so there the signal lands in a product that
// cannot finish in time; a device that finishes first skips, as
// TestTableCtrlCDuringGPU does.

func TestInterruptedExitCode(t *testing.T) {
	var b bytes.Buffer
	err := fmt.Errorf("wrapped: %w", interruptedError{"the rows above are the 1 of 2 products that finished"})
	if got := exitCode(err, &b); got != 130 {
		t.Errorf("exitCode(%v) = %d, want 130", err, got)
	}
	if want := "glmul: wrapped: interrupted by Ctrl-C: the rows above are the 1 of 2 products that finished\n"; b.String() != want {
		t.Errorf("stderr %q, want %q", b.String(), want)
	}
}

// child is a glmul command running in a child process.
type child struct {
	cmd            *exec.Cmd
	stdout, stderr *lockedBuffer
	exited         chan error // the result of Wait, once
}

// lockedBuffer is a bytes.Buffer that the child's output goroutines and
// the test may use at once.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// startChild runs test in a child process with GLMUL_TEST_CHILD=name and
// returns once its stderr shows marker, failing the test if the child
// fails first or 60 s pass (and skipping it if the child succeeds first).
func startChild(t *testing.T, test, name, marker string) *child {
	t.Helper()
	c := &child{stdout: new(lockedBuffer), stderr: new(lockedBuffer), exited: make(chan error, 1)}
	c.cmd = exec.Command(os.Args[0], "-test.run=^"+test+"$")
	c.cmd.Env = append(os.Environ(), "GLMUL_TEST_CHILD="+name)
	c.cmd.Stdout, c.cmd.Stderr = c.stdout, c.stderr
	if err := c.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { c.exited <- c.cmd.Wait() }()
	deadline := time.After(60 * time.Second)
	for !strings.Contains(c.stderr.String(), marker) {
		select {
		case err := <-c.exited:
			if err == nil { // the whole command finished first: a fast GPU (the H100 runs 21 × 512³ in milliseconds)
				t.Skipf("the child finished before %q: the device is too fast to interrupt; the test needs a slow one (llvmpipe in CI)", marker)
			}
			t.Fatalf("child ended (%v) before %q:\n%s", err, marker, c.stderr.String())
		case <-deadline:
			c.cmd.Process.Kill()
			t.Fatalf("no %q within 60 s:\n%s", marker, c.stderr.String())
		case <-time.After(5 * time.Millisecond):
		}
	}
	return c
}

// interrupt sends SIGINT to the child and waits for it to end. It returns
// false if the child had ended with status 0 (the device was too fast to
// be interrupted); otherwise the child must end with status 130 within
// 2 s (a second's grace for a dispatch that cannot stop, and the exit).
func (c *child) interrupt(t *testing.T) bool {
	t.Helper()
	return c.stop(t, syscall.SIGINT)
}

// stop is interrupt with another signal that stops a command (SIGTERM,
// SIGHUP): the status is then 128 + its number.
func (c *child) stop(t *testing.T, sig syscall.Signal) bool {
	t.Helper()
	return c.stopTwice(t, sig, 0)
}

// stopTwice is stop with the signal sent again after again (if not 0), as
// timeout(1) sends it to the command and then to its process group.
func (c *child) stopTwice(t *testing.T, sig syscall.Signal, again time.Duration) bool {
	t.Helper()
	sent := time.Now()
	c.cmd.Process.Signal(sig)
	if again > 0 {
		time.Sleep(again)
		c.cmd.Process.Signal(sig)
	}
	var err error
	select {
	case err = <-c.exited:
	case <-time.After(10 * time.Second):
		c.cmd.Process.Kill()
		t.Fatalf("still running 10 s after Ctrl-C; stderr:\n%s", c.stderr.String())
	}
	took := time.Since(sent)
	if err == nil {
		return false
	}
	var ee *exec.ExitError
	if want := 128 + int(sig); !errors.As(err, &ee) || ee.ExitCode() != want {
		t.Fatalf("exit: %v, want status %d; stderr:\n%s", err, want, c.stderr.String())
	}
	if took > 2*time.Second {
		t.Errorf("exited %v after %v, want a second or so", took.Round(time.Millisecond), sig)
	}
	return true
}

// TestBenchCtrlC interrupts glmul bench inside the second shape's first
// dispatch: the first shape's row must be printed, in CSV; also when the
// signal comes twice, 3 ms apart, as timeout(1) sends it (the second once
// ended the process before it printed anything).
func TestBenchCtrlC(t *testing.T) {
	if os.Getenv("GLMUL_TEST_CHILD") == "bench" {
		os.Exit(exitCode(run([]string{"bench", "-shapes", "64,512", "-kernels", "tiled32", "-reps", "3", "-backend", "egl", "-format", "csv"}, os.Stdout, os.Stderr), os.Stderr))
	}
	needGL(t)
	for _, again := range []time.Duration{0, 3 * time.Millisecond} {
		t.Run(fmt.Sprintf("again=%v", again), func(t *testing.T) {
			c := startChild(t, "TestBenchCtrlC", "bench", "bench 64x64x64 tiled32:")
			time.Sleep(time.Second) // into 512³'s warm-up dispatch (about 2 s on llvmpipe)
			if !c.stopTwice(t, syscall.SIGINT, again) {
				t.Skip("the device finished 512³ before Ctrl-C; the test needs a slow one (llvmpipe in CI)")
			}
			out := c.stdout.String()
			if !strings.HasPrefix(out, "m,k,n,kernel,") || !strings.Contains(out, "\n64,64,64,tiled32,tiled32,") || strings.Contains(out, "\n512,") {
				t.Fatalf("stdout should hold the CSV row of 64³ and not 512³:\n%s", out)
			}
			if !strings.Contains(c.stderr.String(), "glmul: interrupted by Ctrl-C: the rows above are the 1 of 2 products that finished\n") {
				t.Errorf("stderr:\n%s", c.stderr.String())
			}
		})
	}
}

// TestMultiplyCtrlC interrupts glmul -n inside its warm-up (8 runs of 28,
// a few tenths of a second each on llvmpipe), before any timed run:
// nothing is printed on stdout, one line on stderr says so.
func TestMultiplyCtrlC(t *testing.T) {
	if os.Getenv("GLMUL_TEST_CHILD") == "multiply" {
		os.Exit(exitCode(run([]string{"-n", "512", "-kernel", "tiled32", "-reps", "20", "-warmup", "8", "-backend", "egl", "-progress", "on"}, os.Stdout, os.Stderr), os.Stderr))
	}
	needGL(t)
	c := startChild(t, "TestMultiplyCtrlC", "multiply", "(1/28)") // the progress bar after the first of 8 warm-up runs
	if !c.interrupt(t) {
		t.Skip("the device finished 21 runs of 512³ before Ctrl-C; the test needs a slow one (llvmpipe in CI)")
	}
	if out := c.stdout.String(); out != "" {
		t.Errorf("stdout should be empty:\n%s", out)
	}
	if !strings.Contains(c.stderr.String(), "glmul: interrupted by Ctrl-C: nothing to report: the 512×512×512 product stopped before it was measured and validated\n") {
		t.Errorf("stderr:\n%s", c.stderr.String())
	}
}

// TestMultiplyCtrlCKeepsRuns interrupts glmul -n between timed runs
// (tiled32 at 256³: about 40 ms each on llvmpipe): the runs
// made are reported, validated (Freivalds), with the count asked, and the
// exit status is 130 (before, the runs were discarded: "nothing to report").
func TestMultiplyCtrlCKeepsRuns(t *testing.T) {
	if os.Getenv("GLMUL_TEST_CHILD") == "multiply-runs" {
		os.Exit(exitCode(run([]string{"-n", "256", "-kernel", "tiled32", "-reps", "1000", "-backend", "egl", "-progress", "on", "-validate", "full"}, os.Stdout, os.Stderr), os.Stderr))
	}
	needGL(t)
	interruptRuns(t, "TestMultiplyCtrlCKeepsRuns", "multiply-runs",
		" of the 1000 runs asked (interrupted)", "pipelined  not run: the timed runs were interrupted", "validate   freivalds (4 vectors): ok")
}

// interruptRuns starts test's child, interrupts it a second and a half
// into its "GPU runs" bar (the one warm-up run and dozens of timed ones
// done: the bar's counts are sampled, so no exact count can be waited
// for), and checks that stdout holds each of wants and stderr says the
// report holds the runs made. It skips where the 1000 runs finished first.
func interruptRuns(t *testing.T, test, child string, wants ...string) {
	t.Helper()
	c := startChild(t, test, child, "GPU runs")
	time.Sleep(1500 * time.Millisecond)
	if !c.interrupt(t) {
		t.Skip("the device finished 1000 runs of 256³ before Ctrl-C; the test needs a slow one (llvmpipe in CI)")
	}
	out := c.stdout.String()
	for _, want := range wants {
		if !strings.Contains(out, want) {
			t.Errorf("stdout lacks %q:\n%s", want, out)
		}
	}
	if !strings.Contains(c.stderr.String(), "glmul: interrupted by Ctrl-C: the report above holds the ") {
		t.Errorf("stderr:\n%s", c.stderr.String())
	}
}

// TestGroupCtrlCKeepsRuns interrupts glmul -n -devices between timed
// runs, as TestMultiplyCtrlCKeepsRuns does glmul -n on one device: the
// runs made are reported and C validated (Freivalds, asked full), exit
// status 130. Before, a group's runs were discarded: "nothing to report".
func TestGroupCtrlCKeepsRuns(t *testing.T) {
	if os.Getenv("GLMUL_TEST_CHILD") == "group-runs" {
		os.Exit(exitCode(run([]string{"-n", "256", "-devices", "all", "-reps", "1000", "-progress", "on", "-validate", "full"}, os.Stdout, os.Stderr), os.Stderr))
	}
	needGL(t)
	interruptRuns(t, "TestGroupCtrlCKeepsRuns", "group-runs", " of the 1000 asked (interrupted) after 1 warm-up run", "validate   freivalds (4 vectors): ok")
}

// TestTuneCtrlC interrupts glmul tune in the second class's sweep, once
// its first candidate is measured: the first class is printed and its
// outcome saved (its seeded cache entry replaced or removed); the second
// class's candidates so far are printed and its seeded entry is left as it
// was.
func TestTuneCtrlC(t *testing.T) {
	if os.Getenv("GLMUL_TEST_CHILD") == "tune" {
		os.Exit(exitCode(run([]string{"tune", "-n", "64", "-classes", "square,long-k", "-candidates", "cpu:8x8_8x8,cpu:4x4_4x4", "-reps", "1", "-backend", "egl"}, os.Stdout, os.Stderr), os.Stderr))
	}
	info := needGL(t)
	cache := filepath.Join(t.TempDir(), "tuned.json")
	t.Setenv("GLMUL_TUNE_CACHE", cache) // the child's
	drv := measure.Driver(info)
	when := time.Date(2020, 1, 2, 3, 4, 5, 0, time.UTC)
	var seeded tuning.Cache
	for _, cl := range []tuning.Class{tuning.Square, tuning.LongK} {
		seeded.Put(tuning.Entry{Driver: drv, Class: cl, Kernel: "cpu:4x4_4x4", GFLOPS: 1e-3, N: 8, When: when})
	}
	if err := seeded.Save(cache); err != nil {
		t.Fatal(err)
	}
	// Each class measures tiled32, then cpu:8x8_8x8, cpu:4x4_4x4 and fast.
	c := startChild(t, "TestTuneCtrlC", "tune", "tune long-k 2/4 cpu:8x8_8x8:")
	if !c.interrupt(t) {
		t.Fatalf("tune finished before Ctrl-C:\n%s", c.stdout.String())
	}

	out := c.stdout.String()
	if n := strings.Count(out, "\n  square "); n != 3 {
		t.Errorf("stdout should hold square's 3 candidates; it holds %d:\n%s", n, out)
	}
	n := strings.Count(out, "\n  long-k ") // the ones measured before Ctrl-C took effect
	for _, want := range []string{"tuned   1 shape class,", "\nbest    square (", "\nstopped long-k (",
		fmt.Sprintf("Ctrl-C after %d of its 3 first-pass candidates", n), "not saved", "cpu:8x8_8x8"} {
		if !strings.Contains(out, want) {
			t.Errorf("stdout lacks %q:\n%s", want, out)
		}
	}
	if n < 1 || n > 2 {
		t.Errorf("stdout holds %d rows of long-k, want the first candidate (or the first two)", n)
	}
	want := fmt.Sprintf("glmul: interrupted by Ctrl-C: square finished (saved to %s); long-k was interrupted: the candidates it measured so far (%d) are printed, not saved\n", cache, n)
	if !strings.Contains(c.stderr.String(), want) {
		t.Errorf("stderr lacks %q:\n%s", want, c.stderr.String())
	}

	got, err := tuning.Load(cache)
	if err != nil {
		t.Fatal(err)
	}
	if e, ok := got.LookupClass(drv, tuning.Square); ok && e.When.Equal(when) {
		t.Errorf("square finished, but its cache entry is still the seeded one: %+v", e)
	}
	if e, ok := got.LookupClass(drv, tuning.LongK); !ok || !e.When.Equal(when) || e.Kernel != "cpu:4x4_4x4" || e.GFLOPS != 1e-3 || e.N != 8 {
		t.Errorf("long-k was interrupted, but its cache entry changed: %+v (present: %v)", e, ok)
	}
}

// TestMulCtrlC: Ctrl-C in glmul mul, once its first panel of C is written,
// exits 130 within a second or so, says so, and leaves -o as it was (here a
// file that was there before), with no temporary file beside it. The
// files are made by the parent (GLMUL_TEST_DIR): 8192×2048 by 2048×2048,
// eight panels of 1024 rows, tenths of a second each on llvmpipe.
// The same for SIGTERM (what timeout and kill send; SIGHUP is handled
// alike): before, the command died at once and left its temporary file
// beside -o.
func TestMulCtrlC(t *testing.T) {
	for _, sig := range []syscall.Signal{syscall.SIGINT, syscall.SIGTERM} {
		t.Run(sig.String(), func(t *testing.T) { testMulStopped(t, sig) })
	}
}

func testMulStopped(t *testing.T, sig syscall.Signal) {
	if os.Getenv("GLMUL_TEST_CHILD") == "mul" {
		dir := os.Getenv("GLMUL_TEST_DIR")
		os.Exit(exitCode(run([]string{"mul", filepath.Join(dir, "a.npy"), filepath.Join(dir, "b.npy"), "-o", filepath.Join(dir, "c.npy"),
			"-backend", "egl", "-progress", "on"}, os.Stdout, os.Stderr), os.Stderr))
	}
	needGL(t)
	dir := t.TempDir()
	rng := rand.New(rand.NewPCG(4, 4))
	for _, m := range []struct {
		name       string
		rows, cols int
	}{{"a.npy", 8192, 2048}, {"b.npy", 2048, 2048}} {
		if err := matfile.Write(filepath.Join(dir, m.name), cpu.Random(m.rows, m.cols, rng)); err != nil {
			t.Fatal(err)
		}
	}
	before := []byte("the C of an earlier run")
	os.WriteFile(filepath.Join(dir, "c.npy"), before, 0o644)
	t.Setenv("GLMUL_TEST_DIR", dir)
	c := startChild(t, "TestMulCtrlC/"+sig.String(), "mul", "(1/8)") // the progress bar after the first panel
	if !c.stop(t, sig) {
		t.Skip("the device finished all 8 panels before the signal; the test needs a slow one (llvmpipe in CI)")
	}
	name := map[syscall.Signal]string{syscall.SIGINT: "Ctrl-C", syscall.SIGTERM: "SIGTERM"}[sig]
	// Between panels, or (a panel on a loaded llvmpipe can take over the
	// second's grace) abandoned: either way -o stays as it was.
	if e := c.stderr.String(); !strings.Contains(e, "interrupted by "+name+": the 8192×2048×2048 product ") || !strings.Contains(e, filepath.Join(dir, "c.npy")+" was left as it was") {
		t.Errorf("stderr:\n%s", c.stderr.String())
	}
	if now, _ := os.ReadFile(filepath.Join(dir, "c.npy")); string(now) != string(before) {
		t.Errorf("c.npy changed: %q", now)
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 3 {
		t.Errorf("files beside the inputs and c.npy: %v", entries)
	}
}

// TestNohup: a command started with SIGHUP ignored (nohup) keeps ignoring
// it: signal.Notify would have turned it back on, and the command ended
// with status 129 when the terminal closed.
func TestNohup(t *testing.T) {
	needGL(t)
	c := &child{stdout: new(lockedBuffer), stderr: new(lockedBuffer), exited: make(chan error, 1)}
	c.cmd = exec.Command("sh", "-c", `trap "" HUP; exec "$0" -test.run='^TestMultiplyCtrlC$'`, os.Args[0])
	c.cmd.Env = append(os.Environ(), "GLMUL_TEST_CHILD=multiply")
	c.cmd.Stdout, c.cmd.Stderr = c.stdout, c.stderr
	if err := c.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { c.exited <- c.cmd.Wait() }()
	deadline := time.After(60 * time.Second)
	for !strings.Contains(c.stderr.String(), "(1/21)") {
		select {
		case err := <-c.exited:
			t.Skipf("the child ended (%v) before its first run was reported: the device is too fast for this test", err)
		case <-deadline:
			c.cmd.Process.Kill()
			t.Fatalf("no progress within 60 s:\n%s", c.stderr.String())
		case <-time.After(5 * time.Millisecond):
		}
	}
	c.cmd.Process.Signal(syscall.SIGHUP)
	select {
	case err := <-c.exited:
		if err != nil {
			t.Fatalf("SIGHUP under nohup ended the command: %v\n%s", err, c.stderr.String())
		}
		t.Skip("the command finished right after SIGHUP: too fast to tell")
	case <-time.After(500 * time.Millisecond):
	}
	if !c.interrupt(t) {
		t.Skip("the command finished before Ctrl-C")
	}
}
