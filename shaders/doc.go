// Package shaders holds glmul's GLSL compute shaders, embedded into the binary.
//
// # Kernels
//
// tiled32.comp is the paper's kernel (seed 001, Algorithm 2): 32×32 work
// groups, each loading 32×32 tiles of A and B into shared memory (As, Bs)
// and accumulating one element of C per invocation. It is the baseline of
// the paper's Table 1 and is kept close to the published listing.
//
// fast.comp is the register-blocked kernel for GPUs (FastConfig), cpu.comp
// the one for OpenGL on a CPU (CPUConfig): Mesa llvmpipe loads storage
// buffers and shared memory lane by lane but gathers texels, so cpu.comp
// reads A and B through buffer textures at texture units 0 and 1
// (Kernel.Textures), bound by glcompute over the same ranges as storage
// bindings 0 and 1, and uses no shared memory.
//
// # Interface every kernel follows
//
// Row-major float32 matrices in std430 shader storage buffers: A (M×K) at
// binding 0, B (K×N) at binding 1, the result C (M×N) at binding 2. Uniforms
// M, K, N give the shape in every kernel (the paper's m, n, l: K is the
// shared dimension) and x0, y0 the first column and row of C that the
// current dispatch covers, so that a large product can be dispatched in
// chunks. Every kernel checks bounds, so any shape works. glcompute panics
// on a uniform name that a kernel does not declare, so a misspelt one
// fails every test that uses it.
//
// This package has no GL dependency: it only carries text.
package shaders
