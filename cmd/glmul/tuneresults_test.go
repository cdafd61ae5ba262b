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
// float64 (every product validated), ranks them against the device's
// untuned float64 kernel, says so in its report and JSON, and caches the
// best as a float64 entry exactly where it beat that by the margin,
// leaving the driver's float32 entry as it was; tune -show then names
// the device's float64 choice. With -save=false nothing is written.
func TestTuneFloat64(t *testing.T) {
	needGL(t)
	cache := filepath.Join(t.TempDir(), "tuned.json")
	t.Setenv("GLMUL_TUNE_CACHE", cache)
	args := []string{"tune", "-type", "f64", "-backend", "egl", "-n", "32", "-reps", "1", "-classes", "square", "-candidates", "dfast:64x64x8_4x4_db", "-progress", "off"}
	code, stdout, stderr := glmul(append(args, "-save=false")...)
	if _, err := os.Stat(cache); code != 0 || err == nil || !strings.Contains(stdout, "type    float64: dfast's configurations through Mul64, validated in float64: nothing cached (-save=false)") {
		t.Fatalf("-save=false: exit %d, cache written %v\n%s%s", code, err == nil, stdout, stderr)
	}
	var j struct {
		Type    string         `json:"type"`
		Builtin string         `json:"builtin_default"`
		SavedTo string         `json:"saved_to"`
		Device  glcompute.Info `json:"device"`
		Classes []struct {
			Class      string            `json:"class"`
			Best       sweep.Candidate   `json:"best"`
			Builtin    sweep.Candidate   `json:"builtin"`
			Saved      bool              `json:"beats_builtin"`
			Tiled32    *sweep.Candidate  `json:"tiled32"`
			Candidates []sweep.Candidate `json:"candidates"`
		} `json:"classes"`
	}
	code, stdout, stderr = glmul(append(args, "-format", "json")...)
	if code != 0 || json.Unmarshal([]byte(stdout), &j) != nil || len(j.Classes) != 1 {
		t.Fatalf("exit %d, %s\n%s", code, stderr, stdout)
	}
	c, untuned := j.Classes[0], j.Device.Float64Kernel // the device's without the cache: tune opens it so
	if j.Type != "float64" || untuned == "" || j.Builtin != untuned || c.Tiled32 != nil {
		t.Errorf("type %q, built-in %q, tiled32 %+v", j.Type, j.Builtin, c.Tiled32)
	}
	// The spec and the built-in choice, both valid in float64.
	if len(c.Candidates) != 2 || !c.Best.Valid || !c.Builtin.Valid || c.Builtin.Kernel != untuned {
		t.Errorf("class %+v, want the spec and the untuned float64 kernel, valid", c)
	}
	saved, err := tuning.Load(cache)
	if err != nil {
		t.Fatal(err)
	}
	drv := measure.Driver(j.Device)
	e, ok := saved.LookupClass64(drv, tuning.Square)
	if _, f32 := saved.Lookup(drv); f32 || ok != c.Saved || ok && (e.Kernel != c.Best.Kernel || !e.Float64) || c.Saved != (j.SavedTo == cache) {
		t.Errorf("beats the built-in %v, saved to %q: float64 entry %+v (%v), a float32 one %v", c.Saved, j.SavedTo, e, ok, f32)
	}
	// Whatever the sweep found, a float64 entry is what the device runs
	// untold, and a float32 entry beside it is left alone.
	saved.Put(tuning.Entry{Driver: drv, Class: tuning.Square, Kernel: "dfast:64x64x8_4x4_db", Float64: true})
	saved.Put(tuning.Entry{Driver: drv, Class: tuning.Square, Kernel: "cpu:8x8_8x8"})
	if err := saved.Save(cache); err != nil {
		t.Fatal(err)
	}
	code, stdout, stderr = glmul("tune", "-show", "-backend", "egl")
	if code != 0 || !strings.Contains(stdout, "float64 square: dfast:64x64x8_4x4_db") ||
		!strings.Contains(stdout, "float64  dfast:64x64x8_4x4_db: tuned by glmul tune -type f64") || !strings.Contains(stdout, "uses     cpu:8x8_8x8: tuned by glmul tune") {
		t.Errorf("tune -show: exit %d\n%s%s", code, stdout, stderr)
	}
	code, stdout, stderr = glmul("-n", "40", "-type", "f64", "-backend", "egl", "-reps", "1", "-warmup", "0")
	if code != 0 || !strings.Contains(stdout, "dfast:64x64x8_4x4_db") {
		t.Errorf("glmul -type f64 with a tuned float64 kernel: exit %d\n%s%s", code, stdout, stderr)
	}
	code, stdout, stderr = glmul(append(args, "-classes", "square")...)
	if code != 0 || !strings.Contains(stdout, "(built-in choice: Mul64's without tuning)") || strings.Contains(stdout, "tiled32") {
		t.Errorf("text: exit %d\n%s%s", code, stdout, stderr)
	}
}

// TestTuneFloat64Refusals: tune -type f64 refuses candidates that are
// not dfast's (and
// tune -type f32 dfast's), naming what to do; on OpenGL ES it fails at
// once with the hint.
func TestTuneFloat64Refusals(t *testing.T) {
	t.Setenv("GLMUL_TUNE_CACHE", filepath.Join(t.TempDir(), "tuned.json"))
	for _, c := range []struct {
		args []string
		want string
	}{
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
