package tuning

import (
	"math"
	"runtime"
	"strings"

	"github.com/glmul/glmul/shaders"
)

// Choose returns the kernel choice for a device glmul tune never ran on:
// the configurations measured for its vendor (NVIDIA, Mesa llvmpipe), else
// the device model's from what OpenGL reports of it (Model): also for the
// empty Driver, which glcompute passes for Options.Unseen.
// Measured: docs/TUNING.md, "The built-in configurations".
func Choose(d Driver, f Facts) Choice {
	switch {
	case strings.Contains(d.Vendor, "NVIDIA"):
		return Choice{Default: NVIDIADefault, Natural: NVIDIANatural, NaturalWide: NVIDIANaturalWide, SmallGrid: NVIDIASmallGrid,
			Source: "built-in default for NVIDIA (measured on an H100 and an H200)", Float64: NVIDIAFloat64}
	case OnCPU(d):
		return Choice{Default: LlvmpipeDefault, Source: "built-in default for Mesa llvmpipe (tuned on 2 CPU cores)"}
	}
	return Model(f)
}

// EdgeGroupsPerIdleSlot is how many of the edge kernel's work groups per
// idle slot of the interior's last wave UseEdges accepts.
// Fitted: docs/TUNING.md, "UseEdges".
const EdgeGroupsPerIdleSlot = 10

// UseEdges reports whether a product whose large tiles leave strips past
// their whole tiles should run the interior with them and the strips with
// a smaller-tiled kernel in the same pass (dispatch.Edges), rather than
// large tiles over everything: when the strips' edgeGroups work groups fit
// in the slots the interior's interiorGroups leave idle in its last wave
// of slots (so they run beside it, not after it): edges won where the
// strips were thin and lost where they were not. False without a slot
// count. Measured: docs/TUNING.md, "UseEdges".
func UseEdges(interiorGroups, edgeGroups, slots int) bool {
	if slots <= 0 || interiorGroups <= 0 || edgeGroups <= 0 {
		return false
	}
	idle := (interiorGroups+slots-1)/slots*slots - interiorGroups
	return edgeGroups <= EdgeGroupsPerIdleSlot*idle
}

// OnCPU reports whether the driver runs OpenGL on the CPU (Mesa llvmpipe),
// where the cpu kernel family serves rather than the fast one.
func OnCPU(d Driver) bool { return strings.Contains(d.Renderer, "llvmpipe") }

// ThinN returns the configuration for products whose result has at most
// ThinNMax columns (matrix-vector products), where the default's tiles
// are far wider than C (llvmpipe's default computes 64 columns to keep
// 4); "" where none was measured. Measured: docs/TUNING.md, "ThinN".
func ThinN(d Driver) string {
	if OnCPU(d) {
		return LlvmpipeThinN
	}
	return ""
}

// ThinNMax is the most columns of C that ThinN serves.
const ThinNMax = 4

// UseSmallGrid reports whether a product whose result the default
// configuration covers with groups work groups, over an inner dimension k,
// should use SmallGrid instead, on a device that runs wave groups at once:
// when the default's grid, even split along K as AutoSplitK would, leaves
// part of a wave idle, or K is too short to amortize large tiles' start and
// finish: large tiles split along K beat 64×64 tiles wherever the split
// fills a wave; 64×64 tiles win where it cannot (512³, 64×4096×64) and at
// K = 64. Measured: docs/TUNING.md, "UseSmallGrid".
func UseSmallGrid(groups, k, wave int) bool {
	return groups*AutoSplitK(groups, k, wave, 0) < wave || k < 512
}

// AutoSplitK returns how many slices of K a product whose result has
// groups work groups is split into when MulOptions.SplitK is 0, on a
// device that runs wave groups at once (Wave). Where slots (how many of
// the kernel's groups the device runs at once: its multiprocessors, one
// group each; see FillsSM) is known, it is the split that best fills the
// last of the waves of slots groups (SplitTime), each further slice
// modelling at least 2% faster than the best fewer, in at most 8 slices of
// at least 256 (under a wave of slots, 32 of at least 128). Where slots is
// not known, under a wave, enough slices for about two waves, each at
// least 128 long; otherwise no split. Measured: docs/TUNING.md, "AutoSplitK".
func AutoSplitK(groups, k, wave, slots int) int {
	if slots <= 0 {
		if groups < wave {
			return max(1, min((2*wave+groups-1)/groups, k/128))
		}
		return 1
	}
	best, bestT := 1, SplitTime(groups, slots, 1)
	most := min(8, k/256)
	if groups < slots {
		most = min(32, k/128)
	}
	for s := 2; s <= most; s++ {
		if t := SplitTime(groups, slots, s); t < 0.98*bestT {
			best, bestT = s, t
		}
	}
	return best
}

// SplitTime is AutoSplitK's model of a product of groups work groups, on
// a device that runs slots of them at once, in s slices of K: its time
// in unsplit groups' times, ceil(groups·s/slots)/s, times 1 + 0.0125·s
// for s ≥ 2 (the reduction pass and shorter K loops).
func SplitTime(groups, slots, s int) float64 {
	t := float64((groups*s+slots-1)/slots) / float64(s)
	if s > 1 {
		t *= 1 + 0.0125*float64(s)
	}
	return t
}

