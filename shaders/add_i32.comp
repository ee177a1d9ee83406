// add_i32: data[i] += k for i < n (int32, wrapping). Dispatched many times in a row on one
// queue without waits, it checks that each dispatch sees the previous one's writes.
// Push constants: data address, n, k.
#version 450
#extension GL_EXT_buffer_reference : require
#extension GL_EXT_buffer_reference2 : require

layout(local_size_x = 64) in;

layout(buffer_reference, std430, buffer_reference_align = 4) buffer Ints { int v[]; };

layout(push_constant, std430) uniform Push {
    Ints data;
    uint n;
    int k;
} pc;

void main() {
    uint i = gl_GlobalInvocationID.x + gl_GlobalInvocationID.y * gl_NumWorkGroups.x * gl_WorkGroupSize.x;
    if (i < pc.n) {
        pc.data.v[i] = pc.data.v[i] + pc.k;
    }
}
