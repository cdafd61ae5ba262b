// dfast: fast.comp's register-blocked GEMM in float64. C = A·B, row-major
// doubles: A is M×K, B K×N, C M×N, each at an offset into its buffer with
// a row stride of its own. It needs double in shaders: OpenGL 4.0, or
// GL_ARB_gpu_shader_fp64 (GLSL 4.30 has it; GLSL ES has none).
//
// Parameters, injected as #defines before this text (see dfast.go):
//   BM, BN  rows and columns of C per work group (the block tile)
//   BK      depth of one K step held in shared memory (even)
//   TM, TN  rows and columns of C per invocation (TN even)
//   DB      1: double-buffered shared memory, the next K step's global
//           loads in flight while this one computes; 0: single buffer
//   VEC     1: A and B read as dvec2s (16 bytes, one 128-bit load), which
//           needs lda, ldb, offA and offB even and A's and B's buffers
//           to hold whole rows (off + rows·ld doubles: the dvec2 that ends
//           a row of odd length reads one double of its padding, never
//           used); 0: read double by double, any strides and offsets
//   THREADS (BM/TM)·(BN/TN) as a literal for layout(local_size_x = ...)
//   PADA    doubles of padding per shared row of A (even): with a warp
//           tile (WX) the rows a warp reads then fall in distinct banks
//   WX      how many of a warp's 32 invocations lie along a row of C (the
//           warp tile is WX·TN columns by (32/WX)·TM rows, strided, as
//           fast.comp's): a divisor of 32 and of THREADS_X; or THREADS_X
//           itself, for invocations simply in rows of THREADS_X
//   TEX     1: A and B read through buffer textures of RGBA32UI texels
//           (a dvec2 each, unpacked by packDouble2x32; Kernel.Textures),
//           as fast.comp's TEX: no bounds check of the driver's per
//           load, and the texture path's own cache; needs VEC
//   AHEAD   1: each step of k's shared fragments loaded one step ahead
//           into registers (two sets), A held transposed in shared
//           memory (As[k][row], an invocation's TM rows contiguous) and
//           the K step's one barrier before its last step, so that no
//           multiply-add waits on a shared load or the barrier's drain
//           (below, "Ahead"); needs DB, TM even and PADA 0
//
// The layout of the work is fast.comp's, in 16-byte dvec2s where fast has
// 16-byte vec4s: invocation (tx, ty) owns rows i·THREADS_Y + ty (i < TM)
// and column dvec2s j·THREADS_X + tx (j < TN/2) of the block tile, so
// neighbouring invocations read neighbouring dvec2s of B in shared memory
// and the invocations of a row of the tile read the same dvec2 of A (a
// broadcast). Shared memory holds A as As[row][k/2] and B as Bs[k][col/2],
// each a dvec2: for each 2 steps of k an invocation holds B's 2·TN/2
// dvec2s and reads A one dvec2 (2 k of one row) at a time, as fast's BH:
// 2·TN + 2 doubles held for TM·TN·2 FMAs, every shared load 16 bytes.
//
// Edges: a block tile that would cross the last row or column of C is
// moved back to end on it (fast's SHIFT; columns up to N rounded up to
// even with VEC, so that its dvec2s stay aligned), reads whole K steps
// without bounds checks like every other tile, and stores only its own
// elements. Where C has fewer rows or columns than a tile, and for the
// last K step when BK does not divide K, every load is checked: elements
// outside A and B load as zero, by selection, so that whatever lies past
// them (NaN included) never reaches C. C is written double by double,
// only its M×N elements: no alignment, and a row's padding is left as it
// was.
//
// Uniforms: M, K, N; x0, y0 the first column and row of C covered by this
// dispatch; lda, ldb, ldc the row strides and offA, offB, offC the
// offsets, in doubles.

