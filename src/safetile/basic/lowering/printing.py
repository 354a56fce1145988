"""PRINT: print ops whose parts the host lays out as GW-BASIC's screen does (console.py).

Each PRINT becomes one print op (more where an item may stop the program or print a
warning, so that what comes before it is out first): constant items are formatted while
compiling, run-time numbers and strings become operands. ``;`` joins items, ``,`` moves to
the next zone, ``TAB``/``SPC`` move the cursor, and a PRINT that ends in a separator, TAB or
SPC keeps its line open.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from ... import dtypes as dt
from ...ops import elementwise as ew
from .. import ast as A
from ..console import number_word
from ..vtypes import DBL, LONG
from .exprs import shaped
from .strings import StrVal
from .values import dtype_of, is_tile
from ...frontend.common import MixinBase


class PrintMixin(MixinBase):
    def st_Print(self, s: A.Print) -> None:
        parts: list[tuple] = []
        operands: list = []

        def operand(tile) -> int:
            operands.append(tile)
            return len(operands) - 1

        def flush(end: str = "") -> None:
            if parts or end:
                self.builder.emit("print", [t.value for t in operands],
                                  {"parts": tuple(parts), "end": end, "layout": self.screen})
                parts.clear()
                operands.clear()

        for it in s.items:
            if isinstance(it, A.PrintSep):
                if it.sep == ",":
                    parts.append((",",))
                continue
            if isinstance(it, A.PrintFn):
                flush()
                n = self.at(it.pos, lambda it=it: self.round_int(self.ev(it.arg), LONG, check=False))
                parts.append((it.fn.lower(), None, int(n)) if not is_tile(n) else (it.fn.lower(), operand(n), 0))
                continue
            if not isinstance(it, (A.Num, A.Str, A.Var)):
                flush()  # it may stop the program or warn: what comes before is out first
            v = self.at(it.pos, lambda it=it: self.checked_float(self.ev(it), it))
            if id(it) not in self.an.bad_exprs:
                parts.append(self.print_part(v, operand))
        newline = not s.items or not isinstance(s.items[-1], (A.PrintSep, A.PrintFn))
        flush("\n" if newline else "")

    def print_part(self, v: Any, operand) -> tuple:
        if isinstance(v, StrVal):
            if v.data is not None:
                return ("b", v.data)
            chars, length = self.string_tiles(v)
            return ("$", operand(chars), operand(length))
        v = self.numeric(v)
        if shaped(v):
            return ("a", operand(v))
        d = dtype_of(v)
        kind = "i" if d.is_int else ("d" if d is DBL else "s")
        if not is_tile(v):
            return ("s", number_word(np.asarray(v), kind))
        if kind == "s" and d is not dt.float32:
            v = ew.astype(v, dt.float32)
        return ("n", operand(v), kind)
