//go:build unix

package main

import (
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/glmul/glmul/cmd/glmul/internal/matfile"
	"github.com/glmul/glmul/cpu"
	"github.com/glmul/glmul/validate"
)

// TestMulStreams: A or B from standard input ("-") or a FIFO (a shell's
// <(...), named without an extension: its first bytes tell the format)
// multiply as the same files do (they were refused: "unknown file type",
// "is a FIFO"); both from standard input is a usage error.
func TestMulStreams(t *testing.T) {
	needGL(t)
	dir := t.TempDir()
	rng := rand.New(rand.NewPCG(11, 12))
	a, b := cpu.New(13, 7), cpu.New(7, 5)
	for _, m := range []*[]float32{&a.Data, &b.Data} {
		for i := range *m {
			(*m)[i] = float32(rng.Float64()*2 - 1)
		}
	}
	aPath, bPath, bMTX := filepath.Join(dir, "a.npy"), filepath.Join(dir, "b.npy"), filepath.Join(dir, "b.mtx")
	for p, m := range map[string]*[]float32{aPath: &a.Data, bPath: &b.Data, bMTX: &b.Data} {
		mm := a
		if m == &b.Data {
			mm = b
		}
		if err := matfile.Write(p, mm); err != nil {
			t.Fatal(err)
		}
	}
	ref := cpu.Reference(a, b, false)
	read := func(p string) []byte { b, _ := os.ReadFile(p); return b }
	for i, c := range []struct {
		stdin string   // the file fed to standard input, if any
		args  []string // A, B
	}{
		{aPath, []string{"-", bPath}},
		{bMTX, []string{"-a", aPath, "-b", "-"}},
		{"", []string{fifoOf(t, read(aPath)), fifoOf(t, read(bMTX))}},
	} {
		if c.stdin != "" {
			pipeStdin(t, read(c.stdin))
		}
		out := filepath.Join(dir, fmt.Sprintf("c%d.npy", i))
		code, _, stderr := glmul(append(append([]string{"mul", "-backend", "egl", "-o", out}, c.args...), "-validate", "full")...)
		if code != 0 {
			t.Errorf("%v (stdin %s): exit %d\n%s", c.args, c.stdin, code, stderr)
			continue
		}
		if got, err := matfile.Read(out); err != nil || got.Rows != 13 || got.Cols != 5 {
			t.Errorf("%v: C %d×%d, %v", c.args, got.Rows, got.Cols, err)
		} else {
			for k, v := range got.Data {
				if w := ref.Data[k]; math.Abs(float64(v)-w) > 1e-5*(1+math.Abs(w)) {
					t.Errorf("%v: C[%d] = %v, want %v", c.args, k, v, w)
					break
				}
			}
		}
		if c.stdin == aPath && !strings.Contains(stderr, "A 13×7 from standard input, B 7×5 from "+bPath) {
			t.Errorf("the report does not name standard input:\n%s", stderr)
		}
	}
	code, _, stderr := glmul("mul", "-", "-", "-o", filepath.Join(dir, "x.npy"))
	if code != 2 || !strings.Contains(stderr, "A and B are both standard input") {
		t.Errorf("- -: exit %d, %s", code, stderr)
	}
}

// fifoOf makes a FIFO, named as a shell's <(...) is, without an
// extension, that a goroutine writes b into once it is opened.
func fifoOf(t *testing.T, b []byte) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "63")
	if err := syscall.Mkfifo(path, 0o600); err != nil {
		t.Skip("no FIFOs here:", err)
	}
	go func() {
		if f, err := os.OpenFile(path, os.O_WRONLY, 0); err == nil {
			f.Write(b)
			f.Close()
		}
	}()
	return path
}

// pipeStdin makes standard input a pipe that b is written into, for the
// test's duration.
func pipeStdin(t *testing.T, b []byte) {
	t.Helper()
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	saved := os.Stdin
	os.Stdin = r
	t.Cleanup(func() { os.Stdin = saved; r.Close() })
	go func() { w.Write(b); w.Close() }()
}

// TestMulFloat64Streams: glmul mul -type f64 reads A from a FIFO or
// standard input by panels (4 rows here), once, in order, as the float32
// product does.
func TestMulFloat64Streams(t *testing.T) {
	needGL(t)
	panelRowsFor64(t, 4)
	dir := t.TempDir()
	a, b, pa, pb, before := files64(t, dir, 13, 7, 5)
	for i, args := range [][]string{{fifoOf(t, before[0]), pb}, {"-", pb}} {
		if args[0] == "-" {
			pipeStdin(t, before[0])
		}
		out := filepath.Join(dir, fmt.Sprintf("c%d.npy", i))
		code, _, stderr := glmul(append([]string{"mul", "-type", "f64", "-backend", "egl", "-validate", "full", "-o", out}, args...)...)
		if code != 0 || !strings.Contains(stderr, "4 of 4 rows of A and C") {
			t.Errorf("%v: exit %d\n%s", args, code, stderr)
			continue
		}
		if r := validate.CheckFull64(a, b, readNPY64(t, out)); !r.OK {
			t.Errorf("%v: C %v", args, r)
		}
	}
	sameFiles(t, []string{pa, pb}, before)
}
