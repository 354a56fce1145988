"""Text form of the IR, for debugging and ``kernel.ir(...)``."""
from __future__ import annotations

import enum

from .core import Block, Function, Op, Value


def _attr(v) -> str:
    if isinstance(v, enum.Enum):
        return v.name
    if isinstance(v, tuple) and v and all(hasattr(t, "dtype") for t in v):
        return "(" + ", ".join(str(t) for t in v) + ")"
    return repr(v) if not hasattr(v, "name") or isinstance(v, str) else str(v)


class Printer:
    def __init__(self) -> None:
        self.names: dict[int, str] = {}

    def name(self, v: Value) -> str:
        if v.id not in self.names:
            self.names[v.id] = f"%{v.hint or ''}{len(self.names)}"
        return self.names[v.id]

    def op(self, op: Op, indent: int) -> list[str]:
        pad = "  " * indent
        lhs = ", ".join(self.name(r) for r in op.results)
        attrs = {k: v for k, v in op.attrs.items() if k != "result_types"}
        attr_text = " {" + ", ".join(f"{k}={_attr(v)}" for k, v in attrs.items()) + "}" if attrs else ""
        types = " : " + ", ".join(str(r.type) for r in op.results) if op.results else ""
        line = f"{pad}{lhs + ' = ' if lhs else ''}{op.name}({', '.join(self.name(o) for o in op.operands)})" \
               f"{attr_text}{types}"
        lines = [line]
        for region in op.regions:
            lines += self.block(region, indent + 1)
        return lines

    def block(self, block: Block, indent: int) -> list[str]:
        pad = "  " * indent
        args = ", ".join(f"{self.name(a)}: {a.type}" for a in block.args)
        lines = [f"{pad}^({args}):"]
        for op in block.ops:
            lines += self.op(op, indent + 1)
        return lines


def format_function(fn: Function) -> str:
    p = Printer()
    params = []
    for prm in fn.params:
        if prm.kind == "constant":
            params.append(f"{prm.name}={prm.constant!r}")
        else:
            params.append(f"{p.name(prm.arg)}: {prm.arg.type}")
    hints = f" hints={fn.hints}" if fn.hints else ""
    head = f"kernel @{fn.name}({', '.join(params)}){hints}"
    body = [line for op in fn.body.ops for line in p.op(op, 1)]
    return "\n".join([head] + body)
