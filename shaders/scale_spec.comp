// scale_spec: data[i] = data[i] * SCALE + OFFSET (float32) when ENABLED, with the factors
// given as specialization constants 0 (float SCALE), 1 (int OFFSET), 2 (bool ENABLED).
// Push constants: data address, n.
#version 450
#extension GL_EXT_buffer_reference : require
#extension GL_EXT_buffer_reference2 : require

layout(local_size_x = 64) in;

layout(constant_id = 0) const float SCALE = 1.0;
layout(constant_id = 1) const int OFFSET = 0;
layout(constant_id = 2) const bool ENABLED = true;

layout(buffer_reference, std430, buffer_reference_align = 4) buffer Floats { float v[]; };

layout(push_constant, std430) uniform Push {
    Floats data;
    uint n;
} pc;

void main() {
    uint i = gl_GlobalInvocationID.x + gl_GlobalInvocationID.y * gl_NumWorkGroups.x * gl_WorkGroupSize.x;
    if (ENABLED && i < pc.n) {
        pc.data.v[i] = pc.data.v[i] * SCALE + float(OFFSET);
    }
}
