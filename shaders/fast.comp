// fast: a register-blocked GEMM kernel. C = A·B, row-major float32.
//
// Parameters, injected as #defines before this text (see fast.go):
//   BM, BN  rows and columns of C per work group (the block tile)
//   BK      depth of one K step held in shared memory
//   TM, TN  rows and columns of C per invocation (multiples of 4)
//   PADA    floats of padding per shared row of A (bank conflicts)
//   DB      1: double-buffered shared memory, the next K step's global
//           loads in flight while this one computes; 0: single buffer
//   THREADS (BM/TM)·(BN/TN) as a literal: GLSL 4.30 takes only literals in
//           layout(local_size_x = ...)
// An invocation's TM×TN tile is TM/4 × TN/4 groups of 4×4, strided across
// the block tile, so that neighbouring invocations read neighbouring vec4s
// from shared memory (conflict-free) and write neighbouring vec4s of C.
//
// Buffers hold rows padded to a multiple of 4 floats (lda, ldb, ldc), the
// padding zero-filled, so every vec4 is aligned and whole. Uniforms follow
// the paper's names: m rows of A, n = K, l columns of B; x0, y0 the first
// column and row of C covered by this dispatch.

#define THREADS_X (BN / TN)
#define THREADS_Y (BM / TM)
#define GM (TM / 4)                 // row groups per invocation
#define GN (TN / 4)                 // column groups per invocation
#define A_VEC4 (BM * BK / 4)        // vec4 loads of one A tile
#define B_VEC4 (BK * BN / 4)        // vec4 loads of one B tile
#define A_LOADS ((A_VEC4 + THREADS - 1) / THREADS)
#define B_LOADS ((B_VEC4 + THREADS - 1) / THREADS)
#define NBUF (DB + 1)

layout(local_size_x = THREADS, local_size_y = 1, local_size_z = 1) in;

uniform uint m;
uniform uint n;
uniform uint l;
uniform uint x0;
uniform uint y0;
uniform uint lda;
uniform uint ldb;
uniform uint ldc;

layout(std430, binding = 0) readonly buffer ssbo_A { vec4 A[]; };
layout(std430, binding = 1) readonly buffer ssbo_B { vec4 B[]; };
layout(std430, binding = 2) writeonly buffer ssbo_R { vec4 R[]; };

// A transposed, As[buf][k][row/4] holding rows row..row+3 of column k;
// B as is, Bs[buf][k][col/4].
shared vec4 As[NBUF][BK][(BM + PADA) / 4];
shared vec4 Bs[NBUF][BK][BN / 4];

uint tid, row0, col0;
vec4 ra[A_LOADS];
vec4 rb[B_LOADS];

// loadGlobal reads the K step starting at kt into ra and rb. Out-of-range
// elements read as zero; rows of A and B are zero-padded to lda and ldb.
void loadGlobal(uint kt)
{
    #pragma optionNV(unroll all)
    for (int i = 0; i < A_LOADS; i++) {
        uint idx = tid + uint(i * THREADS);
        uint r = idx / uint(BK / 4);
        uint c = (idx % uint(BK / 4)) * 4u;
        ra[i] = vec4(0.0);
        if ((A_VEC4 % THREADS == 0 || idx < uint(A_VEC4)) && row0 + r < m && kt + c < lda) {
            ra[i] = A[(row0 + r) * (lda / 4u) + (kt + c) / 4u];
        }
    }
    #pragma optionNV(unroll all)
    for (int i = 0; i < B_LOADS; i++) {
        uint idx = tid + uint(i * THREADS);
        uint r = idx / uint(BN / 4);
        uint c4 = idx % uint(BN / 4);
        rb[i] = vec4(0.0);
        if ((B_VEC4 % THREADS == 0 || idx < uint(B_VEC4)) && kt + r < n && col0 + c4 * 4u < ldb) {
            rb[i] = B[(kt + r) * (ldb / 4u) + col0 / 4u + c4];
        }
    }
}