#define THREADS_X (BN / TN)
#define THREADS_Y (BM / TM)
#define GN (TN / 2)                 // dvec2s of a row of accumulators
#define BK2 (BK / 2)                // dvec2s of a row of A's tile
#define BN2 (BN / 2)                // dvec2s of a shared row of B
#define ASTRIDE (BK2 + PADA / 2)    // dvec2s of a shared row of A
#define A_TILE (BM * BK2)           // dvec2s of one A tile
#define B_SIZE (BK * BN2)           // dvec2s of one B tile (and buffer of Bs)
#if AHEAD
// A's tile is read by pairs of rows (a dvec2 of 2 k from each) and stored
// transposed, a dvec2 of two rows at one k.
#define A_PAIRS (BM / 2 * BK2)      // pairs of rows × dvec2s of k in a tile
#define A_LOADS (2 * ((A_PAIRS + THREADS - 1) / THREADS))
#define AT_ROW (BM / 2)             // dvec2s of one k of A transposed
#define A_SIZE (BK * AT_ROW)        // dvec2s of one buffer of As
#else
#define A_LOADS ((A_TILE + THREADS - 1) / THREADS)
#define A_SIZE (BM * ASTRIDE)       // dvec2s of one buffer of As
#endif
#define B_LOADS ((B_SIZE + THREADS - 1) / THREADS)
#define NBUF (DB + 1)
#if WX == 0
#undef WX
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
uniform uint offA;
uniform uint offB;
uniform uint offC;

#if TEX
// A and B through buffer textures over the same bytes, RGBA32UI: a texel
// is a dvec2's four words, as they lie in memory (packDouble2x32 takes
// the low word first), bit for bit, NaN and denormals included, which an
// RGBA32F view would not promise.
layout(binding = 0) uniform highp usamplerBuffer A;
layout(binding = 1) uniform highp usamplerBuffer B;
dvec2 unpack2(uvec4 u) { return dvec2(packDouble2x32(u.xy), packDouble2x32(u.zw)); }
#define W(X, w) unpack2(texelFetch(X, int(w)))
#define KOFF(x) ((x) / 2u)
#define PER2 1u
#elif VEC
layout(std430, binding = 0) readonly buffer ssbo_A { dvec2 A[]; };
layout(std430, binding = 1) readonly buffer ssbo_B { dvec2 B[]; };
// W(X, w): the dvec2 of X at index w, in dvec2s; KOFF(x): x doubles in
// those units.
#define W(X, w) X[w]
#define KOFF(x) ((x) / 2u)
#define PER2 1u                     // W's units in a dvec2
#else
layout(std430, binding = 0) readonly buffer ssbo_A { double A[]; };
layout(std430, binding = 1) readonly buffer ssbo_B { double B[]; };
#define W(X, w) dvec2(X[w], X[(w) + 1u])
#define KOFF(x) (x)
#define PER2 2u
#endif
layout(std430, binding = 2) writeonly buffer ssbo_C { double C[]; };

// Flat arrays indexed by a base plus constants, as in fast.comp.
shared dvec2 As[NBUF * A_SIZE];
shared dvec2 Bs[NBUF * B_SIZE];

// EDGE2(X, e, first, second) is the dvec2 at element e of X with either
// double zero unless first or second (its own bounds check) holds: by
// selection, so that a NaN beyond the matrix is dropped.
#if VEC || TEX
#define EDGE2(X, e, first, second) (first ? mix(dvec2(0.0), W(X, (e) / 2u), bvec2(true, second)) : dvec2(0.0))
#else
#define EDGE2(X, e, first, second) dvec2(first ? X[e] : 0.0LF, second ? X[(e) + 1u] : 0.0LF)
#endif

// LOAD_EDGE(kt) reads the K step at kt into ra, rb with every element's
// bounds checked; LOAD_WHOLE(kt) one that lies inside the matrices, from
// indices computed once (wa, wb). Macros, not functions, to keep ra and
// rb in registers. LOAD_WHOLE stays in a branch of its own (fast.comp:
// NVIDIA's compiler otherwise sinks the loads to the shared stores).
#if AHEAD
// A pair p of the tile is rows 2·(p / BK2) and the one below, at k
// 2·(p % BK2): ra[2i] and ra[2i + 1].
#define LOAD_EDGE_A(kt)                                                          \
    for (int i = 0; i < A_LOADS / 2; i++) {                                      \
        uint p = tid + uint(i * THREADS);                                        \
        uint r = row0 + p / uint(BK2) * 2u, k = (kt) + (p % uint(BK2)) * 2u;     \
        bool ok = A_PAIRS % THREADS == 0 || p < uint(A_PAIRS);                   \
        bool ok0 = ok && r < M, ok1 = ok && r + 1u < M;                          \
        ra[2 * i] = EDGE2(A, offA + r * lda + k, ok0 && k < kEnd, ok0 && k + 1u < kEnd); \
        ra[2 * i + 1] = EDGE2(A, offA + (r + 1u) * lda + k, ok1 && k < kEnd, ok1 && k + 1u < kEnd); \
    }
