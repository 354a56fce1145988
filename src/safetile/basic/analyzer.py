"""Static analysis of a parsed BASIC program.

* Declarations: ``INPUT`` (kernel parameters, in order), ``DIM`` (array shapes and element
  types), ``TILE`` (tile shapes of arrays, or tile-shaped variables), ``OUTPUT``.
* Structure: ``FOR``/``NEXT``, ``WHILE``/``WEND`` and block ``IF``/``ELSEIF``/``ELSE``/
  ``ENDIF`` pair up lexically (in program order) into a tree; single-line ``IF`` bodies are
  sub-trees. Unmatched parts are errors (``NEXT without FOR`` ...).
* Jumps: every ``GOTO``/``GOSUB``/``THEN n``/``ON ... GOTO``/``RESTORE n`` target must exist.
* Types: a variable is an int32 scalar if its name ends in ``%``, else float32; a
  variable assigned a tile (or named in ``TILE``) holds tiles of one fixed shape.
  Expression shapes are checked (subscripts and conditions are scalars, MMA operand shapes
  fit, element-wise operands broadcast).
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from .. import dtypes as dt
from ..ir.types import TileType
from . import ast as A
from .errors import BasicError
from .lexer import FUNCTIONS, Source

INT, FLOAT, BOOL = dt.int32, dt.float32, dt.bool_


def var_dtype(name: str) -> dt.DType:
    return INT if name.endswith("%") else FLOAT


# ----------------------------------------------------------------------------- tables

@dataclass
class ScalarInput:
    name: str
    dtype: dt.DType
    pos: A.Pos
    line: int | None


@dataclass
class ArrayInfo:
    name: str
    dtype: dt.DType
    sizes: list[A.Expr]
    pos: A.Pos
    line: int | None
    is_input: bool = False
    is_output: bool = False
    tile: tuple[int, ...] | None = None
    tile_pos: A.Pos | None = None
    tile_line: int | None = None
    static_sizes: tuple[int | None, ...] = ()

    @property
    def ndim(self) -> int:
        return len(self.sizes)

    @property
    def is_local(self) -> bool:
        return not (self.is_input or self.is_output)

    @property
    def kind(self) -> str:
        if self.is_input and self.is_output:
            return "inout"
        return "input" if self.is_input else ("output" if self.is_output else "local")


# ----------------------------------------------------------------------------- structure tree

@dataclass
class LineMark:
    number: int
    pos: A.Pos


@dataclass
class SimpleNode:
    stmt: A.Stmt


@dataclass
class IfNode:
    stmt: A.If
    arms: list  # [(cond, Seq, head stmt)]
    orelse: list | None
    single: bool
    end: A.Stmt | None = None


@dataclass
class ForNode:
    stmt: A.For
    body: list
    next: A.Next | None = None
    index: int = 0


@dataclass
class WhileNode:
    stmt: A.While
    body: list
    wend: A.Wend | None = None
    index: int = 0


def walk_stmts(stmts: list[A.Stmt]):
    """Every statement, including those inside single-line IF bodies, in program order."""
    for s in stmts:
        yield s
        if isinstance(s, A.If):
            yield from walk_stmts(s.then or [])
            yield from walk_stmts(s.orelse or [])


def walk_nodes(seq: list):
    for n in seq:
        yield n
        if isinstance(n, IfNode):
            for _, body, _ in n.arms:
                yield from walk_nodes(body)
            if n.orelse is not None:
                yield from walk_nodes(n.orelse)
        elif isinstance(n, (ForNode, WhileNode)):
            yield from walk_nodes(n.body)


def node_stmts(n) -> list[A.Stmt]:
    """The statements a node stands for (heads included), not recursing into bodies."""
    if isinstance(n, SimpleNode):
        return [n.stmt]
    if isinstance(n, IfNode):
        return [n.stmt]
    if isinstance(n, ForNode):
        return [n.stmt] + ([n.next] if n.next else [])
    if isinstance(n, WhileNode):
        return [n.stmt] + ([n.wend] if n.wend else [])
    return []


def walk_exprs(e: A.Expr):
    yield e
    if isinstance(e, (A.Index, A.Call)):
        for a in e.args:
            yield from walk_exprs(a)
    elif isinstance(e, A.Unary):
        yield from walk_exprs(e.operand)
    elif isinstance(e, A.Binary):
        yield from walk_exprs(e.left)
        yield from walk_exprs(e.right)


def stmt_exprs(s: A.Stmt) -> list[A.Expr]:
    """The expressions a statement evaluates (not those of nested IF bodies)."""
    if isinstance(s, A.Let):
        return [s.target, s.expr]
    if isinstance(s, A.Print):
        out = []
        for it in s.items:
            if isinstance(it, A.Expr):
                out.append(it)
            elif isinstance(it, A.PrintFn):
                out.append(it.arg)
        return out
    if isinstance(s, (A.If, A.ElseIf, A.While)):
        return [s.cond]
    if isinstance(s, A.For):
        return [s.start, s.stop] + ([s.step] if s.step is not None else [])
    if isinstance(s, A.OnGoto):
        return [s.expr]
    if isinstance(s, A.Read):
        return list(s.targets)
    if isinstance(s, A.Randomize):
        return [s.seed] if s.seed is not None else []
    return []


# ----------------------------------------------------------------------------- analysis

class Analysis:
    """Everything the lowering needs to know about a program, checked."""

    def __init__(self, program: A.Program, src: Source):
        self.program = program
        self.src = src
        self.errors: list[BasicError] = []
        self.inputs: list[Any] = []  # ScalarInput | ArrayInfo, in INPUT order
        self.scalar_inputs: dict[str, ScalarInput] = {}
        self.arrays: dict[str, ArrayInfo] = {}
        self.tile_vars: dict[str, tuple[tuple[int, ...], dt.DType | None, A.Pos]] = {}
        self.outputs: list[ArrayInfo] = []
        self.var_types: dict[str, TileType] = {}
        self.line_numbers: set[int] = {ln.number for ln in program.lines if ln.number is not None}
        self.jump_targets: set[int] = set()
        self.data: list[tuple[float, int | None]] = []
        self.data_start: dict[int, int] = {}
        self.tree: list = []
        self.uses_rnd = False
        self.uses_zones = False
        self.uses_data = False
        self.uses_gosub = False
        self.uses_bid = False
        self.has_jumps = False
        self.for_count = 0
        self.size_vars: dict[str, A.Expr] = {}

    # ------------------------------------------------------------------ errors

    def error(self, message: str, pos: A.Pos | None, line: int | None) -> None:
        if pos is None:
            self.errors.append(BasicError(message, None, line))
            return
        self.errors.append(self.src.error(message, pos[0], pos[1], pos[2], line))

    def fail(self, message: str, pos: A.Pos | None, line: int | None) -> BasicError:
        if pos is None:
            return BasicError(message, None, line)
        return self.src.error(message, pos[0], pos[1], pos[2], line)

    # ------------------------------------------------------------------ driver

    def run(self) -> "Analysis":
        stmts = [s for ln in self.program.lines for s in walk_stmts(ln.stmts)]
        self._declarations(stmts)
        self._jumps(stmts)
        self._data(stmts)
        self.tree = self._build_tree()
        self._size_vars(stmts)
        self._check_arrays()
        self._infer_types(stmts)
        self._check_statements(stmts)
        for s in stmts:
            if isinstance(s, A.Print) and any(isinstance(i, A.PrintSep) and i.sep == "," or
                                              isinstance(i, A.PrintFn) and i.fn == "TAB" for i in s.items):
                self.uses_zones = True
            if isinstance(s, A.Randomize):
                self.uses_rnd = True
            if isinstance(s, A.Read):
                self.uses_data = True
            for e in stmt_exprs(s):
                for x in walk_exprs(e):
                    if isinstance(x, A.Call) and x.name == "RND":
                        self.uses_rnd = True
                    if isinstance(x, A.Bid):
                        self.uses_bid = True
        return self

    # ------------------------------------------------------------------ declarations

    def _dtype(self, name: str | None, default: dt.DType) -> dt.DType:
        return dt.as_dtype(name) if name else default

    def _declarations(self, stmts: list[A.Stmt]) -> None:
        input_order: list[tuple[A.InputItem, A.Stmt]] = []
        for s in stmts:
            if isinstance(s, A.Input):
                for it in s.items:
                    input_order.append((it, s))
            elif isinstance(s, A.Dim):
                for d in s.decls:
                    if d.name in self.arrays:
                        prev = self.arrays[d.name]
                        self.error(f"array {d.name} is dimensioned twice (first DIM in line {prev.line})",
                                   d.pos, s.line)
                        continue
                    if d.name.upper() in FUNCTIONS and not d.name[-1] in "%!":
                        self.error(f"{d.name} is a built-in function and cannot name an array", d.pos, s.line)
                        continue
                    if not d.sizes:
                        self.error(f"DIM {d.name} needs at least one size", d.pos, s.line)
                        continue
                    default = INT if d.name.endswith("%") else FLOAT
                    self.arrays[d.name] = ArrayInfo(d.name, self._dtype(d.dtype, default), d.sizes, d.pos, s.line)
        seen_inputs: set[str] = set()
        for it, s in input_order:
            key = it.name + ("()" if it.is_array else "")
            if key in seen_inputs:
                self.error(f"INPUT {key} is declared twice", it.pos, s.line)
                continue
            seen_inputs.add(key)
            if it.is_array:
                arr = self.arrays.get(it.name)
                if arr is None:
                    self.error(f"INPUT array {it.name}() has no DIM giving its shape; add e.g. DIM {it.name}(N)",
                               it.pos, s.line)
                    continue
                if it.dtype is not None:
                    d = dt.as_dtype(it.dtype)
                    if d is not arr.dtype:
                        self.error(f"INPUT {it.name}() AS {d.name} disagrees with its DIM ({arr.dtype.name}); "
                                   "give the type in DIM", it.pos, s.line)
                arr.is_input = True
                self.inputs.append(arr)
            else:
                d = self._dtype(it.dtype, INT if not it.name.endswith("!") else FLOAT)
                if it.dtype is None and it.name.endswith("%"):
                    d = INT
                if d not in (INT, FLOAT):
                    self.error(f"scalar INPUT {it.name} must be INTEGER or SINGLE, not {d.name}", it.pos, s.line)
                    d = INT
                if it.name.endswith("%") and d is not INT:
                    self.error(f"{it.name} ends in % and so is an integer", it.pos, s.line)
                si = ScalarInput(it.name, d, it.pos, s.line)
                self.scalar_inputs[it.name] = si
                self.inputs.append(si)
        for s in stmts:
            if isinstance(s, A.TileDecl):
                for t in s.decls:
                    shape = []
                    ok = True
                    for e in t.dims:
                        v = self._const_value(e)
                        if v is None or not float(v).is_integer():
                            self.error(f"TILE {t.name}: tile sizes must be integer constants", e.pos, s.line)
                            ok = False
                            break
                        v = int(v)
                        if not dt.is_pow2(v):
                            self.error(f"TILE {t.name}: tile size {v} is not a power of two", e.pos, s.line)
                            ok = False
                            break
                        shape.append(v)
                    if not ok:
                        continue
                    if len(shape) > 3:
                        self.error(f"TILE {t.name}: at most 3 dimensions", t.pos, s.line)
                        continue
                    shape_t = tuple(shape)
                    if t.name in self.arrays:
                        arr = self.arrays[t.name]
                        if arr.tile is not None:
                            self.error(f"TILE {t.name} is given twice", t.pos, s.line)
                        elif len(shape_t) != arr.ndim:
                            self.error(f"TILE {t.name} has {len(shape_t)} dimension(s) but DIM {t.name} has "
                                       f"{arr.ndim}", t.pos, s.line)
                        else:
                            if t.dtype is not None and dt.as_dtype(t.dtype) is not arr.dtype:
                                self.error(f"TILE {t.name} AS {t.dtype}: give array element types in DIM",
                                           t.pos, s.line)
                            arr.tile, arr.tile_pos, arr.tile_line = shape_t, t.pos, s.line
                    else:
                        if t.name in self.tile_vars:
                            self.error(f"TILE {t.name} is given twice", t.pos, s.line)
                            continue
                        d = dt.as_dtype(t.dtype) if t.dtype else None
                        self.tile_vars[t.name] = (shape_t, d, t.pos)
        for s in stmts:
            if isinstance(s, A.Output):
                for o in s.names:
                    arr = self.arrays.get(o.name)
                    if arr is None:
                        self.error(f"OUTPUT {o.name}: {o.name} is not a DIM array", o.pos, s.line)
                        continue
                    if arr.is_output:
                        self.error(f"OUTPUT {o.name} is given twice", o.pos, s.line)
                        continue
                    arr.is_output = True
                    self.outputs.append(arr)
        for arr in self.outputs:
            if arr.tile is None:
                self.error(f"OUTPUT array {arr.name} has no TILE: say how blocks split it, e.g. "
                           f"TILE {arr.name}({', '.join(['128'] * arr.ndim)})", arr.pos, arr.line)
        for arr in self.arrays.values():
            if arr.tile is not None and arr.is_local:
                self.error(f"TILE {arr.name}: only INPUT and OUTPUT arrays are tiled; local DIM arrays are "
                           "indexed by element", arr.tile_pos, arr.tile_line)

    def _const_value(self, e: A.Expr):
        try:
            return self.host_eval(e, {}, allow_vars=False)
        except BasicError:
            return None

    def host_eval(self, e: A.Expr, scalars: dict[str, Any], allow_vars: bool = True, line: int | None = None,
                  depth: int = 0):
        """Evaluate a size expression on the host (literals, INPUT scalars, size variables)."""
        if depth > 50:
            raise self.fail("size expression is too deeply nested", e.pos, line)
        if isinstance(e, A.Num):
            return e.value
        if isinstance(e, A.Var) and allow_vars:
            if e.name in self.scalar_inputs:
                if e.name not in scalars:
                    raise self.fail(f"the value of INPUT {e.name} is needed here", e.pos, line)
                return scalars[e.name]
            if e.name in self.size_vars:
                return self.host_eval(self.size_vars[e.name], scalars, allow_vars, line, depth + 1)
            raise self.fail(f"{e.name} is not known before the program runs: sizes may use numbers, INPUT "
                            "scalars and variables assigned once from those", e.pos, line)
        if isinstance(e, A.Unary) and e.op == "-":
            return -self.host_eval(e.operand, scalars, allow_vars, line, depth + 1)
        if isinstance(e, A.Binary) and e.op in ("+", "-", "*", "/", "\\", "MOD", "^"):
            a = self.host_eval(e.left, scalars, allow_vars, line, depth + 1)
            b = self.host_eval(e.right, scalars, allow_vars, line, depth + 1)
            try:
                if e.op == "+":
                    return a + b
                if e.op == "-":
                    return a - b
                if e.op == "*":
                    return a * b
                if e.op == "/":
                    return a / b
                if e.op == "\\":
                    return math.trunc(a / b)
                if e.op == "MOD":
                    return math.fmod(a, b)
                r = a ** b
                if isinstance(r, complex):
                    raise ValueError("complex result")
                return r
            except (ZeroDivisionError, OverflowError, ValueError) as ex:
                raise self.fail(f"cannot evaluate the size: {ex}", e.pos, line) from None
        if isinstance(e, A.Call) and e.name in ("INT", "FIX", "ABS") and len(e.args) == 1:
            v = self.host_eval(e.args[0], scalars, allow_vars, line, depth + 1)
            try:
                return {"INT": math.floor, "FIX": math.trunc, "ABS": abs}[e.name](v)
            except (OverflowError, ValueError) as ex:
                raise self.fail(f"cannot evaluate the size: {ex}", e.pos, line) from None
        raise self.fail("sizes may use numbers, INPUT scalars, + - * / \\ MOD ^, INT, FIX and ABS", e.pos, line)

    def _size_vars(self, stmts: list[A.Stmt]) -> None:
        """Variables assigned exactly once, at top level, from a host-evaluable expression."""
        counts: dict[str, int] = {}
        for s in stmts:
            for name in _assigned_vars(s):
                counts[name] = counts.get(name, 0) + 1
        top = [s for ln in self.program.lines for s in ln.stmts]
        for s in top:
            if isinstance(s, A.Let) and isinstance(s.target, A.Var) and counts.get(s.target.name) == 1 \
                    and s.target.name not in self.scalar_inputs:
                if all(isinstance(x, (A.Num, A.Var, A.Unary, A.Binary, A.Call)) for x in walk_exprs(s.expr)):
                    self.size_vars[s.target.name] = s.expr

    def _check_arrays(self) -> None:
        for arr in self.arrays.values():
            sizes = []
            for e in arr.sizes:
                try:
                    v = self.host_eval(e, {}, allow_vars=False, line=arr.line)
                    sizes.append(v)
                    if not float(v).is_integer() or v < 0:
                        self.error(f"DIM {arr.name}: size {v} must be a non-negative integer", e.pos, arr.line)
                except BasicError:
                    sizes.append(None)
                    # must be evaluable once the INPUT scalars are known
                    try:
                        self.host_eval(e, {n: 1 for n in self.scalar_inputs}, line=arr.line)
                    except BasicError as err:
                        self.errors.append(err)
            arr.static_sizes = tuple(None if v is None else int(v) for v in sizes)

    # ------------------------------------------------------------------ jumps and data

    def _jumps(self, stmts: list[A.Stmt]) -> None:
        has_gosub = any(isinstance(s, A.Gosub) or (isinstance(s, A.OnGoto) and s.gosub) for s in stmts)
        self.uses_gosub = has_gosub
        for s in stmts:
            targets: list[tuple[int, A.Pos, str]] = []
            if isinstance(s, A.Goto):
                targets.append((s.target, s.target_pos, "GOTO"))
                self.has_jumps = True
            elif isinstance(s, A.Gosub):
                targets.append((s.target, s.target_pos, "GOSUB"))
                self.has_jumps = True
            elif isinstance(s, A.OnGoto):
                targets += [(t, p, "ON ... GOSUB" if s.gosub else "ON ... GOTO") for t, p in s.targets]
                self.has_jumps = True
            elif isinstance(s, A.Restore) and s.target is not None:
                if s.target not in self.line_numbers:
                    self.error(f"RESTORE {s.target}: there is no line {s.target}", s.target_pos, s.line)
            elif isinstance(s, A.Return):
                self.has_jumps = True
                if not has_gosub:
                    self.error("RETURN without GOSUB: the program has no GOSUB", s.pos, s.line)
            for t, p, what in targets:
                if t not in self.line_numbers:
                    self.error(f"{what} {t}: there is no line {t}", p, s.line)
                else:
                    self.jump_targets.add(t)

    def _data(self, stmts: list[A.Stmt]) -> None:
        line_first: dict[int, int] = {}
        for ln in self.program.lines:
            for s in walk_stmts(ln.stmts):
                if isinstance(s, A.Data):
                    if ln.number is not None and ln.number not in line_first:
                        line_first[ln.number] = len(self.data)
                    for v, _ in s.values:
                        self.data.append((v, ln.number))
        # RESTORE n: the first DATA item in line n or after it
        numbers = sorted(self.line_numbers)
        for n in numbers:
            later = [line_first[m] for m in numbers if m >= n and m in line_first]
            self.data_start[n] = min(later) if later else len(self.data)

    # ------------------------------------------------------------------ structure

    def _build_tree(self) -> list:
        items: list = []
        for ln in self.program.lines:
            if ln.number is not None:
                items.append(LineMark(ln.number, ln.pos))
            items.extend(ln.stmts)
        return self._build(items, top=True)

    def _build(self, items: list, top: bool) -> list:
        root: list = []
        stack: list[tuple[Any, list]] = []  # (node, the seq being filled)

        def cur() -> list:
            return stack[-1][1] if stack else root

        for it in items:
            if isinstance(it, LineMark):
                cur().append(it)
                continue
            s = it
            if isinstance(s, A.For):
                node = ForNode(s, [], index=self.for_count)
                self.for_count += 1
                cur().append(node)
                stack.append((node, node.body))
            elif isinstance(s, A.Next):
                fors = [n for n, _ in stack if isinstance(n, ForNode)]
                if not stack or not isinstance(stack[-1][0], ForNode):
                    if not fors:
                        self.error(f"NEXT{' ' + s.var if s.var else ''} without FOR", s.pos, s.line)
                    else:
                        open_ = stack[-1][0]
                        self.error(f"NEXT{' ' + s.var if s.var else ''} closes FOR {fors[-1].stmt.var} (line "
                                   f"{fors[-1].stmt.line}) but the {_open_name(open_)} opened in line "
                                   f"{_open_line(open_)} is still open", s.pos, s.line)
                    continue
                node = stack[-1][0]
                if s.var is not None and s.var != node.stmt.var:
                    if any(f.stmt.var == s.var for f in fors):
                        self.error(f"NEXT {s.var} comes before NEXT {node.stmt.var}: FOR {node.stmt.var} "
                                   f"(line {node.stmt.line}) is the innermost open loop", s.pos, s.line)
                    else:
                        self.error(f"NEXT {s.var} without FOR {s.var} (the open loop is FOR "
                                   f"{node.stmt.var} in line {node.stmt.line})", s.pos, s.line)
                    continue
                node.next = s
                stack.pop()
            elif isinstance(s, A.While):
                node = WhileNode(s, [], index=self.for_count)
                self.for_count += 1
                cur().append(node)
                stack.append((node, node.body))
            elif isinstance(s, A.Wend):
                if not stack or not isinstance(stack[-1][0], WhileNode):
                    if not any(isinstance(n, WhileNode) for n, _ in stack):
                        self.error("WEND without WHILE", s.pos, s.line)
                    else:
                        open_ = stack[-1][0]
                        self.error(f"WEND while the {_open_name(open_)} opened in line {_open_line(open_)} "
                                   "is still open", s.pos, s.line)
                    continue
                stack[-1][0].wend = s
                stack.pop()
            elif isinstance(s, A.If) and s.block:
                node = IfNode(s, [(s.cond, [], s)], None, single=False)
                cur().append(node)
                stack.append((node, node.arms[0][1]))
            elif isinstance(s, (A.ElseIf, A.Else, A.EndIf)):
                what = {A.ElseIf: "ELSEIF", A.Else: "ELSE", A.EndIf: "ENDIF"}[type(s)]
                if not stack or not isinstance(stack[-1][0], IfNode):
                    if not any(isinstance(n, IfNode) for n, _ in stack):
                        self.error(f"{what} without a block IF (IF ... THEN at the end of a line)", s.pos, s.line)
                    else:
                        open_ = stack[-1][0]
                        self.error(f"{what} while the {_open_name(open_)} opened in line {_open_line(open_)} "
                                   "is still open", s.pos, s.line)
                    continue
                node = stack[-1][0]
                if isinstance(s, A.EndIf):
                    node.end = s
                    stack.pop()
                elif node.orelse is not None:
                    self.error(f"{what} after ELSE in the IF of line {node.stmt.line}", s.pos, s.line)
                elif isinstance(s, A.ElseIf):
                    node.arms.append((s.cond, [], s))
                    stack[-1] = (node, node.arms[-1][1])
                else:
                    node.orelse = []
                    stack[-1] = (node, node.orelse)
            elif isinstance(s, A.If):
                then = self._build(s.then or [], top=False)
                orelse = self._build(s.orelse, top=False) if s.orelse is not None else None
                cur().append(IfNode(s, [(s.cond, then, s)], orelse, single=True))
            else:
                cur().append(SimpleNode(s))
        for node, _ in reversed(stack):
            s = node.stmt
            if isinstance(node, ForNode):
                what = f"FOR {s.var} without NEXT"
            elif isinstance(node, WhileNode):
                what = "WHILE without WEND"
            else:
                what = "IF ... THEN without ENDIF"
            if not top:
                what += " in the same single-line IF"
            self.error(what, s.pos, s.line)
        return root

    # ------------------------------------------------------------------ types

    def expr_type(self, e: A.Expr, line: int | None, report: bool) -> TileType:
        """The static type of an expression (dtype approximate, shape exact)."""
        def bad(msg, pos):
            if report:
                raise self.fail(msg, pos, line)

        if isinstance(e, A.Num):
            return TileType(INT if isinstance(e.value, int) else FLOAT, ())
        if isinstance(e, A.Str):
            bad("strings can only be printed", e.pos)
            return TileType(FLOAT, ())
        if isinstance(e, A.Var):
            return self.var_types.get(e.name, TileType(var_dtype(e.name), ()))
        if isinstance(e, A.Bid):
            return TileType(INT, ())
        if isinstance(e, A.Index):
            arr = self.arrays.get(e.name)
            if arr is None:
                if e.name in self.tile_vars or e.name in self.var_types and self.var_types[e.name].shape:
                    bad(f"{e.name} is a tile variable, not an array; tiles cannot be indexed", e.pos)
                else:
                    bad(f"undefined array {e.name}: declare it with DIM {e.name}(...)", e.pos)
                return TileType(FLOAT, ())
            if len(e.args) != arr.ndim:
                what = "tile index" if arr.tile else "subscript"
                bad(f"{e.name} has {arr.ndim} dimension(s) but {len(e.args)} {what}(s) were given", e.pos)
            for a in e.args:
                t = self.expr_type(a, line, report)
                if t.shape != ():
                    bad(f"a {'tile index' if arr.tile else 'subscript'} of {e.name} must be a number, not a tile",
                        a.pos)
            if arr.tile is not None:
                return TileType(arr.dtype, arr.tile)
            return TileType(arr.dtype, ())
        if isinstance(e, A.Call):
            lo, hi = FUNCTIONS[e.name]
            if not lo <= len(e.args) <= hi:
                n = f"{lo}" if lo == hi else f"{lo} or {hi}"
                bad(f"{e.name} takes {n} argument{'s' if hi != 1 else ''}, got {len(e.args)}", e.pos)
                return TileType(FLOAT, ())
            types = [self.expr_type(a, line, report) for a in e.args]
            if e.name == "MMA":
                a, b, acc = types
                if a.ndim != 2 or b.ndim != 2:
                    bad(f"MMA needs two 2-D tiles, got shapes {a.shape} and {b.shape}", e.pos)
                    return TileType(FLOAT, ())
                if a.shape[1] != b.shape[0]:
                    bad(f"MMA shape mismatch: {a.shape[0]}x{a.shape[1]} times {b.shape[0]}x{b.shape[1]} "
                        f"({a.shape[1]} != {b.shape[0]})", e.pos)
                    return TileType(FLOAT, ())
                out = (a.shape[0], b.shape[1])
                if acc.shape not in ((), out):
                    bad(f"MMA accumulator has shape {acc.shape} but the product is {out[0]}x{out[1]}", e.args[2].pos)
                return TileType(acc.dtype if acc.dtype.is_float or acc.dtype is INT and a.dtype is INT else FLOAT,
                                out)
            if e.name == "RND":
                if types and types[0].shape != ():
                    bad("RND takes a number, not a tile", e.args[0].pos)
                return TileType(FLOAT, ())
            if e.name == "SUM":
                return TileType(types[0].dtype if types[0].dtype is not BOOL else INT, ())
            if e.name in ("MIN", "MAX"):
                return TileType(dt.promote(types[0].dtype, types[1].dtype),
                                self._broadcast(types[0].shape, types[1].shape, e, line, report))
            if e.name in ("INT", "FIX", "ABS"):
                return TileType(types[0].dtype if types[0].dtype is not BOOL else INT, types[0].shape)
            if e.name == "SGN":
                return TileType(INT, types[0].shape)
            d = types[0].dtype if types[0].dtype.is_float else FLOAT
            return TileType(d, types[0].shape)
        if isinstance(e, A.Unary):
            t = self.expr_type(e.operand, line, report)
            if e.op == "NOT":
                return TileType(BOOL if t.dtype is BOOL else INT, t.shape)
            return TileType(t.dtype if t.dtype is not BOOL else INT, t.shape)
        if isinstance(e, A.Binary):
            a = self.expr_type(e.left, line, report)
            b = self.expr_type(e.right, line, report)
            shape = self._broadcast(a.shape, b.shape, e, line, report)
            if e.op in ("=", "<>", "<", ">", "<=", ">="):
                return TileType(BOOL, shape)
            if e.op in ("AND", "OR", "XOR"):
                return TileType(BOOL if a.dtype is BOOL and b.dtype is BOOL else INT, shape)
            if e.op in ("/", "^"):
                d = a.dtype if a.dtype.is_float else (b.dtype if b.dtype.is_float else FLOAT)
                return TileType(d, shape)
            ad = a.dtype if a.dtype is not BOOL else INT
            bd = b.dtype if b.dtype is not BOOL else INT
            return TileType(dt.promote(ad, bd), shape)
        return TileType(FLOAT, ())

    def _broadcast(self, a, b, e, line, report):
        try:
            return dt.broadcast_shapes(a, b)
        except ValueError:
            if report:
                raise self.fail(f"tile shapes {a} and {b} do not fit together", e.pos, line) from None
            return a

    def _infer_types(self, stmts: list[A.Stmt]) -> None:
        names: set[str] = set()
        for s in stmts:
            for e in stmt_exprs(s):
                for x in walk_exprs(e):
                    if isinstance(x, A.Var):
                        names.add(x.name)
            if isinstance(s, A.For):
                names.add(s.var)
        names |= set(self.scalar_inputs) | set(self.tile_vars)
        for n in names:
            d = var_dtype(n)
            if n in self.scalar_inputs:
                d = self.scalar_inputs[n].dtype
            shape: tuple[int, ...] = ()
            if n in self.tile_vars:
                shape, td, _ = self.tile_vars[n]
                d = td or d
            self.var_types[n] = TileType(d, shape)
        lets = [s for s in stmts if isinstance(s, A.Let) and isinstance(s.target, A.Var)]
        for _ in range(len(lets) + 2):
            changed = False
            for s in lets:
                t = self.expr_type(s.expr, s.line, report=False)
                cur = self.var_types[s.target.name]
                if t.shape != () and cur.shape == ():
                    self.var_types[s.target.name] = TileType(cur.dtype, t.shape)
                    changed = True
            if not changed:
                break

    def _check_statements(self, stmts: list[A.Stmt]) -> None:
        for s in stmts:
            try:
                self._check_stmt(s)
            except BasicError as e:
                self.errors.append(e)

    def _scalar(self, e: A.Expr, line, what: str) -> TileType:
        t = self.expr_type(e, line, report=True)
        if t.shape != ():
            raise self.fail(f"{what} must be a number, not a {'x'.join(map(str, t.shape))} tile", e.pos, line)
        return t

    def _check_stmt(self, s: A.Stmt) -> None:
        line = s.line
        if isinstance(s, A.Let):
            t = self.expr_type(s.expr, line, report=True)
            tgt = s.target
            if isinstance(tgt, A.Var):
                vt = self.var_types[tgt.name]
                if t.shape not in ((), vt.shape):
                    raise self.fail(f"{tgt.name} holds {_shape_text(vt.shape)} but is assigned "
                                    f"{_shape_text(t.shape)}", s.expr.pos, line)
            else:
                self._check_store(tgt, t, line, s.expr.pos)
        elif isinstance(s, (A.If, A.ElseIf, A.While)):
            self._scalar(s.cond, line, "a condition")
        elif isinstance(s, A.For):
            if self.var_types.get(s.var, TileType(FLOAT, ())).shape != ():
                raise self.fail(f"the loop variable {s.var} holds tiles", s.var_pos, line)
            self._scalar(s.start, line, "the FOR start")
            self._scalar(s.stop, line, "the FOR limit")
            if s.step is not None:
                self._scalar(s.step, line, "the FOR step")
        elif isinstance(s, A.OnGoto):
            self._scalar(s.expr, line, "the ON expression")
        elif isinstance(s, A.Randomize):
            if s.seed is not None:
                self._scalar(s.seed, line, "the RANDOMIZE seed")
        elif isinstance(s, A.Read):
            for tgt in s.targets:
                if isinstance(tgt, A.Var):
                    if self.var_types[tgt.name].shape != ():
                        raise self.fail(f"READ {tgt.name}: {tgt.name} holds tiles", tgt.pos, line)
                else:
                    arr = self.arrays.get(tgt.name)
                    if arr is not None and arr.tile is not None:
                        raise self.fail(f"READ into the tiled array {tgt.name} is not supported", tgt.pos, line)
                    self._check_store(tgt, TileType(FLOAT, ()), line, tgt.pos)
        elif isinstance(s, A.Print):
            for it in s.items:
                if isinstance(it, A.Str):
                    continue
                if isinstance(it, A.PrintFn):
                    self._scalar(it.arg, line, f"the {it.fn} argument")
                elif isinstance(it, A.Expr):
                    self.expr_type(it, line, report=True)

    def _check_store(self, tgt: A.Index, t: TileType, line, value_pos) -> None:
        at = self.expr_type(tgt, line, report=True)  # checks existence, arity, subscripts
        arr = self.arrays[tgt.name]
        if arr.is_input and not arr.is_output:
            raise self.fail(f"{tgt.name} is an INPUT array and is read-only; list it in OUTPUT to write it",
                            tgt.pos, line)
        if t.shape not in ((), at.shape):
            if arr.tile is None:
                raise self.fail(f"{tgt.name} is not tiled: an element holds one number, not a "
                                f"{_shape_text(t.shape)}", value_pos, line)
            raise self.fail(f"cannot store {_shape_text(t.shape)} into {tgt.name}, whose tiles are "
                            f"{_shape_text(at.shape)}", value_pos, line)


def _assigned_vars(s: A.Stmt) -> list[str]:
    if isinstance(s, A.Let) and isinstance(s.target, A.Var):
        return [s.target.name]
    if isinstance(s, A.For):
        return [s.var]
    if isinstance(s, A.Read):
        return [t.name for t in s.targets if isinstance(t, A.Var)]
    return []


def assigned_in(seq: list) -> set[str]:
    """Variables that statements of a tree (recursively) may assign."""
    out: set[str] = set()
    for n in walk_nodes(seq):
        for s in node_stmts(n):
            out.update(_assigned_vars(s))
    return out


def _shape_text(shape) -> str:
    if shape == ():
        return "a number"
    return "a " + "x".join(map(str, shape)) + " tile"


def _open_name(node) -> str:
    if isinstance(node, ForNode):
        return f"FOR {node.stmt.var}"
    if isinstance(node, WhileNode):
        return "WHILE"
    return "block IF"


def _open_line(node):
    return node.stmt.line


def analyze(program: A.Program, src: Source, errors: list[BasicError] | None = None) -> Analysis:
    an = Analysis(program, src)
    an.run()
    if errors is not None:
        errors.extend(an.errors)
    elif an.errors:
        raise BasicError.collect(an.errors)
    return an
