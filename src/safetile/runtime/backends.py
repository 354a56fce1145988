"""Where the runtime finds its backends: one registry, consulted by name.

The runtime never imports a backend module: backends sit above it (they use the runtime's
argument and grid helpers) and are loaded here on first use, so importing safetile stays
cheap and the layers point one way. A backend is a module exposing the functions its
entry below names:

- ``cpu`` (``safetile.backends.cpu.executor``): ``execute(fn, grid3, arrays, scalars,
  race_detector)`` runs a compiled Function over a grid with NumPy.
- ``triton`` (``safetile.backends.triton.launcher``): ``specialization(kernel, fn, specs)``
  gives the per-specialisation CUDA launcher, ``learn_fast(kernel, variant, grid3, args)``
  teaches the one-pass launch path, ``kernel_source(kernel, args, target)`` returns the
  generated source.
"""
from __future__ import annotations

import importlib
from types import ModuleType

from ..errors import ArgumentError
from ..locks import FORK_LOCKS


class BackendRegistry:
    """Backend name -> module, imported once on first use (thread-safe)."""

    def __init__(self, modules: dict[str, str]):
        self._paths = dict(modules)
        self._loaded: dict[str, ModuleType] = {}
        self._lock = FORK_LOCKS.new()

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(self._paths)

    def get(self, name: str) -> ModuleType:
        """The backend module called ``name`` (ValueError for an unknown name)."""
        module = self._loaded.get(name)
        if module is None:
            path = self._paths.get(name)
            if path is None:
                raise ArgumentError(f"unknown backend {name!r}; known backends: {', '.join(self._paths)}")
            with self._lock:
                module = self._loaded.get(name)
                if module is None:
                    module = self._loaded[name] = importlib.import_module(path)
        return module


BACKENDS = BackendRegistry({"cpu": "safetile.backends.cpu.executor",
                            "triton": "safetile.backends.triton.launcher"})
