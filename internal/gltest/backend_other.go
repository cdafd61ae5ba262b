//go:build !windows

package gltest

import "github.com/glmul/glmul/glcompute"

// backend is the context tests open: headless EGL.
const backend = glcompute.BackendEGL