#define LOAD_WHOLE_A(kt)                                                         \
    for (int i = 0; i < A_LOADS / 2; i++) {                                      \
        if (A_PAIRS % THREADS == 0 || tid + uint(i * THREADS) < uint(A_PAIRS)) { \
            ra[2 * i] = W(A, wa[i] + KOFF(kt));                                  \
            ra[2 * i + 1] = W(A, wa[i] + ldaW + KOFF(kt));                       \
        }                                                                        \
    }
#else
#define LOAD_EDGE_A(kt)                                                          \
    for (int i = 0; i < A_LOADS; i++) {                                          \
        uint idx = tid + uint(i * THREADS);                                      \
        uint r = row0 + idx / uint(BK2), k = (kt) + (idx % uint(BK2)) * 2u;      \
        bool ok = (A_TILE % THREADS == 0 || idx < uint(A_TILE)) && r < M;        \
        ra[i] = EDGE2(A, offA + r * lda + k, ok && k < kEnd, ok && k + 1u < kEnd); \
    }
#define LOAD_WHOLE_A(kt)                                                         \
    for (int i = 0; i < A_LOADS; i++) {                                          \
        if (A_TILE % THREADS == 0 || tid + uint(i * THREADS) < uint(A_TILE))     \
            ra[i] = W(A, wa[i] + KOFF(kt));                                      \
    }
#endif

#define LOAD_EDGE(kt)                                                            \
    LOAD_EDGE_A(kt)                                                              \
    for (int i = 0; i < B_LOADS; i++) {                                          \
        uint idx = tid + uint(i * THREADS);                                      \
        uint k = (kt) + idx / uint(BN2), c = col0 + (idx % uint(BN2)) * 2u;      \
        bool ok = (B_SIZE % THREADS == 0 || idx < uint(B_SIZE)) && k < kEnd;     \
        rb[i] = EDGE2(B, offB + k * ldb + c, ok && c < N, ok && c + 1u < N);     \
    }

#define LOAD_WHOLE(kt)                                                           \
    LOAD_WHOLE_A(kt)                                                             \
    for (int i = 0; i < B_LOADS; i++) {                                          \
        if (B_SIZE % THREADS == 0 || tid + uint(i * THREADS) < uint(B_SIZE))     \
            rb[i] = W(B, wb[i] + (kt) * ldbW);                                   \
    }

// A_AT(idx): where the idx-th dvec2 of A's tile (row idx / BK2) lies in
// a buffer of As, past the padding of the rows before it.
#if PADA
#define A_AT(idx) ((idx) / uint(BK2) * uint(ASTRIDE) + (idx) % uint(BK2))
#else
#define A_AT(idx) (idx)
#endif

#if AHEAD
// A pair's two dvec2s, rows r and r + 1 at k and k + 1, go in as the
// dvec2s (r, r + 1) of k and of k + 1.
#define STORE_SHARED_A(buf)                                                      \
    for (int i = 0; i < A_LOADS / 2; i++) {                                      \
        uint p = tid + uint(i * THREADS);                                        \
        uint at = uint((buf) * A_SIZE) + (p % uint(BK2)) * uint(2 * AT_ROW) + p / uint(BK2); \
        if (A_PAIRS % THREADS == 0 || p < uint(A_PAIRS)) {                       \
            As[at] = dvec2(ra[2 * i].x, ra[2 * i + 1].x);                        \
            As[at + uint(AT_ROW)] = dvec2(ra[2 * i].y, ra[2 * i + 1].y);         \
        }                                                                        \
    }
#else
#define STORE_SHARED_A(buf)                                                      \
    for (int i = 0; i < A_LOADS; i++) {                                          \
        uint idx = tid + uint(i * THREADS);                                      \
        if (A_TILE % THREADS == 0 || idx < uint(A_TILE))                         \
            As[uint((buf) * A_SIZE) + A_AT(idx)] = ra[i];                        \
    }
#endif

#define STORE_SHARED(buf)                                                        \
    STORE_SHARED_A(buf)                                                          \
    for (int i = 0; i < B_LOADS; i++) {                                          \
        uint idx = tid + uint(i * THREADS);                                      \
        if (B_SIZE % THREADS == 0 || idx < uint(B_SIZE))                         \
            Bs[uint((buf) * B_SIZE) + idx] = rb[i];                              \
    }

