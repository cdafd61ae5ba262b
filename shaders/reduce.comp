// reduce: the second pass of a split-K product. The fast kernel wrote its
// partial results of C back to back in W, count vec4s each, W holding
// exactly those; this sums them into C (at offC4). Any order of summation
// keeps a K-term dot product within the same γ_K error bound, so
// validation is unchanged. The number of partials comes from W's length,
// not a uniform: Mesa 22.3.6's zink summed only as many as the previous
// split product's uniform had said (TestSplitK caught it).
//
// PARTIAL is what it sums at a time: vec4, or dvec2 for float64 partials
// (Reduce64's, a float64 product's K panels). Both are 16 bytes, so count,
// offC4 and W's length mean the same either way.
#version 430 core

#ifndef PARTIAL
#define PARTIAL vec4
#endif

layout(local_size_x = 256, local_size_y = 1, local_size_z = 1) in;

uniform uint count;
uniform uint offC4;
uniform uint first; // index of this dispatch's first vec4 (dispatch chunks)

layout(std430, binding = 0) readonly buffer ssbo_W { PARTIAL W[]; };
layout(std430, binding = 2) writeonly buffer ssbo_R { PARTIAL R[]; };

void main()
{
    uint i = first + (gl_WorkGroupID.y * gl_NumWorkGroups.x + gl_WorkGroupID.x) * 256u + gl_LocalInvocationIndex;
    if (i >= count) return;
    PARTIAL s = W[i];
    uint splits = uint(W.length()) / count;
    for (uint z = 1u; z < splits; z++) {
        s += W[z * count + i];
    }
    R[offC4 + i] = s;
}
