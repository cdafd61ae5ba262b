// skfix: the second pass of a stream-K product (fast.comp with SK 1). The
// kernel's skGroups shared groups wrote the pieces of the last skTiles
// tiles of C to W, BM·BN floats a slot, group h's first piece in slot 2h
// and its second in 2h+1; this adds up each tile's pieces, in the order
// of their K steps, and writes the tile's own elements into C. Tile u of
// those (tile skDP + u of C, tiles numbered row by row, tilesX a row)
// covers the steps from u·skSteps of U = skTiles·skSteps, which group h
// shares from h·U/skGroups (rounded down) to (h+1)·U/skGroups; a group's
// share is shorter than a tile, so it holds at most two pieces. A tile
// crossing the last row or column was computed moved back to end on it
// (fast.comp's SHIFT, with rowLim and colLim: the rows and columns it may
// reach), where the matrices have a tile's worth; its own elements start
// where it would have. BM and BN are injected as #defines
// (shaders.StreamKFix).
#define THREADS 256
#define TILE4 (BM * (BN / 4))       // vec4s of a tile

layout(local_size_x = THREADS, local_size_y = 1, local_size_z = 1) in;

uniform uint skDP;
uniform uint skGroups;
uniform uint skTiles;
uniform uint skSteps;
uniform uint tilesX;
uniform uint M;
uniform uint rowLim;
uniform uint colLim;
uniform uint ldc;
uniform uint offC4;
uniform uint first; // index of this dispatch's first vec4 (dispatch chunks)

layout(std430, binding = 0) readonly buffer ssbo_W { vec4 W[]; };
layout(std430, binding = 2) writeonly buffer ssbo_R { vec4 R[]; };

// group returns the shared group whose share holds step s.
uint group(uint s)
{
    uint total = skTiles * skSteps;
    // the largest h with h·total/skGroups <= s: h·total < (s+1)·skGroups
    return ((s + 1u) * skGroups + total - 1u) / total - 1u;
}

void main()
{
    uint i = first + (gl_WorkGroupID.y * gl_NumWorkGroups.x + gl_WorkGroupID.x) * uint(THREADS) + gl_LocalInvocationIndex;
    if (i >= skTiles * uint(TILE4)) return;
    uint u = i / uint(TILE4), e = i % uint(TILE4);
    uint t = skDP + u;
    uint ownRow = t / tilesX * uint(BM), ownCol = t % tilesX * uint(BN);
    uint row0 = ownRow, col0 = ownCol;
    if (row0 + uint(BM) > rowLim && rowLim >= uint(BM)) {
        row0 = rowLim - uint(BM);
    }
    if (col0 + uint(BN) > colLim && colLim >= uint(BN)) {
        col0 = colLim - uint(BN);
    }
    uint row = row0 + e / uint(BN / 4), c4 = col0 / 4u + e % uint(BN / 4);
    uint ldc4 = ldc / 4u;
    if (row >= M || row < ownRow || c4 >= ldc4 || c4 < ownCol / 4u) return;
    uint total = skTiles * skSteps;
    uint hFirst = group(u * skSteps), hLast = group((u + 1u) * skSteps - 1u);
    vec4 s = vec4(0.0);
    for (uint h = hFirst; h <= hLast; h++) {
        uint b = h * total / skGroups;
        if ((h + 1u) * total / skGroups == b) {
            continue; // an empty share (fewer steps than groups) wrote nothing
        }
        // its first piece if its share starts in this tile, else its second
        uint slot = 2u * h + (b / skSteps == u ? 0u : 1u);
        s += W[slot * uint(TILE4) + e];
    }
    R[offC4 + row * ldc4 + c4] = s;
}
