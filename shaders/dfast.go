package shaders

import (
	"fmt"
	"strconv"
	"strings"
	"sync"
)

// DFastConfig parameterizes dfast.comp, the float64 kernel: fast.comp's
// block and register tiles over doubles, read as 16-byte dvec2s.
//
// A configuration is spelt BMxBNxBK_TMxTN, then _pP for P doubles of
// padding per shared row of A, _wW for warp tiles W invocations wide, _db
// for double buffering, _u for A and B read double by double (any strides
// and offsets), _tex for A and B read through buffer textures and _ahead
// for fragments loaded a step ahead, each at most once and in that order,
// as in "128x128x8_8x8_db", "64x64x8_4x4_db_u" or
// "128x128x8_8x8_p2_w8_db_tex" (fast's grammar, FastConfig, with _u in
// place of _at).
//
// Sizing for NVIDIA's H100 and H200 (132 SMs; 33.5 TFLOPS of fp64 FMA
// without tensor cores: 64 DFMA a clock an SM, a warp instruction every 2
// clocks on each of its 4 schedulers, so the FMAs need half the issue
// slots fp32's do and the rest go to loads). Per step of k an invocation
// of TM×TN reads TM+TN doubles of shared memory for TM·TN FMAs; a warp
// of the default (16 invocations a row, 2 rows) reads 2·8 distinct doubles
// of A and 16·8 of B: 1,152 bytes, 9 shared wavefronts of 128 bytes,
// for 64 warp DFMAs (128 scheduler clocks); the SM's 4 warps at a time
// need 36 shared clocks against 128 of DFMA: 28%, room for conflicts.
// From L2, a 128×128 block reads (128+128)·8 bytes a step of k for
// 2·128·128 flops: 16 flop a byte, 2.1 TB/s at the peak, what fast's
// 128×128 float tiles need at fp32's; 64×64 blocks would need 4.2.
// Registers: 64 accumulators of two words (128), B's 2·8 doubles held
// for 2 k (32), a dvec2 of A (4), the staged loads of a double-buffered
// step (2+2 dvec2s, 16) and indices: about 200 of the 255 an invocation
// may have, fast's 256x128x16_16x8_db's budget (128 accumulators, 32
// floats of B held; 45.4 TFLOPS on the H100), so one 256-invocation
// group an SM (8 warps; 32 KiB of shared memory, under GL's 48), latency
// hidden by 64 independent FMAs an invocation a step rather than by
// warps. Half the issue slots free beside the DFMAs (fast's FFMAs leave
// none) take its loads and indices. Predicted: 80-85% of the peak
// (27-28 TFLOPS) at 4096³ if NVIDIA's GL compiler keeps it under 255
// registers without spilling; 128x64x8_8x4_db (about 110 registers, two
// groups an SM) is the fallback if it does not.
type DFastConfig struct {
	BM, BN int // rows and columns of C per work group
	BK     int // depth of a K step in shared memory; even
	TM, TN int // rows and columns of C per invocation; TN even
	// DoubleBuffer keeps two K steps in shared memory: the next one's
	// global loads overlap this one's arithmetic, one barrier per step.
	DoubleBuffer bool
	// Unaligned reads A and B double by double, for any row strides and
	// offsets; without it they are read as dvec2s, which needs even ones
	// (Kernel.Align) and buffers that hold A's and B's whole last rows.
	Unaligned bool
	// PadA is doubles of padding per shared row of A (even): with WarpX
	// it puts the rows of A a warp reads in distinct banks.
	PadA int
	// WarpX is how many of a 32-invocation warp's invocations lie along a
	// row of C, the rest down a column (fast's FastConfig.WarpX): a warp
	// reads WarpX distinct dvec2s of B a shared load rather than a whole
	// row of invocations' worth. 0 keeps invocations in rows of BN/TN.
	WarpX int
	// Tex reads A and B through buffer textures of RGBA32UI texels, a
	// dvec2 each (Kernel.Textures; fast's Tex): no bounds check of the
	// driver's per load, and the texture path's cache. Not with
	// Unaligned.
	Tex bool
	// Ahead loads each step of k's shared fragments (TM doubles of A, TN
	// of B) a step ahead into a second set of registers, with A held
	// transposed in shared memory and the K step's one barrier before its
	// last step, so that the multiply-adds wait neither on a shared load
	// nor on the barrier (docs/PERFORMANCE.md, "dfast ahead"). Needs
	// DoubleBuffer, an even TM and no PadA.
	Ahead bool
}

