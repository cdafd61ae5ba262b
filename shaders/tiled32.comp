// tiled32: the paper's kernel (seed 001, Algorithm 2), kept recognisable.
//
// C = A·B with A m×n and B n×l, all row-major float32 (the paper's names:
// m rows of A, n = the shared dimension K, l columns of B). Each 32×32 work
// group computes one 32×32 tile of R = C; the dispatch covers a submatrix
// that starts at column x0 and row y0 of R (Algorithm 1's chunk loop).
//
// Changes from the paper's listing, none of which alter the algorithm:
//   - `#pragma unroll` is CUDA's; GLSL ignores unknown pragmas, so it is
//     written as the standard `#pragma optionNV(unroll all)` hint, which
//     other drivers ignore.
//   - the helper `__memoryBarrierShared` is renamed: identifiers starting
//     with "__" are reserved in GLSL (NVIDIA warns, others may reject).
#version 430 core

layout(local_size_x = 32, local_size_y = 32, local_size_z = 1) in;

uniform uint M; // the paper's m: rows of A
uniform uint K; // the paper's n: the shared dimension
uniform uint N; // the paper's l: columns of B
uniform uint x0;
uniform uint y0;

layout(std430, binding = 0) readonly buffer ssbo_A { float A[]; };
layout(std430, binding = 1) readonly buffer ssbo_B { float B[]; };
layout(std430, binding = 2) writeonly buffer ssbo_R { float R[]; };

const uint BLOCK_SIZE = gl_WorkGroupSize.x;

shared float As[BLOCK_SIZE][BLOCK_SIZE];
shared float Bs[BLOCK_SIZE][BLOCK_SIZE];

void sharedBarrier()
{
    memoryBarrierShared();
    barrier();
}

void main()
{
    uint hA = M;
    uint wA = K;
    uint wB = N;

    uint bx = gl_WorkGroupID.x;
    uint by = gl_WorkGroupID.y;

    uint tx = gl_LocalInvocationID.x;
    uint ty = gl_LocalInvocationID.y;

    uint gx = x0 + gl_GlobalInvocationID.x;
    uint gy = y0 + gl_GlobalInvocationID.y;

    uint aBegin = wA * (y0 + BLOCK_SIZE * by);
    uint aEnd = aBegin + wA - 1u;
    uint aStep = BLOCK_SIZE;

    uint bBegin = x0 + BLOCK_SIZE * bx;
    uint bStep = BLOCK_SIZE * wB;

    float Rsub = 0.0;

    for (uint a = aBegin, b = bBegin, blkStart = 0u;
         a <= aEnd;
         a += aStep, b += bStep, blkStart += BLOCK_SIZE)
    {
        As[ty][tx] = (gy < hA && blkStart + tx < wA) ? A[a + wA * ty + tx] : 0.0;
        Bs[ty][tx] = (gx < wB && blkStart + ty < wA) ? B[b + wB * ty + tx] : 0.0;
        sharedBarrier();

        #pragma optionNV(unroll all)
        for (uint k = 0u; k < BLOCK_SIZE; k++)
        {
            Rsub += As[ty][k] * Bs[k][tx];
        }
        sharedBarrier();
    }

    if (gy < hA && gx < wB)
    {
        uint c = wB * (y0 + BLOCK_SIZE * by) + (x0 + BLOCK_SIZE * bx);
        R[c + wB * ty + tx] = Rsub;
    }
}
