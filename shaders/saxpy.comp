// saxpy: y[i] = a * x[i] + y[i] for i < n (float32).
// Push constants: x address, y address, n, a. 2-D grid: i = x + y * (groups.x * 64).
#version 450
#extension GL_EXT_buffer_reference : require
#extension GL_EXT_buffer_reference2 : require

layout(local_size_x = 64) in;

layout(buffer_reference, std430, buffer_reference_align = 4) buffer Floats { float v[]; };

layout(push_constant, std430) uniform Push {
    Floats x;
    Floats y;
    uint n;
    float a;
} pc;

void main() {
    uint i = gl_GlobalInvocationID.x + gl_GlobalInvocationID.y * gl_NumWorkGroups.x * gl_WorkGroupSize.x;
    if (i < pc.n) {
        pc.y.v[i] = pc.a * pc.x.v[i] + pc.y.v[i];
    }
}
