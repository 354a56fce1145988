"""Building IR: the active builder, its insertion block and the current source location.

The front end walks a kernel's AST and calls the public ``safetile`` functions with
symbolic values; those functions call ``emit``, which applies the op's type rule from the
catalogue and appends the op to the current block. A type-rule failure becomes a
``TileTypeError`` located at the statement being compiled.
"""
from __future__ import annotations

import contextlib
from typing import Any, Iterator

from ..errors import SourceLoc, TileError, TileTypeError
from .catalogue import OPS
from .core import Block, Op, Value
from .types import IRType


class Builder:
    def __init__(self) -> None:
        self.blocks: list[Block] = []
        self.loc: SourceLoc | None = None
        self.compiler = None  # the front-end compiler in charge (for inlining combiners)

    @property
    def block(self) -> Block:
        return self.blocks[-1]

    @contextlib.contextmanager
    def inside(self, block: Block) -> Iterator[Block]:
        self.blocks.append(block)
        try:
            yield block
        finally:
            self.blocks.pop()

    def emit(self, name: str, operands: list[Value], attrs: dict[str, Any] | None = None,
             regions: list[Block] | None = None, result_types: list[IRType] | None = None) -> Op:
        opdef = OPS[name]
        attrs = attrs or {}
        if result_types is None:
            try:
                result_types = opdef.rule([v.type for v in operands], attrs)
            except TileError:
                raise
            except (TypeError, ValueError) as e:
                raise TileTypeError(f"{name}: {e}") from None
        op = Op(name, list(operands), attrs, result_types, regions, self.loc)
        self.block.ops.append(op)
        return op


_current: Builder | None = None


def current() -> Builder:
    """The active builder; tile functions called outside a kernel raise TypeError."""
    if _current is None:
        raise TypeError("tile functions can only be called inside a kernel or tile function")
    return _current


def active() -> bool:
    return _current is not None


@contextlib.contextmanager
def building(builder: Builder) -> Iterator[Builder]:
    global _current
    saved, _current = _current, builder
    try:
        yield builder
    finally:
        _current = saved


def emit(name: str, operands: list[Value], attrs: dict[str, Any] | None = None, **kw) -> Op:
    return current().emit(name, operands, attrs, **kw)
