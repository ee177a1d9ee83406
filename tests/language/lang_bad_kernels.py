"""Kernels the frontend must reject: shared arrays and atomics used outside their forms.
Each has a golden message in golden/errors/<name>.txt."""

# ruff: noqa: F821, F841, RUF059

from cthreads.gpu import atomic_add, atomic_and, atomic_compare_exchange, shared

BIG = 5000


def shared_in_branch(n: int, y: list[float]) -> None:
    if n > 0:
        tile = shared(float, 64)
        tile[0] = 1.0


def shared_size_not_constant(n: int, y: list[float]) -> None:
    tile = shared(float, n)


def shared_size_float(n: int, y: list[float]) -> None:
    tile = shared(float, 2.5)


def shared_size_zero(n: int, y: list[float]) -> None:
    tile = shared(int, 64 - 64)


def shared_bad_type(n: int, y: list[float]) -> None:
    tile = shared(str, 4)


def shared_too_big(n: int, y: list[float]) -> None:
    a = shared(float, 1000)
    b = shared(int, BIG)


def shared_reassigned(n: int, y: list[float]) -> None:
    tile = shared(float, 4)
    tile = 0


def shared_as_value(n: int, y: list[float]) -> None:
    tile = shared(float, 4)
    y[0] = tile


def shared_annotated(n: int, y: list[float]) -> None:
    tile: float = shared(float, 4)


def shared_in_expression(n: int, y: list[float]) -> None:
    y[0] = shared(float, 4)


def shared_same_name_as_param(n: int, y: list[float]) -> None:
    y = shared(float, 4)


def shared_declared_twice(n: int, y: list[float]) -> None:
    tile = shared(float, 4)
    tile = shared(float, 8)


def shared_keyword(n: int, y: list[float]) -> None:
    tile = shared(float, size=4)


def atomic_in_expression(n: int, h: list[int], y: list[int]) -> None:
    y[0] = 1 + atomic_add(h, 0, 1)


def atomic_in_condition(n: int, h: list[int]) -> None:
    if atomic_add(h, 0, 1) > 0:
        return


def atomic_augassign(n: int, h: list[int]) -> None:
    s = 0
    s += atomic_add(h, 0, 1)


def atomic_float_and(n: int, f: list[float]) -> None:
    atomic_and(f, 0, 1)


def atomic_bool_list(n: int, b: list[bool]) -> None:
    atomic_add(b, 0, True)


def atomic_wrong_arity(n: int, h: list[int]) -> None:
    atomic_add(h, 0)


def atomic_compare_exchange_arity(n: int, h: list[int]) -> None:
    old = atomic_compare_exchange(h, 0, 1)


def atomic_float_into_int_list(n: int, h: list[int]) -> None:
    atomic_add(h, 0, 1.5)


def atomic_on_local(n: int, h: list[int]) -> None:
    v = 3
    atomic_add(v, 0, 1)


def atomic_tuple_target(n: int, h: list[int]) -> None:
    a, b = atomic_add(h, 0, 1)


def atomic_not_imported(n: int, h: list[int]) -> None:
    atomic_xor(h, 0, 1)


def atomic_float_index(n: int, h: list[int]) -> None:
    atomic_add(h, 1.0, 1)
