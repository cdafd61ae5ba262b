// prototype: fast.comp reading A transposed (At: K rows of lda floats, lda >= M padded to 4)
#define THREADS_X (BN / TN)
#define THREADS_Y (BM / TM)
#define GN (TN / 4)
#define GM (TM / 4)
#define A_VEC4 (BK * BM / 4)
#define B_VEC4 (BK * BN / 4)
#define B_LOADS ((B_VEC4 + THREADS - 1) / THREADS)
#define NBUF (DB + 1)
#ifndef WX
#define WX THREADS_X
#endif
#define WY (32 / WX)
#define WPR (THREADS_X / WX)

layout(local_size_x = THREADS, local_size_y = 1, local_size_z = 1) in;

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

layout(std430, binding = 0) readonly buffer ssbo_A { vec4 A[]; };
layout(std430, binding = 1) readonly buffer ssbo_B { vec4 B[]; };
layout(std430, binding = 2) writeonly buffer ssbo_R { vec4 R[]; };

#ifndef AG
#define AG 1
#endif
#if AG
#define ASTR (BM / 4)
#define A_LOADS ((A_VEC4 + THREADS - 1) / THREADS)
#else
// A natural in global memory: a 4x4 block of A (4 rows, 4 k) per load unit,
// transposed in registers, stored as 4 vec4s of As[k][m4]. Lanes of a
// quarter warp take 2 k-groups x 4 row groups: ASTR odd keeps their
// stores in distinct banks; the second k-group of each pair XORs m4 with 4
// where padding does not fit (SWZ).
#define BK4 (BK / 4)
#define A_BLK ((BM / 4) * BK4)
#define A_LOADS ((A_BLK + THREADS - 1) / THREADS)
#define ASTR (BM / 4)
#endif
#define A_SIZE (BK * ASTR)
#define B_SIZE (BK * (BN / 4))
shared vec4 As[NBUF * A_SIZE];
shared vec4 Bs[NBUF * B_SIZE];

#if AG
#define LOAD_A(kt)                                                               \
    for (int i = 0; i < A_LOADS; i++) {                                          \
        uint idx = tid + uint(i * THREADS);                                      \
        uint r = idx / uint(BM / 4), c4 = idx % uint(BM / 4);                    \
        ra[i] = vec4(0.0);                                                       \
        if ((A_VEC4 % THREADS == 0 || idx < uint(A_VEC4)) && (kt) + r < kEnd && row0 + c4 * 4u < lda) \
            ra[i] = A[offA4 + ((kt) + r) * lda4 + row0 / 4u + c4];               \
    }
#define STORE_A(buf)                                                             \
    for (int i = 0; i < A_LOADS; i++) {                                          \
        uint idx = tid + uint(i * THREADS);                                      \
        if (A_VEC4 % THREADS == 0 || idx < uint(A_VEC4))                         \
            As[uint((buf) * A_SIZE) + idx] = ra[i];                              \
    }
#else
#ifdef CF
// k-groups fastest: a warp's load covers 32/BK4 row groups, each row's BK
// floats contiguous; no swizzle (the stores' bank conflicts are once a step)
#define BLK_C4(idx) ((idx) % uint(BK4))
#define BLK_M4(idx) ((idx) / uint(BK4))
#define SWZ(c4) 0u
#else
#define BLK_C4(idx) ((idx) % 2u + 2u * (((idx) / 8u) % uint(BK4 / 2)))
#define BLK_M4(idx) (((idx) % 8u) / 2u + 4u * ((idx) / uint(4 * BK4)))
#define SWZ(c4) (((c4) & 1u) * 4u)
#endif
#define LOAD_A(kt)                                                               \
    for (int i = 0; i < A_LOADS; i++) {                                          \
        uint idx = tid + uint(i * THREADS);                                      \
        uint c4 = BLK_C4(idx), m4 = BLK_M4(idx);                                 \
        bool ok = (A_BLK % THREADS == 0 || idx < uint(A_BLK)) && (kt) + c4 * 4u < kEndA; \
        uint rr = row0 + m4 * 4u;                                                \
        uint base = offA4 + rr * lda4 + (kt) / 4u + c4;                          \
        ra[i * 4] = ok && rr < M ? A[base] : vec4(0.0);                          \
        ra[i * 4 + 1] = ok && rr + 1u < M ? A[base + lda4] : vec4(0.0);          \
        ra[i * 4 + 2] = ok && rr + 2u < M ? A[base + 2u * lda4] : vec4(0.0);     \
        ra[i * 4 + 3] = ok && rr + 3u < M ? A[base + 3u * lda4] : vec4(0.0);     \
    }
