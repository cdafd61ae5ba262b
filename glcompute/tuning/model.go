package tuning

import (
	"cmp"
	"fmt"
	"slices"

	"github.com/glmul/glmul/shaders"
)

// Facts are what the device model knows of a GPU glmul never saw: what
// OpenGL reports of it. The multiprocessor count, where the driver gives
// it, is not among them: the model's configurations do not depend on it,
// and the shape rules (AutoSplitK, UseEdges) take it from glcompute's
// Info.SMCount for any vendor.
type Facts struct {
	// SharedMemory is the shared memory one work group may use, in bytes
	// (GL_MAX_COMPUTE_SHARED_MEMORY_SIZE).
	SharedMemory int
	// Invocations is the most invocations one work group may have
	// (GL_MAX_COMPUTE_WORK_GROUP_INVOCATIONS).
	Invocations int
}

// Choice is a device's kernel choice: the fast configuration a product
// runs by default, its stand-in where A is read as it is (Natural, set
// where Default reads A transposed), the stand-in for the large ones among
// those (NaturalWide, see UseWideNatural; "" for Natural), the
// configuration for products whose grid the default fills badly
// (SmallGrid, see UseSmallGrid; "" for none), and where the choice comes
// from, in words. Float64 is the dfast configuration of float64 products
// where one was measured for the vendor ("": the first of dfast's that
// fits the device, glcompute's choice by its limits).
type Choice struct {
	Default, Natural, NaturalWide, SmallGrid string
	Source                                   string
	Float64                                  string
}

// Register budget and cost, assumptions of the model that OpenGL cannot
// confirm (it reports no register counts):
//
//   - ModelRegisters is what one invocation may hold without spilling to
//     local memory: 255 on NVIDIA GPUs since Kepler, 256 vector registers
//     a lane on AMD's GCN and RDNA.
//   - modelOverhead is what a fast kernel holds besides its accumulators,
//     fragments and staged loads (indices, bounds, loop counters).
const (
	ModelRegisters = 255
	modelOverhead  = 32
)

// ModelMaxTN is the most columns of C one invocation of the model's
// configurations computes. Not a register limit: tiles of 8×16 an
// invocation ran far slower than the same registers in 16×8, a cliff the
// model's register count does not explain.
// Measured: docs/TUNING.md, "Model".
const ModelMaxTN = 8

// ModelMaxBK is the deepest K step of the model's configurations, an
// assumption from measured GPUs: the default, natural and small-grid
// configurations measured best have steps of 8 or 16, and steps of 32
// with large register tiles ran slowest of all. It costs something: glmul
// tune has cached steps of 32 for long-k and thin-k classes, which the
// model cannot choose. Measured: docs/TUNING.md, "Model".
const ModelMaxBK = 16

// ModelRegistersOf is the model's estimate of the registers one invocation
// of c holds: TM·TN accumulators; its fragments of A and B for one step of
// k (TM + TN floats where A is read transposed; where A is read as it is,
// 4·TM + TN, a vec4 along K per row, or 4·TN + 4 from 64 accumulators with
// TM ≥ TN, B for four k and a vec4 of A: fast.comp's BH); the global
// loads it stages through registers ((BM + BN)·BK / invocations); and
// modelOverhead.
func ModelRegistersOf(c shaders.FastConfig) int {
	frag := 4*c.TM + c.TN
	switch {
	case c.TransA:
		frag = c.TM + c.TN
	case c.HoldsB():
		frag = 4*c.TN + 4
	}
	return c.TM*c.TN + frag + (c.BM+c.BN)*c.BK/c.Threads() + modelOverhead
}

// ModelMinThreads is the fewest invocations the model wants in a work
// group of its Default and Natural: their groups each fill a
// multiprocessor (OneGroupPerSM) or nearly, so their own invocations are
// all that hide the latency of shared memory and of the FMAs: 8 warps of
// 32, as in cuBLAS's 256×128 kernel. Measured: docs/TUNING.md, "Model".
const ModelMinThreads = 256

