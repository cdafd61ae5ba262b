package main

import (
	"fmt"
	"io"
	"strings"

	"gonum.org/v1/gonum/blas/blas64"

	"github.com/glmul/glmul/cmd/glmul/internal/measure"
	"github.com/glmul/glmul/glcompute"
	"github.com/glmul/glmul/glcompute/tuning"
	"github.com/glmul/glmul/shaders"
	"github.com/glmul/glmul/validate"
)

// -type: the matrices' element type. float64 products run through
// glcompute.Device.Mul64 (the dfast kernel, in Mul's pipelined pass)
// and are validated by validate.Check64 against a double-double reference
// (docs/VALIDATION.md, "float64 products").
const (
	typeF32 = "f32"
	typeF64 = "f64"
)

// typeUsage is -type's help.
const typeUsage = "element `type` of the matrices: f32 (float32) or f64 (float64: the dfast kernel through Device.Mul64's pipelined pass, validated against a double-double reference; not on OpenGL ES)"

// checkType returns a usage error unless t names an element type; cmd
// ("bench: ", or "" for the main command) prefixes the message.
func checkType(cmd, t string) error {
	if t != typeF32 && t != typeF64 {
		return usagef("%s-type %q: use f32 (float32) or f64 (float64)", cmd, t)
	}
	return nil
}

// typeName is the element type -type t names: "float32" or "float64".
func typeName(t string) string {
	if t == typeF64 {
		return "float64"
	}
	return "float32"
}

// kernel64 returns the float64 kernel that a -kernel spec names with
// -type f64: fast (the default) and dfast are dfast, the fast kernel in
// float64; dfast:CONFIG one of its configurations. The other kernels
// have no float64 version: a usage error naming flag.
func kernel64(flag, spec string) (string, error) {
	if spec == "fast" {
		spec = "dfast"
	}
	if _, err := shaders.LookupFloat64(spec); err != nil {
		return "", usagef("%s %s: -type f64 runs dfast, the fast kernel in float64 (dfast:BMxBNxBK_TMxTN for a configuration): %v", flag, spec, err)
	}
	return spec, nil
}

// parseKernels64 reads bench's comma-separated -kernels with -type f64,
// each a float64 kernel (kernel64); -split-k is refused.
func parseKernels64(flag, list string, splitK int) ([]string, error) {
	if splitK > 1 {
		return nil, usagef("bench: -split-k %d: float64 products run in one piece and do not split K: leave it out with -type f64", splitK)
	}
	var kernels []string
	for _, k := range strings.Split(list, ",") {
		k, err := kernel64(flag, strings.TrimSpace(k))
		if err != nil {
			return nil, err
		}
		kernels = append(kernels, k)
	}
	return kernels, nil
}

// checkTypeAndKernel checks -type and -kernel for the main command: with
// -type f64, the kernel becomes its float64 spec (kernel64), and the
// flags float64 products do not take are refused.
func (o *options) checkTypeAndKernel() error {
	if err := checkType("", o.typ); err != nil {
		return err
	}
	if o.typ == typeF32 {
		if err := tuning.CheckKernel(o.kernel); err != nil {
			return usagef("-kernel: %v", err)
		}
		return nil
	}
	switch {
	case o.devices != "":
		return usagef("-devices multiplies float32 over a group of GPUs: leave it out with -type f64")
	case o.mapped:
		return usagef("-mapped makes float32 host matrices (glcompute/pinned): leave it out with -type f64")
	case o.splitK > 1:
		return usagef("-split-k %d: float64 products run in one piece and do not split K: leave it out with -type f64", o.splitK)
	}
	var err error
	o.kernel, err = kernel64("-kernel", o.kernel)
	return err
}

// checkHostMemory64 is checkHostMemory for float64 matrices held whole
// (glmul -n, bench, table): A, B and C.
func checkHostMemory64(m, k, n int) error { return checkPanelMemory64(m, k, n, m, false) }

// checkPanelMemory64 is checkHostMemory for an m×k by k×n float64
// product that holds B and panels of rows of A and C (rows each, up to
// panelsInFlight of them: glmul mul's, panelRows64), or all of them
// (rows = m); full adds the full check's four float64s an element of one
// panel's C (its double-double reference, magnitudes and peaks).
func checkPanelMemory64(m, k, n, rows int, full bool) error {
	live := min(panelsInFlight, (m+max(rows, 1)-1)/max(rows, 1))
	per := float64(live) * float64(k+n) // a row's of A and C, in each panel held
	if full {
		per += 4 * float64(n)
	}
	need := 8 * (float64(k)*float64(n) + float64(rows)*per)
	total, ok := hostMemory()
	switch {
	case !ok || need <= total:
		return nil
	case rows >= m:
		return fmt.Errorf("the float64 %d×%d by %d×%d product needs %.1f GiB of host memory for A, B and C; this machine has %.1f GiB",
			m, k, k, n, need/(1<<30), total/(1<<30))
	}
	held := "a panel"
	if live > 1 {
		held = fmt.Sprintf("%d panels", live)
	}
	return fmt.Errorf("the float64 %d×%d by %d×%d product needs %.1f GiB of host memory for B and %s of %s of A and C; this machine has %.1f GiB",
		m, k, k, n, need/(1<<30), held, countOf(rows, "row", "rows"), total/(1<<30))
}

// probeFloat64 multiplies 1×1 float64 matrices on dev with kernel: the
// error of a device without float64 in shaders (OpenGL ES) or of a kernel
// that does not fit it comes before the inputs are made, and the kernel
// is compiled.
func probeFloat64(dev *glcompute.Device, kernel string) error {
	one := func(v float64) blas64.General { return blas64.General{Rows: 1, Cols: 1, Stride: 1, Data: []float64{v}} }
	_, err := dev.Mul64(one(0), one(3), one(5), &glcompute.MulOptions{Kernel: kernel})
	return err
}

// multiply64 runs the main command with -type f64: float64 inputs from
// the seed, measure.Product64's runs, validate.Check64's check, and the
// report of multiply.
func multiply64(o *options, stdout, stderr io.Writer) error {
	if err := checkHostMemory64(o.m, o.k, o.nCols); err != nil {
		return err
	}
	h, err := o.dev.hold(stderr, nil)
	if err != nil {
		return err
	}
	defer h.release()
	dev := h.Device
	if err := probeFloat64(dev, o.kernel); err != nil {
		return err
	}
	ctx, stop := notifyInterrupt()
	defer stop()
	mo, bar := measureOptions(ctx, o, stderr)
	if mo.Validating != nil {
		mo.Validating = func(m validate.Mode) {
			fmt.Fprintf(stderr, "validating (%s, double-double on the CPU)...\n", m)
		}
	}
	inputs := stageBar(o.progress, stderr, "making A and B")
	var r measure.Result
	err, h.abandoned = awaitWork(ctx, stderr, "glmul", func() error {
		in := measure.NewInputs64(o.m, o.k, o.nCols, o.seed, inputs)
		if err := ctx.Err(); err != nil {
			return err
		}
		var err error
		r, err = measure.Product64(dev, in, mo)
		return err
	})
	if bar != nil && !h.abandoned {
		bar.Finish()
	}
	return reportProduct(ctx, o, dev, r, err, "float64 ", stdout, stderr)
}
