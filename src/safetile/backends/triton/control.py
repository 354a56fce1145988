"""Structured control flow (ops/control.py) is lowered by the generator itself
(``Gen._if``/``_for``/``_while`` in codegen.py: Triton ``if``/``for``/``while`` with
loop-carried variables); constants are folded there too. These registrations only keep
the one-lowering-per-catalogue-op table complete."""
from __future__ import annotations

from ...errors import TileInternalError
from .codegen import Gen, lowers


@lowers("if", "for", "while", "yield", "constant")
def structural(g: Gen, op):
    raise TileInternalError(f"{op.name} is lowered by the generator, not by an emitter", op.loc)
