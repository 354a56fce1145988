"""Errors raised by safetile.

Every compile-time problem in a kernel is a ``TileError`` carrying the source location
(file, line, column range) and rendering the offending line with a caret underline, one
frame per inlined call. A rejected launch raises a ``LaunchError`` subclass before any work
runs, in both kernel styles: ``LaunchTypeError`` (argument count, kinds, element types; also
a ``TypeError``) and ``GridError`` (the grid; a ``ValueError`` like every ``LaunchError``), so
``except TypeError`` / ``except ValueError`` keep working.

A compile error is re-raised without the compiler's own stack frames (its message already
says where in the kernel the problem is); set ``SAFETILE_DEBUG=1`` to keep them when
debugging safetile itself.
"""
from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class SourceLoc:
    """A position in kernel source: file, 1-based line, 0-based column range."""

    filename: str
    line: int
    col: int
    end_col: int | None = None
    source_line: str | None = None
    function: str | None = None

    def render(self) -> str:
        where = f'  File "{self.filename}", line {self.line}, column {self.col + 1}'
        if self.function:
            where += f", in {self.function}"
        if self.source_line is None:
            return where
        text = self.source_line.rstrip("\n")
        stripped = text.lstrip()
        indent = len(text) - len(stripped)
        start = max(self.col - indent, 0)
        end = self.end_col if self.end_col is not None and self.end_col > self.col else self.col + 1
        width = max(min(end, len(text)) - self.col, 1)
        return f"{where}\n    {stripped}\n    {' ' * start}{'^' * width}"


class SafetileError(Exception):
    """The base of every error safetile raises for its user (``except ct.SafetileError``): compile
    errors (``TileError``), refused arguments and launches, ownership and device-operation errors.
    Each is also the built-in exception its meaning suggests (``ValueError``, ``TypeError``,
    ``RuntimeError``, ...)."""


class TileError(SafetileError):
    """Base class of all kernel compilation errors; carries source locations."""

    def __init__(self, message: str, loc: SourceLoc | None = None):
        super().__init__(message)
        self.message = message
        self.locs: list[SourceLoc] = [loc] if loc is not None else []

    @property
    def loc(self) -> SourceLoc | None:
        """The innermost location (where the problem is)."""
        return self.locs[-1] if self.locs else None

    @property
    def line(self) -> int | None:
        return self.loc.line if self.loc else None

    @property
    def col(self) -> int | None:
        return self.loc.col if self.loc else None

    @property
    def filename(self) -> str | None:
        return self.loc.filename if self.loc else None

    def add_frame(self, loc: SourceLoc) -> None:
        """Record an outer (calling) frame; the innermost frame stays last."""
        self.locs.insert(0, loc)

    def __str__(self) -> str:
        if not self.locs:
            return self.message
        frames = "\n".join(loc.render() for loc in self.locs)
        return f"{self.message}\n{frames}"


class TileSyntaxError(TileError):
    """The kernel uses Python syntax that tile code does not accept."""


class TileTypeError(TileError):
    """Operand types, dtypes or shapes do not fit the operation."""


class TileValueError(TileError):
    """An argument has the right type but an invalid value (e.g. a bad axis)."""


class TileUnsupportedFeatureError(TileError):
    """A Python feature outside the tile-code subset."""


class TileRecursionError(TileError):
    """A tile function calls itself (tile code is fully inlined)."""


class TileStaticEvalError(TileError):
    """``static_eval``/``static_iter`` could not evaluate its expression at compile time."""


class TileStaticAssertionError(TileError):
    """A ``static_assert`` condition is false."""


class TileInternalError(TileError):
    """A bug in safetile itself; please report it with the kernel."""


class TileSafetyError(TileError):
    """A safe-style (``@ct.entry``) kernel breaks the ownership rules."""


class TileDeclarationError(TileTypeError, TypeError):
    """A kernel's declaration is malformed (a parameter annotation, a precondition, a decorator
    option): raised when the kernel is defined or decorated, before any launch, located at the
    parameter where the source is known. Also a ``TypeError``."""


class ArgumentError(SafetileError, ValueError, TypeError):
    """A host-side safetile function was given an argument it cannot take (a shape, an element
    type, a device, a seed, a size too large to allocate): refused before anything runs, naming
    the argument, with every argument left as it was. Both a ``ValueError`` and a ``TypeError``,
    so either ``except`` clause keeps working."""


class DTypeError(ArgumentError):
    """Not an element type safetile supports (an unknown name, a complex, string or object dtype)."""


class TileRuntimeError(SafetileError, RuntimeError):
    """A kernel failed while running (e.g. a failed ``assert_``)."""


class LaunchError(SafetileError, ValueError):
    """A launch was rejected before anything ran; no argument was touched."""


class LaunchTypeError(LaunchError, TypeError):
    """An argument does not fit its parameter (count, kind, element type, rank, shape), or the
    stream is not a stream."""


class GridError(LaunchError):
    """The launch grid is malformed, too large for the backend, missing, or disagrees with a
    partition (names the axis)."""


class TileCompilerExecutionError(TileInternalError):
    """The backend compiler (Triton, ptxas) failed on code safetile generated: a bug in safetile
    or a limit of the backend; the compiler's message is kept."""

    def __init__(self, message: str, loc: SourceLoc | None = None, compiler_flags: str = "",
                 compiler_version: str | None = None):
        super().__init__(message, loc)
        self.compiler_flags = compiler_flags
        self.compiler_version = compiler_version


class TileCompilerTimeoutError(TileInternalError):
    """Compiling a kernel took longer than ``ct.compiler_timeout`` allows."""

    def __init__(self, message: str, loc: SourceLoc | None = None, compiler_flags: str = "",
                 compiler_version: str | None = None):
        super().__init__(message, loc)
        self.compiler_flags = compiler_flags
        self.compiler_version = compiler_version


def describe(e: BaseException) -> str:
    """``Type: message`` of an exception raised by the user's code, for a safetile error that
    reports it: even an exception whose ``__str__`` itself raises is described, not re-raised."""
    try:
        text = str(e)
    except Exception:  # noqa: BLE001 - the exception's own __str__ failed: its type says enough
        text = "<its message could not be formatted>"
    return f"{type(e).__name__}: {text}"