// Model returns the kernel choice for a GPU glmul never saw, from Facts.
// Of the fast family's configurations (shaders.FastCandidates, less the
// padded warp-tile variants) that fit the work group limits, ModelRegisters
// (ModelRegistersOf), ModelMaxTN and ModelMaxBK, Default reads least per
// multiply-add (bigFirst), among those of ModelMinThreads invocations or
// more where any are; Natural is the same among those reading A as it is
// with at most half Default's block area (twice the groups before K is
// split), NaturalWide among those with its area (UseWideNatural), and
// SmallGrid among 64×64 blocks of 128 invocations or more (smallFirst).
// Where nothing fits, Default is GenericDefault and the caller's fit check
// decides. The rules and their measurements: docs/TUNING.md, "Model".
func Model(f Facts) Choice {
	var ok []shaders.FastConfig
	for _, c := range shaders.FastCandidates() {
		if c.PadA == 0 && c.WarpX == 0 && c.TN <= ModelMaxTN && c.BK <= ModelMaxBK && c.Threads() <= f.Invocations &&
			c.SharedBytes() <= f.SharedMemory && ModelRegistersOf(c) <= ModelRegisters {
			ok = append(ok, c)
		}
	}
	ch := Choice{Default: GenericDefault}
	big := func(keep func(shaders.FastConfig) bool) (shaders.FastConfig, bool) {
		many := func(c shaders.FastConfig) bool { return keep(c) && c.Threads() >= ModelMinThreads }
		if c, found := modelBest(ok, many, bigFirst); found {
			return c, true
		}
		return modelBest(ok, keep, bigFirst)
	}
	if best, found := big(func(shaders.FastConfig) bool { return true }); found {
		ch.Default = "fast:" + best.String()
		if best.TransA {
			if nat, found := big(func(c shaders.FastConfig) bool { return !c.TransA && 2*c.BM*c.BN <= best.BM*best.BN }); found {
				ch.Natural = "fast:" + nat.String()
			}
			if wide, found := big(func(c shaders.FastConfig) bool { return !c.TransA && c.BM*c.BN == best.BM*best.BN }); found {
				ch.NaturalWide = "fast:" + wide.String()
			}
		}
	}
	small := func(c shaders.FastConfig) bool { return c.BM == 64 && c.BN == 64 && c.Threads() >= 128 && !c.TransA }
	if best, found := modelBest(ok, small, smallFirst); found {
		ch.SmallGrid = "fast:" + best.String()
	}
	if len(ok) == 0 {
		ch.Source = fmt.Sprintf("generic default (no configuration of the device model fits %d bytes of shared memory and %d invocations a work group)",
			f.SharedMemory, f.Invocations)
	} else {
		ch.Source = fmt.Sprintf("device model, from %d bytes of shared memory and %d invocations a work group (glmul tune measures instead)",
			f.SharedMemory, f.Invocations)
	}
	return ch
}

// modelBest returns the configuration among cs that keep accepts which
// order puts first.
func modelBest(cs []shaders.FastConfig, keep func(shaders.FastConfig) bool, order func(a, b shaders.FastConfig) int) (shaders.FastConfig, bool) {
	var kept []shaders.FastConfig
	for _, c := range cs {
		if keep(c) {
			kept = append(kept, c)
		}
	}
	if len(kept) == 0 {
		return shaders.FastConfig{}, false
	}
	return slices.MinFunc(kept, order), true
}

// reuse orders a before b where a reads less per FMA: from shared memory
// (an invocation's TM·TN FMAs over TM + TN floats), then from global
// memory (a group's BM·BN over BM + BN), compared by cross-multiplying.
func reuse(a, b shaders.FastConfig) int {
	if c := cmp.Compare(b.TM*b.TN*(a.TM+a.TN), a.TM*a.TN*(b.TM+b.TN)); c != 0 {
		return c
	}
	return cmp.Compare(b.BM*b.BN*(a.BM+a.BN), a.BM*a.BN*(b.BM+b.BN))
}

// bigFirst is Default's order (see Model): first the fewest shared-memory
// reads per FMA ((TM + TN) / (TM·TN) for an invocation), then the fewest
// global reads ((BM + BN) / (BM·BN) for a work group) (reuse); then
// double-buffered, A read transposed, the deeper K step (fewer barriers
// per K), the taller block.
func bigFirst(a, b shaders.FastConfig) int {
	if c := reuse(a, b); c != 0 {
		return c
	}
	return cmp.Or(-cmpBool(a.DoubleBuffer, b.DoubleBuffer), -cmpBool(a.TransA, b.TransA),
		cmp.Compare(b.BK, a.BK), cmp.Compare(b.BM, a.BM), cmp.Compare(b.TM, a.TM))
}

// smallFirst is SmallGrid's order (see Model): the fewest shared reads
// per FMA (reuse), then double-buffered, then the shallowest K step (the
// small grid also serves K down to 64).
func smallFirst(a, b shaders.FastConfig) int {
	if c := reuse(a, b); c != 0 {
		return c
	}
	return cmp.Or(-cmpBool(a.DoubleBuffer, b.DoubleBuffer), cmp.Compare(a.BK, b.BK), cmp.Compare(b.TM, a.TM))
}

func cmpBool(a, b bool) int {
	switch {
	case a == b:
		return 0
	case a:
		return 1
	}
	return -1
}
