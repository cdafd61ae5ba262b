package shaders

import (
	"fmt"
)

// CPUConfig parameterizes cpu.comp, the kernel for OpenGL on a CPU.
type CPUConfig struct {
	LX, LY int // invocations per work group along the columns and rows of C
	TM, TN int // rows and columns of C per invocation; TN a multiple of 4
}

// DefaultCPU is the configuration "cpu" names.
var DefaultCPU = CPUConfig{LX: 8, LY: 8, TM: 8, TN: 8}

// String spells the configuration as Lookup reads it after "cpu:":
// LXxLY_TMxTN, as in "8x8_8x8".
func (c CPUConfig) String() string { return fmt.Sprintf("%dx%d_%dx%d", c.LX, c.LY, c.TM, c.TN) }

// ParseCPUConfig reads a configuration written by String.
func ParseCPUConfig(s string) (CPUConfig, error) {
	var c CPUConfig
	var rest string
	n, _ := fmt.Sscanf(s, "%dx%d_%dx%d%s", &c.LX, &c.LY, &c.TM, &c.TN, &rest)
	if n != 4 || c.String() != s {
		return CPUConfig{}, fmt.Errorf("cpu kernel configuration %q: want LXxLY_TMxTN, e.g. %v", s, DefaultCPU)
	}
	return c, c.Check()
}

// Check reports whether the configuration is well formed: positive sizes,
// TN a multiple of 4, at most 1024 invocations per work group (the OpenGL
// 4.3 guarantee) and at most 256 accumulators per invocation.
func (c CPUConfig) Check() error {
	switch {
	case c.LX < 1 || c.LY < 1 || c.TM < 1 || c.TN < 4:
		return fmt.Errorf("cpu kernel %v: LX, LY and TM must be at least 1, TN at least 4", c)
	case c.LX > 1024 || c.LY > 1024 || c.TM > 256 || c.TN > 256:
		return fmt.Errorf("cpu kernel %v: too large (at most 1024 invocations and 256 accumulators)", c)
	case c.TN%4 != 0:
		return fmt.Errorf("cpu kernel %v: TN must be a multiple of 4", c)
	case c.LX*c.LY > 1024:
		return fmt.Errorf("cpu kernel %v: %d invocations per work group, over the 1024 OpenGL guarantees", c, c.LX*c.LY)
	case c.TM*c.TN > 256:
		return fmt.Errorf("cpu kernel %v: %d accumulators per invocation; at most 256", c, c.TM*c.TN)
	}
	return nil
}

// CPU returns cpu.comp configured by c.
func CPU(c CPUConfig) (Kernel, error) {
	if err := c.Check(); err != nil {
		return Kernel{}, fmt.Errorf("shaders: %w", err)
	}
	src := fmt.Sprintf("#version 430 core\n#define LX %d\n#define LY %d\n#define TM %d\n#define GN %d\n#line 1\n%s",
		c.LX, c.LY, c.TM, c.TN/4, source("cpu.comp"))
	return withES(Kernel{Name: "cpu", Config: c.String(), File: "cpu.comp", TileM: c.LY * c.TM, TileN: c.LX * c.TN,
		Strided: true, Textures: true, Align: 4, Threads: c.LX * c.LY, StepK: 4, Source: src}), nil
}

// CPUCandidates returns the configurations of cpu.comp that glmul tune
// sweeps: 8 or 16 invocations across (whole 256-bit vectors of lanes), and
// per-invocation tiles of 32 to 128 accumulators.
func CPUCandidates() []CPUConfig {
	var out []CPUConfig
	for _, l := range [][2]int{{8, 4}, {8, 8}, {16, 4}, {8, 16}} {
		for _, t := range [][2]int{{4, 8}, {8, 4}, {8, 8}, {4, 16}, {6, 8}, {12, 8}, {8, 16}} {
			out = append(out, CPUConfig{LX: l[0], LY: l[1], TM: t[0], TN: t[1]})
		}
	}
	return out
}
