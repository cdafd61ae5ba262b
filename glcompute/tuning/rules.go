package tuning

import (
	"math"
	"runtime"
	"strings"

	"github.com/glmul/glmul/shaders"
)

// Choose returns the kernel choice for a device glmul tune never ran on:
// the configurations measured for its vendor (NVIDIA, on an H100 and an
// H200; Mesa llvmpipe, on 2 CPU cores: docs/PERFORMANCE.md), else the
// device model's from what OpenGL reports of it (Model): also for the
// empty Driver, which glcompute passes for Options.Unseen.
func Choose(d Driver, f Facts) Choice {
	switch {
	case strings.Contains(d.Vendor, "NVIDIA"):
		return Choice{Default: NVIDIADefault, Natural: NVIDIANatural, NaturalWide: NVIDIANaturalWide, SmallGrid: NVIDIASmallGrid,
			Source: "built-in default for NVIDIA (measured on an H100 and an H200)"}
	case OnCPU(d):
		return Choice{Default: LlvmpipeDefault, Source: "built-in default for Mesa llvmpipe (tuned on 2 CPU cores)"}
	}
	return Model(f)
}

// EdgeGroupsPerIdleSlot is how many of the edge kernel's work groups per
// idle slot of the interior's last wave UseEdges accepts (fitted on the
// H100, docs/PERFORMANCE.md "Edges").
const EdgeGroupsPerIdleSlot = 10

// UseEdges reports whether a product whose large tiles leave strips past
// their whole tiles should run the interior with them and the strips with
// a smaller-tiled kernel in the same pass (dispatch.Edges), rather than
// large tiles over everything: when the strips' edgeGroups work groups fit
// in the slots the interior's interiorGroups leave idle in its last wave
// of slots (so they run beside it, not after it). On the H100 this won
// where the strips were thin (4097³ +3%, 8193³ +6%) and lost up to 31%
// where they were not (4200³, 3000³, 2049³). False without a slot count.
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
// are far wider than C; "" where none was measured. On llvmpipe (2-core
// EPYC, Mesa 22.3.6, 4096×4096×4, 2026-11-25) cpu:1x16_16x4 ran in 27 ms
// against the default cpu:8x8_8x8's 95 ms, which computes 64 columns to
// keep 4 (docs/PERFORMANCE.md, "glmul mul at disk speed").
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
// finish. From H100 runs (docs/PERFORMANCE.md), with NVIDIA's natural of
// the time, 128×256 tiles: split along K they beat 64×64 tiles at 1024³
// (25.6 vs 23.3 TFLOPS: 32 groups in 8 slices), 1000×4096×1000 (34.0 vs
// 23.3) and M 8192, K 8192, N 256 (39.9 vs 31.1); the 128×128 natural
// since 2026-11-27 gives 64 groups in 4 slices there, and it beat the
// small grid on an H200 at 1024³, 1000×4096×1000 and 8192×8192×256 (31.1,
// 33.0 and 41.3 TFLOPS against 27.2, 23.7 and 34.3);
// 64×64 tiles win where the split cannot fill a wave (512³, 64×4096×64)
// and at K = 64.
func UseSmallGrid(groups, k, wave int) bool {
	return groups*AutoSplitK(groups, k, wave, 0) < wave || k < 512
}

// AutoSplitK returns how many slices of K a product whose result has
// groups work groups is split into when MulOptions.SplitK is 0, on a
// device that runs wave groups at once (Wave):
//
//   - where slots is not known, under a wave, enough slices for about two
//     waves, each slice at least 128 long. From one H100 sweep (docs/PERFORMANCE.md): 64×4096×64 (1
//     group) ran 11× faster in 32 slices, 512³ (64 groups) 1.47× in 4,
//     256³ (16) 1.12× in 2.
//   - where slots (how many of the kernel's groups the device runs at
//     once: its multiprocessors, one group each; see FillsSM) is known,
//     the split that best fills the last of the waves of slots groups: s
//     slices take ceil(groups·s/slots)/s of the unsplit product's group
//     time, times 1 + 0.0125·s for s ≥ 2 (the reduction pass and shorter
//     K loops: 4096³, 3.9 waves on the H100's 132 multiprocessors, lost
//     2.5% in 2 slices and 5% in 4). Each further slice must model at
//     least 2% faster than the best fewer, in at most 8 slices of at least
//     256. Against an H100 sweep of 1, 2, 3, 4 and 6 slices it picks 3 for
//     4097³ (561 groups, 4.25 waves: +12%, 4 measured 0.6% faster), 4 for
//     3000³ (+25%, the fastest), 3 for 2500³ (+13%, the fastest), none
//     for 4096³, 6000³ and 8192³ (the fastest).
//     Under a wave of slots too (before 2026-11-27 the first rule served
//     there, and its two waves of groups, made for the small grid's four
//     groups a multiprocessor, gave tiles that fill one twice the slices
//     they needed), with up to 32 slices of at least 128: on the H100 it
//     picks 2 for 64 groups of 128×128 (1024³, 1000×4096×1000), where 2
//     slices measured 31.6 TFLOPS at 1024³ against about 27.8 in 4, and
//     0.229 ms against 0.234 at 1000×4096×1000.
//   - otherwise no split.
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
// a pass over its M·K elements (0.04 ms at 4096², 0.2 ms at 8192² on the
// H100), the product's gain (about 7%) grows with M·K·N, so they break
// even near N = 1000. H100, 256x128x16_16x8_db_at against
// 128x256x8_8x8_db in one glmul bench run (docs/PERFORMANCE.md
// "A transposed"), M×K×N: 0.77× at 8192×8192×256, 0.90× at N 512, 0.99×
// at N 1024, 1.04× at N 2048; 0.84× at 1024³, 0.94× at 1000×4096×1000,
// 1.06× at 1024×8192×1024; 1.01–1.08× from 2048³ to 8192³, 1.05× at
// 4096×1024×4096.
const TransposedAMinN = 2048

