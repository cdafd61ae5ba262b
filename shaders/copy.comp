// copy: D = S, count vec4s from S's vec4 offS4 to D's from offD4, by a
// few work groups of THREADS invocations that loop over the whole range, so
// that they run beside a product's dispatches. A streamed pass copies the
// previous band of C (i−1) into host memory this way (a mapped host
// matrix, or a staging buffer the host then empties) while the kernel
// computes band i (hostProduct.streamed); a copy command would wait for
// the kernel (NVIDIA runs one context's copies and dispatches in order).
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
    uint stride = gl_NumWorkGroups.x * THREADS;
    for (uint i = gl_WorkGroupID.x * THREADS + gl_LocalInvocationIndex; i < count; i += stride) {
        D[offD4 + i] = S[offS4 + i];
    }
}