// storeShared writes ra and rb into buffer buf, A transposed.
void storeShared(uint buf)
{
    #pragma optionNV(unroll all)
    for (int i = 0; i < A_LOADS; i++) {
        uint idx = tid + uint(i * THREADS);
        if (A_VEC4 % THREADS == 0 || idx < uint(A_VEC4)) {
            uint r = idx / uint(BK / 4);
            uint c = (idx % uint(BK / 4)) * 4u;
            As[buf][c + 0u][r / 4u][r % 4u] = ra[i].x;
            As[buf][c + 1u][r / 4u][r % 4u] = ra[i].y;
            As[buf][c + 2u][r / 4u][r % 4u] = ra[i].z;
            As[buf][c + 3u][r / 4u][r % 4u] = ra[i].w;
        }
    }
    #pragma optionNV(unroll all)
    for (int i = 0; i < B_LOADS; i++) {
        uint idx = tid + uint(i * THREADS);
        if (B_VEC4 % THREADS == 0 || idx < uint(B_VEC4)) {
            Bs[buf][idx / uint(BN / 4)][idx % uint(BN / 4)] = rb[i];
        }
    }
}

void main()
{
    tid = gl_LocalInvocationIndex;
    uint tx = tid % THREADS_X;
    uint ty = tid / THREADS_X;
    row0 = y0 + gl_WorkGroupID.y * BM;
    col0 = x0 + gl_WorkGroupID.x * BN; // a multiple of 4

    vec4 acc[TM][GN];
    #pragma optionNV(unroll all)
    for (int i = 0; i < TM; i++) {
        #pragma optionNV(unroll all)
        for (int j = 0; j < GN; j++) {
            acc[i][j] = vec4(0.0);
        }
    }

#if DB
    loadGlobal(0u);
    storeShared(0u);
    memoryBarrierShared();
    barrier();
#endif
    uint buf = 0u;
    for (uint kt = 0u; kt < n; kt += uint(BK)) {
#if DB
        bool more = kt + uint(BK) < n;
        if (more) {
            loadGlobal(kt + uint(BK));
        }
#else
        loadGlobal(kt);
        storeShared(0u);
        memoryBarrierShared();
        barrier();
#endif
        #pragma optionNV(unroll all)
        for (int k = 0; k < BK; k++) {
            vec4 a[GM];
            #pragma optionNV(unroll all)
            for (int g = 0; g < GM; g++) {
                a[g] = As[buf][k][uint(g * THREADS_Y) + ty];
            }
            vec4 b[GN];
            #pragma optionNV(unroll all)
            for (int g = 0; g < GN; g++) {
                b[g] = Bs[buf][k][uint(g * THREADS_X) + tx];
            }
            #pragma optionNV(unroll all)
            for (int g = 0; g < GM; g++) {
                #pragma optionNV(unroll all)
                for (int j = 0; j < GN; j++) {
                    acc[g * 4 + 0][j] = fma(vec4(a[g].x), b[j], acc[g * 4 + 0][j]);
                    acc[g * 4 + 1][j] = fma(vec4(a[g].y), b[j], acc[g * 4 + 1][j]);
                    acc[g * 4 + 2][j] = fma(vec4(a[g].z), b[j], acc[g * 4 + 2][j]);
                    acc[g * 4 + 3][j] = fma(vec4(a[g].w), b[j], acc[g * 4 + 3][j]);
                }
            }
        }
#if DB
        if (more) {
            storeShared(buf ^ 1u);
        }
        buf ^= 1u;
#endif
        memoryBarrierShared();
        barrier();
    }

    #pragma optionNV(unroll all)
    for (int g = 0; g < GM; g++) {
        #pragma optionNV(unroll all)
        for (int i = 0; i < 4; i++) {
            uint row = row0 + uint(g * THREADS_Y * 4) + ty * 4u + uint(i);
            if (row < m) {
                #pragma optionNV(unroll all)
                for (int j = 0; j < GN; j++) {
                    uint c4 = col0 / 4u + uint(j * THREADS_X) + tx;
                    if (c4 < ldc / 4u) {
                        R[row * (ldc / 4u) + c4] = acc[g * 4 + i][j];
                    }
                }
            }
        }
    }
}