// warpX is the warp's width in invocations the shader is built with: 0
// (the shader's plain rows of BN/TN) without WarpX.
func (c DFastConfig) warpX() int { return c.WarpX }

// DefaultDFast is the float64 configuration used where no other is asked
// for: 256 invocations of 8×8 doubles, double-buffered (32 KiB of shared
// memory).
var DefaultDFast = DFastConfig{BM: 128, BN: 128, BK: 8, TM: 8, TN: 8, DoubleBuffer: true}

// Threads is the number of invocations per work group.
func (c DFastConfig) Threads() int { return (c.BM / c.TM) * (c.BN / c.TN) }

// SharedBytes is the shared memory one work group uses: BK doubles of
// each of BM rows of A and BN columns of B, twice with DoubleBuffer.
func (c DFastConfig) SharedBytes() int {
	b := 8 * (c.BM*(c.BK+c.PadA) + c.BK*c.BN)
	if c.DoubleBuffer {
		b *= 2
	}
	return b
}

// String spells the configuration as LookupFloat64 reads it after
// "dfast:".
func (c DFastConfig) String() string {
	s := fmt.Sprintf("%dx%dx%d_%dx%d", c.BM, c.BN, c.BK, c.TM, c.TN)
	if c.PadA != 0 {
		s += fmt.Sprintf("_p%d", c.PadA)
	}
	if c.WarpX != 0 {
		s += fmt.Sprintf("_w%d", c.WarpX)
	}
	if c.DoubleBuffer {
		s += "_db"
	}
	if c.Unaligned {
		s += "_u"
	}
	if c.Tex {
		s += "_tex"
	}
	if c.Ahead {
		s += "_ahead"
	}
	return s
}

// ParseDFastConfig reads a configuration written by String.
func ParseDFastConfig(s string) (DFastConfig, error) {
	bad := fmt.Errorf("dfast kernel configuration %q: want BMxBNxBK_TMxTN[_pP][_wW][_db][_u][_tex][_ahead], e.g. 128x128x8_8x8_db", s)
	parts := strings.Split(s, "_")
	if len(parts) < 2 {
		return DFastConfig{}, bad
	}
	var c DFastConfig
	opts := parts[2:]
	// The options come in String's order, each at most once; numbers as
	// String writes them (sizes' rule).
	for _, o := range []struct {
		prefix string
		v      *int
	}{{"p", &c.PadA}, {"w", &c.WarpX}} {
		if len(opts) == 0 || !strings.HasPrefix(opts[0], o.prefix) {
			continue
		}
		v, ok := sizes(strings.TrimPrefix(opts[0], o.prefix), 1)
		if !ok || v[0] == 0 {
			return DFastConfig{}, bad
		}
		*o.v, opts = v[0], opts[1:]
	}
	for _, o := range []struct {
		name string
		v    *bool
	}{{"db", &c.DoubleBuffer}, {"u", &c.Unaligned}, {"tex", &c.Tex}, {"ahead", &c.Ahead}} {
		if len(opts) > 0 && opts[0] == o.name {
			*o.v, opts = true, opts[1:]
		}
	}
	b, ok1 := sizes(parts[0], 3)
	t, ok2 := sizes(parts[1], 2)
	if len(opts) > 0 || !ok1 || !ok2 {
		return DFastConfig{}, bad
	}
	c.BM, c.BN, c.BK, c.TM, c.TN = b[0], b[1], b[2], t[0], t[1]
	return c, c.Check()
}

// sizes reads want decimal numbers joined by x, written as String writes
// them (no signs, no leading zeros).
func sizes(p string, want int) ([]int, bool) {
	f := strings.Split(p, "x")
	if len(f) != want {
		return nil, false
	}
	out := make([]int, want)
	for i, x := range f {
		v, err := strconv.Atoi(x)
		if err != nil || strconv.Itoa(v) != x {
			return nil, false
		}
		out[i] = v
	}
	return out, true
}

