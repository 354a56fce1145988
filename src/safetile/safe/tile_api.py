"""Marking safe-style callables so the tile front end calls them instead of inlining them.

The front end calls the op modules' functions directly with symbolic values and inlines
every other Python function as tile code. The safe style's device-side API (``z.store``,
``load_tile_like``, the host/tile factories...) must be *called* the same way, so its
callables carry the front end's builtin mark.
"""
from __future__ import annotations

from typing import TypeVar
from collections.abc import Callable

from ..frontend.common import BUILTIN_MARK

F = TypeVar("F", bound=Callable)


def tile_api(fn: F) -> F:
    """Have the tile front end call ``fn`` directly (with symbolic tile values)."""
    setattr(fn, BUILTIN_MARK, True)
    return fn


def tile_api_class(cls):
    """Mark every public method of a device-side class (see ``tile_api``)."""
    for name, v in list(vars(cls).items()):
        if callable(v) and not name.startswith("__") or name in ("__tile_range__",):
            tile_api(v)
    return cls
