// The body of bench_sgemm.comp and bench_sgemm4.comp: fp32 C = A @ B (row-major, M, N, K
// multiples of 128, 128 and 8), the GLSL twin of bench/sgemm.py's "128x128x8 t8x8 bcontig
// multiples": 256 invocations a workgroup, an 8 x 8 register tile each (subgroups of 32 own 4 x 8
// patches of tiles), A stored transposed in shared memory, the next K step's A and B read into
// registers while this one multiplies, two barriers a step. With SHARED_VEC4 the two shared
// tiles are vec4 arrays and each register tile row is read as two 16-byte loads instead of
// eight 4-byte ones: the one difference between the twins (issue 18: is the fp32 kernel held by
// shared-memory load instructions?). Push: a, b, c (buffer addresses), m, n, k.
#extension GL_EXT_buffer_reference : require
#extension GL_EXT_control_flow_attributes : require

layout(local_size_x = 256) in;
layout(buffer_reference, std430, buffer_reference_align = 4) buffer Floats { float v[]; };
layout(push_constant, std430) uniform Push { Floats a; Floats b; Floats c; uint m; uint n; uint k; } pc;

const uint BM = 128, BN = 128, BK = 8, TM = 8, TN = 8, LDA = BM + 4, WG = 256;
#ifdef SHARED_VEC4
shared vec4 As[BK * LDA / 4];
shared vec4 Bs[BK * BN / 4];
#else
shared float As[BK * LDA];
shared float Bs[BK * BN];
#endif

// one element into a shared tile, whichever way the tile is declared
#ifdef SHARED_VEC4
#define PUT(tile, at, v) tile[(at) / 4][(at) % 4] = (v)
#else
#define PUT(tile, at, v) tile[at] = (v)
#endif

void main() {
    uint t = gl_LocalInvocationID.x;
    uint w = t / 32, lane = t % 32;
    uint tr = (w / (BN / TN / 8)) * 4 + lane / 8;
    uint tc = (w % (BN / TN / 8)) * 8 + lane % 8;
    uint blocks_n = pc.n / BN;
    uint bm = (gl_WorkGroupID.x / blocks_n) * BM, bn = (gl_WorkGroupID.x % blocks_n) * BN;
    uint r0 = tr * TM, c0 = tc * TN;
    float acc[TM * TN], ra[TM], rb[TN], pa[BM * BK / WG], pb[BK * BN / WG];
    [[unroll]] for (uint i = 0; i < TM * TN; i++) acc[i] = 0.0;
    for (int k0 = -int(BK); k0 < int(pc.k); k0 += int(BK)) {
        uint kl = uint(k0 + int(BK));
        if (kl < pc.k) {
            [[unroll]] for (uint q = 0; q < BM * BK / WG; q++) {
                uint e = t + WG * q;
                pa[q] = pc.a.v[(bm + e / BK) * pc.k + kl + e % BK];
            }
            [[unroll]] for (uint q = 0; q < BK * BN / WG; q++) {
                uint e = t + WG * q;
                pb[q] = pc.b.v[(kl + e / BN) * pc.n + bn + e % BN];
            }
        }
        if (k0 >= 0) {
            [[unroll]] for (uint kk = 0; kk < BK; kk++) {
#ifdef SHARED_VEC4
                vec4 a0 = As[(kk * LDA + r0) / 4], a1 = As[(kk * LDA + r0) / 4 + 1];
                vec4 b0 = Bs[(kk * BN + c0) / 4], b1 = Bs[(kk * BN + c0) / 4 + 1];
                [[unroll]] for (uint i = 0; i < 4; i++) {
                    ra[i] = a0[i]; ra[i + 4] = a1[i]; rb[i] = b0[i]; rb[i + 4] = b1[i];
                }
#else
                [[unroll]] for (uint i = 0; i < TM; i++) ra[i] = As[kk * LDA + r0 + i];
                [[unroll]] for (uint j = 0; j < TN; j++) rb[j] = Bs[kk * BN + c0 + j];
#endif
                [[unroll]] for (uint i = 0; i < TM; i++)
                    [[unroll]] for (uint j = 0; j < TN; j++)
                        acc[i * TN + j] = fma(ra[i], rb[j], acc[i * TN + j]);
            }
        }
        if (kl < pc.k) {
            barrier();  // every invocation is done reading the tiles
            [[unroll]] for (uint q = 0; q < BM * BK / WG; q++) {
                uint e = t + WG * q;
                PUT(As, (e % BK) * LDA + e / BK, pa[q]);  // transposed: As[kk][row]
            }
            [[unroll]] for (uint q = 0; q < BK * BN / WG; q++) PUT(Bs, t + WG * q, pb[q]);
            barrier();
        }
    }
    [[unroll]] for (uint i = 0; i < TM; i++)
        [[unroll]] for (uint j = 0; j < TN; j++)
            pc.c.v[(bm + r0 + i) * pc.n + bn + c0 + j] = acc[i * TN + j];
}
