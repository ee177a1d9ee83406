"""A kernel's source text, its parsed `ast` (parsed once, cached) and source locations.

`KernelSource` maps AST positions back to the user's file (1-based line and character column,
not the UTF-8 byte offsets `ast` reports) and builds `GpuCompileError`s with a caret.
"""

from __future__ import annotations

import ast
import inspect
import re
import textwrap
from typing import NoReturn

from ...errors import GpuCompileError


class KernelSource:
    """The `def` block of one kernel (with its decorators) as it was when decorated."""

    def __init__(self, lines: tuple[str, ...], filename: str, firstlineno: int) -> None:
        self.lines = lines  # original lines, indentation kept (columns are the file's)
        self.filename = filename
        self.firstlineno = firstlineno  # file line number of lines[0]
        self._tree: ast.FunctionDef | None = None
        self._shift = 0  # parsed-line -> file-line offset

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, KernelSource):
            return NotImplemented
        return (self.lines, self.filename, self.firstlineno) == (
            other.lines,
            other.filename,
            other.firstlineno,
        )

    __hash__ = None  # type: ignore[assignment] - mutable (its parse is cached), as before

    def __repr__(self) -> str:
        return f"KernelSource({self.filename}:{self.firstlineno}, {len(self.lines)} lines)"

    @classmethod
    def of(cls, fn) -> KernelSource | None:
        """The source of `fn`, or None when Python has none (exec'd strings, the plain REPL)."""
        try:
            lines, lnum = inspect.getsourcelines(fn)
        except (OSError, TypeError):
            return None
        return cls(tuple(lines), fn.__code__.co_filename, max(lnum, 1))

    @property
    def text(self) -> str:
        """The source block, dedented (for display and hashing)."""
        return textwrap.dedent("".join(self.lines))

    def function_node(self) -> ast.FunctionDef:
        """The kernel's `FunctionDef`, parsed on first use and cached."""
        if self._tree is None:
            text = "".join(self.lines)
            shift = self.firstlineno - 1
            if self.lines and self.lines[0][:1] in (" ", "\t"):
                # An indented def (method, nested function): parse it as the body of `if 1:`
                # rather than dedenting, so columns and multi-line strings stay exact.
                text = "if 1:\n" + text
                shift -= 1
            try:
                from .depth import parse  # the parser recurses on deep nesting too

                module = parse(text, self.filename)
            except (RecursionError, MemoryError):  # CPython's "too complex" / "too deep"
                raise GpuCompileError(
                    "the kernel's source nests too deeply for Python's parser",
                    filename=self.filename,
                    lineno=self.firstlineno,
                    col=1,
                    line=self.lines[0].rstrip("\n") if self.lines else "",
                    allowed="split long expressions into partial results in locals",
                ) from None
            except SyntaxError as exc:  # the file was edited into invalid Python after import
                raise GpuCompileError(
                    f"the kernel's source does not parse any more: {exc.msg}",
                    filename=self.filename,
                    lineno=(exc.lineno or 1) + shift,
                    col=exc.offset or 1,
                    line=(exc.text or "").rstrip("\n"),
                    allowed="fix the file and re-import the module",
                ) from None
            node = module.body[0]
            if isinstance(node, ast.If):
                node = node.body[0]
            if not isinstance(node, ast.FunctionDef):
                raise GpuCompileError(
                    "the source found for this kernel is not a `def` block",
                    filename=self.filename,
                    lineno=self.firstlineno,
                    col=1,
                    line=self.lines[0] if self.lines else "",
                    allowed="define kernels with `def` at module level",
                )
            self._tree, self._shift = node, shift
        return self._tree

    # ---------------------------------------------------------------- locations and errors

    def position(self, node: ast.AST) -> tuple[int, int, str]:
        """(file line, 1-based character column, source line) of `node`."""
        self.function_node()
        lineno = getattr(node, "lineno", None)
        if lineno is None:
            return self.firstlineno, 1, self.lines[0] if self.lines else ""
        index = lineno + self._shift - self.firstlineno
        line = self.lines[index] if 0 <= index < len(self.lines) else ""
        col = node.col_offset
        if not line.isascii():
            # `ast` columns count UTF-8 bytes; carets and editors count characters.
            col = len(line.encode("utf-8")[:col].decode("utf-8", "replace"))
        return lineno + self._shift, col + 1, line.rstrip("\r\n")

    def error(
        self, kernel: str, node: ast.AST, message: str, allowed: str | None = None
    ) -> GpuCompileError:
        lineno, col, line = self.position(node)
        return GpuCompileError(
            message,
            kernel=kernel,
            filename=self.filename,
            lineno=lineno,
            col=col,
            line=line,
            allowed=allowed,
        )


class Position:
    """A bare source position (parsed line, UTF-8 column) for errors that no node covers:
    an operator between two operands, an `else` keyword."""

    def __init__(self, lineno: int, col_offset: int):
        self.lineno, self.col_offset = lineno, col_offset


def keyword_position(
    source: KernelSource, first: ast.AST, last: ast.AST, keyword: str
) -> ast.AST | Position:
    """Where `keyword` starts a line between `first` (exclusive) and `last` (inclusive), scanning
    upward from `last`; `last` itself when not found."""
    pattern = re.compile(rf"\s*{keyword}\b")
    for lineno in range(last.lineno, first.lineno, -1):
        index = lineno + source._shift - source.firstlineno
        if 0 <= index < len(source.lines):
            m = pattern.match(source.lines[index])
            if m:
                return Position(lineno, m.end() - len(keyword))
    return last


class Located:
    """Mixin for the lowering classes: `self.fail(node, ...)` raises at `node`'s position."""

    source: KernelSource
    kernel_name: str

    def fail(self, node: ast.AST, message: str, allowed: str | None = None) -> NoReturn:
        raise self.source.error(self.kernel_name, node, message, allowed) from None


def source_unavailable(kernel: str, fn) -> GpuCompileError:
    """The error for a kernel whose source Python cannot find."""
    where = getattr(getattr(fn, "__code__", None), "co_filename", "<unknown>")
    return GpuCompileError(
        f"the source code of kernel `{kernel}` is not available (it was defined in {where}), "
        "so it cannot be compiled",
        kernel=kernel,
        allowed="define @Gpu kernels in a .py file (or a notebook cell); code run through "
        "exec() or typed at the plain Python prompt has no source to compile",
    )
