"""Triton lowerings of the debug family (ops/debug.py): prints and asserts write records
into the kernel's print buffer (layout and host side in prints.py), from one thread of the
block (Triton performs scalar atomics and stores once per block)."""
from __future__ import annotations

from ... import dtypes as dt
from .codegen import Gen, lowers, tl_dtype
from .prints import DATA, FAIL_SLOTS, record_fields


def _header(g: Gen) -> str:
    return g.hoist(("print_header",), "_st_pbuf.to(tl.pointer_type(tl.int32))", "ph")


def _block(g: Gen) -> str:
    if g.m.facts.persistent:  # the logical block this turn of the walk runs, in the grid's order
        return "(_st_bx + _st_gx * (_st_by + _st_gy * _st_bz))"
    if g.m.facts.big_grid:
        return "tl.program_id(0)"
    return g.hoist(("print_block",), "tl.program_id(0) + tl.num_programs(0) * (tl.program_id(1) + "
                   "tl.num_programs(1) * tl.program_id(2))", "pb")


def _offsets(shape: tuple[int, ...]) -> str:
    """The C-order element index of every element of a tile of ``shape`` (an int32 tensor)."""
    terms = []
    stride = 1
    for axis in reversed(range(len(shape))):
        index = [":" if a == axis else "None" for a in range(len(shape))]
        ar = f"tl.arange(0, {shape[axis]})"
        if len(shape) > 1:
            ar += f"[{', '.join(index)}]"
        terms.append(ar if stride == 1 else f"{ar} * {stride}")
        stride *= shape[axis]
    return " + ".join(reversed(terms))


@lowers("print")
def print_(g: Gen, op):
    hdr = _header(g)
    fields, size = record_fields(op)
    p = g.tmp(f"tl.atomic_add({hdr}, {size})", "pp")
    g.line(f"tl.atomic_add({hdr} + 1, 1)")
    ok = g.tmp(f"{p} <= _st_pcap - {size}", "pk")
    base = g.tmp(f"_st_pbuf + ({DATA} + {p})", "pa")
    g.line(f"tl.store({base}.to(tl.pointer_type(tl.int32)), {g.m.print_index[id(op)]}, mask={ok})")
    g.line(f"tl.store(({base} + 4).to(tl.pointer_type(tl.int32)), {_block(g)}, mask={ok})")
    for (off, d, shape), v in zip(fields, op.operands):
        target = dt.as_dtype(d)
        value = g.val(v) if target.name == v.type.dtype.name else g.cast(g.val(v), v.type.dtype, target)
        ptr = f"{base} + {off}"
        if shape:
            ptr = f"{ptr} + ({_offsets(shape)}) * {d.itemsize}"
        g.line(f"tl.store(({ptr}).to(tl.pointer_type({tl_dtype(target)})), {value}, mask={ok})")


@lowers("assert")
def assert_(g: Gen, op):
    hdr = _header(g)
    bad = g.tmp(f"({g.val(op.operands[0])}) == 0", "fb")
    k = g.tmp(f"tl.atomic_add({hdr} + 2, 1, mask={bad})", "fk")
    pos = g.tmp(f"tl.atomic_add({hdr}, 0, mask={bad})", "fp")
    keep = g.tmp(f"{bad} & ({k} < {FAIL_SLOTS})", "fs")
    entry = g.tmp(f"{hdr} + 4 + {k} * 4", "fe")
    g.line(f"tl.store({entry}, {_block(g)}, mask={keep})")
    g.line(f"tl.store({entry} + 1, {g.m.print_index[id(op)]}, mask={keep})")
    g.line(f"tl.store({entry} + 2, {pos}, mask={keep})")
