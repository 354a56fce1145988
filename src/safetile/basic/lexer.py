"""BASIC lexer: source text → one token list per source line.

Keywords, built-in function names and variable names are case-insensitive (as in
GW-BASIC, ``x`` and ``X`` are one variable). A name may end in a type sigil: ``%``
integer, ``!`` single, ``#`` double, ``$`` string. Numbers are typed as GW-BASIC types
them (``12`` integer, ``40000`` and ``1.5`` single, ``12345678`` and ``1D2`` double;
``&HFF`` hexadecimal; blanks inside a number are skipped, so ``1 2`` is 12). ``REM`` and
``'`` start a comment that runs to the end of the line;
``DATA`` takes the raw text up to ``:``. A line may start with its line number. Every token
records its 0-based source line index and column range.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, NamedTuple

from ..errors import SourceLoc
from .errors import BasicError
from .gwnumbers import MbfOverflow, literal

KEYWORDS = frozenset([
    "LET", "PRINT", "INPUT", "DIM", "TILE", "OUTPUT", "IF", "THEN", "ELSE", "ELSEIF", "ENDIF",
    "END", "FOR", "TO", "STEP", "NEXT", "WHILE", "WEND", "GOTO", "GOSUB", "RETURN", "ON", "DATA",
    "READ", "RESTORE", "STOP", "REM", "AND", "OR", "XOR", "EQV", "IMP", "NOT", "MOD", "AS",
    "RANDOMIZE", "SPC", "TAB", "DEF", "FN", "DEFINT", "DEFSNG", "DEFDBL", "DEFSTR", "SWAP", "CLS",
    "BEEP", "USING",
])

# Built-in functions: name -> (min args, max args). Recognised before "(" (RND also alone).
FUNCTIONS = {
    "ABS": (1, 1), "SQR": (1, 1), "INT": (1, 1), "FIX": (1, 1), "SGN": (1, 1), "CINT": (1, 1),
    "CSNG": (1, 1), "CDBL": (1, 1), "SIN": (1, 1), "COS": (1, 1), "TAN": (1, 1), "ATN": (1, 1),
    "EXP": (1, 1), "LOG": (1, 1), "RND": (0, 1),
    "LEN": (1, 1), "ASC": (1, 1), "VAL": (1, 1), "INSTR": (2, 3),
    "LEFT$": (2, 2), "RIGHT$": (2, 2), "MID$": (2, 3), "CHR$": (1, 1), "STR$": (1, 1),
    "SPACE$": (1, 1), "STRING$": (2, 2), "HEX$": (1, 1), "OCT$": (1, 1),
    "MMA": (3, 3), "MIN": (2, 2), "MAX": (2, 2), "SUM": (1, 1),
}
STRING_FUNCTIONS = frozenset(n for n in FUNCTIONS if n.endswith("$"))

TYPE_NAMES = {
    "SINGLE": "float32", "FLOAT": "float32", "FLOAT32": "float32",
    "INTEGER": "int32", "INT32": "int32", "LONG": "int32",
    "HALF": "float16", "FLOAT16": "float16",
    "BFLOAT16": "bfloat16", "BF16": "bfloat16",
    "DOUBLE": "float64", "FLOAT64": "float64",
}


class Token(NamedTuple):
    kind: str  # 'num' | 'str' | 'name' | 'kw' | 'op' | 'rem' | 'data'
    text: str  # the source text
    value: Any  # number, string contents, keyword or name (upper case), operator, DATA text
    line: int  # 0-based source line index
    col: int  # 0-based column
    end: int  # column after the token

    def __repr__(self) -> str:
        return f"{self.kind}:{self.text!r}@{self.line + 1}:{self.col + 1}"


@dataclass
class SourceLine:
    index: int  # 0-based source line index
    number: int | None  # BASIC line number (None: unnumbered line)
    number_token: Token | None
    tokens: list[Token]
    text: str


class Source:
    """A BASIC program's text, split into lines, with location helpers."""

    def __init__(self, text: str, filename: str = "<basic>"):
        self.text = text
        self.filename = filename
        self.lines = text.splitlines()

    def loc(self, line: int, col: int, end: int | None = None) -> SourceLoc:
        src = self.lines[line] if 0 <= line < len(self.lines) else ""
        return SourceLoc(self.filename, line + 1, col, end, src)

    def error(self, message: str, line: int, col: int, end: int | None = None,
              basic_line: int | None = None) -> BasicError:
        return BasicError(message, self.loc(line, col, end), basic_line)


