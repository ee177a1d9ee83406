// bench: fp32 matmul, shared tiles read 4 bytes at a time (see sgemm_body.glsl).
#version 450
#extension GL_GOOGLE_include_directive : require
#include "sgemm_body.glsl"
