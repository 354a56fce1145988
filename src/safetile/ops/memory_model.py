"""cuTile's memory model for tile code: memory orders and scopes, which orders each memory op
takes (checked as cuTile checks them), and the element types each atomic supports."""
from __future__ import annotations

import enum
from typing import Any

from ..errors import TileTypeError
from .values import describe


class MemoryOrder(enum.Enum):
    WEAK = "weak"
    RELAXED = "relaxed"
    ACQUIRE = "acquire"
    RELEASE = "release"
    ACQ_REL = "acq_rel"


class MemoryScope(enum.Enum):
    NONE = "none"
    BLOCK = "block"
    CLUSTER = "cluster"
    DEVICE = "device"
    SYS = "sys"


_ORDERS = {
    "tile_load": (MemoryOrder.RELAXED, MemoryOrder.ACQUIRE, MemoryOrder.WEAK),
    "tile_store": (MemoryOrder.RELAXED, MemoryOrder.RELEASE, MemoryOrder.WEAK),
    "tile_atomic_rmw": (MemoryOrder.RELAXED, MemoryOrder.ACQUIRE, MemoryOrder.RELEASE, MemoryOrder.ACQ_REL),
    "tile_atomic_cas": (MemoryOrder.RELAXED, MemoryOrder.ACQUIRE, MemoryOrder.RELEASE, MemoryOrder.ACQ_REL),
}
_SCOPES = (MemoryScope.NONE, MemoryScope.BLOCK, MemoryScope.DEVICE, MemoryScope.SYS)


def memory_attrs(memory_order, memory_scope, default_order, default_scope,
                 opcode: str | None = None) -> dict[str, Any]:
    """Memory order and scope attributes, checked as cuTile checks them for ``opcode``: the
    op's valid orders, a scope only with a non-WEAK order and always with one."""
    mo = default_order if memory_order is None else memory_order
    ms = default_scope if memory_scope is None else memory_scope
    if not isinstance(mo, MemoryOrder):
        raise TileTypeError(f"memory_order must be a ct.MemoryOrder, got {describe(mo)}")
    if not isinstance(ms, MemoryScope):
        raise TileTypeError(f"memory_scope must be a ct.MemoryScope, got {describe(ms)}")
    if opcode is not None:
        valid = _ORDERS[opcode]
        if mo not in valid:
            raise TileTypeError(f"Invalid memory order for {opcode}. Got {mo}, expected one of "
                                f"{', '.join(str(o) for o in valid)}")
        if ms not in _SCOPES:
            raise TileTypeError(f"Invalid memory scope for {opcode}. Got {ms}, expected one of "
                                f"{', '.join(str(o) for o in _SCOPES)}")
        if mo is MemoryOrder.WEAK and ms is not MemoryScope.NONE:
            raise TileTypeError(f"{opcode} with WEAK memory ordering cannot specify a memory scope")
        if mo is not MemoryOrder.WEAK and ms is MemoryScope.NONE:
            raise TileTypeError(f"{opcode} with {mo.name} memory ordering requires a memory scope")
    return {"memory_order": mo, "memory_scope": ms}


INT_32_64 = ("int32", "int64", "uint32", "uint64")
# cuTile's element types per atomic (compare-and-swap as exchange)
ATOMIC_DTYPES = {"xchg": INT_32_64 + ("float32", "float64"),
                 "add": INT_32_64 + ("float32", "float64", "float16", "bfloat16"),
                 "max": INT_32_64, "min": INT_32_64, "and": INT_32_64, "or": INT_32_64, "xor": INT_32_64}
