// smcount: the GPU's count of streaming multiprocessors and warps per
// multiprocessor, from NVIDIA's GL_NV_shader_thread_group; glmul splits K
// to fill the last wave of work groups with it (tuning.AutoSplitK).
#version 430 core
#extension GL_NV_shader_thread_group : require

layout(local_size_x = 1, local_size_y = 1, local_size_z = 1) in;

layout(std430, binding = 2) writeonly buffer ssbo_O { uint O[]; };

void main()
{
    O[0] = gl_SMCountNV;
    O[1] = gl_WarpsPerSMNV;
}
