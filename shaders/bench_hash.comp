// bench: int32 hash, 4 rounds of xorshift (13, 17 arithmetic, 5) and a wrapping LCG step,
// out[i] = hash(x[i] ^ seed), 8 B/element. Push: x, out, n, seed.
#version 450
#extension GL_EXT_buffer_reference : require
#extension GL_EXT_buffer_reference2 : require

layout(local_size_x_id = 0) in;
layout(buffer_reference, std430, buffer_reference_align = 4) buffer Ints { int v[]; };
layout(push_constant, std430) uniform Push { Ints x; Ints o; uint n; int seed; } pc;

void main() {
    uint stride = gl_NumWorkGroups.x * gl_WorkGroupSize.x;
    for (uint i = gl_GlobalInvocationID.x; i < pc.n; i += stride) {
        int h = pc.x.v[i] ^ pc.seed;
        for (int r = 0; r < 4; r++) {
            h ^= h << 13;
            h ^= h >> 17;
            h ^= h << 5;
            h = h * 1103515245 + 12345;
        }
        pc.o.v[i] = h;
    }
}