// Check reports whether the configuration is well formed: tiles divide
// evenly, BK and TN are even (dvec2s), sizes stay at most 1024, and a
// work group has 32 to 1024 invocations (the OpenGL 4.3 guarantee).
func (c DFastConfig) Check() error {
	switch {
	case c.BM < 2 || c.BN < 2 || c.BK < 2 || c.TM < 1 || c.TN < 2:
		return fmt.Errorf("dfast kernel %v: BM, BN, BK and TN must be at least 2, TM at least 1", c)
	case c.BM > 1024 || c.BN > 1024 || c.BK > 1024:
		return fmt.Errorf("dfast kernel %v: BM, BN and BK must be at most 1024", c)
	case c.BK%2 != 0 || c.TN%2 != 0:
		return fmt.Errorf("dfast kernel %v: BK and TN must be even (dvec2s)", c)
	case c.BM%c.TM != 0 || c.BN%c.TN != 0:
		return fmt.Errorf("dfast kernel %v: TM must divide BM and TN divide BN", c)
	case c.Threads() > 1024:
		return fmt.Errorf("dfast kernel %v: %d invocations per work group, over the 1024 OpenGL guarantees", c, c.Threads())
	case c.Threads() < 32:
		return fmt.Errorf("dfast kernel %v: %d invocations per work group; use at least 32", c, c.Threads())
	case c.PadA < 0 || c.PadA%2 != 0 || c.PadA > 1024:
		return fmt.Errorf("dfast kernel %v: the padding of A's rows must be even (dvec2s), 0 to 1024", c)
	case c.WarpX != 0 && (c.WarpX < 0 || 32%c.WarpX != 0 || (c.BN/c.TN)%c.WarpX != 0 ||
		(c.BM/c.TM)%(32/c.WarpX) != 0 || c.Threads()%32 != 0):
		return fmt.Errorf("dfast kernel %v: the warp's width %d must divide 32 and the %d invocations of a row, 32/%d the %d rows of invocations, and the work group must be whole warps",
			c, c.WarpX, c.BN/c.TN, c.WarpX, c.BM/c.TM)
	case c.Tex && c.Unaligned:
		return fmt.Errorf("dfast kernel %v: buffer textures (_tex) read whole dvec2s; drop _u", c)
	case c.Ahead && (!c.DoubleBuffer || c.TM%2 != 0 || c.PadA != 0):
		return fmt.Errorf("dfast kernel %v: fragments a step ahead (_ahead) need _db, an even TM and no _p", c)
	}
	return nil
}

// DFast returns dfast.comp configured by c. Its Align is in doubles: 2
// (even row strides and offsets), or 1 with Unaligned. It has no GLSL ES
// text (SourceES is empty): GLSL ES has no double.
func DFast(c DFastConfig) (Kernel, error) {
	if err := c.Check(); err != nil {
		return Kernel{}, fmt.Errorf("shaders: %w", err)
	}
	db, vec, align, tex, ahead := 0, 1, 2, 0, 0
	if c.DoubleBuffer {
		db = 1
	}
	if c.Unaligned {
		vec, align = 0, 1
	}
	if c.Tex {
		tex = 1
	}
	if c.Ahead {
		ahead = 1
	}
	src := fmt.Sprintf("#version 430 core\n#define BM %d\n#define BN %d\n#define BK %d\n#define TM %d\n#define TN %d\n#define DB %d\n#define VEC %d\n#define THREADS %d\n#define PADA %d\n#define WX %d\n#define TEX %d\n#define AHEAD %d\n#line 1\n%s",
		c.BM, c.BN, c.BK, c.TM, c.TN, db, vec, c.Threads(), c.PadA, c.warpX(), tex, ahead, source("dfast.comp"))
	return Kernel{Name: "dfast", Config: c.String(), File: "dfast.comp", TileM: c.BM, TileN: c.BN, Align: align,
		Threads: c.Threads(), StepK: c.BK, SharedBytes: c.SharedBytes(), Textures: c.Tex, Float64: true, Source: src}, nil
}

// DFastCandidates returns a few float64 configurations to tune among on
// a GPU, each well formed: the default; 128×64 and 64×128 blocks of 8×4
// and 4×8 doubles an invocation (about 110 registers: two groups an SM,
// where the default spills or stalls); 64×64 blocks of 4×4 (more groups
// for small products); the default's tile single-buffered in 16-deep
// steps (the same 32 KiB, half the barriers); 64×64×16 blocks of 8×4
// (128 invocations); 256×64 blocks of 8×8 (40 KiB); and 64×128 blocks
// of 8×8 read through buffer textures, the best measured on an H200
// (tuning.NVIDIAFloat64).
func DFastCandidates() []DFastConfig {
	return []DFastConfig{
		DefaultDFast,
		{BM: 128, BN: 64, BK: 8, TM: 8, TN: 4, DoubleBuffer: true},
		{BM: 64, BN: 128, BK: 8, TM: 4, TN: 8, DoubleBuffer: true},
		{BM: 64, BN: 64, BK: 8, TM: 4, TN: 4, DoubleBuffer: true},
		{BM: 128, BN: 128, BK: 16, TM: 8, TN: 8},
		{BM: 64, BN: 64, BK: 16, TM: 8, TN: 4, DoubleBuffer: true},
		{BM: 256, BN: 64, BK: 8, TM: 8, TN: 8, DoubleBuffer: true},
		{BM: 64, BN: 128, BK: 8, TM: 8, TN: 8, DoubleBuffer: true, Tex: true},
	}
}

