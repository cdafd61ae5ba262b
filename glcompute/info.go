package glcompute

import (
	"strings"

	"github.com/glmul/glmul/glcompute/tuning"
)

// Info describes the device behind a context.
type Info struct {
	Backend     Backend `json:"backend"`
	BackendNote string  `json:"backend_note,omitempty"` // e.g. the EGL device, or why auto fell back to EGL
	// EGLDevice is the index, from 1 as Options.Device counts, of the
	// EGL device the context is on; 0 where it is on none (GLFW, another
	// EGL platform, a borrowed context).
	EGLDevice   int    `json:"egl_device,omitempty"`
	Vendor      string `json:"vendor"`
	Renderer    string `json:"renderer"`
	Version     string `json:"version"`
	GLSLVersion string `json:"glsl_version"`
	Major       int    `json:"major"`
	Minor       int    `json:"minor"`
	// ES: an OpenGL ES context (BackendGLES); Major.Minor is its ES
	// version, and kernels are compiled as GLSL ES 3.10.
	ES bool `json:"es,omitempty"`

	MaxWorkGroupCount       [3]int `json:"max_work_group_count"`
	MaxWorkGroupSize        [3]int `json:"max_work_group_size"`
	MaxWorkGroupInvocations int    `json:"max_work_group_invocations"`
	MaxSharedMemory         int    `json:"max_shared_memory_bytes"`
	MaxSSBOBlockSize        int64  `json:"max_ssbo_block_bytes"`
	// TimerBits is GL_QUERY_COUNTER_BITS of GL_TIME_ELAPSED; 0 means no
	// timer queries.
	TimerBits int `json:"timer_bits"`
	// SMCount is the GPU's count of multiprocessors (gl_SMCountNV, where
	// the driver has GL_NV_shader_thread_group); 0 where unknown. Products
	// whose grid fills a last wave of work groups poorly are split along K
	// with it (tuning.AutoSplitK).
	SMCount int `json:"sm_count,omitempty"`

	// DefaultKernel is the kernel Mul runs when not told which, and
	// DefaultKernelSource where that choice came from (the tuning cache, a
	// built-in per-vendor default, ...).
	DefaultKernel       string `json:"default_kernel"`
	DefaultKernelSource string `json:"default_kernel_source"`
	// SmallGridKernel, if set, replaces DefaultKernel for products that
	// tuning.UseSmallGrid says it fits badly (too few work groups to fill
	// the GPU even split along K, or a short K).
	SmallGridKernel string `json:"small_grid_kernel,omitempty"`
	// NaturalKernel, set where DefaultKernel reads A transposed
	// (shaders.Kernel.TransposeA), replaces it where A is read as it is:
	// products in panels or without room for the transpose (for a resident
	// product: where the transpose kernel does not fit or its scratch
	// buffer cannot be had), and products narrower than
	// tuning.TransposedAMinN columns (tuning.UseTransposedA).
	NaturalKernel string `json:"natural_kernel,omitempty"`
	// NaturalWideKernel, if set, replaces NaturalKernel for products of
	// at least tuning.WideNaturalMinMACs multiply-adds where its waves
	// finish first (tuning.UseWideNatural): narrow ones, and those that
	// cannot transpose A.
	NaturalWideKernel string `json:"natural_wide_kernel,omitempty"`
	// ClassKernels are the configurations glmul tune chose for the shape
	// classes other than square (tuning.LongK, tuning.ThinK), by class
	// name; a product of such a class runs its class's kernel.
	ClassKernels map[string]string `json:"class_kernels,omitempty"`
	// Float64Kernel is the dfast configuration Mul64 runs when not told
	// which, Float64KernelSource where that choice came from, and
	// Float64ClassKernels glmul tune -type f64's for the shape classes
	// other than square; all empty where the device has no float64.
	Float64Kernel       string            `json:"float64_kernel,omitempty"`
	Float64KernelSource string            `json:"float64_kernel_source,omitempty"`
	Float64ClassKernels map[string]string `json:"float64_class_kernels,omitempty"`
}

// api names the context's API and version for people: "OpenGL 4.5 (Core
// Profile) Mesa 22.3.6", "OpenGL ES 3.2 Mesa 22.3.6" (an ES version string
// carries its own prefix).
func (i Info) api() string {
	if strings.HasPrefix(i.Version, "OpenGL") {
		return i.Version
	}
	return "OpenGL " + i.Version
}

// driver is the driver as glcompute/tuning keys and judges it.
func (i Info) driver() tuning.Driver {
	return tuning.Driver{Vendor: i.Vendor, Renderer: i.Renderer, Version: i.Version}
}

// facts are what the device model (tuning.Model) reads of the device.
func (i Info) facts() tuning.Facts {
	return tuning.Facts{SharedMemory: i.MaxSharedMemory, Invocations: i.MaxWorkGroupInvocations}
}
