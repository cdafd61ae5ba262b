// copy: D = S, count vec4s from S's vec4 offS4 to D's from offD4, by a
// few work groups of THREADS invocations that loop over the whole range, so
// that they fit beside a product's work groups on the same
// multiprocessors and run while it runs. A host product whose C is a
// mapped host matrix copies its last band of C out this way while the
// kernel computes the next (hostProduct.streamed); a copy command would
// wait for the kernel (NVIDIA runs one context's copies and dispatches
// in order).
#version 430 core

#ifndef THREADS
#define THREADS 64u
#endif
layout(local_size_x = THREADS, local_size_y = 1, local_size_z = 1) in;

uniform uint count;
uniform uint offS4;
uniform uint offD4;

layout(std430, binding = 0) readonly buffer ssbo_S { vec4 S[]; };
layout(std430, binding = 2) writeonly buffer ssbo_D { vec4 D[]; };

void main()
{
    uint step = gl_NumWorkGroups.x * THREADS;
    for (uint i = gl_WorkGroupID.x * THREADS + gl_LocalInvocationIndex; i < count; i += step) {
        D[offD4 + i] = S[offS4 + i];
    }
}
