// cpu: a GEMM kernel for OpenGL on a CPU (Mesa llvmpipe). C = A·B,
// row-major float32.
//
// Parameters, injected as #defines before this text (see cpu.go):
//   LX, LY  invocations per work group along the columns and rows of C
//   TM      rows of C per invocation
//   GN      column vec4s of C per invocation (TN/4)
//
// llvmpipe runs a work group's invocations 8 at a time in the lanes of
// 256-bit vectors, and an invocation's values are vectors across those
// lanes. It reads a storage buffer or shared memory one lane at a time (a
// loop with a bounds check and a branch per lane and component), but a
// texel fetch with one gather over the lanes: so this kernel reads A and B
// through buffer textures (RGBA32F views of the same buffer objects, bound
// to texture units 0 and 1 over the same ranges as the storage bindings
// would be) and keeps no shared memory and no barriers (the tiles of A and
// B that a work group reuses stay in the CPU's caches on their own).
//
// Invocation (lx, ly) owns TM consecutive rows of the block tile and the
// column vec4s j·LX + lx (j < GN): the 8 lanes of a vector read 8
// consecutive vec4s of a row of B and the same vec4s of A. For each 4 steps
// of k it fetches one vec4 of A per row and GN vec4s of B per step: TM·TN
// accumulators for TM + 4·GN texel fetches.
//
// Rows are padded to a multiple of 4 floats (lda, ldb, ldc) and the padding
// is zero. Row and column indices past the matrices are clamped to the last
// row and vec4 for reading (whatever they compute is not stored), and B's
// rows past the K range read as zero (A's zero padding alone would not do:
// 0·Inf is NaN). Uniforms as fast.comp's: M, K, N, x0, y0, lda, ldb, ldc,
// ksplit (the K range of split z), offA4, offB4, offC4.

layout(local_size_x = LX, local_size_y = LY, local_size_z = 1) in;

uniform uint M;
uniform uint K;
uniform uint N;
uniform uint x0;
uniform uint y0;
uniform uint lda;
uniform uint ldb;
uniform uint ldc;
uniform uint ksplit;
uniform uint offA4;
uniform uint offB4;
uniform uint offC4;

layout(binding = 0) uniform highp samplerBuffer At;
layout(binding = 1) uniform highp samplerBuffer Bt;
layout(std430, binding = 2) writeonly buffer ssbo_R { vec4 R[]; };

// STEP4 accumulates the 4 steps of k from k (a multiple of 4, its A vec4 at
// aIdx[i] + k/4): every B row when ALL, else only those below kEnd.
#define STEP4(ALL)                                                              \
    {                                                                           \
        vec4 a[TM];                                                             \
        for (int i = 0; i < TM; i++) {                                          \
            a[i] = texelFetch(At, int(aIdx[i] + k / 4u));                       \
        }                                                                       \
        for (int kk = 0; kk < 4; kk++) {                                        \
            vec4 b[GN];                                                         \
            uint bRow = offB4 + (k + uint(kk)) * ldb4;                          \
            for (int j = 0; j < GN; j++) {                                      \
                b[j] = (ALL || k + uint(kk) < kEnd) ? texelFetch(Bt, int(bRow + bCol[j])) : vec4(0.0); \
            }                                                                   \
            for (int i = 0; i < TM; i++) {                                      \
                for (int j = 0; j < GN; j++) {                                  \
                    acc[i][j] = fma(vec4(a[i][kk]), b[j], acc[i][j]);           \
                }                                                               \
            }                                                                   \
        }                                                                       \
    }

void main()
{
    uint lda4 = lda / 4u, ldb4 = ldb / 4u, ldc4 = ldc / 4u;
    uint row0 = y0 + gl_WorkGroupID.y * uint(LY * TM) + gl_LocalInvocationID.y * uint(TM);
    uint c40 = x0 / 4u + gl_WorkGroupID.x * uint(LX * GN) + gl_LocalInvocationID.x;
    uint kBegin = gl_WorkGroupID.z * ksplit;
    uint kEnd = min(K, kBegin + ksplit);

    uint aIdx[TM];
    for (int i = 0; i < TM; i++) {
        aIdx[i] = offA4 + min(row0 + uint(i), M - 1u) * lda4;
    }
    uint bCol[GN];
    for (int j = 0; j < GN; j++) {
        bCol[j] = min(c40 + uint(j * LX), ldb4 - 1u);
    }
    vec4 acc[TM][GN];
    for (int i = 0; i < TM; i++) {
        for (int j = 0; j < GN; j++) {
            acc[i][j] = vec4(0.0);
        }
    }

    uint k = kBegin;
    for (; k + 4u <= kEnd; k += 4u) {
        STEP4(true)
    }
    if (k < kEnd) {
        STEP4(false)
    }

    uint outC4 = offC4 + gl_WorkGroupID.z * M * ldc4;
    for (int i = 0; i < TM; i++) {
        uint row = row0 + uint(i);
        if (row < M) {
            for (int j = 0; j < GN; j++) {
                uint c4 = c40 + uint(j * LX);
                if (c4 < ldc4) {
                    R[outC4 + row * ldc4 + c4] = acc[i][j];
                }
            }
        }
    }
}
