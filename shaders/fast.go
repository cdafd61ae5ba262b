package shaders

import (
	"fmt"
	"strconv"
	"strings"
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
}

// DefaultFast is the configuration used where no tuned or per-vendor one
// applies.
var DefaultFast = FastConfig{BM: 128, BN: 128, BK: 8, TM: 8, TN: 8}

// Threads is the number of invocations per work group.
func (c FastConfig) Threads() int { return (c.BM / c.TM) * (c.BN / c.TN) }

// SharedBytes is the shared memory one work group uses.
func (c FastConfig) SharedBytes() int {
	b := 4 * c.BK * (c.BM + c.PadA + c.BN)
	if c.DoubleBuffer {
		b *= 2
	}
	return b
}

// String spells the configuration as Lookup reads it after "fast:":
// BMxBNxBK_TMxTN, then _pP for padding and _db for double buffering, as in
// "128x128x16_8x4_db".
func (c FastConfig) String() string {
	s := fmt.Sprintf("%dx%dx%d_%dx%d", c.BM, c.BN, c.BK, c.TM, c.TN)
	if c.PadA != 0 {
		s += fmt.Sprintf("_p%d", c.PadA)
	}
	if c.DoubleBuffer {
		s += "_db"
	}
	return s
}

// ParseFastConfig reads a configuration written by String.
func ParseFastConfig(s string) (FastConfig, error) {
	bad := fmt.Errorf("fast kernel configuration %q: want BMxBNxBK_TMxTN[_pP][_db], e.g. 128x128x16_8x4_db", s)
	parts := strings.Split(s, "_")
	db := false
	if len(parts) > 2 && parts[len(parts)-1] == "db" {
		db, parts = true, parts[:len(parts)-1]
	}
	if len(parts) < 2 || len(parts) > 3 {
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
	b, ok1 := nums(parts[0], 3)
	t, ok2 := nums(parts[1], 2)
	if !ok1 || !ok2 {
		return FastConfig{}, bad
	}
	c := FastConfig{BM: b[0], BN: b[1], BK: b[2], TM: t[0], TN: t[1], DoubleBuffer: db}
	if len(parts) == 3 {
		p, err := strconv.Atoi(strings.TrimPrefix(parts[2], "p"))
		if err != nil || !strings.HasPrefix(parts[2], "p") {
			return FastConfig{}, bad
		}
		c.PadA = p
	}
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
	case c.Threads() < 32:
		return fmt.Errorf("fast kernel %v: %d invocations per work group; use at least 32", c, c.Threads())
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
	src := fmt.Sprintf("#version 430 core\n#define BM %d\n#define BN %d\n#define BK %d\n#define TM %d\n#define TN %d\n#define PADA %d\n#define DB %d\n#define THREADS %d\n#line 1\n%s",
		c.BM, c.BN, c.BK, c.TM, c.TN, c.PadA, db, c.Threads(), body)
	return Kernel{Name: "fast", Config: c.String(), File: "fast.comp", TileM: c.BM, TileN: c.BN, Strided: true,
		Align: 4, SharedBytes: c.SharedBytes(), Threads: c.Threads(), StepK: c.BK, Source: src}, nil
}

// FastCandidates returns the configurations that glmul tune sweeps, each
// well formed (Check passes); a device may still lack the shared memory for
// some (see Kernel.SharedBytes). Block tiles from 64×64 to 256×128, K steps
// of 8 to 32, per-invocation tiles of 16 to 128 elements, with and without
// double buffering; 64 to 512 invocations per work group.
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
				}
			}
		}
	}
	return out
}
