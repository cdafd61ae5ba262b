// transpose: T = Aᵀ for the fast kernels that read A transposed
// (Kernel.TransposeA), in 64×64 tiles through shared memory: vec4 loads
// along A's rows and vec4 stores along T's rows, both coalesced.
//
// Rows [0, rows) of A (row stride lda, from element offA) become columns
// [0, rows) of T (row stride ldt, from element offT); columns [rows, cols)
// of T are written as zero (the padding of M up to ldt). T has K rows.
// lda, ldt, offA, offT and cols are multiples of 4. A's columns from K up
// to lda (padding) are read but never reach T, which has only K rows. Work
// group (x, y) covers T's columns x0 + 64x… and rows y0 + 64y….
//
// Streamed (TransposeStream: STREAM and THREADS defined): a few large work
// groups, each looping over the tiles (tilesX across T's columns, all of
// T's rows), issued with no barrier after a product's dispatch, so that
// they run on the multiprocessors its band leaves idle and then beside
// its end: a streamed pass transposes its next band of A straight from
// host memory that way (a mapped host matrix, or a staging buffer the host
// has filled; hostProduct.streamed).
#version 430 core

#ifndef THREADS
#define THREADS 256u
#endif
#define PASSES ((64u + THREADS / 16u - 1u) / (THREADS / 16u)) // rows of the tile an invocation takes
layout(local_size_x = THREADS, local_size_y = 1, local_size_z = 1) in;

uniform uint rows;
uniform uint cols;
uniform uint K;
uniform uint lda;
uniform uint ldt;
uniform uint offA;
uniform uint offT;
uniform uint x0;
uniform uint y0;
#ifdef STREAM
uniform uint tilesX; // tiles across T's columns; the work groups take every tile in turn
#endif

layout(std430, binding = 0) readonly buffer ssbo_A { vec4 A[]; };
layout(std430, binding = 2) writeonly buffer ssbo_T { vec4 T[]; };

// tile[r][k]: a column of padding, so that the transposed reads of a warp
// (16 row groups of 4, two k) fall at most two to a bank.
shared float tile[64][65];

// transposeTile transposes the 64×64 tile of A whose rows start at r0 and
// columns at k0. Each invocation issues all its loads of A before its first
// store to tile[], so that they are in flight together: on the H100 that
// took a 4096² transpose from 71 to 59 µs (docs/PERFORMANCE.md, "The
// tenth session"); a loop of load-then-store waited on each load in turn.
void transposeTile(uint r0, uint k0)
{
    uint t = gl_LocalInvocationIndex;
    uint q = t % 16u; // a vec4 along a row: of A (k) when reading, of T (r) when writing
    // PASSES rounds up: THREADS is any multiple of 16 (TransposeStream's
    // groups take what the driver allows), so the last pass may stop short.
    vec4 v[PASSES];
    #pragma optionNV(unroll all)
    for (uint j = 0u; j < PASSES; j++) {
        uint i = t / 16u + j * (THREADS / 16u);
        uint r = r0 + i, k = k0 + q * 4u;
        v[j] = i < 64u && r < rows && k < lda ? A[(offA + r * lda + k) / 4u] : vec4(0.0);
    }
    #pragma optionNV(unroll all)
    for (uint j = 0u; j < PASSES; j++) {
        uint i = t / 16u + j * (THREADS / 16u);
        if (i >= 64u) {
            break;
        }
        tile[i][q * 4u] = v[j].x;
        tile[i][q * 4u + 1u] = v[j].y;
        tile[i][q * 4u + 2u] = v[j].z;
        tile[i][q * 4u + 3u] = v[j].w;
    }
    barrier();
    #pragma optionNV(unroll all)
    for (uint j = 0u; j < PASSES; j++) {
        uint i = t / 16u + j * (THREADS / 16u);
        uint k = k0 + i, r = r0 + q * 4u;
        if (i < 64u && k < K && r < cols) {
            T[(offT + k * ldt + r) / 4u] = vec4(tile[q * 4u][i], tile[q * 4u + 1u][i], tile[q * 4u + 2u][i], tile[q * 4u + 3u][i]);
        }
    }
}

void main()
{
#ifndef STREAM
    transposeTile(x0 + gl_WorkGroupID.x * 64u, y0 + gl_WorkGroupID.y * 64u);
#else
    uint tiles = tilesX * ((K + 63u) / 64u);
    for (uint g = gl_WorkGroupID.x; g < tiles; g += gl_NumWorkGroups.x) {
        transposeTile(x0 + g % tilesX * 64u, y0 + g / tilesX * 64u);
        barrier(); // the next tile's stores into tile[] wait for this one's reads
    }
#endif
}