// DFastSweep returns the float64 configurations worth timing on a large
// NVIDIA GPU (issue 45's sweep on the H200; docs/PERFORMANCE.md, "dfast's
// options"), each well formed and within NVIDIA's 48 KiB of shared memory
// a work group: DFastCandidates first, for reference, then
//   - B and A through buffer textures (_tex) on the default and the best
//     two of the rest;
//   - warp tiles 8 or 4 invocations wide, A's shared rows padded by 2
//     doubles (_p2_w8, _p2_w4), so that a warp's shared loads of B touch
//     one 128-byte wavefront and its loads of A distinct banks; and _w8
//     unpadded, to tell the two apart;
//   - other K steps of the default's tile: 4 (16 KiB, twice the
//     barriers) and 12 (48 KiB, two thirds of them), 16 for 128×64 and
//     64×128 (48 KiB);
//   - other register tiles: 8×8 in 128×64, 64×128 and 64×64 blocks (128
//     and 64 invocations: two or more groups an SM, so that one group's
//     barrier leaves the SM's other warps computing), 4×8 and 8×4 in
//     128×128 (512 invocations, 16 warps an SM at about 100 registers),
//     and 8×8 in 64×256 with warp tiles.
func DFastSweep() []DFastConfig {
	db := func(bm, bn, bk, tm, tn int) DFastConfig {
		return DFastConfig{BM: bm, BN: bn, BK: bk, TM: tm, TN: tn, DoubleBuffer: true}
	}
	tex := func(c DFastConfig) DFastConfig { c.Tex = true; return c }
	warp := func(c DFastConfig, pad, w int) DFastConfig { c.PadA, c.WarpX = pad, w; return c }
	return append(DFastCandidates(),
		tex(DefaultDFast),
		tex(db(128, 64, 8, 8, 4)),
		tex(db(256, 64, 8, 8, 8)),
		warp(DefaultDFast, 2, 8),
		tex(warp(DefaultDFast, 2, 8)),
		warp(DefaultDFast, 0, 8),
		warp(DefaultDFast, 2, 4),
		db(128, 128, 4, 8, 8),
		db(128, 128, 12, 8, 8),
		tex(db(128, 128, 12, 8, 8)),
		db(128, 64, 16, 8, 4),
		db(64, 128, 16, 4, 8),
		db(128, 64, 8, 8, 8),
		tex(db(128, 64, 8, 8, 8)),
		db(128, 64, 16, 8, 8),
		db(64, 128, 8, 8, 8),
		db(64, 64, 8, 8, 8),
		db(64, 64, 16, 8, 8),
		db(128, 128, 8, 4, 8),
		db(128, 128, 8, 8, 4),
		warp(db(64, 256, 8, 8, 8), 2, 8),
	)
}

// LookupFloat64 returns the float64 kernel a spec names: "dfast"
// (DefaultDFast) or "dfast:" followed by a DFastConfig. Lookup knows no
// float64 kernel, so none can be run on float32 matrices by mistake.
// Safe for concurrent use.
func LookupFloat64(spec string) (Kernel, error) {
	if k, ok := lookedFloat64.Load(spec); ok {
		return k.(Kernel), nil
	}
	name, config, hasConfig := strings.Cut(spec, ":")
	if name != "dfast" {
		return Kernel{}, fmt.Errorf("shaders: unknown float64 kernel %q (known: dfast, which takes a configuration as dfast:128x128x8_8x8_db)", spec)
	}
	k, err := configured(hasConfig, config, DefaultDFast, ParseDFastConfig, DFast)
	if err == nil {
		lookedFloat64.Store(spec, k)
	}
	return k, err
}

// lookedFloat64 memoizes LookupFloat64 (spec → Kernel).
var lookedFloat64 sync.Map
