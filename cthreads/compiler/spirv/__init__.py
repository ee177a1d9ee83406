"""SPIR-V emission: generated grammar, word-level builder, codegen from the typed IR, spirv-tools.

`codegen.generate(kernel, target)` is the entry; `compiler.compile.compile_kernel` wraps it.
"""
