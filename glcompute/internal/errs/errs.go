// Package errs holds glcompute's sentinel errors, so that the library's
// internal packages return errors that match them with errors.Is:
// package glcompute exports each under its own name (ErrTooLarge is
// TooLarge, the same value), with the contract in its doc comment.
//
// It is pure Go and never touches GL.
package errs

import (
	"errors"
	"fmt"
)

var (
	// NoContext is glcompute.ErrNoContext.
	NoContext = errors.New("glcompute: no OpenGL context")
	// Unsupported is glcompute.ErrUnsupported.
	Unsupported = errors.New("glcompute: unsupported OpenGL")
	// TooLarge is glcompute.ErrTooLarge.
	TooLarge = errors.New("glcompute: matrix too large")
	// OutOfMemory is glcompute.ErrOutOfMemory.
	OutOfMemory = errors.New("glcompute: out of GPU memory")
	// Driver is glcompute.ErrDriver.
	Driver = errors.New("glcompute: driver error")
	// Released is glcompute.ErrReleased.
	Released = errors.New("glcompute: the Device was released")
)

// FormatBytes writes a size for an error message: GiB, MiB or bytes.
func FormatBytes(b float64) string {
	switch {
	case b >= 1<<30:
		return fmt.Sprintf("%.2f GiB", b/(1<<30))
	case b >= 1<<20:
		return fmt.Sprintf("%.1f MiB", b/(1<<20))
	}
	return fmt.Sprintf("%.0f bytes", b)
}
