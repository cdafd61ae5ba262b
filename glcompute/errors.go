package glcompute

import (
	"errors"
	"fmt"

	"github.com/glmul/glmul/glcompute/internal/errs"
	"github.com/glmul/glmul/glcompute/internal/glw"
)

var (
	// ErrNoContext: no OpenGL context could be created at all (no driver,
	// no display for GLFW, no EGL device).
	ErrNoContext = errs.NoContext
	// ErrUnsupported: a context exists but lacks what glmul needs (OpenGL
	// 4.3 with compute shaders, or a limit the kernel relies on). The error
	// text names what was found.
	ErrUnsupported = errs.Unsupported
	// ErrTooLarge: a matrix exceeds the driver's largest shader storage
	// block, or an index the kernels use would overflow.
	ErrTooLarge = errs.TooLarge
	// ErrOutOfMemory: the driver ran out of memory (GL_OUT_OF_MEMORY).
	ErrOutOfMemory = errs.OutOfMemory
	// ErrDriver: any other GL failure, shader compile and link errors
	// included.
	ErrDriver = errs.Driver
	// ErrReleased: the Device was released while a streamed product
	// (stream.Mul) still had panels to multiply; the product stopped
	// between panels, and what its stream.RowWriter received is
	// incomplete.
	ErrReleased = errs.Released
)

// driverError classifies a GL error.
func driverError(err error) error {
	if errors.Is(err, glw.ErrOutOfMemory) {
		return fmt.Errorf("%w: %w", ErrOutOfMemory, err)
	}
	return fmt.Errorf("%w: %w", ErrDriver, err)
}
