// bench: 8 dependent multiply-adds per element, y[i] = (((x[i]*a+b)*a+b)...), 8 B/element.
// Push: x, y, n, a, b.
#version 450
#extension GL_EXT_buffer_reference : require
#extension GL_EXT_buffer_reference2 : require

layout(local_size_x_id = 0) in;
layout(buffer_reference, std430, buffer_reference_align = 4) buffer Floats { float v[]; };
layout(push_constant, std430) uniform Push { Floats x; Floats y; uint n; float a; float b; } pc;

void main() {
    uint stride = gl_NumWorkGroups.x * gl_WorkGroupSize.x;
    for (uint i = gl_GlobalInvocationID.x; i < pc.n; i += stride) {
        float v = pc.x.v[i];
        for (int k = 0; k < 8; k++) {
            v = v * pc.a + pc.b;
        }
        pc.y.v[i] = v;
    }
}
