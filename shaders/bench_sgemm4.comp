// bench: fp32 matmul, shared tiles read 16 bytes at a time (see sgemm_body.glsl).
#version 450
#extension GL_GOOGLE_include_directive : require
#define SHARED_VEC4 1
#include "sgemm_body.glsl"
