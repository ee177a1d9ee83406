// copy_u8: dst[i] = src[i] ^ xor_mask for i < n bytes (8-bit storage). Round-trip helper for
// byte data whose length is not a multiple of 4.
// Push constants: src address, dst address, n, xor_mask.
#version 450
#extension GL_EXT_buffer_reference : require
#extension GL_EXT_buffer_reference2 : require
#extension GL_EXT_shader_8bit_storage : require
#extension GL_EXT_shader_explicit_arithmetic_types_int8 : require

layout(local_size_x = 64) in;

layout(buffer_reference, std430, buffer_reference_align = 1) buffer Bytes { uint8_t v[]; };

layout(push_constant, std430) uniform Push {
    Bytes src;
    Bytes dst;
    uint n;
    uint xor_mask;
} pc;

void main() {
    uint i = gl_GlobalInvocationID.x + gl_GlobalInvocationID.y * gl_NumWorkGroups.x * gl_WorkGroupSize.x;
    if (i < pc.n) {
        pc.dst.v[i] = uint8_t(uint(pc.src.v[i]) ^ (pc.xor_mask & 0xffu));
    }
}