// TransposedAMinN is the width of B (N) from which a default kernel that
// reads A transposed (Kernel.TransposeA) is kept: the transpose of A costs
// a pass over its M·K elements, the product's gain grows with M·K·N.
// Measured: docs/TUNING.md, "TransposedAMinN".
const TransposedAMinN = 2048

// WideNaturalMinMACs is the product size (m·k·n multiply-adds) from which
// a product that reads A as it is because B is narrow (UseTransposedA
// false) may take Choice.NaturalWide, 128 accumulators an invocation,
// rather than Natural's 64 (UseWideNatural). Under it K is short for the
// wide tiles' few groups. Measured: docs/TUNING.md, "UseWideNatural".
const WideNaturalMinMACs = 1 << 33

// WideNaturalGain is how much faster a multiply-add runs in NaturalWide's
// tiles than in Natural's where both fill their waves alike.
// Measured: docs/TUNING.md, "UseWideNatural".
const WideNaturalGain = 1.05

// Tile is a kernel's block tile (M×N) and K step, as the wave model sees it.
type Tile struct{ M, N, K int }

// UseWideNatural reports whether an m×k by k×n product that reads A as it
// is should run Choice.NaturalWide's tiles (wide) rather than Natural's
// (natural), on a device that runs wave work groups at once and slots of
// either kernel's (one a multiprocessor, FillsSM; 0 where not known):
// from WideNaturalMinMACs multiply-adds on, where the wave model gives the
// wide tiles less time (WaveTime, a wide group counted as its area in
// natural groups, less WideNaturalGain), or the slots are not known.
// Measured: docs/TUNING.md, "UseWideNatural".
func UseWideNatural(m, k, n int, natural, wide Tile, wave, slots int) bool {
	if int64(m)*int64(k)*int64(n) < WideNaturalMinMACs {
		return false
	}
	if slots <= 0 {
		return true
	}
	t := func(tile Tile) float64 {
		groups := ((m + tile.M - 1) / tile.M) * ((n + tile.N - 1) / tile.N)
		step := max(tile.K, 1)
		return WaveTime(groups, k, (k+step-1)/step, wave, slots) * float64(tile.M*tile.N)
	}
	return t(wide)/WideNaturalGain < t(natural)
}

// WaveTime is the wave model's time of a product of groups work groups
// over an inner dimension k (steps K steps of the kernel), on a device
// that runs wave groups at once and slots of the kernel's (slots > 0), in
// the unsplit group's times: that of AutoSplitK's split (SplitTime), or
// stream-K's (groups/slots + StreamKCost) where UseStreamK takes its place,
// as a host or resident product runs it.
func WaveTime(groups, k, steps, wave, slots int) float64 {
	s := AutoSplitK(groups, k, wave, slots)
	if UseStreamK(groups, steps, slots, s) {
		return float64(groups)/float64(slots) + StreamKCost
	}
	return SplitTime(groups, slots, s)
}

// UseTransposedA reports whether a product n columns wide should keep a
// default kernel that reads A transposed, rather than one reading A as it
// is (glcompute's Info.NaturalKernel).
func UseTransposedA(n int) bool { return n >= TransposedAMinN }

// OneGroupPerSM is the size of block tile (accumulators per work group)
// from which a work group is taken to occupy a multiprocessor alone: its
// accumulators take half the 64 Ki registers of every NVIDIA
// multiprocessor since Kepler, so a second group cannot fit. AutoSplitK's
// wave model is used only for tiles that fill a multiprocessor (FillsSM).
const OneGroupPerSM = 32768

// measuredOnePerSM are configurations with fewer accumulators than
// OneGroupPerSM that run one work group a multiprocessor all the same
// (their other registers), as a probe counted them: the work groups of an
// instrumented copy started and not finished, per multiprocessor
// (gl_SMIDNV). 128x128x16_8x8_db is NVIDIA's natural kernel.
// Measured: docs/TUNING.md, "FillsSM".
var measuredOnePerSM = map[string]bool{
	"fast:128x128x16_8x8_db": true,
	"fast:128x128x16_8x4_db": true,
}

// FillsSM reports whether the kernel spec, whose block tile has
// accumulators elements, runs one work group a multiprocessor: so many
// accumulators (OneGroupPerSM) or measured so (measuredOnePerSM). The
// number of slots for AutoSplitK is then the multiprocessors'.
// The same configuration reading through buffer textures (_tex) counts as
// it (shaders.WithTextures): the same registers.
func FillsSM(spec string, accumulators int) bool {
	return accumulators >= OneGroupPerSM || measuredOnePerSM[shaders.WithTextures(spec, false)]
}

// Wave is about how many work groups the device runs at once: 128 for a
// GPU (about a large GPU's multiprocessors; smaller GPUs get more splits
// than they need, which costs a reduction pass), and the CPU's threads for
// llvmpipe, which runs a group on each (a GPU's wave split small products
// there and made them slower). Measured: docs/TUNING.md, "Wave".
func Wave(d Driver) int {
	if strings.Contains(d.Renderer, "llvmpipe") {
		return runtime.NumCPU()
	}
	return 128
}

