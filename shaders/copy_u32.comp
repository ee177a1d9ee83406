// copy_u32: dst[i] = src[i] for i < n (32-bit words). Round-trip helper for float32/int32 data.
// Push constants: src address, dst address, n.
#version 450
#extension GL_EXT_buffer_reference : require
#extension GL_EXT_buffer_reference2 : require

layout(local_size_x = 64) in;

layout(buffer_reference, std430, buffer_reference_align = 4) buffer Words { uint v[]; };

layout(push_constant, std430) uniform Push {
    Words src;
    Words dst;
    uint n;
} pc;

void main() {
    uint i = gl_GlobalInvocationID.x + gl_GlobalInvocationID.y * gl_NumWorkGroups.x * gl_WorkGroupSize.x;
    if (i < pc.n) {
        pc.dst.v[i] = pc.src.v[i];
    }
}
