package main

import (
	"encoding/csv"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/glmul/glmul/internal/tuning"
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
	args := []string{"tune", "-backend", "egl", "-n", "40", "-reps", "2", "-candidates", specs, "-progress", "on"}
	code, stdout, stderr := glmul(append(args, "-save=false", "-format", "json")...)
	var j struct {
		Classes []struct {
			Class      string             `json:"class"`
			Shape      string             `json:"shape"`
			Best       tuning.Candidate   `json:"best"`
			Candidates []tuning.Candidate `json:"candidates"`
		} `json:"classes"`
		SavedTo string `json:"saved_to"`
	}
	if code != 0 || json.Unmarshal([]byte(stdout), &j) != nil {
		t.Fatalf("exit %d, %s\n%s", code, stderr, stdout)
	}
	if len(j.Classes) != 3 || j.SavedTo != "" {
		t.Fatalf("%+v", j)
	}
	for i, want := range []string{"square 40×40×40", "long-k 5×160×5", "thin-k 40×10×40"} {
		c := j.Classes[i]
		if c.Class+" "+c.Shape != want || len(c.Candidates) != 2 || !c.Best.Valid || !strings.Contains(specs, c.Best.Kernel) {
			t.Errorf("class %d: %+v, want %s with a valid best of 2", i, c, want)
		}
	}
	if _, err := os.Stat(cache); err == nil {
		t.Fatal("-save=false wrote the cache")
	}
	code, stdout, stderr = glmul(args...)
	if code != 0 || !strings.Contains(stdout, "best ") || !strings.Contains(stdout, "saved ") {
		t.Fatalf("exit %d, %s\n%s", code, stderr, stdout)
	}
	c, err := tuning.Load(cache)
	if err != nil || len(c.Entries) != 3 || !strings.Contains(specs, c.Entries[0].Kernel) {
		t.Fatalf("cache %v %+v", err, c)
	}
	long, _ := c.LookupClass(c.Entries[0].Driver, tuning.LongK)
	code, stdout, _ = glmul("tune", "-show", "-backend", "egl")
	if code != 0 || !strings.Contains(stdout, "uses     "+c.Entries[0].Kernel) || !strings.Contains(stdout, "tuned by glmul tune") ||
		!strings.Contains(stdout, "uses     "+long.Kernel+" for long-k products") {
		t.Fatalf("-show: exit %d\n%s", code, stdout)
	}
	// A long-K product now runs the kernel tuned for its class; -ignore-tuned
	// does not.
	for _, c := range []struct {
		flag  string
		tuned bool
	}{{"-ignore-tuned=false", true}, {"-ignore-tuned", false}} {
		code, stdout, stderr = glmul("-backend", "egl", "-shape", "8x100x8", c.flag, "-reps", "1", "-format", "json")
		var r struct {
			Timings struct {
				Kernel string `json:"kernel"`
			} `json:"timings"`
		}
		if code != 0 || json.Unmarshal([]byte(stdout), &r) != nil {
			t.Fatalf("%s: exit %d, %s", c.flag, code, stderr)
		}
		if c.tuned != (r.Timings.Kernel == long.Kernel) {
			t.Errorf("8×100×8 with %s ran %s; the long-k class's kernel is %s", c.flag, r.Timings.Kernel, long.Kernel)
		}
	}
	// One class alone, and a bad one.
	code, stdout, stderr = glmul("tune", "-backend", "egl", "-n", "40", "-reps", "1", "-candidates", specs, "-classes", "thin-k", "-save=false")
	if code != 0 || strings.Contains(stdout, "square") || !strings.Contains(stdout, "thin-k 40×10×40") {
		t.Errorf("-classes thin-k: exit %d\n%s%s", code, stdout, stderr)
	}
	if code, _, stderr = glmul("tune", "-classes", "wide"); code != 2 || !strings.Contains(stderr, "unknown shape class") {
		t.Errorf("-classes wide: exit %d, %s", code, stderr)
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
