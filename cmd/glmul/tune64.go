package main

import (
	"context"
	"flag"
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
// and reports the fastest. It writes no tuning cache: glcompute's Mul64
// runs dfast's default configuration (builtin64) unless MulOptions.Kernel
// names another, and reads no cached choice, so a cached float64 winner
// would change nothing. The user passes the winner as -kernel (glmul
// -type f64, mul -type f64) or -kernels (bench -type f64, table -type f64).

// builtin64 is the float64 configuration Mul64 runs where no kernel is
// named ("dfast"): the built-in choice a float64 candidate must beat.
var builtin64 = "dfast:" + shaders.DefaultDFast.String()

// dfastCandidates are the specs -candidates all sweeps with -type f64.
func dfastCandidates() []string {
	var out []string
	for _, c := range shaders.DFastCandidates() {
		out = append(out, "dfast:"+c.String())
	}
	return out
}

// checkTune64 checks the flags of tune -type f64 (fs parsed): -show and
// -save refer to the cache, which float64 has none of, and -candidates
// (only) must name dfast configurations. It leaves f.save false.
func (f *tuneFlags) checkTune64(fs *flag.FlagSet, only string) error {
	saveSet := false
	fs.Visit(func(fl *flag.Flag) { saveSet = saveSet || fl.Name == "save" })
	switch {
	case f.show:
		return usagef("tune: -show prints the tuning cache, which holds float32 configurations only: glcompute's Mul64 runs %s unless -kernel names another; leave -type f64 out", builtin64)
	case saveSet && f.save:
		return usagef("tune: -save: -type f64 measures and reports, and never writes the tuning cache: glcompute's Mul64 reads no cached float64 choice (it runs %s unless -kernel names another); leave -save out and pass the best as -kernel with -type f64", builtin64)
	}
	f.save = false
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
	if f.typ == typeF64 {
		return "float64: dfast's configurations through Mul64, validated in float64; not cached (Mul64 reads no cached choice: it runs " + builtin64 + " unless -kernel names another), so pass the best as -kernel with -type f64"
	}
	if !f.save {
		return "float32: nothing cached (-save=false)"
	}
	return fmt.Sprintf("float32: a class's best is cached for this driver where it beats the built-in choice by %.0f%%", 100*(tuning.TunedMargin-1))
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
