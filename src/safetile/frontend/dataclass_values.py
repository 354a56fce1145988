"""Dataclass instances in tile code.

A dataclass built inside a kernel from tiles (``Pair(a, b)``), or passed to a kernel with
array and scalar fields, is a ``DataclassValue``: its class and one front-end value per field.
Its fields read like attributes, its methods (``__post_init__``, ``__call__``,
``__getitem__`` and any other) are inlined with ``self`` bound to it, and control flow merges
it field by field like a tuple. As in cuTile, only frozen dataclasses are accepted (see
``dataclass_problem``); ``object.__setattr__(self, ...)`` in ``__post_init__`` rebinds ``self``
to a copy with the new field.
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

    def with_leaves(self, leaves) -> DataclassValue:
        return DataclassValue(self.cls, dict(zip(self.field_names, leaves)))

    def replace(self, name: str, value: Any) -> DataclassValue:
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


def dataclass_problem(cls: type) -> str | None:
    """Why tile code cannot use dataclass ``cls`` (cuTile's rules: frozen, a dataclass itself,
    no custom ``__new__``, no ``default_factory`` or ``init=False`` fields), or None."""
    if not cls.__dataclass_params__.frozen:  # type: ignore[attr-defined]  # set by @dataclass, untyped
        return "Only frozen dataclasses are supported"
    if "__dataclass_params__" not in cls.__dict__:
        return "Non-dataclass subclasses of a dataclass are not supported"
    for klass in cls.__mro__:
        if "__new__" in klass.__dict__:
            if klass is not object:
                return "Dataclasses with custom __new__ are not supported"
            break
    for f in dataclasses.fields(cls):
        if f.default_factory is not dataclasses.MISSING:
            return "Dataclasses with default_factory fields are not supported"
        if not f.init:
            return "Dataclasses with init=False fields are not supported"
    return None
