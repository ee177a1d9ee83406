// bench: saxpy y[i] = a * x[i] + y[i] for i < n (float32, 12 B/element), one float per step of a
// grid-stride loop; workgroup width = specialization constant 0. Push: x, y, n, a.
#version 450
#extension GL_EXT_buffer_reference : require
#extension GL_EXT_buffer_reference2 : require

layout(local_size_x_id = 0) in;
layout(buffer_reference, std430, buffer_reference_align = 4) buffer Floats { float v[]; };
layout(push_constant, std430) uniform Push { Floats x; Floats y; uint n; float a; } pc;

void main() {
    uint stride = gl_NumWorkGroups.x * gl_WorkGroupSize.x;
    for (uint i = gl_GlobalInvocationID.x; i < pc.n; i += stride) {
        pc.y.v[i] = pc.a * pc.x.v[i] + pc.y.v[i];
    }
}
