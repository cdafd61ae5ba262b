package shaders

import (
	"fmt"
	"strconv"
	"strings"
	"sync"
)

// FastConfig parameterizes fast.comp.
type FastConfig struct {
	BM, BN int // rows and columns of C per work group
	BK     int // depth of a K step in shared memory
	TM, TN int // rows and columns of C per invocation; multiples of 4
	PadA   int // floats of padding per shared row of A; a multiple of 4
	// DoubleBuffer keeps two K steps in shared memory: the next one's
	// global loads overlap this one's arithmetic, one barrier per step.
	DoubleBuffer bool
	// WarpX is how many of a 32-invocation warp's invocations lie along a
	// row of C (the rest, 32/WarpX, down a column): a warp tile narrower
	// than a row of invocations reads fewer distinct vec4s of B from shared
	// memory per load. 0 keeps invocations in rows of BN/TN.
	// It must divide 32 and BN/TN, and 32/WarpX must divide BM/TM.
	WarpX int
	// TransA makes the kernel read A transposed (K rows of M floats,
	// padded): Kernel.TransposeA, a transpose pass before the product.
	TransA bool
	// Tex makes the kernel read A and B through buffer textures
	// (Kernel.Textures) rather than storage buffers.
	Tex bool
}

// DefaultFast is the configuration used where no tuned or per-vendor one
// applies.
var DefaultFast = FastConfig{BM: 128, BN: 128, BK: 8, TM: 8, TN: 8}

// Threads is the number of invocations per work group.
func (c FastConfig) Threads() int { return (c.BM / c.TM) * (c.BN / c.TN) }

// warpX is the warp's width in invocations that the shader is built with:
// without WarpX, a whole row of invocations (the shader's plain mapping,
// right for any row length).
func (c FastConfig) warpX() int {
	if c.WarpX != 0 {
		return c.WarpX
	}
	return c.BN / c.TN
}

// HoldsB reports whether c's inner loop holds B for four steps of k and
// reads A a row at a time (fast.comp's BH): reading A as it is, from 64
// accumulators an invocation on, with TM ≥ TN, where that takes fewer
// registers than holding a vec4 of A for every row.
func (c FastConfig) HoldsB() bool { return !c.TransA && c.TM*c.TN >= 64 && c.TM >= c.TN }

// SharedBytes is the shared memory one work group uses.
func (c FastConfig) SharedBytes() int {
	b := 4 * c.BK * (c.BM + c.PadA + c.BN) // PadA is 0 with TransA
	if c.DoubleBuffer {
		b *= 2
	}
	return b
}

// String spells the configuration as Lookup reads it after "fast:":
// BMxBNxBK_TMxTN, then _pP for padding, _wW for the warp's width, _db
// for double buffering and _at for A read transposed, as in
// "128x128x16_8x4_p4_w8_db" or "256x128x16_16x8_db_at".
func (c FastConfig) String() string {
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
	if c.TransA {
		s += "_at"
	}
	if c.Tex {
		s += "_tex"
	}
	return s
}

// ParseFastConfig reads a configuration written by String.
func ParseFastConfig(s string) (FastConfig, error) {
	bad := fmt.Errorf("fast kernel configuration %q: want BMxBNxBK_TMxTN[_pP][_wW][_db][_at][_tex], e.g. 128x128x16_8x4_db", s)
	parts := strings.Split(s, "_")
	if len(parts) < 2 {
		return FastConfig{}, bad
	}
	head, opts := parts[:2], parts[2:]
	var c FastConfig
	// The options come in String's order, each at most once.
	for _, o := range []struct {
		prefix string
		v      *int
	}{{"p", &c.PadA}, {"w", &c.WarpX}} {
		if len(opts) == 0 || !strings.HasPrefix(opts[0], o.prefix) {
			continue
		}
		v, err := strconv.Atoi(strings.TrimPrefix(opts[0], o.prefix))
		if err != nil || v == 0 {
			return FastConfig{}, bad
		}
		*o.v, opts = v, opts[1:]
	}
	if len(opts) > 0 && opts[0] == "db" {
		c.DoubleBuffer, opts = true, opts[1:]
	}
	if len(opts) > 0 && opts[0] == "at" {
		c.TransA, opts = true, opts[1:]
	}
	if len(opts) > 0 && opts[0] == "tex" {
		c.Tex, opts = true, opts[1:]
	}
	if len(opts) > 0 {
		return FastConfig{}, bad
	}
	nums := func(p string, want int) ([]int, bool) {
		f := strings.Split(p, "x")
		if len(f) != want {
			return nil, false
		}
		out := make([]int, want)
		for i, x := range f {
			v, err := strconv.Atoi(x)
			if err != nil {
				return nil, false
			}
			out[i] = v
		}
		return out, true
	}
	b, ok1 := nums(head[0], 3)
	t, ok2 := nums(head[1], 2)
	if !ok1 || !ok2 {
		return FastConfig{}, bad
	}
	c.BM, c.BN, c.BK, c.TM, c.TN = b[0], b[1], b[2], t[0], t[1]
	return c, c.Check()
}

