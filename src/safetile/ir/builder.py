"""Building IR: one compilation's builder, its insertion block and source location.

The front end walks a kernel's AST and calls the public ``safetile`` functions with
symbolic values; those functions call ``emit``, which applies the op's type rule from the
catalogue and appends the op to the current block. A type-rule failure becomes a
``TileTypeError`` located at the statement being compiled.

All compile state lives in the ``Builder`` of one compilation. The ``ct.*`` functions find
it through a context variable, so each thread (and each asyncio task) sees only the
compilation it runs itself: two threads compiling at once never share a block, and a host
call such as ``ct.zeros(16)`` made while another thread compiles is a host call.
"""
from __future__ import annotations

import contextlib
import contextvars
from typing import Any, Protocol
from collections.abc import Iterator

from ..errors import ArgumentError, SourceLoc, TileError, TileTypeError
from .catalogue import OPS
from .core import Block, Op, Value
from .types import IRType


class Inliner(Protocol):
    """What an op needs of the front end to compile a tile function it was handed (a combiner)."""

    def call_value(self, fn: Any, args: list) -> Any: ...


class Builder:
    def __init__(self) -> None:
        self.blocks: list[Block] = []
        self.loc: SourceLoc | None = None
        self.compiler: Inliner | None = None  # the front-end compiler in charge (for inlining combiners)
        self.deadline: float | None = None  # when this compilation must have ended (ct.compiler_timeout)
        # run-time scalar parameters of the kernel (value id -> name): an error about a value
        # that had to be a compile-time constant names the parameter it comes from
        self.scalar_params: dict[int, str] = {}

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


_active: contextvars.ContextVar[Builder | None] = contextvars.ContextVar("safetile_builder", default=None)


def current() -> Builder:
    """This thread's active builder; tile functions called outside a kernel raise TypeError."""
    builder = _active.get()
    if builder is None:
        raise ArgumentError("tile functions can only be called inside a kernel or tile function")
    return builder


def active() -> bool:
    """Whether this thread is compiling tile code right now."""
    return _active.get() is not None


@contextlib.contextmanager
def building(builder: Builder) -> Iterator[Builder]:
    """Make ``builder`` the active one in this thread (and task) for the block."""
    token = _active.set(builder)
    try:
        yield builder
    finally:
        _active.reset(token)


def runtime_sources(v: Value, limit: int = 256) -> list[str]:
    """The run-time scalar kernel parameters ``v`` is computed from (in the active compilation)."""
    builder = _active.get()
    if builder is None or not builder.scalar_params:
        return []
    names: list[str] = []
    seen: set[int] = set()
    stack = [v]
    while stack and len(seen) < limit:
        x = stack.pop()
        if x.id in seen:
            continue
        seen.add(x.id)
        name = builder.scalar_params.get(x.id)
        if name is not None and name not in names:
            names.append(name)
        if x.owner is not None:
            stack.extend(x.owner.operands)
    return names


def emit(name: str, operands: list[Value], attrs: dict[str, Any] | None = None, **kw) -> Op:
    return current().emit(name, operands, attrs, **kw)
