// spin: a deliberately slow kernel. Each invocation i < n runs `iters` steps of an LCG and
// stores the result in out[i]; used to keep work in flight in tests and benchmarks.
// Push constants: out address, n, iters.
#version 450
#extension GL_EXT_buffer_reference : require
#extension GL_EXT_buffer_reference2 : require

layout(local_size_x = 64) in;

layout(buffer_reference, std430, buffer_reference_align = 4) buffer Words { uint v[]; };

layout(push_constant, std430) uniform Push {
    Words out_;
    uint n;
    uint iters;
} pc;

void main() {
    uint i = gl_GlobalInvocationID.x;
    if (i < pc.n) {
        uint x = i;
        for (uint k = 0u; k < pc.iters; k++) {
            x = x * 1664525u + 1013904223u;
        }
        pc.out_.v[i] = x;
    }
}
