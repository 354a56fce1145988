"""Triton lowerings of the debug family (ops/debug.py): ``tl.device_print`` and
``tl.device_assert`` (kernels with asserts are compiled with ``debug=True``)."""
from __future__ import annotations

from .codegen import Gen, lowers


@lowers("print")
def print_(g: Gen, op):
    text = " ".join(p.strip() for p in op.attrs["parts"] if isinstance(p, str) and p.strip())
    text = text.replace("%", "").replace("\n", " ").replace('"', "'")
    args = [g.val(v) for v in op.operands]
    return f"tl.device_print({text!r}{''.join(', ' + a for a in args)})"


@lowers("assert")
def assert_(g: Gen, op):
    g.m.uses_assert = True
    msg = op.attrs["message"]
    if op.loc is not None:
        msg = f"{msg} ({op.loc.filename}:{op.loc.line})"
    return f"tl.device_assert({g.val(op.operands[0])}, {msg!r})"
