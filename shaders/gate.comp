// gate: a kernel that runs until the host opens it. Every invocation i < n polls flag.v[0]
// (host-visible memory, written by the host while the kernel runs) up to `polls` times and
// ends as soon as it reads non-zero; it then adds 1 to flag.v[1] once per group (so the host
// can tell it saw the flag). Tests use it to hold the queue busy for exactly as long as they
// need, on any device: a fast GPU and a CPU driver alike. `polls` bounds it (a safety net if
// the host never opens it); Mesa's llvmpipe also ends each invocation after ~65,535 loop
// iterations, so there the length comes from n (many invocations, each polling in turn).
// Push constants: flag address, n, polls.
#version 450
#extension GL_EXT_buffer_reference : require
#extension GL_EXT_buffer_reference2 : require

layout(local_size_x = 64) in;

layout(buffer_reference, std430, buffer_reference_align = 4) coherent volatile buffer Flag {
    uint v[];
};

layout(push_constant, std430) uniform Push {
    Flag flag;
    uint n;
    uint polls;
} pc;

void main() {
    uint i = gl_GlobalInvocationID.x;
    if (i < pc.n) {
        for (uint k = 0u; k < pc.polls; k++) {
            if (pc.flag.v[0] != 0u) {
                break;
            }
        }
        if (gl_LocalInvocationID.x == 0u && pc.flag.v[0] != 0u) {
            atomicAdd(pc.flag.v[1], 1u);
        }
    }
}
