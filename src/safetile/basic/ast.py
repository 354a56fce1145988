"""The BASIC syntax tree.

Every node carries ``pos = (source line index, column, end column)``; statements also
carry ``line``, the BASIC line number they belong to (``None`` on unnumbered lines).
"""
from __future__ import annotations

from dataclasses import dataclass, fields
from typing import Any

Pos = tuple  # (line index, col, end)


# ----------------------------------------------------------------------------- expressions

@dataclass
class Expr:
    pos: Pos


@dataclass
class Num(Expr):
    value: Any  # np.int16 (integer), np.float32 (single) or np.float64 (double), as GW-BASIC types it
    text: str


@dataclass
class Str(Expr):
    value: str


@dataclass
class Var(Expr):
    name: str


@dataclass
class Bid(Expr):
    pass


@dataclass
class Index(Expr):
    """``NAME(args)``: an array element or tile (the analyzer decides which)."""
    name: str
    args: list[Expr]


# what an assignment, READ, INPUT or SWAP stores to: a variable or an array element
Target = Var | Index


@dataclass
class Call(Expr):
    """A built-in function call; ``name`` upper case."""
    name: str
    args: list[Expr]


@dataclass
class FnCall(Expr):
    """A call of a ``DEF FN`` function; ``name`` is the name after FN (``FNA`` -> ``A``)."""
    name: str
    args: list[Expr]


@dataclass
class Unary(Expr):
    op: str  # '-' | '+' | 'NOT'
    operand: Expr


@dataclass
class Binary(Expr):
    op: str  # + - * / \ ^ MOD = <> < > <= >= AND OR XOR EQV IMP
    left: Expr
    right: Expr


# ----------------------------------------------------------------------------- statements

@dataclass
class Stmt:
    pos: Pos
    line: int | None


@dataclass
class Let(Stmt):
    target: Target
    expr: Expr


@dataclass
class PrintSep:
    pos: Pos
    sep: str  # ';' | ','


@dataclass
class PrintFn:
    pos: Pos
    fn: str  # 'SPC' | 'TAB'
    arg: Expr


@dataclass
class Print(Stmt):
    items: list  # Expr | PrintSep | PrintFn


@dataclass
class InputItem:
    pos: Pos
    name: str
    is_array: bool
    dtype: str | None


@dataclass
class Input(Stmt):
    prompt: str | None
    items: list[InputItem]


@dataclass
class DimDecl:
    pos: Pos
    name: str
    sizes: list[Expr]
    dtype: str | None


@dataclass
class Dim(Stmt):
    decls: list[DimDecl]


@dataclass
class TileDeclItem:
    pos: Pos
    name: str
    dims: list[Expr]
    dtype: str | None


@dataclass
class TileDecl(Stmt):
    decls: list[TileDeclItem]


@dataclass
class OutputName:
    pos: Pos
    name: str


@dataclass
class Output(Stmt):
    names: list[OutputName]


@dataclass
class If(Stmt):
    """Single-line IF (``then``/``orelse`` statement lists) or the head of a block IF."""
    cond: Expr
    then: list[Stmt] | None
    orelse: list[Stmt] | None
    block: bool


@dataclass
class ElseIf(Stmt):
    cond: Expr


@dataclass
class Else(Stmt):
    pass


@dataclass
class EndIf(Stmt):
    pass


@dataclass
class For(Stmt):
    var: str
    var_pos: Pos
    start: Expr
    stop: Expr
    step: Expr | None


@dataclass
class Next(Stmt):
    var: str | None


@dataclass
class While(Stmt):
    cond: Expr


@dataclass
class Wend(Stmt):
    pass


@dataclass
class Goto(Stmt):
    target: int
    target_pos: Pos


@dataclass
class Gosub(Stmt):
    target: int
    target_pos: Pos


@dataclass
class Return(Stmt):
    pass


@dataclass
class OnGoto(Stmt):
    expr: Expr
    targets: list[tuple[int, Pos]]
    gosub: bool


@dataclass
class DataItem:
    pos: Pos
    text: str | None  # the item, blanks around it removed, quotes removed (None: text after the quotes)
    quoted: bool


@dataclass
class Data(Stmt):
    values: list[DataItem]


@dataclass
class Read(Stmt):
    targets: list[Target]


@dataclass
class Restore(Stmt):
    target: int | None
    target_pos: Pos | None


@dataclass
class End(Stmt):
    kind: str  # 'END' | 'STOP'


@dataclass
class Rem(Stmt):
    text: str


@dataclass
class Randomize(Stmt):
    seed: Expr | None