// WideNaturalMinMACs is the product size (m·k·n multiply-adds) from which
// a product that reads A as it is because B is narrow (UseTransposedA
// false) may take Choice.NaturalWide, 128 accumulators an invocation,
// rather than Natural's 64 (UseWideNatural). Under it K is short for the
// wide tiles' few groups: on the H100 1024³ (32 groups of 128×256 in 4
// slices of 256) ran 13% slower with them, 1000×4096×1000 (4.1·10⁹)
// alike; at 2³³ 1024×8192×1024, 2048×4096×1024 and 4096×2048×1024 ran
// 1–4% faster (docs/PERFORMANCE.md "B held for four steps of k").
const WideNaturalMinMACs = 1 << 33

// WideNaturalGain is how much faster a multiply-add runs in NaturalWide's
// tiles than in Natural's where both fill their waves alike: on the H100,
// one call, 128x256x16_16x8_db_tex against 128x128x16_8x8_db_tex,
// 8192×8192×1024 (2 and 4 waves) 2.966–2.969 ms against 3.118–3.120,
// 4096×2048×1024 (1 and 2 waves) 0.392–0.396 against 0.408–0.413
// (docs/PERFORMANCE.md "B held for four steps of k").
const WideNaturalGain = 1.05

// Tile is a kernel's block tile (M×N) and K step, as the wave model sees it.
type Tile struct{ M, N, K int }

// UseWideNatural reports whether an m×k by k×n product that reads A as it
// is should run Choice.NaturalWide's tiles (wide) rather than Natural's
// (natural), on a device that runs wave work groups at once and slots of
// either kernel's (one a multiprocessor, FillsSM; 0 where not known):
// from WideNaturalMinMACs multiply-adds on, where the wave model gives the
// wide tiles less time (WaveTime, a wide group counted as its area in
// natural groups, less WideNaturalGain), or the slots are not known. On
// the H100 it keeps 1536×4096×1536's 144 tiles of 128×128 in stream-K
// (0.456 ms) rather than 72 of 128×256 in 7 slices (0.493).
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
// (their other registers), as a probe counted them on the H100: the work
// groups of an instrumented copy started and not finished, per
// multiprocessor (gl_SMIDNV; docs/PERFORMANCE.md "A transposed").
// 128x128x16_8x8_db is NVIDIA's natural kernel; its K split also measured
// best at one wave of 132 groups (PERFORMANCE.md "Split-K under a wave").
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
// GPU (an H100 has 132 SMs; smaller GPUs get more splits than they need,
// which costs a reduction pass), and the CPU's threads for llvmpipe, which
// runs a group on each (there a 512³ product's 8 groups ran 19% slower in
// 4 slices on 2 cores).
func Wave(d Driver) int {
	if strings.Contains(d.Renderer, "llvmpipe") {
		return runtime.NumCPU()
	}
	return 128
}

