// bench: saxpy with one 16-byte vec4 per step (the hand-tuned reference; needs n % 4 == 0).
// Push: x, y, n (floats), a.
#version 450
#extension GL_EXT_buffer_reference : require
#extension GL_EXT_buffer_reference2 : require

layout(local_size_x_id = 0) in;
layout(buffer_reference, std430, buffer_reference_align = 16) buffer Vec4s { vec4 v[]; };
layout(push_constant, std430) uniform Push { Vec4s x; Vec4s y; uint n; float a; } pc;

void main() {
    uint stride = gl_NumWorkGroups.x * gl_WorkGroupSize.x;
    uint blocks = pc.n / 4u;
    for (uint i = gl_GlobalInvocationID.x; i < blocks; i += stride) {
        pc.y.v[i] = pc.a * pc.x.v[i] + pc.y.v[i];
    }
}