#define STORE_A(buf)                                                             \
    for (int i = 0; i < A_LOADS; i++) {                                          \
        uint idx = tid + uint(i * THREADS);                                      \
        uint c4 = BLK_C4(idx), m4 = BLK_M4(idx);                                 \
        if (A_BLK % THREADS == 0 || idx < uint(A_BLK)) {                         \
            uint base = uint((buf) * A_SIZE) + c4 * uint(4 * ASTR) + (m4 ^ SWZ(c4)); \
            As[base] = vec4(ra[i * 4].x, ra[i * 4 + 1].x, ra[i * 4 + 2].x, ra[i * 4 + 3].x); \
            As[base + uint(ASTR)] = vec4(ra[i * 4].y, ra[i * 4 + 1].y, ra[i * 4 + 2].y, ra[i * 4 + 3].y); \
            As[base + uint(2 * ASTR)] = vec4(ra[i * 4].z, ra[i * 4 + 1].z, ra[i * 4 + 2].z, ra[i * 4 + 3].z); \
            As[base + uint(3 * ASTR)] = vec4(ra[i * 4].w, ra[i * 4 + 1].w, ra[i * 4 + 2].w, ra[i * 4 + 3].w); \
        }                                                                        \
    }
#endif
#define LOAD_GLOBAL(kt)                                                          \
    LOAD_A(kt)                                                                   \
    for (int i = 0; i < B_LOADS; i++) {                                          \
        uint idx = tid + uint(i * THREADS);                                      \
        uint r = idx / uint(BN / 4), c4 = idx % uint(BN / 4);                    \
        rb[i] = vec4(0.0);                                                       \
        if ((B_VEC4 % THREADS == 0 || idx < uint(B_VEC4)) && (kt) + r < kEnd && col0 + c4 * 4u < ldb) \
            rb[i] = B[offB4 + ((kt) + r) * ldb4 + col0 / 4u + c4];               \
    }

#define STORE_SHARED(buf)                                                        \
    STORE_A(buf)                                                                 \
    for (int i = 0; i < B_LOADS; i++) {                                          \
        uint idx = tid + uint(i * THREADS);                                      \
        if (B_VEC4 % THREADS == 0 || idx < uint(B_VEC4))                         \
            Bs[uint((buf) * B_SIZE) + idx] = rb[i];                              \
    }

