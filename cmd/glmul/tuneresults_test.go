package main

import (
	"path/filepath"
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
