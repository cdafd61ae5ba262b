// Command glmul multiplies matrices on the GPU with OpenGL compute shaders,
// validates the product on the CPU and reports GFLOPS.
//
// Usage:
//
//	glmul -n 4096                 square product
//	glmul -shape 100x77x130       A is 100×77, B is 77×130
//
// Run glmul -h for every flag.
package main

import (
	"os"

	_ "github.com/glmul/glmul/glcompute/glfw" // the GLFW back end (-backend glfw, auto with a display)
)

func main() { os.Exit(exitCode(run(os.Args[1:], os.Stdout, os.Stderr), os.Stderr)) }
