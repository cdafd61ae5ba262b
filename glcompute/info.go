package glcompute

import (
	"fmt"
	"strings"

	"github.com/glmul/glmul/glcompute/internal/glw"
	"github.com/glmul/glmul/glcompute/internal/trace"
	"github.com/glmul/glmul/glcompute/tuning"
)

// Info describes the device behind a context.
type Info struct {
	Backend     Backend `json:"backend"`
	BackendNote string  `json:"backend_note,omitempty"` // e.g. the EGL device, or why auto fell back to EGL
	Vendor      string  `json:"vendor"`
	Renderer    string  `json:"renderer"`
	Version     string  `json:"version"`
	GLSLVersion string  `json:"glsl_version"`
	Major       int     `json:"major"`
	Minor       int     `json:"minor"`
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
}

// initInfo fills Info from the current context and checks the version.
func (d *Device) initInfo() error {
	i := &d.info
	i.Vendor, i.Renderer, i.Version, i.GLSLVersion = glw.Vendor(), glw.Renderer(), glw.Version(), glw.GLSLVersion()
	var ok bool
	i.Major, i.Minor, ok = glw.ParseVersion(i.Version)
	if !ok {
		return fmt.Errorf("%w: cannot read the OpenGL version from %q", ErrUnsupported, i.Version)
	}
	major, minor := requiredMajor, requiredMinor
	if i.ES {
		major, minor = requiredMajorES, requiredMinorES
	}
	if i.Major < major || i.Major == major && i.Minor < minor {
		return fmt.Errorf("%w: OpenGL %d.%d with compute shaders is needed; %q (%s) offers %d.%d (macOS stops at 4.1)",
			ErrUnsupported, major, minor, i.Renderer, i.Vendor, i.Major, i.Minor)
	}
	trace.Stage("GL: strings and version read")
	l := glw.QueryLimits()
	trace.Stage("GL: limits read")
	i.MaxWorkGroupCount, i.MaxWorkGroupSize = l.MaxWorkGroupCount, l.MaxWorkGroupSize
	i.MaxWorkGroupInvocations, i.MaxSharedMemory = l.MaxWorkGroupInvocations, l.MaxSharedMemory
	i.MaxSSBOBlockSize = l.MaxSSBOBlockSize
	d.named = glw.HaveNamed() && !i.ES && (i.Major > 4 || i.Major == 4 && i.Minor >= 5 || glw.HasExtension("GL_ARB_direct_state_access"))
	if !i.ES {
		i.TimerBits = glw.TimerBits()
		if glw.HasExtension("GL_NV_shader_thread_group") {
			i.SMCount = d.querySMCount()
			trace.Stage("SM count: smcount.comp compiled, dispatched, read back")
		}
	}
	if !i.ES || i.Major > 3 || i.Minor >= 2 || glw.HasExtension("GL_OES_texture_buffer") || glw.HasExtension("GL_EXT_texture_buffer") {
		d.texBlock = 16 * l.MaxTextureBufferTexels
		if strings.Contains(i.Renderer, "softpipe") {
			// Mesa 22.3.6's softpipe reports 65536 texels and fetches
			// the texels past 32768 wrong (TestTexelsPastHalf).
			d.texBlock /= 2
		}
	}
	d.loopBudget = loopBudget(i.Renderer)
	d.fp64 = d.checkFloat64()
	d.bindAlign = 16
	for d.bindAlign%max(l.SSBOOffsetAlignment, 1) != 0 || d.bindAlign%max(l.TextureBufferOffsetAlignment, 1) != 0 {
		d.bindAlign += 16
	}
	trace.Stage("GL: extensions and alignments read")
	d.chooseKernels()
	trace.Stage("kernel choice (tuning cache read, configurations looked up)")
	return nil
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

// Info returns the device's strings and limits, also after Release. Safe
// from any goroutine.
func (d *Device) Info() Info { return d.info }
