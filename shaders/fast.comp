// fast: a register-blocked GEMM kernel. C = A·B, row-major float32.
//
// Parameters, injected as #defines before this text (see fast.go):
//   BM, BN  rows and columns of C per work group (the block tile)
//   BK      depth of one K step held in shared memory (a multiple of 4)
//   TM, TN  rows and columns of C per invocation (multiples of 4)
//   PADA    floats of padding per shared row of A (a multiple of 4)
//   DB      1: double-buffered shared memory, the next K step's global
//           loads in flight while this one computes; 0: single buffer
//   THREADS (BM/TM)·(BN/TN) as a literal: GLSL 4.30 takes only literals in
//           layout(local_size_x = ...)
//   AT      1: A arrives transposed (its K rows of lda floats, lda ≥ M a
//           multiple of 4; the columns past M of the last vec4 are read
//           into rows of C never written), written by transpose.comp
//           before the product; 0: A in its natural layout
//   TEX     1: A and B read through buffer textures (below)
//   BH      1: the natural layout's loop holds B for 4 k (below)
//   WX      how many of a warp's 32 invocations lie along a row of C (the
//           warp tile is WX·TN columns by (32/WX)·TM rows, strided), a
//           divisor of 32 and of THREADS_X; or THREADS_X itself, for
//           invocations simply in rows of THREADS_X (any length)
//
// Invocation (tx, ty) owns rows i·THREADS_Y + ty (i < TM) and column vec4s
// j·THREADS_X + tx (j < TN/4) of the block tile: strided, so neighbouring
// invocations read neighbouring vec4s of B and neighbouring rows of A in
// shared memory and write neighbouring vec4s of C. Invocations are placed
// warp by warp: a warp of 32 covers WX consecutive tx and 32/WX consecutive
// ty, so one shared load of B by the warp touches WX distinct vec4s and one
// of A 32/WX distinct rows (an odd ASTRIDE puts them in distinct banks)
// rather than 32 vec4s of B and one row of A.
//
// Shared memory keeps both tiles in their natural layout as vec4s: A as
// As[row][k/4], B as Bs[k][col/4]. For each 4 steps of k an invocation
// reads one vec4 of A per row it owns and one vec4 of B per column group
// per step: every shared load is 16 bytes and no store needs a transpose.
// From 64 accumulators on, with TM ≥ TN (BH), it holds B's vec4s for the
// 4 steps and reads A's a row at a time instead.
//
// With AT, A's tile is stored as B's is, As[k][row/4], and invocation
// (tx, ty) owns rows 4·(i·THREADS_Y + ty) + r (i < TM/4, r < 4): for each
// k it reads TM/4 vec4s of A and TN/4 of B, TM + TN floats for TM·TN
// FMAs, where the natural layout reads a vec4 of A per row for each 4 k
// (4·TM floats held at once). On the H100 that took the best
// configuration from 41.9 to 46.3 TFLOPS at 4096³ (docs/PERFORMANCE.md,
// "A transposed"); transposing inside this kernel instead lost 30%.
//
// Rows are padded to a multiple of 4 floats on the GPU (lda, ldb, ldc) and
// the padding is zero, so every vec4 is aligned and whole; elements outside
// the matrices load as zero. Uniforms as in every kernel: M rows of A, K
// the shared dimension, N columns of B; x0, y0 the first column and row
// of C covered by this dispatch. Everything is local to main: NVIDIA's GL compiler may put
// global-scope arrays in local memory.

