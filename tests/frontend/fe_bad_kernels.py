"""Kernels outside the language, one per golden error message (tests/frontend/golden/errors/).

Plain functions (not decorated): the tests wrap them. Positions matter to the goldens, so add
new kernels at the end of the file.
"""

# ruff: noqa: B015, F821, F841, PLW0120, PLW0602 - kernels outside the language, on purpose

import math

from cthreads.gpu.indices import GlobalIdx
from cthreads.sync import Barrier

TABLE = [1.0, 2.0]
BIG = 2**40


def uses_assert(x: list[float]) -> None:
    i: int = GlobalIdx.x
    assert x[i] > 0.0
    x[i] = 1.0


def uses_try(x: list[float]) -> None:
    try:
        x[0] = 1.0
    except IndexError:
        pass


def uses_raise(x: list[float]) -> None:
    if x[0] < 0.0:
        raise ValueError("negative")


def uses_with(x: list[float]) -> None:
    with open("f") as f:
        x[0] = 1.0


def uses_lambda(x: list[float]) -> None:
    f = lambda v: v + 1
    x[0] = 1.0


def uses_listcomp(x: list[float]) -> None:
    y = [v * 2.0 for v in x]


def uses_print(x: list[float]) -> None:
    i = GlobalIdx.x
    print(x[i])


def uses_unknown_function(x: list[float]) -> None:
    x[0] = helper(x[1])


def float_into_int_local(x: list[float]) -> None:
    count = 0
    count = x[0] * 2.0
    x[1] = 1.0


def float_index(x: list[float]) -> None:
    i = GlobalIdx.x
    x[i / 2] = 1.0


def nested_index(x: list[float]) -> None:
    x[0][1] = 1.0


def slicing(x: list[float]) -> None:
    x[0] = x[1:3]


def list_method(x: list[float]) -> None:
    x.append(1.0)


def return_value(x: list[float]) -> None:
    return x[0]


def walrus(x: list[float]) -> None:
    if (v := x[0]) > 1.0:
        x[1] = v


def is_compare(x: list[float], flag: bool) -> None:
    if flag is True:
        x[0] = 1.0


def in_compare(x: list[int], k: int) -> None:
    if k in x:
        x[0] = 1


def for_over_list(x: list[float]) -> None:
    for v in x:
        x[0] = v


def while_else(x: list[int]) -> None:
    i = 0
    while i < 10:
        i += 1
    else:
        x[0] = i


def literal_too_big(x: list[int]) -> None:
    x[0] = 3000000000


def module_list(x: list[float]) -> None:
    x[0] = TABLE[0]


def module_int_too_big(x: list[int]) -> None:
    x[0] = BIG


def barrier_construction(x: list[float]) -> None:
    b = Barrier(64)
    x[0] = 1.0


def assign_list_param(x: list[float], y: list[float]) -> None:
    x = y


def list_as_scalar(x: list[float]) -> None:
    v = x + 1.0


def unknown_name(x: list[float]) -> None:
    x[0] = undefined_thing


def fstring(x: list[float]) -> None:
    s = f"{x[0]}"


def global_stmt(x: list[int]) -> None:
    global BIG
    x[0] = 1


def nested_def(x: list[float]) -> None:
    def inner(v):
        return v

    x[0] = 1.0


def math_no_counterpart(x: list[float]) -> None:
    x[0] = math.gamma(x[1])


def bitand_float(x: list[float]) -> None:
    x[0] = x[1] & 3


def used_before_assigned(x: list[float]) -> None:
    x[0] = total
    total = 1.0


def compare_list(x: list[float], y: list[float]) -> None:
    if x == y:
        x[0] = 1.0


def negative_index(x: list[float]) -> None:
    x[-1] = 0.0


def del_stmt(x: list[float]) -> None:
    v = x[0]
    del v


def starred_call(x: list[float]) -> None:
    x[0] = max(*x)


def unicode_columns(x: list[float]) -> None:
    café = x[1]
    x[0] = café * café + nope


def no_effect(x: list[float]) -> None:
    x[0] == 1.0


# Signature errors: raised at decoration, with the same rendering.


def str_param(s: str, x: list[float]) -> None:
    x[0] = 1.0


def missing_annotation(n, x: list[float]) -> None:
    x[0] = 1.0


def star_args(x: list[float], *more: list[float]) -> None:
    x[0] = 1.0


def default_value(x: list[float], n: int = 4) -> None:
    x[0] = 1.0


def returns_float(x: list[float]) -> float:
    return x[0]
