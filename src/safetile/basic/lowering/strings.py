"""Strings: a fixed-capacity byte tile and a length.

A string value is a ``uint8`` tile of 256 bytes holding up to 255 characters (GW-BASIC's
limit) with zeros past its length, plus an int32 length. A result longer than 255
characters stops the program with *String too long*, as GW-BASIC does. Strings known while
compiling stay constants (``StrVal.data``); one that meets run-time values is loaded from a
hidden table of string bytes (``__text``). Moving characters around (joining, ``MID$``,
``RIGHT$``, ``INSTR``) uses ``take``, an in-register gather. Bad arguments stop the program
with *Illegal function call*, as in GW-BASIC.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from ... import dtypes as dt
from ...ir.types import TileType
from ...ops import elementwise as ew
from ...ops import factories as fac
from ...ops import memory as mem
from ...ops import reduction as red
from ...ops import shape as shp
from ...ops.values import Tile, as_tile
from .. import ast as A
from ..vtypes import INT, LONG, MAX_STRING, STRING_CAPACITY
from .values import const, dtype_of, is_tile, round_half_away
from ...frontend.common import MixinBase

U8 = dt.uint8
MATCH = TileType(dt.bool_, (STRING_CAPACITY,))


class StrVal:
    """A string: known bytes (``data``), or a bytes tile and a length (tile or int32)."""

    __slots__ = ("chars", "data", "length")

    def __init__(self, chars: Tile | None, length: Any, data: bytes | None = None):
        if chars is not None and chars.dtype is not U8:
            chars = ew.astype(chars, U8)
        if isinstance(length, Tile) and length.dtype is not LONG:
            length = ew.astype(length, LONG)
        self.chars, self.length, self.data = chars, length, data

    @classmethod
    def constant(cls, data: bytes) -> StrVal:
        return cls(None, np.int32(len(data)), data)

    def __repr__(self) -> str:
        return f"StrVal({self.data!r})" if self.data is not None else "StrVal(<tile>)"


class StringsMixin(MixinBase):
    # ------------------------------------------------------------------ basics

    def lanes(self) -> Tile:
        return fac.arange(STRING_CAPACITY, dtype=LONG)

    def text_row(self, data: bytes) -> int:
        """The row of the hidden text table holding ``data`` (rows are shared)."""
        try:
            return self.text_rows.index(data, len(self.an.data))
        except ValueError:
            self.text_rows.append(data)
            return len(self.text_rows) - 1

    def load_text(self, row) -> Tile:
        """Row ``row`` (an int or an int32 tile) of the hidden text table, as a bytes tile."""
        t = mem.load(self.text_table(), index=(row, 0), shape=(1, STRING_CAPACITY),
                     padding_mode=mem.PaddingMode.ZERO)
        return shp.reshape(t, (STRING_CAPACITY,))

    def string_tiles(self, s: StrVal) -> tuple[Tile, Tile]:
        """The bytes tile and the length tile of a string."""
        if s.chars is None:
            chars = fac.full((STRING_CAPACITY,), 0, U8) if not s.data else self.load_text(self.text_row(s.data))
        else:
            chars = s.chars
        length = s.length if is_tile(s.length) else as_tile(np.int32(int(s.length)), LONG)
        return chars, length

    def ev_Str(self, e: A.Str) -> StrVal:
        return StrVal.constant(e.value.encode("cp437", "replace")[:MAX_STRING])

    def checked_length(self, n) -> Any:
        """A result length; more than 255 characters is *String too long*."""
        if is_tile(n):
            self.runtime_error(ew.less_equal(n, MAX_STRING), "String too long")
            return ew.minimum(n, MAX_STRING)
        if int(n) > MAX_STRING:
            self.runtime_error(False, "String too long")
            return np.int32(MAX_STRING)
        return np.int32(int(n))

    def window(self, s: StrVal, start, length) -> StrVal:
        """``length`` characters of ``s`` from position ``start`` (0-based; both in range)."""
        if s.data is not None and not is_tile(start) and not is_tile(length):
            a = int(start)
            return StrVal.constant(s.data[a:a + int(length)])
        chars, _ = self.string_tiles(s)
        lanes = self.lanes()
        moved = chars if not is_tile(start) and int(start) == 0 else shp.take(chars, ew.add(lanes, start))
        keep = ew.less(lanes, length)
        return StrVal(ew.where(keep, moved, const(0, U8)), length if is_tile(length) else np.int32(int(length)))

    # ------------------------------------------------------------------ operators

    def concat(self, a: StrVal, b: StrVal) -> StrVal:
        if a.data is not None and b.data is not None:
            if len(a.data) + len(b.data) > MAX_STRING:
                self.runtime_error(False, "String too long")
                return StrVal.constant((a.data + b.data)[:MAX_STRING])
            return StrVal.constant(a.data + b.data)
        if b.data == b"":
            return a
        if a.data == b"":
            return b
        ac, al = self.string_tiles(a)
        bc, bl = self.string_tiles(b)
        total = self.checked_length(ew.add(al, bl))
        shifted = shp.take(bc, ew.sub(self.lanes(), al))
        chars = ew.where(ew.less(self.lanes(), al), ac, shifted)
        return StrVal(ew.where(ew.less(self.lanes(), total), chars, const(0, U8)), total)

    def compare(self, op: str, a: StrVal, b: StrVal):
        """``a op b`` for strings: byte by byte; a string that is a prefix of the other is less."""
        if a.data is not None and b.data is not None:
            p, q = a.data, b.data
            return {"=": p == q, "<>": p != q, "<": p < q, ">": p > q, "<=": p <= q, ">=": p >= q}[op]
        ac, al = self.string_tiles(a)
        bc, bl = self.string_tiles(b)
        lanes = self.lanes()
        av = ew.where(ew.less(lanes, al), ew.astype(ac, dt.int16), const(-1, dt.int16))
        bv = ew.where(ew.less(lanes, bl), ew.astype(bc, dt.int16), const(-1, dt.int16))
        first = red.min(ew.where(ew.not_equal(av, bv), lanes, STRING_CAPACITY))
        at = ew.equal(lanes, first)
        x = red.sum(ew.where(at, av, const(0, dt.int16)))
        y = red.sum(ew.where(at, bv, const(0, dt.int16)))
        equal = ew.equal(first, STRING_CAPACITY)
        if op in ("=", "<>"):
            return equal if op == "=" else ew.bitwise_not(equal)
        less = ew.bitwise_and(ew.bitwise_not(equal), ew.less(x, y))
        greater = ew.bitwise_and(ew.bitwise_not(equal), ew.greater(x, y))
        return {"<": less, ">": greater, "<=": ew.bitwise_not(greater), ">=": ew.bitwise_not(less)}[op]

    # ------------------------------------------------------------------ functions

    def byte_arg(self, v, what: str = "Illegal function call"):
        """A character count or code: an integer in 0..255 (else *Illegal function call*)."""
        n = self.round_int(v, INT)
        if is_tile(n):
            self.runtime_error(ew.bitwise_and(ew.greater_equal(n, 0), ew.less_equal(n, MAX_STRING)), what)
            return ew.astype(ew.minimum(ew.maximum(n, const(0, INT)), const(MAX_STRING, INT)), LONG)
        if not 0 <= int(n) <= MAX_STRING:
            self.runtime_error(False, what)
            return np.int32(0)
        return np.int32(int(n))

    def string_call(self, name: str, args: list):
        """The string functions and the numeric functions of strings."""
        if name == "LEN":
            (s,) = args
            return const(len(s.data), INT) if s.data is not None else ew.astype(self.string_tiles(s)[1], INT)
        if name == "ASC":
            return self.asc(args[0])
        if name == "CHR$":
            n = self.byte_arg(args[0])
            if not is_tile(n):
                return StrVal.constant(bytes([int(n)]))
            return StrVal(ew.where(ew.equal(self.lanes(), 0), ew.astype(n, U8), const(0, U8)), np.int32(1))
        if name in ("SPACE$", "STRING$"):
            n = self.byte_arg(args[0])
            code = np.int32(32) if name == "SPACE$" else self.char_code(args[1])
            if not is_tile(n) and not is_tile(code):
                return StrVal.constant(bytes([int(code)]) * int(n))
            code_u8 = ew.astype(code, U8) if is_tile(code) else const(int(code), U8)
            return StrVal(ew.where(ew.less(self.lanes(), n), code_u8, const(0, U8)), n)
        if name == "LEFT$":
            s, n = args[0], self.byte_arg(args[1])
            return self.window(s, np.int32(0), self.min_len(s, n))
        if name == "RIGHT$":
            s, n = args[0], self.byte_arg(args[1])
            length = self.min_len(s, n)
            start = self.sub_len(self.length_of(s), length)
            return self.window(s, start, length)
        if name == "MID$":
            return self.mid(args)
        if name == "INSTR":
            return self.instr(args)
        if name == "STR$":
            return self.number_string(args[0])
        if name == "VAL":
            return self.string_value(args[0])
        if name in ("HEX$", "OCT$"):
            return self.radix_string(args[0], 16 if name == "HEX$" else 8)
        raise self.error(f"internal error: string function {name}")  # pragma: no cover

    def length_of(self, s: StrVal):
        return np.int32(len(s.data)) if s.data is not None else self.string_tiles(s)[1]

    def min_len(self, s: StrVal, n):
        length = self.length_of(s)
        if is_tile(length) or is_tile(n):
            return ew.minimum(length, n)
        return np.int32(min(int(length), int(n)))

    @staticmethod
    def sub_len(a, b):
        if is_tile(a) or is_tile(b):
            return ew.sub(a, b)
        return np.int32(int(a) - int(b))

    def asc(self, s: StrVal):
        if s.data is not None:
            if not s.data:
                self.runtime_error(False, "Illegal function call")
                return const(0, INT)
            return const(s.data[0], INT)
        chars, length = self.string_tiles(s)
        self.runtime_error(ew.greater(length, 0), "Illegal function call")
        return ew.astype(red.sum(ew.where(ew.equal(self.lanes(), 0), ew.astype(chars, INT), const(0, INT))), INT)

    def char_code(self, v):
        """STRING$'s character: a code in 0..255 or a string's first character."""
        if isinstance(v, StrVal):
            if v.data is not None:
                if not v.data:
                    self.runtime_error(False, "Illegal function call")
                    return np.int32(0)
                return np.int32(v.data[0])
            return ew.astype(self.asc(v), LONG)
        return self.byte_arg(v)

    def mid(self, args: list) -> StrVal:
        s = args[0]
        start = self.round_int(args[1], INT)
        if is_tile(start):
            self.runtime_error(ew.bitwise_and(ew.greater_equal(start, 1), ew.less_equal(start, MAX_STRING)),
                               "Illegal function call")
            start = ew.astype(start, LONG)
        elif not 1 <= int(start) <= MAX_STRING:
            self.runtime_error(False, "Illegal function call")
            start = np.int32(1)
        else:
            start = np.int32(int(start))
        length = self.length_of(s)
        first = self.sub_len(start, np.int32(1))
        rest = self.sub_len(length, first)
        rest = ew.maximum(rest, 0) if is_tile(rest) else np.int32(max(int(rest), 0))
        n = self.byte_arg(args[2]) if len(args) == 3 else rest
        count = ew.minimum(n, rest) if is_tile(n) or is_tile(rest) else np.int32(min(int(n), int(rest)))
        return self.window(s, first, count)

    def instr(self, args: list):
        """INSTR([start,] a, b): the position of b in a from ``start`` (1-based), or 0."""
        start: Any = np.int32(1)
        if len(args) == 3:
            start = self.round_int(args[0], INT)
            if is_tile(start):
                self.runtime_error(ew.bitwise_and(ew.greater_equal(start, 1), ew.less_equal(start, MAX_STRING)),
                                   "Illegal function call")
                start = ew.astype(start, LONG)
            elif not 1 <= int(start) <= MAX_STRING:
                self.runtime_error(False, "Illegal function call")
            args = args[1:]
        a, b = args
        if a.data is not None and b.data is not None and not is_tile(start):
            k = int(start)
            if not a.data or k > len(a.data):
                return const(0, INT)
            found = a.data[k - 1:].find(b.data)
            return const(0 if found < 0 else k + found, INT)
        ac, al = self.string_tiles(a)
        bc, bl = self.string_tiles(b)
        lanes = self.lanes()
        match = self.instr_matches(ac, bc, bl)
        s0 = ew.sub(start, 1) if is_tile(start) else np.int32(int(start) - 1)
        ok = ew.bitwise_and(match, ew.greater_equal(lanes, s0))
        ok = ew.bitwise_and(ok, ew.less_equal(ew.add(lanes, bl), al))
        pos = red.min(ew.where(ok, lanes, STRING_CAPACITY))
        found = ew.where(ew.equal(pos, STRING_CAPACITY), 0, ew.add(pos, 1))
        empty = ew.bitwise_or(ew.equal(al, 0), ew.greater(start, al))
        return ew.astype(ew.where(empty, 0, found), INT)

    def instr_matches(self, ac: Tile, bc: Tile, bl: Tile) -> Tile:
        """Where in ``ac`` the first ``bl`` bytes of ``bc`` begin (a bool tile over positions)."""
        lanes = self.lanes()
        self.types["$match"] = MATCH
        self.env["$match"] = fac.full((STRING_CAPACITY,), True, dt.bool_)

        def step(k: Tile) -> None:
            want = red.sum(ew.where(ew.equal(lanes, k), ew.astype(bc, LONG), 0))
            got = ew.astype(shp.take(ac, ew.add(lanes, k)), LONG)
            self.env["$match"] = ew.bitwise_and(self.env["$match"], ew.equal(got, want))

        self.emit_loop("for", {"$match"}, set(), None, step,
                       bounds=[as_tile(np.int32(0), LONG), bl, as_tile(np.int32(1), LONG)], iv_type=TileType(LONG, ()))
        return self.env.pop("$match")

    # ------------------------------------------------------------------ numbers and text

    def number_string(self, v) -> StrVal:
        """STR$: the number as PRINT shows it, without the trailing space."""
        from ..gwnumbers import DOUBLE, SINGLE, int_text, number_text
        v = self.numeric(v)
        if not is_tile(v):
            d = dtype_of(v)
            text = int_text(int(v)) if d.is_int else number_text(v, DOUBLE if d is dt.float64 else SINGLE)
            return StrVal.constant(text.encode("ascii"))
        from .numtext import float_text, int_text_tile
        if v.dtype.is_int:
            return StrVal(*int_text_tile(self, v))
        return StrVal(*float_text(self, self.to_float(v)))

    def string_value(self, s: StrVal):
        """VAL: the number at the start of the string (0 if there is none)."""
        from ..gwnumbers import val
        if s.data is not None:
            return np.float32(val(s.data.decode("latin-1")))
        from .numtext import parse_number
        return parse_number(self, *self.string_tiles(s))

    def radix_string(self, v, base: int) -> StrVal:
        """HEX$ / OCT$ of an integer in -32768..65535 (negative numbers as 16-bit patterns)."""
        v = self.numeric(v)
        if not is_tile(v):
            f = float(v)
            n = round_half_away(f)
            if not -32768 <= n <= 65535:
                self.runtime_error(False, "Overflow")
                n = 0
            n &= 0xFFFF
            return StrVal.constant((f"{n:X}" if base == 16 else f"{n:o}").encode("ascii"))
        from .numtext import radix_text
        return StrVal(*radix_text(self, v, base))