#define THREADS_X (BN / TN)
#define THREADS_Y (BM / TM)
#define GN (TN / 4)
#define BK4 (BK / 4)
#define ASTRIDE (BK4 + PADA / 4)    // vec4s per shared row of A
#define A_VEC4 (BM * BK4)           // vec4s of one A tile
#define GM (TM / 4)
#define B_VEC4 (BK * BN / 4)        // vec4s of one B tile
#define A_LOADS ((A_VEC4 + THREADS - 1) / THREADS)
#define B_LOADS ((B_VEC4 + THREADS - 1) / THREADS)
#define NBUF (DB + 1)
// BH (1 from FastConfig.HoldsB): the natural layout's inner loop holds
// B's vec4s for 4 steps of k (4·TN floats) and reads A one vec4 (4 k of
// one row) at a time, rather
// than holding a vec4 of A for every row (4·TM floats) and reading B a k
// at a time: the same shared loads, fewer registers where TM ≥ TN. On the
// H100 (docs/PERFORMANCE.md, "B held for four steps of k"):
// 256x128x16_16x8_db 39.1 to 45.4 TFLOPS at 4096³ (with HOIST),
// 128x256x16_16x8_db +0.5-1.5%, 128x128x16_8x8_db +1%, 64x64x8_8x4_db
// 1% slower: so from 64 accumulators on.
// HOIST: LOAD_WHOLE adds k's offset to indices computed once, before the
// K loop (wa, wb), instead of computing each index per K step: 10 fewer
// instructions per load in NVIDIA's SASS, +3% for the _at tiles of 128
// accumulators and +1.7% for 128x256x8_8x8_db on the H100. A tile reading
// A in its natural layout with 128 accumulators per invocation and the
// other loop (128x256x16_16x8_db before BH) fell 15% with it (its
// registers); with BH, 256x128x16_16x8_db gained 3.5% and
// 128x256x16_16x8_db neither gained nor lost. Steps of K over 16 with BH
// were not measured: their staged loads take more registers, so not
// there.
#ifndef HOIST
#define HOIST (AT != 0 || TM * TN <= 64 || (BH && BK <= 16))
#endif
#ifndef TEX
#define TEX 0
#endif
#ifndef SHIFT
#define SHIFT 1
#endif
#ifndef SK
#define SK 0
#endif
#if SK && !SHIFT
#error SK needs SHIFT: skfix.comp moves tiles back as SHIFT does
#endif
#ifndef WX
#define WX THREADS_X
#endif
#define WY (32 / WX)                // rows of invocations per warp
#define WPR (THREADS_X / WX)        // warps per row of invocations

layout(local_size_x = THREADS, local_size_y = 1, local_size_z = 1) in;

uniform uint M;
uniform uint K;
uniform uint N;
uniform uint x0;
uniform uint y0;
uniform uint lda;
uniform uint ldb;
uniform uint ldc;
uniform uint ksplit; // K per split, a multiple of BK; split z of the dispatch
                     // (gl_WorkGroupID.z) covers [z·ksplit, (z+1)·ksplit) and
                     // writes its partial C at z·M·ldc (reduce.comp sums them)
uniform uint offA4; // where A, B and C start in their buffers, in vec4s
uniform uint offB4;
uniform uint offC4;

#if TEX
// A and B through buffer textures (Kernel.Textures) over the same bytes:
// the texture unit returns zero past the end itself, where a storage
// buffer's loads each carry a bounds check of the driver's (a compare and
// two moves per load in NVIDIA's SASS).
layout(binding = 0) uniform highp samplerBuffer At;
layout(binding = 1) uniform highp samplerBuffer Bt;
#define LDA(i) texelFetch(At, int(i))
#define LDB(i) texelFetch(Bt, int(i))
#else
layout(std430, binding = 0) readonly buffer ssbo_A { vec4 A[]; };
layout(std430, binding = 1) readonly buffer ssbo_B { vec4 B[]; };
#define LDA(i) A[i]
#define LDB(i) B[i]
#endif
layout(std430, binding = 2) writeonly buffer ssbo_R { vec4 R[]; };

