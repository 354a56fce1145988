"""The op catalogue: every IR op is declared exactly once here, by its family module.

A declaration gives the op's name, documentation, effect and its type rule (operand
types + attributes → result types). The front end emits ops through ``emit``, the
verifier re-runs the rules, the printer shows them, and every backend keeps one lowering
per catalogue name (checked by ``tests/test_catalogue.py``).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any
from collections.abc import Callable

from .types import IRType

TypeRule = Callable[[list[IRType], dict[str, Any]], list[IRType]]


@dataclass(frozen=True)
class OpDef:
    name: str
    family: str
    doc: str
    rule: TypeRule
    effect: str = "pure"  # 'pure' | 'read' | 'write' | 'io' | 'control'
    regions: int = 0


OPS: dict[str, OpDef] = {}


def declare(name: str, family: str, doc: str, rule: TypeRule, *, effect: str = "pure",
            regions: int = 0) -> OpDef:
    """Add one op to the catalogue (each name once)."""
    if name in OPS:
        raise RuntimeError(f"op {name!r} declared twice")
    opdef = OpDef(name, family, doc, rule, effect, regions)
    OPS[name] = opdef
    return opdef
