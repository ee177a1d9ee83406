// tiny: data[i] += 1 through a descriptor-bound storage buffer. The C floor's pipeline needs no
// device feature (cthreads' kernels use buffer device addresses; pass one with --bda).
#version 450
layout(local_size_x = 64) in;
layout(set = 0, binding = 0, std430) buffer Data { uint v[]; } data;
void main() {
    data.v[gl_GlobalInvocationID.x] += 1u;
}
