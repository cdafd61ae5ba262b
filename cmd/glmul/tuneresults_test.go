package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/glmul/glmul/cmd/glmul/internal/measure"
	"github.com/glmul/glmul/cmd/glmul/internal/sweep"
	"github.com/glmul/glmul/glcompute"
	"github.com/glmul/glmul/glcompute/tuning"
)

// TestSavedN: a class's cache entry records glmul tune's -n, which
// tune -show prints as "at n=": before, the middle product's N (long-k at
// -n 64 said n=8, thin-k n=128).
func TestSavedN(t *testing.T) {
	path := filepath.Join(t.TempDir(), "tuned.json")
	info := glcompute.Info{Vendor: "V", Renderer: "R", Version: "1"}
	for _, c := range []tuning.Class{tuning.Square, tuning.LongK, tuning.ThinK} {
		r := classResult{Class: c, shapes: c.Shapes(64), n: 64, Saved: true, Best: sweep.Candidate{Kernel: "cpu:8x8_8x8", GFLOPS: 1, Valid: true}}
		if err := saveTuned(path, info, &r); err != nil {
			t.Fatal(err)
		}
	}
	cache, err := tuning.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []tuning.Class{tuning.Square, tuning.LongK, tuning.ThinK} {
		if e, ok := cache.LookupClass(measure.Driver(info), c); !ok || e.N != 64 {
			t.Errorf("%s: entry %+v (present %v), want n 64", c, e, ok)
		}
	}
}

// TestTuneFloat64: glmul tune -type f64 sweeps dfast configurations in
// float64 (every product validated), ranks them against Mul64's default,
// says so in its report and JSON, and writes no tuning cache, even where
// the best beats the default: Mul64 reads none.
func TestTuneFloat64(t *testing.T) {
	needGL(t)
	cache := filepath.Join(t.TempDir(), "tuned.json")
	t.Setenv("GLMUL_TUNE_CACHE", cache)
	args := []string{"tune", "-type", "f64", "-backend", "egl", "-n", "32", "-reps", "1", "-classes", "square", "-candidates", "dfast:64x64x8_4x4_db", "-progress", "off"}
	code, stdout, stderr := glmul(append(args, "-format", "json")...)
	var j struct {
		Type    string `json:"type"`
		Builtin string `json:"builtin_default"`
		SavedTo string `json:"saved_to"`
		Classes []struct {
			Class      string            `json:"class"`
			Best       sweep.Candidate   `json:"best"`
			Builtin    sweep.Candidate   `json:"builtin"`
			Tiled32    *sweep.Candidate  `json:"tiled32"`
			Candidates []sweep.Candidate `json:"candidates"`
		} `json:"classes"`
	}
	if code != 0 || json.Unmarshal([]byte(stdout), &j) != nil || len(j.Classes) != 1 {
		t.Fatalf("exit %d, %s\n%s", code, stderr, stdout)
	}
	c := j.Classes[0]
	if j.Type != "float64" || j.Builtin != "dfast:128x128x8_8x8_db" || j.SavedTo != "" || c.Tiled32 != nil {
		t.Errorf("type %q, built-in %q, saved to %q, tiled32 %+v", j.Type, j.Builtin, j.SavedTo, c.Tiled32)
	}
	// The spec and the built-in choice, both valid in float64.
	if len(c.Candidates) != 2 || !c.Best.Valid || !c.Builtin.Valid || c.Builtin.Kernel != "dfast:128x128x8_8x8_db" {
		t.Errorf("class %+v, want the spec and Mul64's default, valid", c)
	}
	if _, err := os.Stat(cache); err == nil {
		t.Error("tune -type f64 wrote the tuning cache")
	}
	code, stdout, stderr = glmul(args...)
	if code != 0 || !strings.Contains(stdout, "type    float64: dfast's configurations through Mul64, validated in float64; not cached") ||
		!strings.Contains(stdout, "(built-in choice: Mul64's default)") || strings.Contains(stdout, "tiled32") || strings.Contains(stdout, "saved") {
		t.Errorf("text: exit %d\n%s%s", code, stdout, stderr)
	}
}

// TestTuneFloat64Refusals: tune -type f64 refuses what refers to the
// float32 cache (-show, -save) and candidates that are not dfast's (and
// tune -type f32 dfast's), naming what to do; on OpenGL ES it fails at
// once with the hint.
func TestTuneFloat64Refusals(t *testing.T) {
	t.Setenv("GLMUL_TUNE_CACHE", filepath.Join(t.TempDir(), "tuned.json"))
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"-type", "f64", "-show"}, "-show prints the tuning cache, which holds float32 configurations only"},
		{[]string{"-type", "f64", "-save"}, "-type f64 measures and reports, and never writes the tuning cache"},
		{[]string{"-type", "f64", "-candidates", "fast:64x64x8_4x4"}, `"fast:64x64x8_4x4" is not a dfast configuration`},
		{[]string{"-type", "f64", "-candidates", "dfast:64x64x8_4"}, "dfast kernel configuration"},
		{[]string{"-candidates", "dfast:64x64x8_4x4_db"}, "sweep dfast with -type f64"},
		{[]string{"-type", "f16"}, `tune: -type "f16": use f32`},
	} {
		code, stdout, stderr := glmul(append([]string{"tune"}, c.args...)...)
		if code != 2 || stdout != "" || !strings.Contains(stderr, c.want) {
			t.Errorf("tune %v: exit %d, stdout %q, stderr %q; want exit 2 and %q", c.args, code, stdout, stderr, c.want)
		}
	}
	needGL(t)
	code, stdout, stderr := glmul("tune", "-type", "f64", "-n", "16", "-backend", "gles", "-progress", "off")
	if code != 1 || stdout != "" || !strings.Contains(stderr, "hint: -type f64 needs desktop OpenGL") {
		t.Errorf("-backend gles: exit %d\n%s%s", code, stdout, stderr)
	}
}
