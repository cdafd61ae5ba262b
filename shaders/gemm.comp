// gemm: C = α·op(A)·op(B) + β·C on matrices that live in buffers, the
// BLAS semantics of gonum's Sgemm (row-major): op(A) is M×K, op(B) is K×N,
// C is M×N; op(X) is X or Xᵀ as transA/transB say. Each matrix starts at an
// element offset in its buffer and has its own row stride (lda, ldb, ldc),
// so matrices inside a host's own buffers work in place.
//
// β = 0 never reads C (NaN or garbage in C is overwritten, as BLAS does);
// α = 0 never reads A or B.
//
// 64×64 block tiles, 16×16 invocations each holding a 4×4 tile of C, K in
// steps of 16 through shared memory; scalar loads, since offsets and
// strides are arbitrary. x0, y0: the first column and row of C this
// dispatch covers.
//
// REAL is the element type: float, or double for float64 matrices
// (GEMM64: α and β are doubles too).
#version 430 core

#ifndef REAL
#define REAL float
#endif

layout(local_size_x = 16, local_size_y = 16, local_size_z = 1) in;

uniform uint M;
uniform uint N;
uniform uint K;
uniform uint lda;
uniform uint ldb;
uniform uint ldc;
uniform uint offA;
uniform uint offB;
uniform uint offC;
uniform uint transA;
uniform uint transB;
uniform REAL alpha;
uniform REAL beta;
uniform uint x0;
uniform uint y0;

layout(std430, binding = 0) readonly buffer ssbo_A { REAL A[]; };
layout(std430, binding = 1) readonly buffer ssbo_B { REAL B[]; };
layout(std430, binding = 2) buffer ssbo_C { REAL C[]; };

shared REAL As[16][64]; // As[k][row]
shared REAL Bs[16][64]; // Bs[k][col]

REAL opA(uint i, uint k)
{
    if (i >= M || k >= K) return REAL(0.0);
    return transA != 0u ? A[offA + k * lda + i] : A[offA + i * lda + k];
}

REAL opB(uint k, uint j)
{
    if (k >= K || j >= N) return REAL(0.0);
    return transB != 0u ? B[offB + j * ldb + k] : B[offB + k * ldb + j];
}

void main()
{
    uint tx = gl_LocalInvocationID.x, ty = gl_LocalInvocationID.y;
    uint tid = ty * 16u + tx;
    uint row0 = y0 + gl_WorkGroupID.y * 64u;
    uint col0 = x0 + gl_WorkGroupID.x * 64u;

    REAL acc[4][4];
    for (int i = 0; i < 4; i++)
        for (int j = 0; j < 4; j++)
            acc[i][j] = REAL(0.0);

    if (alpha != 0.0) {
        for (uint kt = 0u; kt < K; kt += 16u) {
            // 64×16 of op(A) and 16×64 of op(B): four elements each per
            // invocation. With transA the fast-moving index is the row.
            for (uint e = 0u; e < 4u; e++) {
                uint idx = tid + e * 256u;
                uint r, c;
                if (transA != 0u) { r = idx % 64u; c = idx / 64u; } else { r = idx / 16u; c = idx % 16u; }
                As[c][r] = opA(row0 + r, kt + c);
                if (transB != 0u) { r = idx % 16u; c = idx / 16u; } else { r = idx / 64u; c = idx % 64u; }
                Bs[r][c] = opB(kt + r, col0 + c);
            }
            memoryBarrierShared();
            barrier();
            for (int k = 0; k < 16; k++) {
                REAL a[4], b[4];
                for (int i = 0; i < 4; i++) a[i] = As[k][ty + 16u * uint(i)];
                for (int j = 0; j < 4; j++) b[j] = Bs[k][tx + 16u * uint(j)];
                for (int i = 0; i < 4; i++)
                    for (int j = 0; j < 4; j++)
                        acc[i][j] = fma(a[i], b[j], acc[i][j]);
            }
            memoryBarrierShared();
            barrier();
        }
    }

    for (int i = 0; i < 4; i++) {
        uint row = row0 + ty + 16u * uint(i);
        if (row >= M) continue;
        for (int j = 0; j < 4; j++) {
            uint col = col0 + tx + 16u * uint(j);
            if (col >= N) continue;
            uint at = offC + row * ldc + col;
            REAL v = alpha * acc[i][j];
            if (beta != 0.0) v += beta * C[at];
            C[at] = v;
        }
    }
}
