package shaders

import (
	"embed"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
)

//go:embed *.comp
var files embed.FS

// Kernel is one compute shader ready to compile.
type Kernel struct {
	// Name is the kernel family as the command line spells it: "tiled32"
	// (the paper's) or "fast".
	Name string
	// Config is the parameter set of a configurable kernel ("" for tiled32).
	Config string
	// File is the shader's file name in this package; compile errors name it.
	File string
	// TileM and TileN are the rows and columns of C that one work group
	// computes; the dispatch planner divides C by them.
	TileM, TileN int
	// Align is the multiple, in floats, to which the kernel needs the row
	// strides of A, B and C rounded up (zero-padded): 4 for vec4 access.
	Align int
	// Threads is the number of invocations per work group.
	Threads int
	// StepK is the depth of one K step in shared memory (BK); split-K
	// splits at its multiples. Zero for kernels that cannot split K.
	StepK int
	// SharedBytes is the shared memory a work group uses.
	SharedBytes int
	// Strided kernels take row strides and offsets (uniforms lda, ldb,
	// ldc, offA4, offB4, offC4) and a K split (ksplit) besides M, K, N,
	// x0 and y0; the paper's tiled32 takes only those five.
	Strided bool
	// Textures kernels read A and B through buffer textures (samplerBuffer,
	// RGBA32F; a Float64 kernel's usamplerBuffer, RGBA32UI) at texture
	// units 0 and 1, bound over the same ranges as the storage bindings 0
	// and 1 would be, instead of through those bindings.
	Textures bool
	// TransposeA kernels read A transposed: K rows of Ld(M) floats (M
	// rounded up to Align; the padding columns are read but used only
	// for rows past M), which the caller
	// writes with Transpose before the product; lda is that row stride
	// and offA4 the first column's offset. Products that cannot give them
	// that run the configuration without it (Natural).
	TransposeA bool
	// Float64 kernels compute in doubles (dfast, Reduce64): their
	// matrices hold float64, and Align, strides and offsets count doubles.
	Float64 bool
	// Source is the GLSL source text, and SourceES the same as GLSL ES
	// 3.10, for an OpenGL ES 3.1 context (ES).
	Source, SourceES string
}

// withES returns k with its SourceES. The fixed kernels (GEMM, Transpose,
// ...) are built once (sync.OnceValue): resident products ask for them on
// every call, and their text is the same each time.
func withES(k Kernel) Kernel {
	k.SourceES = ES(k.Source)
	return k
}

// Spec returns the string Lookup reads back: "tiled32", "fast:128x128x8_8x8".
func (k Kernel) Spec() string {
	if k.Config == "" {
		return k.Name
	}
	return k.Name + ":" + k.Config
}

// Names are the kernel families, the paper's first.
func Names() []string { return []string{"tiled32", "fast", "cpu"} }

// source returns a shader file's text: the embedded copy, or, for kernel
// development, the file of that name in $GLMUL_SHADER_DIR when that is set
// (compare kernel versions with one binary; never set it in production).
func source(name string) []byte {
	if dir := os.Getenv("GLMUL_SHADER_DIR"); dir != "" {
		if b, err := os.ReadFile(filepath.Join(dir, name)); err == nil {
			return b
		}
	}
	b, err := files.ReadFile(name)
	if err != nil {
		panic("shaders: missing embedded file " + name)
	}
	return b
}

// fixed returns a kernel whose GLSL is its file as it is, built once at
// the first call: k with its Source and SourceES.
func fixed(k Kernel) func() Kernel {
	return sync.OnceValue(func() Kernel {
		k.Source = string(source(k.File))
		return withES(k)
	})
}

// Tiled32 is the paper's kernel (seed 001, Algorithm 2).
func Tiled32() Kernel { return tiled32Kernel() }

var tiled32Kernel = fixed(Kernel{Name: "tiled32", File: "tiled32.comp", TileM: 32, TileN: 32, Align: 1, Threads: 1024, SharedBytes: 2 * 32 * 32 * 4})

// GEMM is the general kernel on resident matrices (gemm.comp): transposes,
// α, β, element offsets and row strides.
func GEMM() Kernel { return gEMMKernel() }

var gEMMKernel = fixed(Kernel{Name: "gemm", File: "gemm.comp", TileM: 64, TileN: 64, Align: 1, Threads: 256, SharedBytes: 2 * 16 * 64 * 4})