void main()
{
    uint tid = gl_LocalInvocationIndex;
#if WX == THREADS_X
    uint tx = tid % uint(THREADS_X);
    uint ty = tid / uint(THREADS_X);
#else
    uint lane = tid % 32u, warp = tid / 32u;
    uint tx = (warp % uint(WPR)) * uint(WX) + lane % uint(WX);
    uint ty = (warp / uint(WPR)) * uint(WY) + lane / uint(WX);
#endif
    uint row0 = y0 + gl_WorkGroupID.y * uint(BM);
    uint col0 = x0 + gl_WorkGroupID.x * uint(BN);
    uint lda4 = lda / 4u, ldb4 = ldb / 4u;
    uint kBegin = gl_WorkGroupID.z * ksplit;
    uint kEnd = min(K, kBegin + ksplit);

#if AG
    vec4 ra[A_LOADS];
#else
    vec4 ra[A_LOADS * 4];
    uint kEndA = kEnd == K ? lda : kEnd;
#endif
    vec4 rb[B_LOADS];
    vec4 acc[TM][GN];
    #pragma optionNV(unroll all)
    for (int i = 0; i < TM; i++) {
        #pragma optionNV(unroll all)
        for (int j = 0; j < GN; j++) {
            acc[i][j] = vec4(0.0);
        }
    }

#if DB
    LOAD_GLOBAL(kBegin)
    STORE_SHARED(0)
    barrier();
    int buf = 0;
#else
    const int buf = 0;
#endif
    for (uint kt = kBegin; kt < kEnd; kt += uint(BK)) {
#if DB
        bool more = kt + uint(BK) < kEnd;
#ifndef MIDLOAD
        if (more) {
            LOAD_GLOBAL(kt + uint(BK))
        }
#endif
#else
        LOAD_GLOBAL(kt)
        STORE_SHARED(0)
        barrier();
#endif
        uint aOff = uint(buf * A_SIZE) + ty;
#if !AG
        uint aOffX = uint(buf * A_SIZE) + (ty ^ SWZ(1u)); // k-groups c4 odd: rows swizzled
#endif
        uint bOff = uint(buf * B_SIZE) + tx;
#ifdef PF
        vec4 a[GM];
        vec4 b[GN];
        #pragma optionNV(unroll all)
        for (int i = 0; i < GM; i++) a[i] = As[aOff + uint(i * THREADS_Y)];
        #pragma optionNV(unroll all)
        for (int j = 0; j < GN; j++) b[j] = Bs[bOff + uint(j * THREADS_X)];
        #pragma optionNV(unroll all)
        for (int k = 0; k < BK; k++) {
#ifdef MIDLOAD
            if (k == BK / 2 && more) {
                LOAD_GLOBAL(kt + uint(BK))
            }
#endif
            vec4 an[GM];
            vec4 bn[GN];
            if (k + 1 < BK) {
                #pragma optionNV(unroll all)
                for (int i = 0; i < GM; i++) an[i] = As[aOff + uint((k + 1) * ASTR + i * THREADS_Y)];
                #pragma optionNV(unroll all)
                for (int j = 0; j < GN; j++) bn[j] = Bs[bOff + uint((k + 1) * (BN / 4) + j * THREADS_X)];
            }
            #pragma optionNV(unroll all)
            for (int i = 0; i < GM; i++) {
                #pragma optionNV(unroll all)
                for (int r = 0; r < 4; r++) {
                    #pragma optionNV(unroll all)
                    for (int j = 0; j < GN; j++) {
                        acc[i * 4 + r][j] = fma(vec4(a[i][r]), b[j], acc[i * 4 + r][j]);
                    }
                }
            }
            if (k + 1 < BK) {
                a = an;
                b = bn;
            }
        }
#else
        #pragma optionNV(unroll all)
        for (int k = 0; k < BK; k++) {
#ifdef MIDLOAD
            if (k == BK / 2 && more) {
                LOAD_GLOBAL(kt + uint(BK))
            }
#endif
            vec4 a[GM];
            vec4 b[GN];
            #pragma optionNV(unroll all)
            for (int i = 0; i < GM; i++) {
#if AG
                a[i] = As[aOff + uint(k * ASTR + i * THREADS_Y)];
#else
                a[i] = As[((k / 4) % 2 == 1 ? aOffX : aOff) + uint(k * ASTR + i * THREADS_Y)];
#endif
            }
            #pragma optionNV(unroll all)
            for (int j = 0; j < GN; j++) {
                b[j] = Bs[bOff + uint(k * (BN / 4) + j * THREADS_X)];
            }
#ifdef ORDER
            #pragma optionNV(unroll all)
            for (int j = 0; j < GN; j++) {
                #pragma optionNV(unroll all)
                for (int i = 0; i < GM; i++) {
                    #pragma optionNV(unroll all)
                    for (int r = 0; r < 4; r++) {
                        acc[i * 4 + r][j] = fma(vec4(a[i][r]), b[j], acc[i * 4 + r][j]);
                    }
                }
            }
#else
            #pragma optionNV(unroll all)
            for (int i = 0; i < GM; i++) {
                #pragma optionNV(unroll all)
                for (int r = 0; r < 4; r++) {
                    #pragma optionNV(unroll all)
                    for (int j = 0; j < GN; j++) {
                        acc[i * 4 + r][j] = fma(vec4(a[i][r]), b[j], acc[i * 4 + r][j]);
                    }
                }
            }
#endif
        }
#endif
#if DB
        if (more) {
            STORE_SHARED(buf ^ 1)
        }
        buf ^= 1;
#endif
        barrier();
    }

    uint ldc4 = ldc / 4u;
    uint outC4 = offC4 + gl_WorkGroupID.z * M * ldc4;
    #pragma optionNV(unroll all)
    for (int i = 0; i < GM; i++) {
        #pragma optionNV(unroll all)
        for (int r = 0; r < 4; r++) {
            uint row = row0 + uint(i * THREADS_Y * 4) + ty * 4u + uint(r);
            if (row < M) {
                #pragma optionNV(unroll all)
                for (int j = 0; j < GN; j++) {
                    uint c4 = col0 / 4u + uint(j * THREADS_X) + tx;
                    if (c4 < ldc4) {
                        R[outC4 + row * ldc4 + c4] = acc[i * 4 + r][j];
                    }
                }
            }
        }
    }
}
