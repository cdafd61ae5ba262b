package glcompute

import (
	"errors"
	"fmt"

	"github.com/glmul/glmul/glcompute/internal/glw"
)

var (
	// ErrNoContext: no OpenGL context could be created at all (no driver,
	// no display for GLFW, no EGL device).
	ErrNoContext = errors.New("glcompute: no OpenGL context")
	// ErrUnsupported: a context exists but lacks what glmul needs (OpenGL
	// 4.3 with compute shaders, or a limit the kernel relies on). The error
	// text names what was found.
	ErrUnsupported = errors.New("glcompute: unsupported OpenGL")
	// ErrTooLarge: a matrix exceeds the driver's largest shader storage
	// block, or an index the kernels use would overflow.
	ErrTooLarge = errors.New("glcompute: matrix too large")
	// ErrOutOfMemory: the driver ran out of memory (GL_OUT_OF_MEMORY).
	ErrOutOfMemory = errors.New("glcompute: out of GPU memory")
	// ErrDriver: any other GL failure, shader compile and link errors
	// included.
	ErrDriver = errors.New("glcompute: driver error")
	// ErrReleased: the Device was released while a MulStream still had
	// panels to multiply; the product stopped between panels, and what
	// its RowWriter received is incomplete.
	ErrReleased = errors.New("glcompute: the Device was released")
)

// driverError classifies a GL error.
func driverError(err error) error {
	if errors.Is(err, glw.ErrOutOfMemory) {
		return fmt.Errorf("%w: %w", ErrOutOfMemory, err)
	}
	return fmt.Errorf("%w: %w", ErrDriver, err)
}
