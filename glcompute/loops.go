package glcompute

import (
	"fmt"
	"strings"

	"github.com/glmul/glmul/shaders"
)

// Mesa's gallivm, the shader compiler of llvmpipe (and of lavapipe, which
// zink's llvmpipe renderer runs on), ends every loop of a shader
// invocation once all its loops together have run gallivmLoopBudget
// iterations (LP_MAX_TGSI_LOOP_ITERATIONS, one counter a function,
// decremented at each loop's end, not reset between loops): the loop
// simply stops, with no error. Mesa 22.3.6's llvmpipe multiplied
// 8×1500000×8 with the cpu kernel split 4 ways (375000 of K a slice,
// 93750 iterations of its loop) with a relative error of 0.67; one
// iteration of cpu.comp's K loop covers 4 of K, so K = 262144 unsplit
// was right and 262148 was not (TestLoopBudget measures the budget,
// TestLongK the products).
//
// So on such a driver no invocation of a kernel may loop over more of K
// than maxKRange says: a product over it splits K into slices (summed by
// reduce.comp, as split-K is), a general Gemm runs its K in chunks that
// accumulate into C, and a kernel that can do neither (tiled32) is
// refused.
const gallivmLoopBudget = 65535

// driverLoopBudget returns the loop iterations the driver lets one shader
// invocation run, all loops together: gallivmLoopBudget on Mesa's
// llvmpipe, 0 (no limit) elsewhere.
func driverLoopBudget(renderer string) int {
	if strings.Contains(renderer, "llvmpipe") {
		return gallivmLoopBudget
	}
	return 0
}

// maxKRange returns the most of K one invocation of kernel k may loop
// over on this device, 0 where there is no limit. The K loop gets half
// the budget, leaving the other half for whatever loops the compiler
// did not unroll before and after it (cpu:16x4_12x8's took a few dozen
// on llvmpipe). One step of the K loop (StepK of K; tiled32's 32, gemm's
// 16) costs one iteration where its inner loops are unrolled, as they
// were for cpu, fast and tiled32; gemm.comp's loop over the 16 k of a
// step was not (about 18 iterations a step, measured on llvmpipe): it
// is counted as 32. dfast's (the float64 kernel) step is counted as 8:
// its load and store loops are not all unrolled, and the default
// configuration's steps cost about 6 iterations on llvmpipe (a K of
// 300000 ran its first 87382). The batched kernel's K is at most 32.
func (d *Device) maxKRange(k shaders.Kernel) int {
	if d.loopBudget == 0 {
		return 0
	}
	depth, cost := k.StepK, 1
	switch k.Name {
	case "tiled32":
		depth = 32
	case "gemm":
		depth, cost = 16, 32
	case "dfast":
		cost = 8
	}
	if depth == 0 {
		return 0
	}
	return depth * (d.loopBudget / 2 / cost)
}

// kSlices returns how many slices K must be split into for kernel k on
// this device (1: none), each within maxKRange and a multiple of StepK.
func (d *Device) kSlices(k shaders.Kernel, kk int) int {
	r := d.maxKRange(k)
	if r == 0 || kk <= r {
		return 1
	}
	if k.StepK > 0 {
		r = r / k.StepK * k.StepK
	}
	return (kk + r - 1) / r
}

// loopLimit says why K is split, for errors.
func (d *Device) loopLimit() string {
	return fmt.Sprintf("%s stops a shader's loops after %d iterations; glcompute's documentation, \"Mesa's llvmpipe and long K\"", d.info.Renderer, d.loopBudget)
}

// errLoopBudget is the error for kernel k, which cannot split K, asked
// for a product over its maxKRange.
func (d *Device) errLoopBudget(k shaders.Kernel, kk int) error {
	return fmt.Errorf("%w: kernel %s cannot split K, and K = %d is over the %d it may loop over on this driver (%s): use the cpu or fast kernel, which split K",
		ErrUnsupported, k.Spec(), kk, d.maxKRange(k), d.loopLimit())
}