#if SK
// Stream-K (SK 1, shaders.StreamK; glcompute's streamk.go plans it): the
// tiles of C numbered row by row, tilesX a row, in two one-dimensional
// dispatches. Work group g = skBase + gl_WorkGroupID.x below skDP
// computes tile g whole, into C at R, as the plain kernel does: whole
// waves of them. The skGroups groups from skDP on share the K steps of
// the remaining skTiles tiles evenly: the h-th takes steps h·U/skGroups
// to (h+1)·U/skGroups (U = skTiles·skSteps in all, skSteps a tile, tile
// by tile), fewer than a tile's, so at most the end of one tile and the
// start of the next. It writes each piece's sum at R, then bound to a
// workspace: its first piece in slot 2h, its second in 2h+1, BM·BN
// floats a slot; skfix.comp adds them up into C. No group waits for
// another: the last wave, part idle with plain tiles, is shared by every
// multiprocessor. Tiles past the matrices' edges move back (SHIFT) as in
// the plain kernel.
uniform uint skBase;
uniform uint skDP;
uniform uint skGroups;
uniform uint skTiles;
uniform uint skSteps;
uniform uint tilesX;
#endif

#if AT
#define A_SIZE (BK * (BM / 4))      // vec4s of one buffer of As (As[k][row/4])
#else
#define A_SIZE (BM * ASTRIDE)       // vec4s of one buffer of As
#endif
#define B_SIZE (BK * (BN / 4))      // vec4s of one buffer of Bs

// barrier() alone separates the K steps' shared stores from their loads:
// in a compute shader it ensures "that values written by one invocation
// prior to a given static instance of barrier can be safely read by other
// invocations after their call to the same static instance" (Khronos'
// barrier reference page, GLSL 4.30 on). A memoryBarrierShared() before it
// cost 2% on the H100.
//
// Flat arrays: the inner loop indexes them as a base hoisted out of the
// K step plus a constant, which compiles to loads with immediate offsets
// (2D [buf][i] indexing made NVIDIA's compiler recompute every address).
shared vec4 As[NBUF * A_SIZE];
shared vec4 Bs[NBUF * B_SIZE];

// LOAD_GLOBAL reads the K step at kt into ra, rb; STORE_SHARED writes them
// to buffer buf. Macros, not functions, to keep ra and rb in registers.
#if AT
#define LOAD_A(kt)                                                               \
    for (int i = 0; i < A_LOADS; i++) {                                          \
        uint idx = tid + uint(i * THREADS);                                      \
        uint r = idx / uint(BM / 4), c4 = idx % uint(BM / 4);                    \
        ra[i] = vec4(0.0);                                                       \
        if ((A_VEC4 % THREADS == 0 || idx < uint(A_VEC4)) && (kt) + r < kEnd && row0 + c4 * 4u < M) \
            ra[i] = LDA(offA4 + ((kt) + r) * lda4 + row0 / 4u + c4);             \
    }
#define STORE_A(buf)                                                             \
    for (int i = 0; i < A_LOADS; i++) {                                          \
        uint idx = tid + uint(i * THREADS);                                      \
        if (A_VEC4 % THREADS == 0 || idx < uint(A_VEC4))                         \
            As[uint((buf) * A_SIZE) + idx] = ra[i];                              \
    }
#else
#define LOAD_A(kt)                                                               \
    for (int i = 0; i < A_LOADS; i++) {                                          \
        uint idx = tid + uint(i * THREADS);                                      \
        uint r = idx / uint(BK4), c = (idx % uint(BK4)) * 4u;                    \
        ra[i] = vec4(0.0);                                                       \
        if ((A_VEC4 % THREADS == 0 || idx < uint(A_VEC4)) && row0 + r < M && (kt) + c < kEndA) \
            ra[i] = LDA(offA4 + (row0 + r) * lda4 + ((kt) + c) / 4u);            \
    }
#define STORE_A(buf)                                                             \
    for (int i = 0; i < A_LOADS; i++) {                                          \
        uint idx = tid + uint(i * THREADS);                                      \
        if (A_VEC4 % THREADS == 0 || idx < uint(A_VEC4))                         \
            As[uint((buf) * A_SIZE) + (idx / uint(BK4)) * uint(ASTRIDE) + idx % uint(BK4)] = ra[i]; \
    }
