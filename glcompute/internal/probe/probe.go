// Package probe holds what glmul's measurement programs (lpprobe,
// occprobe, atprobe) share: a headless OpenGL 4.3 context, and the
// uniforms of a square product for the fast kernel family.
package probe

import (
	"fmt"
	"os"

	"github.com/glmul/glmul/glcompute/internal/egl"
	"github.com/glmul/glmul/glcompute/internal/glw"
)

// Context makes a headless EGL context (OpenGL 4.3 core, the first EGL
// device) current on the calling thread, which the caller has locked, and
// loads the GL functions; on failure it prints why and exits with 1.
func Context() {
	c, err := egl.NewContext(0, 4, 3)
	if err == nil {
		err = c.MakeCurrent()
	}
	if err == nil {
		err = glw.Init(egl.GetProcAddress)
	}
	if err != nil {
		fmt.Println(err)
		os.Exit(1)
	}
}

// SetSquare makes p current and sets the uniforms of a fast-family kernel
// for an n×n by n×n product: strides n, offsets 0, no K split.
func SetSquare(p glw.Program, n int) {
	p.Use()
	for _, u := range []string{"M", "K", "N", "lda", "ldb", "ldc", "ksplit"} {
		glw.SetUint(p.Uniform(u), uint32(n))
	}
	for _, u := range []string{"x0", "y0", "offA4", "offB4", "offC4"} {
		glw.SetUint(p.Uniform(u), 0)
	}
}
