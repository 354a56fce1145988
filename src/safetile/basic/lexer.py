"""BASIC lexer: source text → one token list per source line.

Keywords and built-in function names are case-insensitive; variable names are
case-sensitive and may end in a type suffix (``%`` integer, ``!`` single). ``REM`` and
``'`` start a comment that runs to the end of the line. A line may start with its line
number. Every token records its 0-based source line index and column range.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..errors import SourceLoc
from .errors import BasicError

KEYWORDS = frozenset("""
    LET PRINT INPUT DIM TILE OUTPUT IF THEN ELSE ELSEIF ENDIF END FOR TO STEP NEXT WHILE WEND
    GOTO GOSUB RETURN ON DATA READ RESTORE STOP REM AND OR XOR NOT MOD AS RANDOMIZE SPC TAB
""".split())

# Built-in functions (case-insensitive, recognised before "(" and for RND also alone).
FUNCTIONS = {
    # name: (min args, max args)
    "ABS": (1, 1), "SQR": (1, 1), "INT": (1, 1), "FIX": (1, 1), "SGN": (1, 1),
    "SIN": (1, 1), "COS": (1, 1), "TAN": (1, 1), "ATN": (1, 1), "EXP": (1, 1), "LOG": (1, 1),
    "RND": (0, 1), "MMA": (3, 3), "MIN": (2, 2), "MAX": (2, 2), "SUM": (1, 1),
}

TYPE_NAMES = {
    "SINGLE": "float32", "FLOAT": "float32", "FLOAT32": "float32",
    "INTEGER": "int32", "INT32": "int32", "LONG": "int32",
    "HALF": "float16", "FLOAT16": "float16",
    "BFLOAT16": "bfloat16", "BF16": "bfloat16",
    "DOUBLE": "float64", "FLOAT64": "float64",
}

_OPS2 = {"<>", "<=", ">=", "=<", "=>", "><"}
_OPS1 = set("+-*/^\\=<>(),;:")


@dataclass(frozen=True)
class Token:
    kind: str  # 'num' | 'str' | 'name' | 'kw' | 'op' | 'rem'
    text: str  # the source text
    value: Any  # number, string contents, keyword (upper case), name, operator
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


def _number(text: str, i: int) -> int:
    """End index of the number starting at ``i``."""
    n = len(text)
    j = i
    while j < n and text[j].isdigit():
        j += 1
    if j < n and text[j] == ".":
        j += 1
        while j < n and text[j].isdigit():
            j += 1
    if j < n and text[j] in "eE":
        k = j + 1
        if k < n and text[k] in "+-":
            k += 1
        if k < n and text[k].isdigit():
            while k < n and text[k].isdigit():
                k += 1
            j = k
    return j


def tokenize_line(src: Source, index: int, errors: list[BasicError]) -> SourceLine:
    text = src.lines[index]
    n = len(text)
    i = 0
    while i < n and text[i] in " \t":
        i += 1
    number, number_tok = None, None
    if i < n and text[i].isdigit():
        j = i
        while j < n and text[j].isdigit():
            j += 1
        number = int(text[i:j])
        number_tok = Token("num", text[i:j], number, index, i, j)
        i = j
    tokens: list[Token] = []
    while i < n:
        c = text[i]
        if c in " \t\r\f\v":
            i += 1
            continue
        if c.isdigit() or (c == "." and i + 1 < n and text[i + 1].isdigit()):
            j = _number(text, i)
            lit = text[i:j]
            is_int = lit.isdigit()
            try:
                value: Any = int(lit) if is_int else float(lit)
            except ValueError:
                errors.append(src.error(f"malformed number {lit!r}", index, i, j, number))
                value = 0
            tokens.append(Token("num", lit, value, index, i, j))
            i = j
            continue
        if c == '"':
            j = text.find('"', i + 1)
            if j < 0:
                errors.append(src.error("unterminated string: a closing \" is missing", index, i, n, number))
                tokens.append(Token("str", text[i:], text[i + 1:], index, i, n))
                break
            tokens.append(Token("str", text[i:j + 1], text[i + 1:j], index, i, j + 1))
            i = j + 1
            continue
        if c.isalpha() or c == "_":
            j = i
            while j < n and (text[j].isalnum() or text[j] == "_"):
                j += 1
            word = text[i:j]
            upper = word.upper()
            suffix = text[j] if j < n and text[j] in "%!$#" else ""
            if upper in KEYWORDS and not suffix:
                if upper == "REM":
                    tokens.append(Token("rem", text[i:], text[j:], index, i, n))
                    break
                tokens.append(Token("kw", word, upper, index, i, j))
                i = j
                continue
            if upper in KEYWORDS:
                errors.append(src.error(f"{upper} is a keyword and cannot be used as a variable name",
                                        index, i, j + 1, number))
            tokens.append(Token("name", word + suffix, word + suffix, index, i, j + len(suffix)))
            i = j + len(suffix)
            continue
        if c == "'":
            tokens.append(Token("rem", text[i:], text[i + 1:], index, i, n))
            break
        if c == "?":
            tokens.append(Token("kw", "?", "PRINT", index, i, i + 1))
            i += 1
            continue
        two = text[i:i + 2]
        if two in _OPS2:
            op = {"=<": "<=", "=>": ">=", "><": "<>"}.get(two, two)
            tokens.append(Token("op", two, op, index, i, i + 2))
            i += 2
            continue
        if c in _OPS1:
            tokens.append(Token("op", c, c, index, i, i + 1))
            i += 1
            continue
        errors.append(src.error(f"unexpected character {c!r}", index, i, i + 1, number))
        i += 1
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
