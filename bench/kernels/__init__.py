"""Kernel benchmark suite (issue 7): our codegen against hand-written GLSL run through our own
runtime, torch and cupy, in one run. Entry point: `python -m bench.kernels.run --help`."""
