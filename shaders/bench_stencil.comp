// bench: 3-point stencil out[i] = 0.25*x[i-1] + 0.5*x[i] + 0.25*x[i+1] (missing neighbours are 0),
// 8 B/element. Push: x, out, n.
#version 450
#extension GL_EXT_buffer_reference : require
#extension GL_EXT_buffer_reference2 : require

layout(local_size_x_id = 0) in;
layout(buffer_reference, std430, buffer_reference_align = 4) buffer Floats { float v[]; };
layout(push_constant, std430) uniform Push { Floats x; Floats o; uint n; } pc;

void main() {
    uint stride = gl_NumWorkGroups.x * gl_WorkGroupSize.x;
    for (uint i = gl_GlobalInvocationID.x; i < pc.n; i += stride) {
        float l = i > 0u ? pc.x.v[i - 1u] : 0.0;
        float r = i + 1u < pc.n ? pc.x.v[i + 1u] : 0.0;
        pc.o.v[i] = 0.25 * l + 0.5 * pc.x.v[i] + 0.25 * r;
    }
}