// Check reports whether the configuration is well formed: tiles divide
// evenly, every count is positive, and a work group has at most 1024
// invocations (the OpenGL 4.3 guarantee).
func (c FastConfig) Check() error {
	switch {
	case c.BM < 4 || c.BN < 4 || c.BK < 4 || c.TM < 4 || c.TN < 4:
		return fmt.Errorf("fast kernel %v: every size must be at least 4", c)
	case c.TM%4 != 0 || c.TN%4 != 0 || c.BK%4 != 0 || c.PadA%4 != 0 || c.PadA < 0:
		return fmt.Errorf("fast kernel %v: TM, TN, BK and the padding must be multiples of 4", c)
	case c.BM%c.TM != 0 || c.BN%c.TN != 0:
		return fmt.Errorf("fast kernel %v: TM must divide BM and TN divide BN", c)
	case c.Threads() > 1024:
		return fmt.Errorf("fast kernel %v: %d invocations per work group, over the 1024 OpenGL guarantees", c, c.Threads())
	case c.TransA && c.PadA != 0:
		return fmt.Errorf("fast kernel %v: A read transposed (_at) has no rows to pad; drop _p", c)
	case c.Threads() < 32:
		return fmt.Errorf("fast kernel %v: %d invocations per work group; use at least 32", c, c.Threads())
	case c.WarpX != 0 && (c.WarpX < 0 || 32%c.WarpX != 0 || (c.BN/c.TN)%c.WarpX != 0 ||
		(c.BM/c.TM)%(32/c.WarpX) != 0 || c.Threads()%32 != 0):
		return fmt.Errorf("fast kernel %v: the warp's width %d must divide 32 and the %d invocations of a row, 32/%d the %d rows of invocations, and the work group must be whole warps",
			c, c.WarpX, c.BN/c.TN, c.WarpX, c.BM/c.TM)
	}
	return nil
}

// Fast returns fast.comp configured by c.
func Fast(c FastConfig) (Kernel, error) {
	if err := c.Check(); err != nil {
		return Kernel{}, fmt.Errorf("shaders: %w", err)
	}
	body := source("fast.comp")
	db := 0
	if c.DoubleBuffer {
		db = 1
	}
	at, tex, bh := 0, 0, 0
	if c.TransA {
		at = 1
	}
	if c.Tex {
		tex = 1
	}
	if c.HoldsB() {
		bh = 1
	}
	src := fmt.Sprintf("#version 430 core\n#define BM %d\n#define BN %d\n#define BK %d\n#define TM %d\n#define TN %d\n#define PADA %d\n#define DB %d\n#define AT %d\n#define TEX %d\n#define BH %d\n#define THREADS %d\n#define WX %d\n#line 1\n%s",
		c.BM, c.BN, c.BK, c.TM, c.TN, c.PadA, db, at, tex, bh, c.Threads(), c.warpX(), body)
	return withES(Kernel{Name: "fast", Config: c.String(), File: "fast.comp", TileM: c.BM, TileN: c.BN, Strided: true,
		Align: 4, SharedBytes: c.SharedBytes(), Threads: c.Threads(), StepK: c.BK, TransposeA: c.TransA, Textures: c.Tex, Source: src}), nil
}

