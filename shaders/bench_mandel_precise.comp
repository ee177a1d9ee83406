// bench (compute-bound): bench_mandel.comp with `precise` values, i.e. no contraction into fma,
// so the escape counts are the IEEE float32 ones that cthreads kernels (and numpy) compute.
// out[i] = iterations (at most max_iter) for pixel (i % w, i / w). Push: out, n, w, max_iter.
#version 450
#extension GL_EXT_buffer_reference : require
#extension GL_EXT_buffer_reference2 : require

layout(local_size_x_id = 0) in;
layout(buffer_reference, std430, buffer_reference_align = 4) buffer Ints { int v[]; };
layout(push_constant, std430) uniform Push { Ints o; uint n; uint w; int max_iter; } pc;

float precise_norm(float x, float y) {
    precise float r = x * x + y * y;
    return r;
}

void main() {
    uint stride = gl_NumWorkGroups.x * gl_WorkGroupSize.x;
    float fw = float(pc.w);
    for (uint i = gl_GlobalInvocationID.x; i < pc.n; i += stride) {
        precise float cx = -2.0 + 3.0 * float(i % pc.w) / fw;
        precise float cy = -1.5 + 3.0 * float(i / pc.w) / fw;
        precise float zx = 0.0, zy = 0.0;
        int it = 0;
        while (it < pc.max_iter && precise_norm(zx, zy) < 4.0) {
            precise float t = zx * zx - zy * zy + cx;
            zy = 2.0 * zx * zy + cy;
            zx = t;
            it++;
        }
        pc.o.v[i] = it;
    }
}
