"""``@ct.kernel``: the launchable kernel object of the cuTile Python style.

It is a ``frontend.kernel.TileKernel`` (the function and its compiled IR per
specialisation) plus what launching needs: the dispatch cache of ``ct.launch``
(``dispatch``), the GPU backend's per-specialisation artefacts (``backend_cache``) and its
one-pass launch path (``gpu_fast``). All three are derived from compiled code and are
dropped with it when Python state the kernel read has changed (``refresh``).
"""
from __future__ import annotations

from typing import Any
from collections.abc import Callable

from ..frontend.kernel import TileKernel, validate_hints
from ..frontend.source import require_source
from .backends import BACKENDS


class Kernel(TileKernel):
    """``@ct.kernel``: a tile kernel (cuTile Python style). Launch it with ``ct.launch``."""

    def __init__(self, fn: Callable, hints: dict[str, Any] | None = None):
        super().__init__(fn, hints)
        self.backend_cache: dict[Any, Any] = {}  # per-backend compiled artefacts
        # launch dispatch cache (runtime/launch.py): argument signature -> prepared launch
        self.dispatch: dict[tuple, Any] = {}
        # the GPU backend's one-pass launch path, installed by it after a first CUDA launch:
        # what it learned, and its entry ``gpu_fast(stream, grid, args) -> launched?``
        self.gpu_learned: Any = None
        self.gpu_fast: Any = None

    def forget_compiled(self) -> None:
        super().forget_compiled()
        self.dispatch.clear()
        self.backend_cache.clear()
        self.gpu_learned = self.gpu_fast = None

    def replace_hints(self, **hints) -> Kernel:
        """A new kernel with some hints overridden (and its own compilation cache)."""
        return Kernel(self.fn, {**self.hints, **hints})

    def ir(self, *args) -> str:
        """The IR text for a launch with these arguments (arrays, scalars, constants)."""
        from ..ir.printer import format_function
        from .args import arg_specs
        return format_function(self.specialize(arg_specs(self, args)))

    def source(self, *args) -> str:
        """The Triton source the GPU backend generates for a launch with these arguments."""
        return BACKENDS.get("triton").kernel_source(self, args)


def kernel(fn: Callable | None = None, **hints) -> Kernel | Callable[[Callable], Kernel]:
    """Decorator: ``@ct.kernel`` or ``@ct.kernel(num_ctas=2, occupancy=4)``.

    Hints are checked here, at decoration, so a bad value fails where it is written; so is
    whether the kernel's source can be found (see ``frontend/source.py``).
    """
    if fn is None:
        validate_hints(hints)
        return lambda f: _checked(Kernel(f, hints))
    return _checked(Kernel(fn, hints))


def _checked(k: Kernel) -> Kernel:
    require_source(k.fn)
    return k