// FastCandidates returns the configurations that glmul tune sweeps, each
// well formed (Check passes); a device may still lack the shared memory for
// some (see Kernel.SharedBytes). Block tiles from 64×64 to 256×128, K steps
// of 8 to 32, per-invocation tiles of 16 to 128 elements, with and without
// double buffering, and for 8×8 double-buffered ones also warp tiles of 8
// invocations across (_p4_w8); 64 to 512 invocations per work group; and
// the double-buffered tiles of 128 rows and columns or more with 64 or 128
// accumulators reading A transposed (_at, the H100's best); those, and the
// double-buffered tiles of up to 128×128 with 8×4 or 8×8 per invocation,
// also reading A and B through buffer textures (_tex, NVIDIA's built-ins).
func FastCandidates() []FastConfig {
	var out []FastConfig
	blocks := [][2]int{{64, 64}, {64, 128}, {128, 64}, {128, 128}, {128, 256}, {256, 128}}
	threads := [][2]int{{4, 4}, {8, 4}, {4, 8}, {8, 8}, {16, 8}, {8, 16}}
	for _, b := range blocks {
		for _, bk := range []int{8, 16, 32} {
			for _, t := range threads {
				for _, db := range []bool{false, true} {
					c := FastConfig{BM: b[0], BN: b[1], BK: bk, TM: t[0], TN: t[1], DoubleBuffer: db}
					if c.Check() != nil || c.Threads() < 64 || c.Threads() > 512 {
						continue
					}
					out = append(out, c)
					if at := c; db && c.BM >= 128 && c.BN >= 128 && c.TM*c.TN >= 64 && bk <= 16 && c.Threads() <= 256 {
						at.TransA = true
						out = append(out, at)
						at.Tex = true
						out = append(out, at)
					}
					if tex := c; db && bk <= 16 && c.TM == 8 && c.TN >= 4 && c.TN <= 8 && c.BM <= 128 && c.BN <= 128 {
						// NVIDIA's natural and small-grid kernels
						// read through buffer textures.
						tex.Tex = true
						out = append(out, tex)
					}
					if c.TM == 8 && c.TN == 8 && db && bk <= 16 {
						// Warp tiles: lost 10% on the H100, kept for
						// other vendors' warps and banks to choose.
						w := c
						w.PadA, w.WarpX = 4, 8
						if w.Check() == nil {
							out = append(out, w)
						}
					}
				}
			}
		}
	}
	return out
}

// StreamK returns fast kernel k (a "fast" Kernel, as Fast or Lookup give
// it) built for stream-K products (fast.comp with SK): a one-dimensional
// dispatch of whole tiles and of groups that share the last tiles' K
// steps, their pieces summed by StreamKFix. Its spec is "streamk:" and
// k's configuration.
func StreamK(k Kernel) Kernel {
	k.Name = "streamk"
	if v, ok := streamKKernels.Load(k.Spec()); ok {
		return v.(Kernel)
	}
	k.Source = strings.Replace(k.Source, "#version 430 core\n", "#version 430 core\n#define SK 1\n", 1)
	k = withES(k)
	streamKKernels.Store(k.Spec(), k)
	return k
}

// StreamKFix returns skfix.comp for tiles of bm×bn: the second pass of a
// stream-K product, adding up the pieces of its shared tiles into C.
func StreamKFix(bm, bn int) Kernel {
	k := Kernel{Name: "skfix", Config: fmt.Sprintf("%dx%d", bm, bn), File: "skfix.comp", TileM: 1, TileN: 256, Align: 4, Threads: 256}
	if v, ok := streamKKernels.Load(k.Spec()); ok {
		return v.(Kernel)
	}
	src := strings.Replace(string(source("skfix.comp")), "#define THREADS", fmt.Sprintf("#define BM %d\n#define BN %d\n#define THREADS", bm, bn), 1)
	k.Source = "#version 430 core\n" + src
	k = withES(k)
	streamKKernels.Store(k.Spec(), k)
	return k
}

// streamKKernels memoizes StreamK and StreamKFix (Kernel.Spec() →
// Kernel): a host product asks for them each time it plans stream-K.
var streamKKernels sync.Map