// SgemmThreshold returns the product size (m·n·k) from which glblas.Float32
// runs Sgemm on this device rather than on the CPU: the crossover measured
// for the vendor, counting the upload of A and B and the readback of C.
// math.MaxInt (never) where the GPU path was never measured.
func SgemmThreshold(d Driver) int {
	switch {
	case strings.Contains(d.Vendor, "NVIDIA"):
		// Measured against gonum: docs/TUNING.md, "SgemmThreshold".
		return 256 * 256 * 256
	case OnCPU(d):
		// llvmpipe on the same cores as gonum, with the cpu kernel:
		// docs/TUNING.md, "SgemmThreshold".
		return 512 * 512 * 512
	}
	return math.MaxInt
}

// DgemmThreshold returns the product size (m·n·k) from which
// glblas.Float64 runs Dgemm on this device rather than on the CPU, or
// math.MaxInt (never). Never on OpenGL on a CPU, where llvmpipe's dfast
// lost to gonum's Dgemm at every size, transfers included; on NVIDIA from
// 256³, as float32's (SgemmThreshold); other vendors never, unmeasured.
// Measured: docs/TUNING.md, "DgemmThreshold".
func DgemmThreshold(d Driver) int {
	if OnCPU(d) {
		return math.MaxInt
	}
	return SgemmThreshold(d)
}

// The built-in configurations, from glmul tune runs. NVIDIA's default
// reads A transposed (a transpose pass before each product); NVIDIA's read
// A and B through buffer textures (_tex), whose loads carry no bounds
// check of the driver's in the K loop.
// Measured: docs/TUNING.md, "The built-in configurations".
const (
	NVIDIADefault = "fast:256x128x16_16x8_db_at_tex"
	NVIDIANatural = "fast:128x128x16_8x8_db_tex" // NVIDIADefault's stand-in with A as it is
	// NVIDIANaturalWide is the stand-in for large products (UseWideNatural).
	NVIDIANaturalWide = "fast:128x256x16_16x8_db_tex"
	NVIDIASmallGrid   = "fast:64x64x8_8x4_db_tex"
	LlvmpipeDefault   = "cpu:8x8_8x8"
	LlvmpipeThinN     = "cpu:1x16_16x4"
	// NVIDIAFloat64 is float64's (dfast), 64×128 blocks read through
	// buffer textures. Measured: docs/TUNING.md, "NVIDIAFloat64".
	NVIDIAFloat64 = "dfast:64x128x8_8x8_db_tex"
	// GenericDefault is the configuration for a device where the model
	// found none that fits (Model) and for products over buffer textures
	// larger than the device allows (glcompute's mulFast).
	GenericDefault = "fast:128x128x8_8x8"
)

// ResidentTexturesMin is the product size (m·k·n multiply-adds) from
// which a resident product keeps a configuration that reads A and B
// through buffer textures (_tex): a resident matrix's buffer has no
// texture of its own, as the buffers of host products do, so each product
// specifies the textures anew and puts a fetch barrier before its
// dispatch, a fixed cost a product, where textures gain a share of the
// kernel's time. Measured: docs/TUNING.md, "ResidentTexturesMin".
const ResidentTexturesMin = 1 << 32

// ResidentTextures reports whether a resident m×k×n product should keep
// a configuration that reads through buffer textures.
func ResidentTextures(m, k, n int) bool {
	return float64(m)*float64(k)*float64(n) >= ResidentTexturesMin
}

// StreamKMinSteps is the fewest K steps a tile may have for UseStreamK:
// with fewer, the pieces' writes and their sum weigh more against the
// tile's work.
const StreamKMinSteps = 128

// StreamKCost is UseStreamK's model of what stream-K adds, in tile
// times: the shared groups' writes of their pieces (two tiles' worth a
// group at most) and the pass that sums them.
const StreamKCost = 0.05

// UseStreamK reports whether a product of tiles tiles of steps K steps
// each, on a device that runs slots of the kernel's work groups at once
// (one a multiprocessor, FillsSM), should run stream-K rather than in
// the split slices of K that AutoSplitK chose to fill its last wave:
// whole waves of tiles, then the K steps of the remaining tiles shared
// evenly by slots work groups, a second pass summing their pieces (two
// tiles a group at most, against all of C for a split). Where its model,
// tiles/slots plus StreamKCost tile times, beats SplitTime's for that
// split. Not where AutoSplitK keeps the product unsplit (split 1): the
// last wave is full enough there that stream-K measured no gain.
// Measured: docs/TUNING.md, "UseStreamK".
func UseStreamK(tiles, steps, slots, split int) bool {
	if split < 2 || slots <= 0 || tiles <= slots || steps < StreamKMinSteps || tiles%slots == 0 {
		return false
	}
	return float64(tiles)/float64(slots)+StreamKCost < SplitTime(tiles, slots, split)
}
