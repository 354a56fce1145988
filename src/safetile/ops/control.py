"""Structured control flow. The front end emits these; backends walk their regions.

``if``: operand cond (bool scalar), regions (then, else), results = values each yields.
``for``: operands (start, stop, step, *init), one region with args (iv, *carried) that
yields the next carried values; results = final carried values. ``step`` is positive.
``while``: operands (*init), regions (cond, body), both with args (*carried); cond yields
one bool scalar, body yields the next carried values; results = final carried values.
"""
from __future__ import annotations

from ..errors import TileTypeError
from ..ir.catalogue import declare

FAMILY = "control"


def _region_results(types, attrs):
    return list(attrs["result_types"])


def _if_rule(types, attrs):
    if types[0].shape != () or not types[0].dtype.is_bool:
        raise TileTypeError(f"if condition must be a bool scalar, got {types[0]}")
    return list(attrs["result_types"])


declare("if", FAMILY, "run `then` or `else` on a scalar condition; yields merged values",
        _if_rule, effect="control", regions=2)
declare("for", FAMILY, "counted loop start ≤ iv < stop by a positive step, with carried values",
        _region_results, effect="control", regions=1)
declare("while", FAMILY, "loop while the cond region yields true, with carried values",
        _region_results, effect="control", regions=2)
declare("yield", FAMILY, "terminates a region and hands its values to the parent op",
        lambda types, attrs: [], effect="control")
