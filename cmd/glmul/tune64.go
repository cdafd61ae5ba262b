package main

import (
	"context"
	"fmt"
	"strings"

	"github.com/glmul/glmul/cmd/glmul/internal/measure"
	"github.com/glmul/glmul/glcompute"
	"github.com/glmul/glmul/glcompute/tuning"
	"github.com/glmul/glmul/shaders"
	"github.com/glmul/glmul/validate"
)

// glmul tune -type f64 sweeps dfast's configurations
// (shaders.DFastCandidates, or -candidates dfast:... specs) on each shape
// class's products in float64 through Device.Mul64, validated in float64,
// and caches each class's fastest where it beats the device's untuned
// float64 kernel (glcompute.Info.Float64Kernel, of a device opened with
// IgnoreTuned) by tuning.TunedMargin, as a float64 entry
// (tuning.Entry.Float64), which Mul64 then runs untold.

// dfastCandidates are the specs -candidates all sweeps with -type f64.
func dfastCandidates() []string {
	var out []string
	for _, c := range shaders.DFastCandidates() {
		out = append(out, "dfast:"+c.String())
	}
	return out
}

// checkTune64 checks the flags of tune -type f64: -candidates (only) must
// name dfast configurations.
func (f *tuneFlags) checkTune64(only string) error {
	if only == "all" {
		return nil // dfastCandidates: settle
	}
	for _, s := range strings.Split(only, ",") {
		s = strings.TrimSpace(s)
		if !strings.HasPrefix(s, "dfast:") {
			return usagef("tune: -candidates: %q is not a dfast configuration: -type f64 sweeps dfast:BMxBNxBK_TMxTN specs (e.g. dfast:64x64x8_4x4_db), or all", s)
		}
		if _, err := kernel64("tune: -candidates", s); err != nil {
			return err
		}
		f.specs = append(f.specs, s)
	}
	return nil
}

// typeLine says, for tune's report, what was swept and where it went.
func (f *tuneFlags) typeLine() string {
	what := "float32"
	if f.typ == typeF64 {
		what = "float64: dfast's configurations through Mul64, validated in float64"
	}
	if !f.save {
		return what + ": nothing cached (-save=false)"
	}
	return fmt.Sprintf("%s: a class's best is cached for this driver where it beats the built-in choice by %.0f%%", what, 100*(tuning.TunedMargin-1))
}

// products returns, for each of r's shapes, a function that measures
// its product on a device with a kernel spec: in float32
// (measure.Product) or, for -type f64, in float64 (measure.Product64),
// validated either way. The inputs are made here, once for the sweep.
func (f *tuneFlags) products(ctx context.Context, r *classResult) []func(*glcompute.Device, string) (measure.Result, error) {
	var out []func(*glcompute.Device, string) (measure.Result, error)
	for _, s := range r.shapes {
		if r.f64 {
			in := measure.NewInputs64(s[0], s[1], s[2], 1, nil)
			out = append(out, func(d *glcompute.Device, spec string) (measure.Result, error) {
				return measure.Product64(d, in, measure.Options{Kernel: spec, Warmup: 1, Reps: f.reps, Validate: validate.Auto, Context: ctx})
			})
			continue
		}
		in := measure.NewInputs(s[0], s[1], s[2], 1)
		out = append(out, func(d *glcompute.Device, spec string) (measure.Result, error) {
			return measure.Product(d, in, measure.Options{Kernel: spec, Warmup: 1, Reps: f.reps, Validate: validate.Auto, Context: ctx})
		})
	}
	return out
}
