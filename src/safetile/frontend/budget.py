"""``ct.compiler_timeout``: a limit on how long compiling one kernel may take.

The limit belongs to the thread (a context variable, unlike cuTile Python's process-wide
setting). The front end checks it before each statement and each unrolled loop iteration,
so a kernel that unrolls without end stops with ``TileCompilerTimeoutError`` instead of
hanging; a backend compilation that is already running is allowed to finish.
"""
from __future__ import annotations

import contextlib
import contextvars
import time
from collections.abc import Iterator

from ..errors import ArgumentError, TileCompilerTimeoutError
from ..runtime import env

_limit: contextvars.ContextVar[float | None] = contextvars.ContextVar("safetile_compiler_timeout", default=None)


@contextlib.contextmanager
def compiler_timeout(timeout_sec: float) -> Iterator[None]:
    """Within the block, compiling a kernel fails with ``TileCompilerTimeoutError`` once it has
    taken ``timeout_sec`` seconds (``CUDA_TILE_COMPILER_TIMEOUT_SEC`` sets a default)."""
    if isinstance(timeout_sec, bool) or not isinstance(timeout_sec, (int, float)) or not timeout_sec > 0:
        raise ArgumentError(f"compiler timeout must be a positive number of seconds, got {timeout_sec!r}")
    token = _limit.set(float(timeout_sec))
    try:
        yield
    finally:
        _limit.reset(token)


def deadline() -> float | None:
    """The monotonic time by which a compilation starting now must end (None: no limit)."""
    limit = _limit.get()
    if limit is None:
        limit = env.compiler_timeout_sec()
    return None if limit is None or limit <= 0 else time.monotonic() + limit


def check(when: float | None, loc=None) -> None:
    """Raise ``TileCompilerTimeoutError`` when the deadline has passed."""
    if when is not None and time.monotonic() > when:
        raise TileCompilerTimeoutError("compilation exceeded the compiler timeout (ct.compiler_timeout)", loc)