#endif

// LOAD_WHOLE(kt) is LOAD_GLOBAL for a K step that lies wholly inside the
// matrices: no bounds to check, so no branch around each load. It must stay
// in a branch of its own (see the K loop): without one, NVIDIA's compiler
// sinks the loads to the shared stores at the end of the step, where their
// latency is no longer hidden (measured: 46.1 to 42.0 TFLOPS at 4096³).
#if HOIST
#if AT
#define A_KOFF(kt) ((kt) * lda4)
#else
#define A_KOFF(kt) ((kt) / 4u)
#endif
#define LOAD_WHOLE(kt)                                                           \
    for (int i = 0; i < A_LOADS; i++) {                                          \
        if (A_VEC4 % THREADS == 0 || tid + uint(i * THREADS) < uint(A_VEC4))     \
            ra[i] = LDA(wa[i] + A_KOFF(kt));                                     \
    }                                                                            \
    for (int i = 0; i < B_LOADS; i++) {                                          \
        if (B_VEC4 % THREADS == 0 || tid + uint(i * THREADS) < uint(B_VEC4))     \
            rb[i] = LDB(wb[i] + (kt) * ldb4);                                    \
    }
#else
#if AT
#define LOAD_WHOLE_A(kt)                                                         \
    for (int i = 0; i < A_LOADS; i++) {                                          \
        uint idx = tid + uint(i * THREADS);                                      \
        uint r = idx / uint(BM / 4), c4 = idx % uint(BM / 4);                    \
        if (A_VEC4 % THREADS == 0 || idx < uint(A_VEC4))                         \
            ra[i] = LDA(offA4 + ((kt) + r) * lda4 + row0 / 4u + c4);             \
    }
#else
#define LOAD_WHOLE_A(kt)                                                         \
    for (int i = 0; i < A_LOADS; i++) {                                          \
        uint idx = tid + uint(i * THREADS);                                      \
        uint r = idx / uint(BK4), c = (idx % uint(BK4)) * 4u;                    \
        if (A_VEC4 % THREADS == 0 || idx < uint(A_VEC4))                         \
            ra[i] = LDA(offA4 + (row0 + r) * lda4 + ((kt) + c) / 4u);            \
    }
#endif
#define LOAD_WHOLE(kt)                                                           \
    LOAD_WHOLE_A(kt)                                                             \
    for (int i = 0; i < B_LOADS; i++) {                                          \
        uint idx = tid + uint(i * THREADS);                                      \
        uint r = idx / uint(BN / 4), c4 = idx % uint(BN / 4);                    \
        if (B_VEC4 % THREADS == 0 || idx < uint(B_VEC4))                         \
            rb[i] = LDB(offB4 + ((kt) + r) * ldb4 + col0 / 4u + c4);             \
    }
#endif

#define LOAD_GLOBAL(kt)                                                          \
    LOAD_A(kt)                                                                   \
    for (int i = 0; i < B_LOADS; i++) {                                          \
        uint idx = tid + uint(i * THREADS);                                      \
        uint r = idx / uint(BN / 4), c4 = idx % uint(BN / 4);                    \
        rb[i] = vec4(0.0);                                                       \
        if ((B_VEC4 % THREADS == 0 || idx < uint(B_VEC4)) && (kt) + r < kEnd && col0 + c4 * 4u < ldb) \
            rb[i] = LDB(offB4 + ((kt) + r) * ldb4 + col0 / 4u + c4);             \
    }

#define STORE_SHARED(buf)                                                        \
    STORE_A(buf)                                                                 \
    for (int i = 0; i < B_LOADS; i++) {                                          \
        uint idx = tid + uint(i * THREADS);                                      \
        if (B_VEC4 % THREADS == 0 || idx < uint(B_VEC4))                         \
            Bs[uint((buf) * B_SIZE) + idx] = rb[i];                              \
    }


