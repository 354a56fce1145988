"""Debugging ops: printing from blocks and run-time assertions.

``print`` accepts f-strings whose fields are tiles; ``printf`` takes a C-style format
string. Every backend turns an executed print into text with the one ``Printer`` below, so
output is the same everywhere: once per block, in block order when the launch ends (a
one-block launch on the CPU prints as it runs).

A print op may name a *layout*: an object (from a front end) that renders its parts
through a console state kept for the whole launch; BASIC's PRINT uses one for GW-BASIC's
print zones, TAB, SPC and 80-column lines. The protocol is three methods:
``start() -> state``, ``render(state, parts, values, end) -> str`` and
``failure(state, message) -> str`` (the text shown when an assert with that layout fails).
"""
from __future__ import annotations

import re
import sys
from typing import Any

import numpy as np

from .. import dtypes as dt
from ..errors import TileTypeError
from ..ir.builder import emit
from ..ir.catalogue import declare
from .values import Tile, describe, is_const

FAMILY = "debug"

declare("print", FAMILY, "print text and tile values (attrs parts: strings and (operand, spec), end, layout)",
        lambda types, attrs: [], effect="io")
declare("assert", FAMILY, "fail the launch with `message` where the bool scalar is false (attr layout)",
        lambda types, attrs: [], effect="io")


class FormatString:
    """A compiled f-string: literal text and (value, format spec) fields."""

    def __init__(self, parts: list[Any]):
        self.parts = parts

    def text(self) -> str:
        if any(not isinstance(p, str) for p in self.parts):
            raise TileTypeError("a format spec cannot contain run-time values")
        return "".join(self.parts)


def _emit_print(parts: list[Any], end: str) -> None:
    operands: list[Tile] = []
    template: list[Any] = []
    for p in parts:
        if isinstance(p, str):
            template.append(p)
        else:
            value, spec = p
            if is_const(value):
                template.append(format_value(np.asarray(value), spec))
                continue
            if not isinstance(value, Tile):
                raise TileTypeError(f"print: cannot print {describe(value)}")
            template.append((len(operands), spec))
            operands.append(value)
    emit("print", [t.value for t in operands], {"parts": tuple(template), "end": end})


def print(*args, sep: str = " ", end: str = "\n") -> None:  # noqa: A001 - mirrors the builtin
    """Print values from each block (tiles print as arrays; scalars as numbers)."""
    parts: list[Any] = []
    for k, a in enumerate(args):
        if k:
            parts.append(sep)
        if isinstance(a, FormatString):
            parts.extend(a.parts)
        elif isinstance(a, str):
            parts.append(a)
        elif isinstance(a, dt.DType):
            parts.append(a.name)
        else:
            parts.append((a, ""))
    _emit_print(parts, end)


_C_SPEC = re.compile(r"%([-+ #0]*\d*(?:\.\d+)?)(?:hh|h|ll|l|z)?([diouxXeEfFgGcs%])")


def printf(format: str, *args) -> None:  # noqa: A002
    """C-style formatted printing: ``%d``, ``%f``, ``%.3e``, ``%x``... (no newline added)."""
    if not isinstance(format, str):
        raise TileTypeError("printf: the format must be a string constant")
    parts: list[Any] = []
    pos, k = 0, 0
    for m in _C_SPEC.finditer(format):
        parts.append(format[pos:m.start()])
        pos = m.end()
        flags, conv = m.group(1), m.group(2)
        if conv == "%":
            parts.append("%")
            continue
        if k >= len(args):
            raise TileTypeError(f"printf: format {format!r} needs more than {len(args)} argument(s)")
        conv = {"i": "d", "u": "d", "c": "c", "s": "s"}.get(conv, conv)
        parts.append((args[k], "%" + flags + conv))
        k += 1
    parts.append(format[pos:])
    if k != len(args):
        raise TileTypeError(f"printf: format {format!r} uses {k} argument(s) but {len(args)} were given")
    _emit_print(parts, "")


def assert_(cond, message: str = "assertion failed") -> None:
    """Fail the launch (raising TileRuntimeError naming the block) where ``cond`` is false."""
    if is_const(cond):
        if not cond:
            from ..errors import TileStaticAssertionError
            raise TileStaticAssertionError(f"assertion is always false: {message}")
        return
    if not isinstance(cond, Tile):
        raise TileTypeError(f"assert_: condition must be a bool tile, got {describe(cond)}")
    if not cond.dtype.is_bool:
        from .elementwise import not_equal
        cond = not_equal(cond, 0)
    if cond.shape != ():
        from .reduction import min as tile_min
        cond = tile_min(cond.astype(dt.int8)) != 0
    if not isinstance(message, str):
        raise TileTypeError("assert_: the message must be a string constant")
    emit("assert", [cond.value], {"message": message})


# ----------------------------------------------------------------------------- rendering

def format_value(value: np.ndarray, spec: str) -> str:
    """One printed field: a scalar with a printf spec (``%d``) or a Python format spec; a
    tile as an array."""
    if value.ndim == 0:
        v = value.item()
        if spec.startswith("%"):
            if spec[-1] in "diouxXc" and isinstance(v, float):
                v = int(v)
            return spec % v
        return format(v, spec)
    return np.array2string(value, separator=", ", threshold=64)


class Printer:
    """Turns executed print ops into text, in the order they are given; one per launch, so
    a layout's console state runs through the whole launch."""

    def __init__(self) -> None:
        self._states: dict[int, tuple[Any, Any]] = {}  # id(layout) -> (layout, state)

    def _state(self, layout):
        entry = self._states.get(id(layout))
        if entry is None:
            entry = self._states[id(layout)] = (layout, layout.start())
        return entry[1]

    def text(self, attrs: dict, values: list[np.ndarray]) -> str:
        """The text of one execution of a print op (``values``: one block's operands)."""
        layout = attrs.get("layout")
        if layout is not None:
            return layout.render(self._state(layout), attrs["parts"], values, attrs["end"])
        out = []
        for p in attrs["parts"]:
            out.append(p if isinstance(p, str) else format_value(values[p[0]], p[1]))
        return "".join(out) + attrs["end"]

    def failure_text(self, attrs: dict) -> str:
        """What a failing assert shows on stdout (only asserts with a layout show anything)."""
        layout = attrs.get("layout")
        return "" if layout is None else layout.failure(self._state(layout), attrs["message"])

    def write(self, text: str) -> None:
        if text:
            sys.stdout.write(text)
