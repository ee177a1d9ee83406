"""SPIR-V numbers of SPV_KHR_cooperative_matrix and SPV_KHR_bfloat16, which `grammar.py` lacks.

`grammar.py` is generated from Debian 12's spirv-headers (1.3.239, SPIR-V 1.6 revision 1), which
predate the extension; regenerating it from newer headers would change nothing else we use, but
the generator's input is the installed package, so the few numbers tile kernels need are kept
here, written from the SPIR-V registry's grammar (SPIRV-Headers `spirv.core.grammar.json`,
extension SPV_KHR_cooperative_matrix, revision 3, and SPV_KHR_bfloat16, revision 1). tests/compiler
checks each against a newer grammar file when one is available (`CTHREADS_SPIRV_GRAMMAR_NEW`).

Operand forms (ids unless marked literal):
  OpTypeCooperativeMatrixKHR      result, component type, scope, rows, columns, use
  OpCooperativeMatrixLoadKHR      result type, result, pointer, layout, [stride], [memory operand]
  OpCooperativeMatrixStoreKHR     pointer, object, layout, [stride], [memory operand]
  OpCooperativeMatrixMulAddKHR    result type, result, A, B, C, [operands mask (literal)]
  OpCooperativeMatrixLengthKHR    result type, result, type
Scope, rows, columns, use and layout are ids of constant integers (so specialization constants
may size a matrix); the stride counts elements of the pointer's type, which need not be the
matrix's component type (bf16 tiles are loaded through u16 pointers).
  OpTypeFloat                     result, width (literal), [FPEncoding (literal)]
bfloat16 is `OpTypeFloat 16 BFloat16KHR`; capability BFloat16TypeKHR declares the type and
BFloat16CooperativeMatrixKHR its use as a cooperative matrix component.
"""

EXTENSION = "SPV_KHR_cooperative_matrix"


class CoopOp:
    TypeCooperativeMatrixKHR = 4456
    CooperativeMatrixLoadKHR = 4457
    CooperativeMatrixStoreKHR = 4458
    CooperativeMatrixMulAddKHR = 4459
    CooperativeMatrixLengthKHR = 4460


CAPABILITY_COOPERATIVE_MATRIX = 6022  # Capability CooperativeMatrixKHR

EXTENSION_BFLOAT16 = "SPV_KHR_bfloat16"
CAPABILITY_BFLOAT16_TYPE = 5116  # Capability BFloat16TypeKHR
CAPABILITY_BFLOAT16_COOPERATIVE_MATRIX = 5118  # Capability BFloat16CooperativeMatrixKHR


class FPEncoding:
    """FPEncoding: the optional operand of OpTypeFloat."""

    BFloat16KHR = 0


class Use:
    """CooperativeMatrixUse."""

    MatrixAKHR = 0
    MatrixBKHR = 1
    MatrixAccumulatorKHR = 2


class Layout:
    """CooperativeMatrixLayout."""

    RowMajorKHR = 0
    ColumnMajorKHR = 1


class Operands:
    """CooperativeMatrixOperands (a bit mask): which matrices hold signed integers."""

    NoneKHR = 0x0
    MatrixASignedComponentsKHR = 0x1
    MatrixBSignedComponentsKHR = 0x2
    MatrixCSignedComponentsKHR = 0x4
    MatrixResultSignedComponentsKHR = 0x8
    SaturatingAccumulationKHR = 0x10


# name -> number, for the check against a newer grammar file (tests/compiler)
OPCODES = {f"Op{k}": v for k, v in vars(CoopOp).items() if not k.startswith("_")}
ENUMS = {
    "CooperativeMatrixUse": {k: v for k, v in vars(Use).items() if not k.startswith("_")},
    "CooperativeMatrixLayout": {k: v for k, v in vars(Layout).items() if not k.startswith("_")},
    "CooperativeMatrixOperands": {k: v for k, v in vars(Operands).items() if not k.startswith("_")},
    "FPEncoding": {k: v for k, v in vars(FPEncoding).items() if not k.startswith("_")},
    "Capability": {
        "CooperativeMatrixKHR": CAPABILITY_COOPERATIVE_MATRIX,
        "BFloat16TypeKHR": CAPABILITY_BFLOAT16_TYPE,
        "BFloat16CooperativeMatrixKHR": CAPABILITY_BFLOAT16_COOPERATIVE_MATRIX,
    },
}