@dataclass
class DefFn(Stmt):
    """``DEF FNname(params) = expr``: a one-line user function."""
    name: str
    params: list[tuple[str, Pos]]
    expr: Expr | None  # None: the body does not parse (Syntax error when the function is called)
    broken: Any = None  # the BasicError of a body that does not parse


@dataclass
class DefType(Stmt):
    """``DEFINT A-C, X`` (and DEFSNG, DEFDBL, DEFSTR): the default type of names by first letter."""
    sigil: str  # '%' | '!' | '#' | '$'
    letters: str  # upper-case letters covered


@dataclass
class Swap(Stmt):
    a: Target
    b: Target


@dataclass
class NoOp(Stmt):
    """A screen statement with nothing to do in a program's text output (CLS, BEEP)."""
    keyword: str


@dataclass
class Broken(Stmt):
    """A line that does not parse: GW-BASIC stops there with ``Syntax error`` when it runs."""
    message: str
    at: Pos  # where the parser gave up


@dataclass
class Line:
    """One program line: its number (or None), statements and source line index."""
    number: int | None
    index: int
    stmts: list[Stmt]
    pos: Pos


@dataclass
class Program:
    lines: list[Line]
    source: Any = None


# ----------------------------------------------------------------------------- dumping

def dump(node: Any, indent: int = 0) -> str:
    """An indented text form of a node (``safetile check --dump ast``)."""
    pad = "  " * indent
    if isinstance(node, Program):
        return "\n".join(dump(ln, indent) for ln in node.lines)
    if isinstance(node, Line):
        head = f"{pad}Line {node.number if node.number is not None else '-'} (source line {node.index + 1})"
        return "\n".join([head] + [dump(s, indent + 1) for s in node.stmts])
    if isinstance(node, list):
        return "\n".join(dump(x, indent) for x in node)
    if isinstance(node, Expr):
        return pad + expr_text(node)
    if not hasattr(node, "__dataclass_fields__"):
        return pad + repr(node)
    parts, children = [], []
    for f in fields(node):
        if f.name in ("pos", "line"):
            continue
        v = getattr(node, f.name)
        if isinstance(v, Expr):
            parts.append(f"{f.name}={expr_text(v)}")
        elif isinstance(v, list) and v and all(isinstance(x, Stmt) for x in v):
            children.append((f.name, v))
        elif isinstance(v, list):
            parts.append(f"{f.name}=[{', '.join(_item_text(x) for x in v)}]")
        elif v is not None and not (f.name.endswith("_pos")):
            parts.append(f"{f.name}={v!r}")
    lines = [f"{pad}{type(node).__name__}({', '.join(parts)})"]
    for name, stmts in children:
        lines.append(f"{pad}  {name}:")
        lines.extend(dump(s, indent + 2) for s in stmts)
    return "\n".join(lines)


def _item_text(x: Any) -> str:
    if isinstance(x, Expr):
        return expr_text(x)
    if isinstance(x, PrintSep):
        return repr(x.sep)
    if isinstance(x, PrintFn):
        return f"{x.fn}({expr_text(x.arg)})"
    if isinstance(x, InputItem):
        return x.name + ("()" if x.is_array else "") + (f" AS {x.dtype}" if x.dtype else "")
    if isinstance(x, DimDecl):
        return f"{x.name}({', '.join(expr_text(e) for e in x.sizes)})" + (f" AS {x.dtype}" if x.dtype else "")
    if isinstance(x, TileDeclItem):
        return f"{x.name}({', '.join(expr_text(e) for e in x.dims)})" + (f" AS {x.dtype}" if x.dtype else "")
    if isinstance(x, OutputName):
        return x.name
    if isinstance(x, DataItem):
        return repr(x.text)
    if isinstance(x, tuple):
        return repr(x[0])
    return repr(x)


def expr_text(e: Expr, show=lambda name: name) -> str:
    """An expression as text; ``show`` maps (canonical) names to how to write them."""
    def text(x: Expr) -> str:
        if isinstance(x, Num):
            return x.text
        if isinstance(x, Str):
            return '"' + x.value + '"'
        if isinstance(x, Var):
            return show(x.name)
        if isinstance(x, Bid):
            return "BID"
        if isinstance(x, FnCall):
            return f"FN{show(x.name)}({', '.join(text(a) for a in x.args)})"
        if isinstance(x, Index):
            return f"{show(x.name)}({', '.join(text(a) for a in x.args)})"
        if isinstance(x, Call):
            return f"{x.name}({', '.join(text(a) for a in x.args)})"
        if isinstance(x, Unary):
            return f"({x.op}{' ' if x.op == 'NOT' else ''}{text(x.operand)})"
        if isinstance(x, Binary):
            return f"({text(x.left)} {x.op} {text(x.right)})"
        return repr(x)
    return text(e)
