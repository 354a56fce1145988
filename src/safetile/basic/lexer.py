"""BASIC lexer: source text → one token list per source line.

Keywords and built-in function names are case-insensitive; variable names are
case-sensitive and may end in a type suffix (``%`` integer, ``!`` single). ``REM`` and
``'`` start a comment that runs to the end of the line. A line may start with its line
number. Every token records its 0-based source line index and column range.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, NamedTuple

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


class Token(NamedTuple):
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


_TOKEN = re.compile(r"""
    (?P<ws>[ \t\r\f\v]+)
  | (?P<num>\d+(?:\.\d*)?(?:[eE][+-]?\d+)?|\.\d+(?:[eE][+-]?\d+)?)
  | (?P<str>"[^"]*"?)
  | (?P<word>[A-Za-z_][A-Za-z0-9_]*)(?P<suffix>[%!$\#]?)
  | (?P<cmt>')
  | (?P<op>[<>=][<>=]|[-+*/^\\=<>(),;:?])
""", re.X)
_TWO = {"<>": "<>", "<=": "<=", ">=": ">=", "=<": "<=", "=>": ">=", "><": "<>"}


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
        j = m.end()
        if kind == "ws":
            pass
        elif kind == "num":
            lit = m.group(kind)
            try:
                value: Any = int(lit) if lit.isdigit() else float(lit)
            except ValueError:  # pragma: no cover - the pattern only admits valid numbers
                errors.append(src.error(f"malformed number {lit!r}", index, i, j, number))
                value = 0
            tokens.append(Token("num", lit, value, index, i, j))
        elif kind == "str":
            lit = m.group(kind)
            if len(lit) < 2 or not lit.endswith('"'):
                errors.append(src.error("unterminated string: a closing \" is missing", index, i, n, number))
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
            else:
                if upper in KEYWORDS:
                    errors.append(src.error(f"{upper} is a keyword and cannot be used as a variable name",
                                            index, i, j, number))
                tokens.append(Token("name", word + suffix, word + suffix, index, i, j))
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
