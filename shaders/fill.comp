// fill: sets 32-bit words of a buffer (binding 2) to value: this
// dispatch's range, from word first onward, stopping below word count. glmul poisons result buffers
// with NaN this way: glClearBufferData ran at about 28 GB/s on NVIDIA 580,
// a compute pass writes at the GPU's memory bandwidth.
#version 430 core

layout(local_size_x = 256, local_size_y = 1, local_size_z = 1) in;

uniform uint count;
uniform uint first; // index of this dispatch's first word (dispatch chunks)
uniform uint value;

layout(std430, binding = 2) writeonly buffer ssbo_C { uint C[]; };

void main()
{
    uint i = first + (gl_WorkGroupID.y * gl_NumWorkGroups.x + gl_WorkGroupID.x) * 256u + gl_LocalInvocationIndex;
    if (i < count) C[i] = value;
}
