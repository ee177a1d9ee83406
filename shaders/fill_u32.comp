// fill_u32: dst[i] = value for i < n (32-bit words).
// Push constants: dst address, n, value.
#version 450
#extension GL_EXT_buffer_reference : require
#extension GL_EXT_buffer_reference2 : require

layout(local_size_x = 64) in;

layout(buffer_reference, std430, buffer_reference_align = 4) buffer Words { uint v[]; };

layout(push_constant, std430) uniform Push {
    Words dst;
    uint n;
    uint value;
} pc;

void main() {
    uint i = gl_GlobalInvocationID.x + gl_GlobalInvocationID.y * gl_NumWorkGroups.x * gl_WorkGroupSize.x;
    if (i < pc.n) {
        pc.dst.v[i] = pc.value;
    }
}
