// Package cpu multiplies matrices on the CPU: the paper's naive loop
// (Algorithm 3) for its Table 1, and gonum's BLAS for fast products and
// float64 references. It also makes seeded random matrices: Random and
// Fill from a caller's generator, serially; Uniform and FillUniform from a
// seed, in parallel, the same values whatever the number of threads.
//
// # Layout
//
// Matrices are gonum's blas32.General / blas64.General: row-major, element
// (i, j) at Data[i*Stride+j].
//
// # Threading
//
// Every function is safe for concurrent use on distinct outputs. Naive is
// single-threaded, as the paper's was; Sgemm uses gonum's parallel kernel;
// FillUniform runs on up to GOMAXPROCS goroutines.
//
// This package never imports GL.
package cpu
