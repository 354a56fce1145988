"""The IR: SSA values, operations with nested regions, blocks and kernel functions.

Control flow is structured (``if``/``for``/``while`` ops own their regions and yield
values), so both backends can walk it directly: the CPU backend vectorises across the
grid and the Triton backend prints it as structured source.
"""
from __future__ import annotations

import itertools
from dataclasses import dataclass, field
from typing import Any

from ..errors import SourceLoc
from .types import IRType, TileType

_ids = itertools.count()


class Value:
    """An SSA value. ``owner`` is the op that defines it (``None`` for block arguments)."""

    __slots__ = ("type", "id", "hint", "owner")

    def __init__(self, type: IRType, hint: str = "", owner: Op | None = None):
        self.type = type
        self.id = next(_ids)
        self.hint = hint
        self.owner = owner

    def __repr__(self) -> str:
        return f"%{self.hint or 'v'}{self.id}: {self.type}"


def tile_type(v: Value) -> TileType:
    """The type of ``v``, which the IR's rules make a tile (an op result or operand other than
    an array parameter)."""
    t = v.type
    assert isinstance(t, TileType), v
    return t


class Block:
    """A region body: arguments and a list of ops ending in ``yield``."""

    __slots__ = ("args", "ops")

    def __init__(self, args: list[Value] | None = None):
        self.args: list[Value] = args or []
        self.ops: list[Op] = []

    @property
    def results(self) -> list[Value]:
        """The values yielded by the terminator."""
        return self.ops[-1].operands if self.ops and self.ops[-1].name == "yield" else []


class Op:
    """One operation: catalogue name, operands, attributes, results and regions."""

    __slots__ = ("name", "operands", "attrs", "results", "regions", "loc")

    def __init__(self, name: str, operands: list[Value], attrs: dict[str, Any],
                 result_types: list[IRType], regions: list[Block] | None = None,
                 loc: SourceLoc | None = None):
        self.name = name
        self.operands = operands
        self.attrs = attrs
        self.results = [Value(t, owner=self) for t in result_types]
        self.regions = regions or []
        self.loc = loc

    @property
    def result(self) -> Value:
        return self.results[0]

    def __repr__(self) -> str:
        return f"Op({self.name})"


@dataclass
class Param:
    """A kernel parameter as the IR sees it: runtime value, or compile-time constant."""

    name: str
    kind: str  # 'array' | 'scalar' | 'constant'
    value: Value | None = None  # block argument for runtime params
    constant: Any = None

    @property
    def arg(self) -> Value:
        """The block argument of a run-time parameter (a compile-time constant has none)."""
        assert self.value is not None, f"parameter {self.name!r} is a compile-time constant"
        return self.value


@dataclass
class Function:
    """A compiled kernel body: parameters, the entry block and kernel-level hints."""

    name: str
    params: list[Param]
    body: Block
    hints: dict[str, Any] = field(default_factory=dict)
    filename: str = "<unknown>"
    # Python state the front end read while compiling (opaque here; frontend/captures.py)
    captures: tuple = ()

    @property
    def runtime_params(self) -> list[Param]:
        return [p for p in self.params if p.kind != "constant"]


def walk(block: Block):
    """Yield every op in ``block`` and its nested regions, outer ops first."""
    for op in block.ops:
        yield op
        for region in op.regions:
            yield from walk(region)