// GEMM64 is GEMM on float64 matrices (gemm.comp in doubles, α and β
// double uniforms). It has no GLSL ES text: GLSL ES has no double.
func GEMM64() Kernel { return gEMM64Kernel() }

var gEMM64Kernel = sync.OnceValue(func() Kernel {
	k := inDoubles(GEMM(), "gemm64")
	k.SharedBytes *= 2
	return k
})

// inDoubles is k, a kernel whose element type is REAL (gemm.comp,
// batched.comp), compiled with REAL double and named name.
func inDoubles(k Kernel, name string) Kernel {
	k.Name, k.Float64, k.SourceES = name, true, ""
	k.Source = strings.Replace(k.Source, "#version 430 core\n", "#version 430 core\n#define REAL double\n", 1)
	return k
}

// Reduce sums the partial results of a split-K product (reduce.comp).
func Reduce() Kernel { return reduceKernel() }

var reduceKernel = fixed(Kernel{Name: "reduce", File: "reduce.comp", TileM: 1, TileN: 256, Align: 4, Threads: 256})

// Reduce64 is Reduce over float64 partial results (reduce.comp with
// dvec2s where Reduce has vec4s: 16 bytes either way, so its uniforms
// mean the same), which adds a float64 product's K panels. It has no GLSL
// ES text: GLSL ES has no double.
func Reduce64() Kernel { return reduce64Kernel() }

var reduce64Kernel = sync.OnceValue(func() Kernel {
	k := Reduce()
	k.Name, k.Align, k.Float64, k.SourceES = "reduce64", 2, true, ""
	k.Source = strings.Replace(k.Source, "#version 430 core\n", "#version 430 core\n#define PARTIAL dvec2\n", 1)
	return k
})

// Fill sets the words of a buffer to one value (fill.comp): glmul's NaN
// poison of results.
func Fill() Kernel { return fillKernel() }

var fillKernel = fixed(Kernel{Name: "fill", File: "fill.comp", TileM: 1, TileN: 256, Align: 1, Threads: 256})

// SMCount writes the GPU's multiprocessor count and warps per
// multiprocessor to words 0 and 1 of binding 2 (smcount.comp); it needs
// GL_NV_shader_thread_group.
func SMCount() Kernel { return sMCountKernel() }

var sMCountKernel = fixed(Kernel{Name: "smcount", File: "smcount.comp", TileM: 1, TileN: 1, Align: 1, Threads: 1})

// Transpose writes A transposed for the kernels that read it so
// (transpose.comp, Kernel.TransposeA): 64×64 tiles of T = Aᵀ.
func Transpose() Kernel { return transposeKernel() }

var transposeKernel = fixed(Kernel{Name: "transpose", File: "transpose.comp", TileM: 64, TileN: 64, Align: 4, Threads: 256, SharedBytes: 64 * 65 * 4})

// TransposeStream is Transpose for a few work groups of threads
// invocations (a multiple of 16, at most 1024) that loop over the tiles
// (transpose.comp with STREAM), run beside a product's dispatches.
func TransposeStream(threads int) Kernel { return streamKernel(Transpose(), threads) }

// Copy copies a range of vec4s between two buffers with a few work groups
// of threads invocations that loop over it (copy.comp), run beside a
// product's dispatches.
func Copy(threads int) Kernel {
	return streamKernel(Kernel{Name: "copy", File: "copy.comp", TileM: 1, TileN: threads, Align: 4}, threads)
}

var streamKernels sync.Map // Kernel.Spec() → Kernel

// streamKernel returns k, a streaming kernel, for work groups of threads
// invocations: Config "streamN", its source (k.File's) with STREAM and
// THREADS defined.
func streamKernel(k Kernel, threads int) Kernel {
	k.Config, k.Threads = fmt.Sprintf("stream%d", threads), threads
	if v, ok := streamKernels.Load(k.Spec()); ok {
		return v.(Kernel)
	}
	k.Source = strings.Replace(string(source(k.File)), "#version 430 core\n", fmt.Sprintf("#version 430 core\n#define STREAM 1\n#define THREADS %du\n", threads), 1)
	k = withES(k)
	streamKernels.Store(k.Spec(), k)
	return k
}

// Natural returns the kernel spec that computes what spec does from A in
// its natural layout: spec itself unless it reads A transposed (_at),
// for products that have no room or path for the transposed copy.
func Natural(spec string) string {
	return refastened(spec, func(c *FastConfig) { c.TransA = false })
}