_TOKEN = re.compile(r"""
    (?P<ws>[ \t\r\f\v]+)
  | (?P<num>(?:\d(?:[ \t]*\d)*(?:[ \t]*\.(?:[ \t]*\d)*)?|\.(?:[ \t]*\d)+)
            (?:[ \t]*[eEdD][ \t]*[+-]?(?:[ \t]*\d)+)?[!#%]?|&[hH][0-9A-Fa-f]+|&[oO]?[0-7]+)
  | (?P<str>"[^"]*"?)
  | (?P<word>[A-Za-z][A-Za-z0-9_.]*)(?P<suffix>[%!$\#]?)
  | (?P<cmt>')
  | (?P<op>[<>=][<>=]|[-+*/^\\=<>(),;:?])
""", re.VERBOSE)
_TWO = {"<>": "<>", "<=": "<=", ">=": ">=", "=<": "<=", "=>": ">=", "><": "<>"}


def _data_end(text: str, i: int) -> int:
    """Where a DATA statement's raw text ends: at a ``:`` outside quotes, or the line's end."""
    quoted = False
    for j in range(i, len(text)):
        c = text[j]
        if c == '"':
            quoted = not quoted
        elif c == ":" and not quoted:
            return j
    return len(text)


def tokenize_line(src: Source, index: int, errors: list[BasicError]) -> SourceLine:
    text = src.lines[index]
    n = len(text)
    m = re.match(r"[ \t]*(\d+)", text)
    number, number_tok, i = None, None, 0
    if m:
        number = int(m.group(1))
        number_tok = Token("num", m.group(1), number, index, m.start(1), m.end(1))
        i = m.end()
    tokens: list[Token] = []
    match = _TOKEN.match
    while i < n:
        m = match(text, i)
        if m is None:
            errors.append(src.error(f"unexpected character {text[i]!r}", index, i, i + 1, number))
            i += 1
            continue
        kind = m.lastgroup
        assert kind is not None  # every alternative of _TOKEN is a named group
        j = m.end()
        if kind == "ws":
            pass
        elif kind == "num":
            lit = m.group(kind)
            try:  # GW-BASIC reads blanks inside a number as nothing: "1 2" is 12, "12 E3" 12000
                value: Any = literal(lit.upper().replace(" ", "").replace("\t", ""))
            except MbfOverflow:
                errors.append(src.error(f"the number {lit} is too large (Overflow)", index, i, j, number))
                value = literal("0")
            tokens.append(Token("num", lit, value, index, i, j))
        elif kind == "str":
            lit = m.group(kind)
            if len(lit) < 2 or not lit.endswith('"'):  # GW-BASIC ends the string at the line's end
                tokens.append(Token("str", lit, lit[1:], index, i, n))
                break
            tokens.append(Token("str", lit, lit[1:-1], index, i, j))
        elif kind == "suffix" or kind == "word":
            word, suffix = m.group("word"), m.group("suffix")
            upper = word.upper()
            if upper in KEYWORDS and not suffix:
                if upper == "REM":
                    wend = i + len(word)
                    tokens.append(Token("rem", text[i:], text[wend:], index, i, n))
                    break
                tokens.append(Token("kw", word, upper, index, i, j))
                if upper == "DATA":
                    end = _data_end(text, j)
                    tokens.append(Token("data", text[j:end], text[j:end], index, j, end))
                    j = end
            else:
                if upper in KEYWORDS:
                    errors.append(src.error(f"{upper} is a keyword and cannot be used as a variable name",
                                            index, i, j, number))
                tokens.append(Token("name", word + suffix, upper + suffix, index, i, j))
        elif kind == "cmt":
            tokens.append(Token("rem", text[i:], text[i + 1:], index, i, n))
            break
        else:
            op = m.group(kind)
            if len(op) == 2 and op not in _TWO:  # e.g. "==": two one-character operators
                op, j = op[0], i + 1
            if op == "?":
                tokens.append(Token("kw", "?", "PRINT", index, i, j))
            else:
                tokens.append(Token("op", op, _TWO.get(op, op), index, i, j))
        i = j
    return SourceLine(index, number, number_tok, tokens, text)


def tokenize(src: Source, errors: list[BasicError] | None = None) -> list[SourceLine]:
    """Tokenize every non-blank line; problems are appended to ``errors`` (or raised)."""
    own = errors is None
    errors = [] if errors is None else errors
    out = []
    for index, text in enumerate(src.lines):
        if not text.strip():
            continue
        out.append(tokenize_line(src, index, errors))
    if own and errors:
        raise BasicError.collect(errors)
    return out


def dump_tokens(lines: list[SourceLine]) -> str:
    rows = []
    for ln in lines:
        head = f"{ln.index + 1:>4}: " + (f"[{ln.number}] " if ln.number is not None else "")
        rows.append(head + " ".join(f"{t.kind}({t.text})" for t in ln.tokens))
    return "\n".join(rows)
