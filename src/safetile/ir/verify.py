"""IR verifier: every op re-checked against its catalogue rule, values defined before use,
and region arguments/yields consistent with their parent op."""
from __future__ import annotations

from ..errors import TileInternalError
from .catalogue import OPS
from .core import Block, Function, Op


def verify(fn: Function) -> None:
    defined: set[int] = {p.arg.id for p in fn.runtime_params}
    _block(fn.body, defined)


def _fail(op: Op, msg: str):
    raise TileInternalError(f"IR verification failed at {op.name}: {msg}", op.loc)


def _block(block: Block, defined: set[int]) -> None:
    scope = set(defined) | {a.id for a in block.args}
    if not block.ops or block.ops[-1].name != "yield":
        raise TileInternalError("IR verification failed: region does not end with yield")
    for op in block.ops:
        if op.name not in OPS:
            _fail(op, "unknown op")
        for v in op.operands:
            if v.id not in scope:
                _fail(op, f"operand {v!r} used before definition")
        opdef = OPS[op.name]
        if opdef.effect != "control" and "result_types" not in op.attrs:
            try:
                expected = opdef.rule([v.type for v in op.operands], op.attrs)
            except Exception as e:  # noqa: BLE001 - any rule failure is a verifier failure
                _fail(op, f"type rule rejects the op: {e}")
            got = [r.type for r in op.results]
            if expected != got and op.name != "mma":
                _fail(op, f"result types {got} differ from the rule's {expected}")
        if len(op.regions) != opdef.regions:
            _fail(op, f"expected {opdef.regions} regions, got {len(op.regions)}")
        for region in op.regions:
            _block(region, scope)
        _check_regions(op)
        scope |= {r.id for r in op.results}


def _check_regions(op: Op) -> None:
    rt = [r.type for r in op.results]
    if op.name == "if":
        for region in op.regions:
            if [v.type for v in region.results] != rt:
                _fail(op, "branch yields do not match the if results")
    elif op.name == "for":
        body = op.regions[0]
        if [a.type for a in body.args[1:]] != rt or [v.type for v in body.results] != rt:
            _fail(op, "loop body arguments/yields do not match the carried values")
    elif op.name == "while":
        cond, body = op.regions
        if [a.type for a in cond.args] != rt or [a.type for a in body.args] != rt:
            _fail(op, "while region arguments do not match the carried values")
        if [v.type for v in body.results] != rt or len(cond.results) != 1:
            _fail(op, "while yields do not match the carried values")
