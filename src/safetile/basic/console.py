"""GW-BASIC's screen, as program output: the layout of PRINT, on the host.

BASIC's PRINT compiles to print ops whose parts are layout items (below); every backend
hands each executed print to this layout (``ops.debug`` protocol), which keeps the cursor
column for the whole launch and produces exactly the text GW-BASIC writes (as PC-BASIC
shows it with its output redirected):

* The screen is 80 columns. A number (its text and a trailing space) or a string that does
  not fit in what is left of the line starts a new line first, unless the cursor is at the
  line's start; a longer one runs on (the screen wraps it, the text has no line break).
* A comma moves to the next 14-column zone, or to a new line from the last zone.
* ``TAB(n)`` moves to column n (modulo 80); to a column already passed it starts a new line
  first. ``SPC(n)`` prints n modulo 80 spaces. Neither breaks a line by itself.
* A PRINT that ends in a full 80-column line adds an empty line (the cursor was parked past
  the last column).
* A run-time error message starts on a new line (``Illegal function call in 60``).

Parts: ``("s", text)`` a constant number, ``("b", bytes)`` a constant string, ``("n", i, kind)`` number operand i
(kind ``i`` integer, ``s`` single, ``d`` double), ``("$", i, j)`` string operand (bytes i,
length j), ``("a", i)`` a tile, ``(",",)``, ``("tab", i, n)`` / ``("spc", i, n)`` (operand
i, or the constant n when i is None), ``("w", text)`` text written as is (soft-error
messages), ``("msg", text)`` a message on a line of its own (STOP's *Break in ...*).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .gwnumbers import DOUBLE, SINGLE, int_text, number_text

WIDTH = 80
ZONE = 14
# Characters are code page 437. These control codes show their glyph on the screen and in
# the text; the others (NUL, BEL, TAB, LF, VT, FF, CR, 28-31) are written as they are.
_GLYPHS = dict(zip([*range(1, 7), 8, *range(14, 28), 127], "☺☻♥♦♣♠◘♫☼►◄↕‼¶§▬↨↑↓→←⌂"))
_CONTROL = "\t\n\r\a\x0b\x0c\x1c\x1d\x1e\x1f"  # no column of their own


@dataclass
class Cursor:
    col: int = 1  # 1-based column of the next character
    overflow: bool = False  # a full line was written: the next character starts a new line


def number_word(value: np.ndarray, kind: str) -> str:
    """A number as PRINT writes it (with the trailing space)."""
    v = value.item()
    if kind == "i":
        return int_text(int(v)) + " "
    return number_text(v, DOUBLE if kind == "d" else SINGLE) + " "


def decode(data: bytes) -> str:
    """Program bytes as the text GW-BASIC shows (code page 437)."""
    return "".join(_GLYPHS.get(b) or bytes([b]).decode("cp437") for b in data)


def string_bytes(chars: np.ndarray, length) -> bytes:
    n = int(np.clip(int(np.asarray(length).item()), 0, len(chars)))
    return bytes(np.asarray(chars, dtype=np.uint8)[:n])


def line_width(data: bytes) -> int:
    """The columns GW-BASIC counts for a string when deciding to start a new line: bytes up to
    the first CR or LF, control bytes not counted, backspace counted back."""
    width = 0
    for b in data:
        if b in (10, 13):
            break
        width += 1 if b >= 32 else (-1 if b == 8 else 0)
    return width


class GWScreen:
    """The GW-BASIC print layout (one object per program; one ``Cursor`` per launch)."""

    def __repr__(self) -> str:  # appears in the IR text, which keys compiled kernels
        return f"GWScreen({WIDTH})"

    def start(self) -> Cursor:
        return Cursor()

    def render(self, cur: Cursor, parts, values, end: str) -> str:
        out: list[str] = []
        for p in parts:
            tag = p[0]
            if tag == "s":
                self._word(cur, p[1], out)
            elif tag == "n":
                self._word(cur, number_word(values[p[1]], p[2]), out)
            elif tag == "b":
                data = p[1]
                self._word(cur, decode(data), out, line_width(data), b"\r" in data or b"\n" in data)
            elif tag == "msg":
                out.append(self.failure(cur, p[1]))
            elif tag == "$":
                data = string_bytes(values[p[1]], values[p[2]])
                self._word(cur, decode(data), out, line_width(data), b"\r" in data or b"\n" in data)
            elif tag == "a":
                self._word(cur, np.array2string(values[p[1]], separator=", ", threshold=64) + " ", out)
            elif tag == "w":
                self._put(cur, p[1], out)
            elif tag == ",":
                zone = (cur.col - 1) // ZONE + 1
                if zone >= WIDTH // ZONE:
                    self._newline(cur, out)
                else:
                    self._put(cur, " " * (1 + ZONE * zone - cur.col), out)
            elif tag == "spc":
                n = self._count(p, values)
                self._put(cur, " " * (max(0, n) % WIDTH), out)
            elif tag == "tab":
                pos = max(0, self._count(p, values) - 1) % WIDTH + 1
                if pos < cur.col:
                    self._newline(cur, out)
                    self._put(cur, " " * (pos - 1), out)
                else:
                    self._put(cur, " " * (pos - cur.col), out)
        if end:
            if cur.overflow:
                self._newline(cur, out)
            self._newline(cur, out)
        return "".join(out)

    def failure(self, cur: Cursor, message: str) -> str:
        out: list[str] = []
        if cur.col != 1 or cur.overflow:
            self._newline(cur, out)
        self._put(cur, message, out)
        self._newline(cur, out)
        return "".join(out)

    @staticmethod
    def _count(p, values) -> int:
        """A TAB/SPC argument as GW-BASIC takes it (an unsigned 16-bit integer)."""
        n = p[2] if p[1] is None else int(values[p[1]].item())
        return n + 0x10000 if n < 0 else n

    def _word(self, cur: Cursor, text: str, out: list[str], width: int | None = None,
              breaks: bool | None = None) -> None:
        """Write a number or string, first starting a new line if it does not fit."""
        if width is None:
            width = line_width(text.encode("latin-1", "replace"))
            breaks = "\n" in text or "\r" in text
        col = cur.col + (1 if cur.overflow else 0)
        if col != 1 and col - 1 + width > WIDTH and not breaks:
            self._newline(cur, out)
        self._put(cur, text, out)

    @staticmethod
    def _newline(cur: Cursor, out: list[str]) -> None:
        out.append("\n")
        cur.col, cur.overflow = 1, False

    @staticmethod
    def _put(cur: Cursor, text: str, out: list[str]) -> None:
        for c in text:
            if c in "\r\n":
                out.append("\n")
                cur.col, cur.overflow = 1, False
                continue
            out.append(c)
            if c in _CONTROL:
                if c == "\t":
                    cur.col = min(WIDTH, (cur.col - 1) // 8 * 8 + 9)
                continue
            if cur.overflow:
                cur.col, cur.overflow = 1, False
            if cur.col < WIDTH:
                cur.col += 1
            else:
                cur.overflow = True
