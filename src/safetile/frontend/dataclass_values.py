"""Dataclass instances in tile code.

A dataclass built inside a kernel from tiles (``Pair(a, b)``), or passed to a kernel with
array and scalar fields, is a ``DataclassValue``: its class and one front-end value per field.
Its fields read like attributes, its methods (``__post_init__``, ``__call__``,
``__getitem__`` and any other) are inlined with ``self`` bound to it, and control flow merges
it field by field like a tuple. It is immutable as a value: assigning ``p.x = ...`` rebinds
the variable ``p`` to a copy with the new field (other variables holding the old value do not
change).
"""
from __future__ import annotations

import dataclasses
from typing import Any


class DataclassValue:
    """A dataclass instance whose fields may hold tiles, arrays or other front-end values."""

    __slots__ = ("cls", "values")

    def __init__(self, cls: type, values: dict[str, Any]):
        self.cls = cls
        self.values = values

    @property
    def field_names(self) -> list[str]:
        return [f.name for f in dataclasses.fields(self.cls)]

    def leaves(self) -> tuple:
        """Field values in field order (the tuple control flow merges)."""
        return tuple(self.values[n] for n in self.field_names)

    def with_leaves(self, leaves) -> "DataclassValue":
        return DataclassValue(self.cls, dict(zip(self.field_names, leaves)))

    def replace(self, name: str, value: Any) -> "DataclassValue":
        return DataclassValue(self.cls, {**self.values, name: value})

    def __repr__(self) -> str:
        return f"{self.cls.__name__}({', '.join(f'{k}=...' for k in self.values)})"


class BoundMethod:
    """``value.method`` for a DataclassValue: the plain function and the value as ``self``."""

    __slots__ = ("fn", "self_value")

    def __init__(self, fn: Any, self_value: DataclassValue):
        self.fn = fn
        self.self_value = self_value


def is_dataclass_type(x: Any) -> bool:
    return isinstance(x, type) and dataclasses.is_dataclass(x)