void main()
{
    uint tid = gl_LocalInvocationIndex;
#if WX == THREADS_X
    uint tx = tid % uint(THREADS_X);
    uint ty = tid / uint(THREADS_X);
#else
    // Warp by warp (fast.comp's WX): a warp covers WX consecutive tx and
    // WY consecutive ty, so one shared load of B by the warp touches WX
    // distinct dvec2s and one of A WY rows.
    uint lane = tid % 32u, warp = tid / 32u;
    uint tx = (warp % uint(WPR)) * uint(WX) + lane % uint(WX);
    uint ty = (warp / uint(WPR)) * uint(WY) + lane / uint(WX);
#endif
    uint ownRow = y0 + gl_WorkGroupID.y * uint(BM);
    uint ownCol = x0 + gl_WorkGroupID.x * uint(BN);
    uint row0 = ownRow, col0 = ownCol;
    uint kEnd = K;
#if VEC || TEX
    uint colLim = (N + 1u) & ~1u; // B's dvec2s run to N rounded up to even
    uint ldbW = ldb / 2u;
#else
    uint colLim = N;
    uint ldbW = ldb;
#endif
    // Tiles past the last row or column move back to end on it (SHIFT).
    if (row0 + uint(BM) > M && M >= uint(BM)) {
        row0 = M - uint(BM);
    }
    if (col0 + uint(BN) > colLim && colLim >= uint(BN)) {
        col0 = colLim - uint(BN);
    }
    bool whole = row0 + uint(BM) <= M && col0 + uint(BN) <= colLim;

    // Where LOAD_WHOLE's loads start at kt = 0, in W's units.
    uint wb[B_LOADS];
#if AHEAD
    uint wa[A_LOADS / 2]; // a pair's first row; the second is ldaW further
    uint ldaW = KOFF(lda);
    for (int i = 0; i < A_LOADS / 2; i++) {
        uint p = tid + uint(i * THREADS);
        wa[i] = KOFF(offA + (row0 + p / uint(BK2) * 2u) * lda) + (p % uint(BK2)) * PER2;
    }
#else
    uint wa[A_LOADS];
    for (int i = 0; i < A_LOADS; i++) {
        uint idx = tid + uint(i * THREADS);
        wa[i] = KOFF(offA + (row0 + idx / uint(BK2)) * lda) + (idx % uint(BK2)) * PER2;
    }
#endif
    for (int i = 0; i < B_LOADS; i++) {
        uint idx = tid + uint(i * THREADS);
        wb[i] = KOFF(offB + col0) + (idx / uint(BN2)) * ldbW + (idx % uint(BN2)) * PER2;
    }

    dvec2 ra[A_LOADS];
    dvec2 rb[B_LOADS];
    dvec2 acc[TM][GN];
    #pragma optionNV(unroll all)
    for (int i = 0; i < TM; i++) {
        #pragma optionNV(unroll all)
        for (int j = 0; j < GN; j++) {
            acc[i][j] = dvec2(0.0);
        }
    }

#if DB
    if (whole && uint(BK) <= kEnd) {
        LOAD_WHOLE(0u)
    } else {
        LOAD_EDGE(0u)
    }
    STORE_SHARED(0)
    barrier();
    int buf = 0;
#endif
#if AHEAD
    // Ahead: while step k's TM·TN multiply-adds run, step k + 1's
    // fragments (TM doubles of A, TN of B) load into the other set of
    // registers, fa[s] and fb[s]; the step before the last stores the next
    // K step into the other buffer, then comes the barrier, then the next
    // K step's first fragments load while the last step computes. The
    // barrier is the only one a K step: a buffer is last read before the
    // barrier that precedes the stores into it.
    dvec2 fa[2][TM / 2]; // rows (2i, 2i + 1) of the invocation's TM, at one k
    dvec2 fb[2][GN];
#define FRAG(s, k)                                                               \
    for (int i = 0; i < TM / 2; i++)                                             \
        fa[s][i] = As[uint(buf * A_SIZE) + uint((k) * AT_ROW) + ty * uint(TM / 2) + uint(i)]; \
    for (int j = 0; j < GN; j++)                                                 \
        fb[s][j] = Bs[uint(buf * B_SIZE) + uint((k) * BN2 + j * THREADS_X) + tx];
#define STEP(s)                                                                  \
    for (int i = 0; i < TM / 2; i++) {                                           \
        for (int j = 0; j < GN; j++) {                                           \
            acc[2 * i][j] = fma(dvec2(fa[s][i].x), fb[s][j], acc[2 * i][j]);     \
            acc[2 * i + 1][j] = fma(dvec2(fa[s][i].y), fb[s][j], acc[2 * i + 1][j]); \
        }                                                                        \
    }
    // One K step: LOADNEXT issues the next one's global loads, MORE says
    // whether there is a next one. The loop over whole tiles has no other
    // branch, so that the compiler can spread the loads among the
    // multiply-adds (with both kinds in one loop, the branches kept them
    // apart: about 130 instructions a K step with no DFMA to issue beside).
#define KSTEP(LOADNEXT, MORE)                                                    \
    LOADNEXT                                                                     \
    for (int k = 0; k < BK - 2; k += 2) {                                        \
        FRAG(1, k + 1)                                                           \
        STEP(0)                                                                  \
        FRAG(0, k + 2)                                                           \
        STEP(1)                                                                  \
    }                                                                            \
    FRAG(1, BK - 1)                                                              \
    STEP(0)                                                                      \
    if (MORE) {                                                                  \
        STORE_SHARED(buf ^ 1)                                                    \
    }                                                                            \
    barrier();                                                                   \
    buf ^= 1;                                                                    \
    FRAG(0, 0)                                                                   \
    STEP(1)
    FRAG(0, 0)
    uint kt = 0u;
    if (whole) { // whole tiles while the next K step is whole too
        for (; kt + uint(2 * BK) <= kEnd; kt += uint(BK)) {
            KSTEP(LOAD_WHOLE(kt + uint(BK)), true)
        }
    }
    for (; kt < kEnd; kt += uint(BK)) {
        bool more = kt + uint(BK) < kEnd;
        KSTEP(if (more) { LOAD_EDGE(kt + uint(BK)) }, more)
    }
#else
#if !DB
    const int buf = 0;
#endif
    for (uint kt = 0u; kt < kEnd; kt += uint(BK)) {
#if DB
        bool more = kt + uint(BK) < kEnd;
        if (more && whole && kt + uint(2 * BK) <= kEnd) {
            LOAD_WHOLE(kt + uint(BK))
        } else if (more) {
            LOAD_EDGE(kt + uint(BK))
        }
#else
        if (whole && kt + uint(BK) <= kEnd) {
            LOAD_WHOLE(kt)
        } else {
            LOAD_EDGE(kt)
        }
        STORE_SHARED(0)
        barrier();
#endif
        uint aOff = uint(buf * A_SIZE) + ty * uint(ASTRIDE);
        uint bOff = uint(buf * B_SIZE) + tx;
        #pragma optionNV(unroll all)
        for (int k2 = 0; k2 < BK2; k2++) {
            dvec2 b[2 * GN];
            #pragma optionNV(unroll all)
            for (int kk = 0; kk < 2; kk++) {
                #pragma optionNV(unroll all)
                for (int j = 0; j < GN; j++) {
                    b[kk * GN + j] = Bs[bOff + uint((k2 * 2 + kk) * BN2 + j * THREADS_X)];
                }
            }
            #pragma optionNV(unroll all)
            for (int i = 0; i < TM; i++) {
                dvec2 a = As[aOff + uint(i * THREADS_Y * ASTRIDE + k2)];
                #pragma optionNV(unroll all)
                for (int kk = 0; kk < 2; kk++) {
                    #pragma optionNV(unroll all)
                    for (int j = 0; j < GN; j++) {
                        acc[i][j] = fma(dvec2(a[kk]), b[kk * GN + j], acc[i][j]);
                    }
                }
            }
        }
#if DB
        if (more) {
            STORE_SHARED(buf ^ 1)
        }
        buf ^= 1;
#endif
        barrier();
    }
#endif // AHEAD

    // A tile moved back, or one crossing C's edges, checks each element
    // against C's edges and its own first row and column (a tile moved
    // back stores only those, its neighbour the rest).
    bool check = row0 != ownRow || col0 != ownCol || row0 + uint(BM) > M || col0 + uint(BN) > N;
    #pragma optionNV(unroll all)
    for (int i = 0; i < TM; i++) {
#if AHEAD
        uint row = row0 + ty * uint(TM) + uint(i);
#else
        uint row = row0 + uint(i * THREADS_Y) + ty;
#endif
        if (!check || row < M && row >= ownRow) {
            #pragma optionNV(unroll all)
            for (int j = 0; j < GN; j++) {
                uint col = col0 + (uint(j * THREADS_X) + tx) * 2u;
                uint e = offC + row * ldc + col;
                if (!check || col < N && col >= ownCol) {
                    C[e] = acc[i][j].x;
                }
                if (!check || col + 1u < N && col + 1u >= ownCol) {
                    C[e + 1u] = acc[i][j].y;
                }
            }
        }
    }
}