// SgemmThreshold returns the product size (m·n·k) from which glcompute.BLAS
// runs Sgemm on this device rather than on the CPU: the crossover measured
// for the vendor, counting the upload of A and B and the readback of C.
// math.MaxInt (never) where the GPU path was never measured.
func SgemmThreshold(d Driver) int {
	switch {
	case strings.Contains(d.Vendor, "NVIDIA"):
		// H100 against gonum on its 16-thread Xeon host: the GPU path lost
		// at 128³ (11.3 vs 14.7 GFLOPS) and won from 256³ (65.5 vs 37.1).
		return 256 * 256 * 256
	case OnCPU(d):
		// llvmpipe on the same 2 cores as gonum, with the cpu kernel: the
		// GPU path lost at 256³ (12-19 vs 20-21 GFLOPS) and won from 512³
		// (26-27 vs 23-25; 1024³: 31 vs 24).
		return 512 * 512 * 512
	}
	return math.MaxInt
}

// DgemmThreshold returns the product size (m·n·k) from which
// glcompute.BLAS64 runs Dgemm on this device rather than on the CPU, or
// math.MaxInt (never). Never on OpenGL on a CPU: llvmpipe's dfast, on the
// same 2 cores as gonum's Dgemm, lost at every size from 64³ to 1024³,
// transfers included (0.27 to 4.6 GFLOPS against 8.7 to 12.9;
// docs/PERFORMANCE.md, "float64 on llvmpipe", 2026-11-28). On NVIDIA
// from 256³, as float32's (SgemmThreshold): measured on an H200 against
// gonum on its 16 cores, 128³ lost and 256³ won (docs/PERFORMANCE.md,
// "The fifteenth session on an H200"); other vendors never, unmeasured.
func DgemmThreshold(d Driver) int {
	if OnCPU(d) {
		return math.MaxInt
	}
	return SgemmThreshold(d)
}

// The built-in configurations, from glmul tune runs recorded in
// docs/PERFORMANCE.md. NVIDIA's reads A transposed (a transpose pass
// before each product): 46.3 against 41.9 TFLOPS at 4096³ on the H100.
// NVIDIA's read A and B through buffer textures (_tex), whose loads carry
// no bounds check of the driver's in the K loop. H100, glmul bench, one
// call, against the same configurations through storage buffers: 4096³
// 2.79 against 2.89 ms, 2048³ 0.381 against 0.393, 8192×8192×256 0.80
// against 0.85, 1000×4096×1000 0.218 against 0.231, 1024³ 66.0 against
// 67.4 µs, 4096×64×4096 75 against 81, 512³ 20.8 against 21.8, 256³ 16.5
// against 17.0 (PERFORMANCE.md "Buffer textures").
const (
	NVIDIADefault = "fast:256x128x16_16x8_db_at_tex"
	NVIDIANatural = "fast:128x128x16_8x8_db_tex" // NVIDIADefault's stand-in with A as it is
	// NVIDIANaturalWide is the stand-in for large products (UseWideNatural).
	NVIDIANaturalWide = "fast:128x256x16_16x8_db_tex"
	NVIDIASmallGrid   = "fast:64x64x8_8x4_db_tex"
	LlvmpipeDefault   = "cpu:8x8_8x8"
	LlvmpipeThinN     = "cpu:1x16_16x4"
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
// dispatch, 10–15 µs a product on the H100, where textures gain about 3%
// of the kernel's time. H100, BenchmarkResidentShapes with the device's
// kernels and without their textures (GLMUL_BENCH_NOTEX), two rounds, ms
// a product: 256³ 0.052/0.055 against 0.042/0.034, 64×4096×64 0.046/0.047
// against 0.033/0.028, 1024³ 0.099/0.094 against 0.092/0.086,
// 1000×4096×1000 0.259/0.253 against 0.260/0.256, 2048³ 0.422/0.418
// against 0.436/0.426, 4096³ 2.842/2.847 against 2.926/2.925: they break
// even near 4·10⁹ (docs/results/h100/resident.md).
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
// last wave is full enough there that on the H100, whose clocks rise
// when multiprocessors idle, stream-K measured no gain (one call, two
// rounds against the previous binary: 4096³ 2.765–2.785 ms against
// 2.767–2.770, 4608³ 3.91–3.94 against 3.87–3.90, 7168³ 14.54–14.69
// against 14.36), where it replaced splits it gained 7–11% (2560³ 0.721–
// 0.729 against 0.804 in 3 slices, 3072³ 1.206 against 1.292 in 4,
// 5120³ 5.35–5.37 against 5.74 in 2; in another call, with tiles past
// the edges of C: 2500³ 0.715 against 0.792–0.797 in 3, 3000³ 1.188
// against 1.265–1.277 in 4, 5000³ 5.25 against 5.59–5.63 in 2).
func UseStreamK(tiles, steps, slots, split int) bool {
	if split < 2 || slots <= 0 || tiles <= slots || steps < StreamKMinSteps || tiles%slots == 0 {
		return false
	}
	return float64(tiles)/float64(slots)+StreamKCost < SplitTime(tiles, slots, split)
}