// C_ROW(i) is the row of C of an invocation's i-th row of accumulators.
#if AT
#define C_ROW(i) (row0 + uint((i / 4) * THREADS_Y * 4 + i % 4) + ty * 4u)
#else
#define C_ROW(i) (row0 + uint(i * THREADS_Y) + ty)
#endif

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
    uint lda4 = lda / 4u, ldb4 = ldb / 4u;
#if SK
    uint g = skBase + gl_WorkGroupID.x;
    uint tile[2], step0[2], step1[2];
    int pieces;
    if (g < skDP) {
        pieces = 1;
        tile[0] = g;
        step0[0] = 0u;
        step1[0] = skSteps;
    } else {
        uint h = g - skDP, total = skTiles * skSteps;
        uint s0 = h * total / skGroups, s1 = (h + 1u) * total / skGroups;
        uint t0 = s0 / skSteps;
        pieces = s1 > s0 ? 1 : 0;
        tile[0] = skDP + t0;
        step0[0] = s0 - t0 * skSteps;
        step1[0] = min(skSteps, s1 - t0 * skSteps);
        if (s1 > (t0 + 1u) * skSteps) {
            pieces = 2;
            tile[1] = tile[0] + 1u;
            step0[1] = 0u;
            step1[1] = s1 - (t0 + 1u) * skSteps;
        }
    }
    for (int piece = 0; piece < pieces; piece++) {
    uint row0 = tile[piece] / tilesX * uint(BM);
    uint col0 = tile[piece] % tilesX * uint(BN);
    uint kBegin = step0[piece] * uint(BK);
    uint kEnd = min(K, step1[piece] * uint(BK));
#else
    uint row0 = y0 + gl_WorkGroupID.y * uint(BM);
    uint col0 = x0 + gl_WorkGroupID.x * uint(BN); // a multiple of 4
    uint kBegin = gl_WorkGroupID.z * ksplit;
    uint kEnd = min(K, kBegin + ksplit);
#endif
    // The last split also reads A's zero padding up to lda; the others stop
    // at a multiple of BK, so their vec4s never straddle kEnd.
    uint kEndA = kEnd == K ? lda : kEnd;
    // The block tile's rows lie inside A and its columns inside B (to ldb,
    // the zero padding included): a K step inside [kBegin, kEnd) then reads
    // nothing out of bounds (LOAD_WHOLE). The natural layout's vec4s of A
    // stop at kEnd or, past it, in the zero padding up to lda.
    //
    // A block tile that would cross the matrices' last row or column is
    // moved back so that it ends on it (SHIFT), where the matrices have
    // that many rows and columns: it then reads whole K steps, like every
    // other tile, and stores only its own elements (after the K loop), the
    // ones its neighbour computes too being dropped. Its loads with
    // bounds checks took 8-10% longer than whole ones on the H100, and a
    // wave lasts as long as its slowest tile (1000x4096x1000: 0.242 ms
    // against 0.224 for 1024x4096x1024, which has 5% more work). With A
    // transposed a tile's first row must be a multiple of 4: the columns of
    // Aᵀ up to M rounded up to 4 are the transpose's zero padding.
#if AT
    uint rowLim = (M + 3u) & ~3u;
#else
    uint rowLim = M;
#endif
#if SHIFT
    if (row0 + uint(BM) > rowLim && rowLim >= uint(BM)) {
        row0 = rowLim - uint(BM);
    }
    if (col0 + uint(BN) > ldb && ldb >= uint(BN)) {
        col0 = ldb - uint(BN);
    }
#endif
    bool whole = row0 + uint(BM) <= rowLim && col0 + uint(BN) <= ldb;
#if HOIST
    // Where LOAD_WHOLE's loads start, at kt = 0: index + A_KOFF(kt) (A) or
    // + kt·ldb4 (B).
    uint wa[A_LOADS];
    uint wb[B_LOADS];
    for (int i = 0; i < A_LOADS; i++) {
        uint idx = tid + uint(i * THREADS);
#if AT
        uint r = idx / uint(BM / 4), c4 = idx % uint(BM / 4);
        wa[i] = offA4 + r * lda4 + row0 / 4u + c4;
#else
        uint r = idx / uint(BK4), c = (idx % uint(BK4)) * 4u;
        wa[i] = offA4 + (row0 + r) * lda4 + c / 4u;
#endif
    }
    for (int i = 0; i < B_LOADS; i++) {
        uint idx = tid + uint(i * THREADS);
        uint r = idx / uint(BN / 4), c4 = idx % uint(BN / 4);
        wb[i] = offB4 + r * ldb4 + col0 / 4u + c4;
    }
#endif

    vec4 ra[A_LOADS];
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
        if (more && whole && kt + uint(2 * BK) <= kEnd) {
            LOAD_WHOLE(kt + uint(BK))
        } else if (more) {
            LOAD_GLOBAL(kt + uint(BK))
        }
#else
        if (whole && kt + uint(BK) <= kEnd) {
            LOAD_WHOLE(kt)
        } else {
            LOAD_GLOBAL(kt)
        }
        STORE_SHARED(0)
        barrier();
#endif
#if AT
        uint aOff = uint(buf * A_SIZE) + ty;
        uint bOff = uint(buf * B_SIZE) + tx;
        #pragma optionNV(unroll all)
        for (int k = 0; k < BK; k++) {
            vec4 a[GM];
            vec4 b[GN];
            #pragma optionNV(unroll all)
            for (int i = 0; i < GM; i++) {
                a[i] = As[aOff + uint(k * (BM / 4) + i * THREADS_Y)];
            }
            #pragma optionNV(unroll all)
            for (int j = 0; j < GN; j++) {
                b[j] = Bs[bOff + uint(k * (BN / 4) + j * THREADS_X)];
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
        }
#else
        uint aOff = uint(buf * A_SIZE) + ty * uint(ASTRIDE);
        uint bOff = uint(buf * B_SIZE) + tx;
#if BH
        #pragma optionNV(unroll all)
        for (int k4 = 0; k4 < BK4; k4++) {
            vec4 b[4 * GN];
            #pragma optionNV(unroll all)
            for (int kk = 0; kk < 4; kk++) {
                #pragma optionNV(unroll all)
                for (int j = 0; j < GN; j++) {
                    b[kk * GN + j] = Bs[bOff + uint((k4 * 4 + kk) * (BN / 4) + j * THREADS_X)];
                }
            }
            #pragma optionNV(unroll all)
            for (int i = 0; i < TM; i++) {
                vec4 a = As[aOff + uint(i * THREADS_Y * ASTRIDE + k4)];
                #pragma optionNV(unroll all)
                for (int kk = 0; kk < 4; kk++) {
                    #pragma optionNV(unroll all)
                    for (int j = 0; j < GN; j++) {
                        acc[i][j] = fma(vec4(a[kk]), b[kk * GN + j], acc[i][j]);
                    }
                }
            }
        }
#else
        #pragma optionNV(unroll all)
        for (int k4 = 0; k4 < BK4; k4++) {
            vec4 a[TM];
            #pragma optionNV(unroll all)
            for (int i = 0; i < TM; i++) {
                a[i] = As[aOff + uint(i * THREADS_Y * ASTRIDE + k4)];
            }
            #pragma optionNV(unroll all)
            for (int kk = 0; kk < 4; kk++) {
                vec4 b[GN];
                #pragma optionNV(unroll all)
                for (int j = 0; j < GN; j++) {
                    b[j] = Bs[bOff + uint((k4 * 4 + kk) * (BN / 4) + j * THREADS_X)];
                }
                #pragma optionNV(unroll all)
                for (int i = 0; i < TM; i++) {
                    #pragma optionNV(unroll all)
                    for (int j = 0; j < GN; j++) {
                        acc[i][j] = fma(vec4(a[i][kk]), b[j], acc[i][j]);
                    }
                }
            }
        }
#endif // BH
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
#if SK
    // Element (row, column vec4 c4) goes to R[out4 + row·ldo4 + c4]: C
    // for a whole tile, or the piece's slot of the workspace, the tile as
    // computed (from row0, col0), BN/4 vec4s a row (uint arithmetic wraps,
    // so out4 may pass below zero). A tile moved back (SHIFT) stores only
    // its own elements, from ownRow and ownCol4, as the plain kernel does;
    // skfix.comp reads only those of a piece.
    uint out4 = offC4, ldo4 = ldc4;
    if (g >= skDP) {
        ldo4 = uint(BN / 4);
        out4 = (2u * (g - skDP) + uint(piece)) * uint(BM * (BN / 4)) - row0 * ldo4 - col0 / 4u;
    }
    uint ownRow = tile[piece] / tilesX * uint(BM);
    uint ownCol4 = tile[piece] % tilesX * uint(BN / 4);
    if (ownRow == row0 && ownCol4 == col0 / 4u && row0 + uint(BM) <= M && col0 / 4u + uint(BN / 4) <= ldc4) {
        #pragma optionNV(unroll all)
        for (int i = 0; i < TM; i++) {
            uint rowO = out4 + C_ROW(i) * ldo4 + col0 / 4u + tx;
            #pragma optionNV(unroll all)
            for (int j = 0; j < GN; j++) {
                R[rowO + uint(j * THREADS_X)] = acc[i][j];
            }
        }
    } else {
        #pragma optionNV(unroll all)
        for (int i = 0; i < TM; i++) {
            uint row = C_ROW(i);
            if (row < M && row >= ownRow) {
                #pragma optionNV(unroll all)
                for (int j = 0; j < GN; j++) {
                    uint c4 = col0 / 4u + uint(j * THREADS_X) + tx;
                    if (c4 < ldc4 && c4 >= ownCol4) {
                        R[out4 + row * ldo4 + c4] = acc[i][j];
                    }
                }
            }
        }
    }
    } // pieces
#else
    uint outC4 = offC4 + gl_WorkGroupID.z * M * ldc4;
#if SHIFT
    // A tile moved back stores only its own elements: rows from ownRow,
    // column vec4s from ownCol4 on (where it would have started unmoved).
    // Whole tiles store in a loop of their own, without those compares.
    uint ownRow = y0 + gl_WorkGroupID.y * uint(BM);
    uint ownCol4 = (x0 + gl_WorkGroupID.x * uint(BN)) / 4u;
    if (ownRow != row0 || ownCol4 != col0 / 4u) {
        #pragma optionNV(unroll all)
        for (int i = 0; i < TM; i++) {
            uint row = C_ROW(i);
            if (row < M && row >= ownRow) {
                #pragma optionNV(unroll all)
                for (int j = 0; j < GN; j++) {
                    uint c4 = col0 / 4u + uint(j * THREADS_X) + tx;
                    if (c4 < ldc4 && c4 >= ownCol4) {
                        R[outC4 + row * ldc4 + c4] = acc[i][j];
                    }
                }
            }
        }
        return;
    }
#endif
    #pragma optionNV(unroll all)
    for (int i = 0; i < TM; i++) {
        uint row = C_ROW(i);
        if (row < M) {
            #pragma optionNV(unroll all)
            for (int j = 0; j < GN; j++) {
                uint c4 = col0 / 4u + uint(j * THREADS_X) + tx;
                if (c4 < ldc4) {
                    R[outC4 + row * ldc4 + c4] = acc[i][j];
                }
            }
        }
    }
#endif
}