// WithTextures returns the fast configuration spec names, reading A and B
// through buffer textures (_tex) or storage buffers as textures says; any
// other spec as it is. An edge kernel reads the same way as the kernel it
// shares its bindings with.
func WithTextures(spec string, textures bool) string {
	return refastened(spec, func(c *FastConfig) { c.Tex = textures })
}

// refastened returns the spec of the fast configuration spec names with
// change applied; any other spec as it is.
func refastened(spec string, change func(*FastConfig)) string {
	k, err := Lookup(spec)
	if err != nil || k.Name != "fast" {
		return spec
	}
	c, err := ParseFastConfig(k.Config)
	if err != nil {
		return spec
	}
	change(&c)
	return k.Name + ":" + c.String()
}

// Batched is the kernel for many small products (batched.comp): one
// invocation per element of C, 256 per work group.
func Batched() Kernel { return batchedKernel() }

var batchedKernel = fixed(Kernel{Name: "batched", File: "batched.comp", TileM: 1, TileN: 256, Align: 1, Threads: 256})

// Batched64 is Batched on float64 matrices (batched.comp in doubles, α
// and β double uniforms). It has no GLSL ES text: GLSL ES has no double.
func Batched64() Kernel { return batched64Kernel() }

var batched64Kernel = sync.OnceValue(func() Kernel { return inDoubles(Batched(), "batched64") })

// looked memoizes Lookup: a kernel is an immutable value, and building
// fast.comp's source costs more than a resident product's whole dispatch.
var looked sync.Map // spec → Kernel

// Lookup returns the kernel a spec names: "tiled32", "fast" (DefaultFast),
// "fast:" followed by a FastConfig ("fast:128x128x8_8x8"), "cpu"
// (DefaultCPU) or "cpu:" followed by a CPUConfig ("cpu:8x8_8x8"). Safe for
// concurrent use.
func Lookup(spec string) (Kernel, error) {
	if k, ok := looked.Load(spec); ok {
		return k.(Kernel), nil
	}
	k, err := lookup(spec)
	if err == nil {
		looked.Store(spec, k)
	}
	return k, err
}

func lookup(spec string) (Kernel, error) {
	name, config, hasConfig := strings.Cut(spec, ":")
	switch name {
	case "tiled32":
		if hasConfig {
			return Kernel{}, fmt.Errorf("shaders: tiled32 takes no configuration (got %q)", spec)
		}
		return Tiled32(), nil
	case "fast":
		return configured(hasConfig, config, DefaultFast, ParseFastConfig, Fast)
	case "cpu":
		return configured(hasConfig, config, DefaultCPU, ParseCPUConfig, CPU)
	}
	return Kernel{}, fmt.Errorf("shaders: unknown kernel %q (known: %s; fast and cpu take a configuration as fast:128x128x8_8x8, cpu:8x8_8x8)", spec, strings.Join(Names(), ", "))
}

// configured builds a configurable family's kernel: its default
// configuration def without a config, else config parsed.
func configured[C any](hasConfig bool, config string, def C, parse func(string) (C, error), build func(C) (Kernel, error)) (Kernel, error) {
	c := def
	if hasConfig {
		var err error
		if c, err = parse(config); err != nil {
			return Kernel{}, fmt.Errorf("shaders: %w", err)
		}
	}
	return build(c)
}

// esPreamble replaces "#version 430 core" for OpenGL ES 3.1: GLSL ES 3.10
// with high precision by default (the kernels' floats and indices need
// it), and fma() spelt out (it is GLSL ES 3.20, not 3.10).
const esPreamble = "#version 310 es\nprecision highp float;\nprecision highp int;\n#define fma(a, b, c) ((a) * (b) + (c))\n"

// ES returns a kernel's source as GLSL ES 3.10, for an OpenGL ES 3.1
// context: the same text after a different preamble. Every kernel is
// written in the common subset (no implicit int/uint/float conversions,
// no desktop-only built-ins); the conformance tests run each on an ES
// context to keep it so. A kernel that reads buffer textures enables
// GL_OES_texture_buffer and GL_EXT_texture_buffer (a driver may have
// either; enabling one it lacks is only a warning).
func ES(src string) string {
	pre := esPreamble
	if strings.Contains(src, "samplerBuffer") { // core in OpenGL ES 3.2 only
		pre = strings.Replace(pre, "\n", "\n#extension GL_OES_texture_buffer : enable\n#extension GL_EXT_texture_buffer : enable\n", 1)
	}
	return strings.Replace(src, "#version 430 core\n", pre, 1)
}
