// batched: count small products C[b] = α·A[b]·B[b] + β·C[b] (M×K by K×N,
// each row-major with its own row stride lda, ldb, ldc), the matrices of a
// batch spaced strideA, strideB, strideC elements apart, from element
// offsets offA, offB, offC. β = 0 never reads C; α = 0 never reads A or B.
//
// One invocation per element of C across the whole batch: invocation g
// computes element g % (M·N) of product g / (M·N), so consecutive
// invocations write neighbouring floats of C and read rows of A and
// columns of B that neighbouring invocations share through the cache.
// Sizes up to 32 (K up to 32 multiply-adds per invocation).
//
// REAL is the element type: float, or double (Batched64: α and β are
// doubles too).
#version 430 core

#ifndef REAL
#define REAL float
#endif

layout(local_size_x = 256, local_size_y = 1, local_size_z = 1) in;

uniform uint M;
uniform uint N;
uniform uint K;
uniform uint count;
uniform uint lda;
uniform uint ldb;
uniform uint ldc;
uniform uint strideA;
uniform uint strideB;
uniform uint strideC;
uniform uint offA;
uniform uint offB;
uniform uint offC;
uniform REAL alpha;
uniform REAL beta;
uniform uint first; // index of this dispatch's first element (dispatch chunks)

layout(std430, binding = 0) readonly buffer ssbo_A { REAL A[]; };
layout(std430, binding = 1) readonly buffer ssbo_B { REAL B[]; };
layout(std430, binding = 2) buffer ssbo_C { REAL C[]; };

void main()
{
    uint g = first + (gl_WorkGroupID.y * gl_NumWorkGroups.x + gl_WorkGroupID.x) * 256u + gl_LocalInvocationIndex;
    uint per = M * N;
    uint b = g / per;
    if (b >= count) return;
    uint e = g % per;
    uint i = e / N, j = e % N;
    REAL s = REAL(0.0);
    if (alpha != 0.0) {
        uint a0 = offA + b * strideA + i * lda;
        uint b0 = offB + b * strideB + j;
        for (uint k = 0u; k < K; k++) {
            s = fma(A[a0 + k], B[b0 + k * ldb], s);
        }
        s *= alpha;
    }
    uint at = offC + b * strideC + i * ldc + j;
    if (beta != 0.0) s += beta * C[at];
    C[at] = s;
}
