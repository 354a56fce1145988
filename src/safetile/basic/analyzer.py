"""Static analysis of a parsed BASIC program.

* Names: variables, arrays and ``DEF FN`` functions are case-insensitive and typed by their
  sigil (``%`` integer, ``!`` single, ``#`` double, ``$`` string) or, without one, by the
  ``DEFINT``/``DEFSNG``/``DEFDBL``/``DEFSTR`` letter ranges (single by default). Every name
  is rewritten to its canonical form, name plus sigil (``A`` is ``A!``, as in GW-BASIC).
* Declarations: ``INPUT`` (kernel parameters, in order), ``DIM`` (array shapes and element
  types; an array used without DIM has 11 elements per dimension, as in GW-BASIC), ``TILE``
  (tile shapes of arrays, or tile-shaped variables), ``OUTPUT``, ``DEF FN``.
* Structure (structure.py), jump targets, ``DATA`` items, sizes known before the run, and
  types (typecheck.py).

Errors GW-BASIC reports only when the offending statement runs (a syntax error in a line,
*Type mismatch*, *Undefined line number* ...) are *deferred*: listed in ``deferred`` (so
``safetile check`` reports them) and compiled into a run-time error at that statement.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any
from collections.abc import Callable

from .. import dtypes as dt
from . import ast as A
from .errors import BasicError
from .gwnumbers import MbfOverflow, literal, parse_decimal
from .lexer import Source
from .structure import TreeBuilder, _assigned_vars, stmt_exprs, walk_exprs, walk_stmts
from .vtypes import DBL, INT, LONG, SIGIL_DTYPES, SNG, STRING, BasicType, scalar

IMPLICIT_SIZE = 10  # an array used without DIM has indices 0..10 per dimension


@dataclass
class ScalarInput:
    name: str
    dtype: Any  # a dtype, or STRING for a string input
    pos: A.Pos
    line: int | None


@dataclass
class ArrayInfo:
    name: str
    dtype: Any  # element dtype, or STRING
    sizes: list[A.Expr]
    pos: A.Pos
    line: int | None
    is_input: bool = False
    is_output: bool = False
    tile: tuple[int, ...] | None = None
    tile_pos: A.Pos | None = None
    tile_line: int | None = None
    static_sizes: tuple[int | None, ...] = ()
    implicit: bool = False  # used without DIM
    dims: int = 0  # DIM statements naming it

    @property
    def ndim(self) -> int:
        return len(self.sizes)

    @property
    def is_local(self) -> bool:
        return not (self.is_input or self.is_output)

    @property
    def is_string(self) -> bool:
        return self.dtype is STRING

    @property
    def kind(self) -> str:
        if self.is_input and self.is_output:
            return "inout"
        return "input" if self.is_input else ("output" if self.is_output else "local")


@dataclass
class FnInfo:
    """A ``DEF FN`` function: canonical name, parameters (canonical names), body, result type."""
    name: str
    params: list[str]
    expr: A.Expr | None  # None: the body does not parse (stmt.broken says why)
    type: BasicType
    stmt: A.DefFn


@dataclass
class DataItem:
    text: bytes | None  # what READ into a string variable gets, or None (not a string)
    number: Any  # what READ into a numeric variable gets, or None (not a number)
    line: int | None
    error: str  # what reading it as the wrong kind stops with (the first item of a line: no line)


@dataclass
class Deferred:
    """A GW-BASIC run-time error known before the run: raised when its statement runs."""
    message: str  # GW-BASIC's message (Syntax error, Type mismatch, ...)
    error: BasicError = field(repr=False)


class Analysis:
    """Everything the lowering needs to know about a program, checked."""

    def __init__(self, program: A.Program, src: Source):
        self.program = program
        self.src = src
        self.errors: list[BasicError] = []
        self.deferred: dict[int, Deferred] = {}  # id(statement) -> error raised when it runs
        # id(expression) -> the error it raises once its operands are evaluated (None: it only
        # contains such an expression); see typecheck.py
        self.bad_exprs: dict[int, str | None] = {}
        self.expr_errors: list[BasicError] = []
        self.inputs: list[Any] = []  # ScalarInput | ArrayInfo, in INPUT order
        self.scalar_inputs: dict[str, ScalarInput] = {}
        self.arrays: dict[str, ArrayInfo] = {}
        self.tile_vars: dict[str, tuple[tuple[int, ...], dt.DType | None, A.Pos]] = {}
        self.outputs: list[ArrayInfo] = []
        self.fns: dict[str, FnInfo] = {}
        self.var_types: dict[str, BasicType] = {}
        self.shown: dict[str, str] = {}  # canonical name -> as first written
        self.line_numbers: set[int] = {ln.number for ln in program.lines if ln.number is not None}
        self.jump_targets: set[int] = set()
        self.data: list[DataItem] = []
        self.data_start: dict[int, int] = {}
        self.tree: list = []
        self.uses_rnd = False
        self.uses_data = False
        self.uses_gosub = False
        self.uses_bid = False
        self.for_count = 0
        self.size_vars: dict[str, A.Expr] = {}
        self.swap_checked: set[str] = set()  # scalars SWAP takes second: they must have been set
        self.default_sigil = {chr(c): "!" for c in range(ord("A"), ord("Z") + 1)}

    # ------------------------------------------------------------------ errors

    def error(self, message: str, pos: A.Pos | None, line: int | None) -> None:
        self.errors.append(self.fail(message, pos, line))

    def fail(self, message: str, pos: A.Pos | None, line: int | None) -> BasicError:
        if pos is None:
            return BasicError(message, None, line)
        return self.src.error(message, pos[0], pos[1], pos[2], line)

    def defer(self, stmt: A.Stmt, gw_message: str, detail: str, pos: A.Pos | None) -> None:
        """Record a run-time error at ``stmt`` (the first one found there wins)."""
        if id(stmt) not in self.deferred:
            err = self.fail(f"{gw_message}: {detail}" if detail else gw_message, pos or stmt.pos, stmt.line)
            self.deferred[id(stmt)] = Deferred(gw_message, err)

    def defer_expr(self, e: A.Expr, gw_message: str, detail: str, line: int | None) -> None:
        """Record a run-time error raised where expression ``e`` is evaluated."""
        if id(e) not in self.bad_exprs:
            self.bad_exprs[id(e)] = gw_message
            self.expr_errors.append(self.fail(f"{gw_message}: {detail}" if detail else gw_message, e.pos, line))

    def show(self, name: str) -> str:
        """A canonical name as the program wrote it."""
        return self.shown.get(name, name)

    # ------------------------------------------------------------------ driver

    def run(self) -> Analysis:
        from .typecheck import TypeChecker
        stmts = [s for ln in self.program.lines for s in walk_stmts(ln.stmts)]
        self._canonical_names(stmts)
        self._declarations(stmts)
        self._jumps(stmts)
        self._data(stmts)
        builder = TreeBuilder(self.error, self.show)
        self.tree = builder.build_tree(self.program)
        self.for_count = builder.for_count
        self._size_vars(stmts)
        self._check_arrays()
        TypeChecker(self).check(stmts)
        for s in stmts:
            if isinstance(s, A.Broken):
                self.defer(s, "Syntax error", s.message, s.at)
            if isinstance(s, A.Randomize):
                self.uses_rnd = True
            if isinstance(s, A.Read):
                self.uses_data = True
            if isinstance(s, A.Swap) and isinstance(s.b, A.Var):
                self.swap_checked.add(s.b.name)
            exprs = stmt_exprs(s) + fn_body(s)
            for e in exprs:
                for x in walk_exprs(e):
                    if isinstance(x, A.Call) and x.name == "RND":
                        self.uses_rnd = True
                    if isinstance(x, A.Bid):
                        self.uses_bid = True
        return self

    # ------------------------------------------------------------------ names

    def canon(self, name: str) -> str:
        """The canonical form of a variable, array or function name (name plus sigil)."""
        if name[-1:] in "%!#$":
            return name
        return name + self.default_sigil.get(name[:1], "!")

    def _canonical_names(self, stmts: list[A.Stmt]) -> None:
        for s in stmts:
            if isinstance(s, A.DefType):
                for c in s.letters:
                    self.default_sigil[c] = s.sigil

        def name(raw: str) -> str:
            c = self.canon(raw)
            self.shown.setdefault(c, raw)
            return c

        def expr(e: A.Expr) -> None:
            for x in walk_exprs(e):
                if isinstance(x, (A.Var, A.Index, A.FnCall)):
                    x.name = name(x.name)

        for s in stmts:
            for e in stmt_exprs(s):
                expr(e)
            if isinstance(s, (A.For, A.Next)) and s.var is not None:  # a For always names its variable
                s.var = name(s.var)
            elif isinstance(s, A.Input):
                for it in s.items:
                    it.name = name(it.name)
            elif isinstance(s, A.Dim):
                for d in s.decls:
                    d.name = name(d.name)
                    for e in d.sizes:
                        expr(e)
            elif isinstance(s, A.TileDecl):
                for t in s.decls:
                    t.name = name(t.name)
            elif isinstance(s, A.Output):
                for o in s.names:
                    o.name = name(o.name)
            elif isinstance(s, A.DefFn):
                s.name = name(s.name)
                s.params = [(name(p), pos) for p, pos in s.params]
                for e in fn_body(s):
                    expr(e)

    # ------------------------------------------------------------------ declarations

    def _declarations(self, stmts: list[A.Stmt]) -> None:
        kernel_arrays = {it.name for s in stmts if isinstance(s, A.Input) for it in s.items if it.is_array}
        kernel_arrays |= {o.name for s in stmts if isinstance(s, A.Output) for o in s.names}
        for s in stmts:
            if isinstance(s, A.Dim):
                for d in s.decls:
                    self._dim(s, d, d.name in kernel_arrays)
        self._inputs(stmts)
        self._tiles(stmts)
        self._outputs(stmts)
        self._fns(stmts)
        self._implicit_arrays(stmts)

    def _dim(self, s: A.Dim, d: A.DimDecl, kernel: bool) -> None:
        if not d.sizes:
            self.error(f"DIM {self.show(d.name)} needs at least one size", d.pos, s.line)
            return
        prev = self.arrays.get(d.name)
        if prev is not None:
            same = len(prev.sizes) == len(d.sizes) and all(
                A.expr_text(a) == A.expr_text(b) for a, b in zip(prev.sizes, d.sizes))
            if not same:
                self.error(f"array {self.show(d.name)} is dimensioned with other sizes in line {prev.line}; "
                           "an array has one shape", d.pos, s.line)
            prev.dims += 1
            return
        sigil = d.name[-1]
        if sigil == "$":
            if d.dtype is not None or kernel:
                self.error(f"{self.show(d.name)}: string arrays are local and have no AS type", d.pos, s.line)
            dtype: Any = STRING
        elif d.dtype is not None:
            dtype = dt.as_dtype(d.dtype)
        elif sigil == "%":
            dtype = LONG if kernel else INT
        else:
            dtype = SIGIL_DTYPES[sigil]
        self.arrays[d.name] = ArrayInfo(d.name, dtype, d.sizes, d.pos, s.line, dims=1)

    def _inputs(self, stmts: list[A.Stmt]) -> None:
        seen: set[str] = set()
        for s in stmts:
            if not isinstance(s, A.Input):
                continue
            for it in s.items:
                key = it.name + ("()" if it.is_array else "")
                if key in seen:
                    self.error(f"INPUT {self.show(it.name)} is declared twice", it.pos, s.line)
                    continue
                seen.add(key)
                if it.is_array:
                    self._input_array(s, it)
                else:
                    self._input_scalar(s, it)

    def _input_array(self, s: A.Input, it: A.InputItem) -> None:
        arr = self.arrays.get(it.name)
        if arr is None:
            shown = self.show(it.name)
            self.error(f"INPUT array {shown}() has no DIM giving its shape; add e.g. DIM {shown}(N)", it.pos, s.line)
            return
        if arr.is_string:
            self.error(f"INPUT {self.show(it.name)}(): string arrays cannot be kernel inputs", it.pos, s.line)
            return
        if it.dtype is not None and dt.as_dtype(it.dtype) is not arr.dtype:
            self.error(f"INPUT {self.show(it.name)}() AS {it.dtype} disagrees with its DIM ({arr.dtype.name}); "
                       "give the type in DIM", it.pos, s.line)
        arr.is_input = True
        self.inputs.append(arr)

    def _input_scalar(self, s: A.Input, it: A.InputItem) -> None:
        sigil = it.name[-1]
        explicit = self.shown.get(it.name, it.name)[-1:] in "%!#$"
        if sigil == "$":
            d: Any = STRING
            if it.dtype is not None:
                self.error(f"INPUT {self.show(it.name)}: a string has no AS type", it.pos, s.line)
        elif it.dtype is not None:
            d = dt.as_dtype(it.dtype)
            if d not in (LONG, SNG, DBL):
                self.error(f"scalar INPUT {self.show(it.name)} must be INTEGER, SINGLE or DOUBLE, not {d.name}",
                           it.pos, s.line)
                d = LONG
        elif explicit and sigil in "!#":
            d = SIGIL_DTYPES[sigil]
        else:
            d = LONG  # integer kernel parameters are 32-bit
        if explicit and sigil == "%" and d is not LONG:
            self.error(f"{self.show(it.name)} ends in % and so is an integer", it.pos, s.line)
        si = ScalarInput(it.name, d, it.pos, s.line)
        self.scalar_inputs[it.name] = si
        self.inputs.append(si)

    def _tiles(self, stmts: list[A.Stmt]) -> None:
        for s in stmts:
            if not isinstance(s, A.TileDecl):
                continue
            for t in s.decls:
                shape = self._tile_shape(s, t)
                if shape is None:
                    continue
                shown = self.show(t.name)
                arr = self.arrays.get(t.name)
                if arr is not None:
                    if arr.tile is not None:
                        self.error(f"TILE {shown} is given twice", t.pos, s.line)
                    elif len(shape) != arr.ndim:
                        self.error(f"TILE {shown} has {len(shape)} dimension(s) but DIM {shown} has {arr.ndim}",
                                   t.pos, s.line)
                    else:
                        if t.dtype is not None and dt.as_dtype(t.dtype) is not arr.dtype:
                            self.error(f"TILE {shown} AS {t.dtype}: give array element types in DIM", t.pos, s.line)
                        arr.tile, arr.tile_pos, arr.tile_line = shape, t.pos, s.line
                elif t.name in self.tile_vars:
                    self.error(f"TILE {shown} is given twice", t.pos, s.line)
                elif t.name.endswith("$"):
                    self.error(f"TILE {shown}: strings cannot be tiles", t.pos, s.line)
                else:
                    d = dt.as_dtype(t.dtype) if t.dtype else None
                    self.tile_vars[t.name] = (shape, d, t.pos)

    def _tile_shape(self, s: A.TileDecl, t: A.TileDeclItem) -> tuple[int, ...] | None:
        shape = []
        for e in t.dims:
            v = self._const_value(e)
            if v is None or not float(v).is_integer():
                self.error(f"TILE {self.show(t.name)}: tile sizes must be integer constants", e.pos, s.line)
                return None
            v = int(v)
            if not dt.is_pow2(v):
                self.error(f"TILE {self.show(t.name)}: tile size {v} is not a power of two", e.pos, s.line)
                return None
            shape.append(v)
        if len(shape) > 3:
            self.error(f"TILE {self.show(t.name)}: at most 3 dimensions", t.pos, s.line)
            return None
        return tuple(shape)

    def _outputs(self, stmts: list[A.Stmt]) -> None:
        for s in stmts:
            if not isinstance(s, A.Output):
                continue
            for o in s.names:
                arr = self.arrays.get(o.name)
                shown = self.show(o.name)
                if arr is None:
                    self.error(f"OUTPUT {shown}: {shown} is not a DIM array", o.pos, s.line)
                elif arr.is_output:
                    self.error(f"OUTPUT {shown} is given twice", o.pos, s.line)
                elif arr.is_string:
                    self.error(f"OUTPUT {shown}: string arrays cannot be outputs", o.pos, s.line)
                else:
                    arr.is_output = True
                    self.outputs.append(arr)
        for arr in self.outputs:
            if arr.tile is None:
                self.error(f"OUTPUT array {self.show(arr.name)} has no TILE: say how blocks split it, e.g. "
                           f"TILE {self.show(arr.name)}({', '.join(['128'] * arr.ndim)})", arr.pos, arr.line)
        for arr in self.arrays.values():
            if arr.tile is not None and arr.is_local:
                self.error(f"TILE {self.show(arr.name)}: only INPUT and OUTPUT arrays are tiled; local DIM arrays "
                           "are indexed by element", arr.tile_pos, arr.tile_line)

    def _fns(self, stmts: list[A.Stmt]) -> None:
        for s in stmts:
            if not isinstance(s, A.DefFn):
                continue
            if s.name in self.fns:
                self.error(f"DEF FN{self.show(s.name)} is defined twice (first in line {self.fns[s.name].stmt.line})",
                           s.pos, s.line)
                continue
            params = [p for p, _ in s.params]
            if len(set(params)) != len(params):
                self.error(f"DEF FN{self.show(s.name)}: a parameter is named twice", s.pos, s.line)
                continue
            t = STRING if s.name.endswith("$") else scalar(SIGIL_DTYPES[s.name[-1]])
            self.fns[s.name] = FnInfo(s.name, params, s.expr, t, s)

    def _implicit_arrays(self, stmts: list[A.Stmt]) -> None:
        """Arrays used without DIM: 0..10 per dimension, the rank of their first use."""
        uses = [x for s in stmts for e in stmt_exprs(s) + fn_body(s) for x in walk_exprs(e) if isinstance(x, A.Index)]
        for x in uses:
            if x.name in self.arrays or x.name in self.tile_vars:
                continue
            sizes: list[A.Expr] = [A.Num(x.pos, literal(str(IMPLICIT_SIZE)), str(IMPLICIT_SIZE)) for _ in x.args]
            sigil = x.name[-1]
            dtype = STRING if sigil == "$" else SIGIL_DTYPES[sigil]
            self.arrays[x.name] = ArrayInfo(x.name, dtype, sizes, x.pos, None, implicit=True)

    # ------------------------------------------------------------------ sizes known before the run

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
            return e.value.item()
        if isinstance(e, A.Var) and allow_vars:
            if e.name in self.scalar_inputs:
                if e.name not in scalars:
                    raise self.fail(f"the value of INPUT {self.show(e.name)} is needed here", e.pos, line)
                return scalars[e.name]
            if e.name in self.size_vars:
                return self.host_eval(self.size_vars[e.name], scalars, allow_vars, line, depth + 1)
            raise self.fail(f"{self.show(e.name)} is not known before the program runs: sizes may use numbers, "
                            "INPUT scalars and variables assigned once from those", e.pos, line)
        if isinstance(e, A.Unary) and e.op == "-":
            return -self.host_eval(e.operand, scalars, allow_vars, line, depth + 1)
        if isinstance(e, A.Binary) and e.op in ("+", "-", "*", "/", "\\", "MOD", "^"):
            a = self.host_eval(e.left, scalars, allow_vars, line, depth + 1)
            b = self.host_eval(e.right, scalars, allow_vars, line, depth + 1)
            try:
                return _size_op(e.op, a, b)
            except (ZeroDivisionError, OverflowError, ValueError) as ex:
                raise self.fail(f"cannot evaluate the size: {ex}", e.pos, line) from None
        if isinstance(e, A.Call) and e.name in ("INT", "FIX", "ABS", "CINT") and len(e.args) == 1:
            v = self.host_eval(e.args[0], scalars, allow_vars, line, depth + 1)
            try:
                return _SIZE_FUNCTIONS[e.name](v)
            except (OverflowError, ValueError) as ex:
                raise self.fail(f"cannot evaluate the size: {ex}", e.pos, line) from None
        raise self.fail("sizes may use numbers, INPUT scalars, + - * / \\ MOD ^, INT, FIX, CINT and ABS", e.pos, line)

    def _size_vars(self, stmts: list[A.Stmt]) -> None:
        """Variables assigned exactly once, at top level, from a host-evaluable expression."""
        counts: dict[str, int] = {}
        for s in stmts:
            for name in _assigned_vars(s):
                counts[name] = counts.get(name, 0) + 1
        top = [s for ln in self.program.lines for s in ln.stmts]
        for s in top:
            if isinstance(s, A.Let) and isinstance(s.target, A.Var) and counts.get(s.target.name) == 1 \
                    and s.target.name not in self.scalar_inputs and not s.target.name.endswith("$"):
                if all(isinstance(x, (A.Num, A.Var, A.Unary, A.Binary, A.Call)) for x in walk_exprs(s.expr)):
                    self.size_vars[s.target.name] = s.expr

    def _check_arrays(self) -> None:
        for arr in self.arrays.values():
            sizes = []
            for e in arr.sizes:
                try:
                    v = self.host_eval(e, {}, allow_vars=False, line=arr.line)
                    if arr.is_local:
                        v = _round_half_away(v)
                    sizes.append(v)
                    if not float(v).is_integer() or v < 0:
                        self.error(f"DIM {self.show(arr.name)}: size {v} must be a non-negative integer", e.pos,
                                   arr.line)
                except BasicError:
                    sizes.append(None)
                    try:  # must be evaluable once the INPUT scalars are known
                        self.host_eval(e, {n: 1 for n in self.scalar_inputs}, line=arr.line)
                    except BasicError as err:
                        self.errors.append(err)
            arr.static_sizes = tuple(None if v is None else int(v) for v in sizes)

    # ------------------------------------------------------------------ jumps and data

    def _jumps(self, stmts: list[A.Stmt]) -> None:
        self.uses_gosub = any(isinstance(s, A.Gosub) or (isinstance(s, A.OnGoto) and s.gosub) for s in stmts)
        for s in stmts:
            targets: list[tuple[int, A.Pos]] = []
            if isinstance(s, (A.Goto, A.Gosub)):
                targets.append((s.target, s.target_pos))
            elif isinstance(s, A.OnGoto):
                targets += s.targets
            elif isinstance(s, A.Restore) and s.target is not None:
                assert s.target_pos is not None  # the parser sets both
                targets.append((s.target, s.target_pos))
            elif isinstance(s, A.Return) and not self.uses_gosub:
                self.defer(s, "RETURN without GOSUB", "the program has no GOSUB", s.pos)
            for t, p in targets:
                if t not in self.line_numbers:
                    self.defer(s, "Undefined line number", f"there is no line {t}", p)
                elif not isinstance(s, A.Restore):
                    self.jump_targets.add(t)

    def _data(self, stmts: list[A.Stmt]) -> None:
        line_first: dict[int, int] = {}
        for ln in self.program.lines:
            for s in walk_stmts(ln.stmts):
                if isinstance(s, A.Data):
                    if ln.number is not None and ln.number not in line_first:
                        line_first[ln.number] = len(self.data)
                    for k, item in enumerate(s.values):
                        text = None if item.text is None else item.text.encode("cp437", "replace")[:255]
                        number = None if item.quoted or item.text is None else _data_number(item.text)
                        error = "Syntax error" if k == 0 or ln.number is None else f"Syntax error in {ln.number}"
                        self.data.append(DataItem(text, number, ln.number, error))
        numbers = sorted(self.line_numbers)  # RESTORE n: the first DATA item in line n or after it
        for n in numbers:
            later = [line_first[m] for m in numbers if m >= n and m in line_first]
            self.data_start[n] = min(later) if later else len(self.data)


def fn_body(s: A.Stmt) -> list[A.Expr]:
    """The body of a DEF FN statement (none for other statements or a body that does not parse)."""
    return [s.expr] if isinstance(s, A.DefFn) and s.expr is not None else []


def _data_number(text: str):
    """A DATA item read into a numeric variable: GW-BASIC's number reading of the whole item
    (an empty item is 0), or None where it is not a number (Syntax error when read)."""
    t = text.strip()
    if not t:
        return literal("0")
    try:
        if t.isdigit():
            return literal(t)
        mantissa, exp10, is_double, _, used = parse_decimal(t)
        if used != len(t):
            return None
        from .gwnumbers import DOUBLE, SINGLE, from_decimal
        return from_decimal(mantissa, exp10, DOUBLE if is_double else SINGLE)
    except MbfOverflow:
        return None


def _round_half_away(v) -> int:
    return int(math.floor(abs(v) + 0.5)) * (1 if v >= 0 else -1)


# the functions a DIM size may use (evaluated on the host)
_SIZE_FUNCTIONS: dict[str, Callable[[Any], Any]] = {"INT": math.floor, "FIX": math.trunc, "ABS": abs,
                                                   "CINT": _round_half_away}


def _size_op(op: str, a, b):
    if op == "+":
        return a + b
    if op == "-":
        return a - b
    if op == "*":
        return a * b
    if op == "/":
        return a / b
    if op == "\\":
        return math.trunc(_round_half_away(a) / _round_half_away(b))
    if op == "MOD":
        return math.fmod(_round_half_away(a), _round_half_away(b))
    r = a ** b
    if isinstance(r, complex):
        raise ValueError("complex result")
    return r


def analyze(program: A.Program, src: Source, errors: list[BasicError] | None = None) -> Analysis:
    an = Analysis(program, src)
    an.run()
    if errors is not None:
        errors.extend(an.errors)
    elif an.errors:
        raise BasicError.collect(an.errors)
    return an
