// Package cause names why a glcompute call failed, more finely than the
// library's exported errors, so that glmul can say how to fix it without
// reading error text. The library marks an error with one of these
// (Mark): its message stays as it was, errors.Is finds both the exported
// error and the cause. Being internal, the causes are no contract with
// programs outside this module: theirs is glcompute's exported errors.
package cause

import "errors"

// The causes, by what the user can change.
var (
	// NoEGL: the platform has no EGL (Windows: WGL, through GLFW).
	NoEGL = errors.New("no EGL on this platform")
	// NoDisplay: the GLFW backend found no display to open a window on.
	NoDisplay = errors.New("no display")
	// ESContext: no OpenGL ES context of the version glmul needs.
	ESContext = errors.New("no OpenGL ES context of the version needed")
	// GLVersion: the driver offers no OpenGL 4.3 core with compute.
	GLVersion = errors.New("OpenGL 4.3 compute shaders needed")
	// NoFloat64: the context's shaders have no double (OpenGL ES).
	NoFloat64 = errors.New("no float64 in shaders")
	// NoPersistentMapping: no glBufferStorage persistent mappings.
	NoPersistentMapping = errors.New("no persistent buffer mappings")
	// KernelOverLimits: a kernel configuration over the driver's shared
	// memory or invocations a work group.
	KernelOverLimits = errors.New("kernel over the driver's limits")
	// NoPanels: a product over one binding or the GPU memory allowed,
	// with a kernel that cannot run in panels (tiled32).
	NoPanels = errors.New("kernel cannot run in panels")
	// BindingTooSmall: the smallest panels do not fit one binding
	// (MulOptions.MaxBinding).
	BindingTooSmall = errors.New("binding too small for the smallest panels")
	// GPUMemoryCap: the smallest panels need more GPU memory than
	// MulOptions.MaxGPUMemory allows.
	GPUMemoryCap = errors.New("GPU memory cap too small")
	// SplitKOverCap: a split-K workspace over MulOptions.MaxGPUMemory.
	SplitKOverCap = errors.New("split-K workspace over the GPU memory cap")
)

// Mark returns err marked with cause c: the same message, and
// errors.Is(…, c) true as well as for what err wraps. A nil err stays nil.
func Mark(err, c error) error {
	if err == nil {
		return nil
	}
	return marked{err, c}
}

type marked struct{ err, cause error }

func (m marked) Error() string   { return m.err.Error() }
func (m marked) Unwrap() []error { return []error{m.err, m.cause} }
