"""Types of BASIC expressions, and the checks of every statement.

GW-BASIC's rules: ``+ - * / ^`` give singles (doubles when a double takes part); ``\\``,
``MOD`` and the logical operators give integers; comparisons give -1 or 0; ``+`` also joins
strings. A string where a number belongs (or the reverse) is *Type mismatch*, which GW-BASIC
raises when the statement runs: it is deferred to that statement (analyzer.Deferred). Tile
shapes are checked here too (a compile-time error: subscripts and conditions are scalars,
MMA operand shapes fit, element-wise operands broadcast).
"""
from __future__ import annotations

from typing import TYPE_CHECKING

from .. import dtypes as dt
from ..ir.types import TileType
from . import ast as A
from .errors import BasicError
from .lexer import FUNCTIONS
from .structure import walk_exprs
from .vtypes import (
    BOOL,
    DBL,
    INT,
    LONG,
    SIGIL_DTYPES,
    SNG,
    STRING,
    BasicType,
    arith_dtype,
    int_dtype,
    scalar,
)

if TYPE_CHECKING:
    from .analyzer import Analysis

_CMP = ("=", "<>", "<", ">", "<=", ">=")
_LOGIC = ("AND", "OR", "XOR", "EQV", "IMP")


BAD = object()  # the type of an expression that stops the program with a deferred error


class Poisoned(Exception):
    """An operand stops the program (its error is recorded): so does this expression."""


class Mismatch(Exception):
    """A GW-BASIC Type mismatch (raised when the statement runs) or another deferred error."""

    def __init__(self, detail: str, pos: A.Pos, gw_message: str = "Type mismatch"):
        super().__init__(detail)
        self.detail, self.pos, self.gw_message = detail, pos, gw_message


def shape_text(t) -> str:
    if t is STRING:
        return "a string"
    if t.shape == ():
        return "a number"
    return "a " + "x".join(map(str, t.shape)) + " tile"


class TypeChecker:
    def __init__(self, an: Analysis):
        self.an = an
        self.calling: list[str] = []  # DEF FN bodies being checked (no recursion)

    # ------------------------------------------------------------------ driver

    def check(self, stmts: list[A.Stmt]) -> None:
        self._infer_var_types(stmts)
        for s in stmts:
            try:
                self.stmt(s)
            except Mismatch as m:
                self.an.defer(s, m.gw_message, m.detail, m.pos)
            except Poisoned:
                pass  # an expression of the statement carries the error
            except BasicError as e:
                self.an.errors.append(e)

    def _infer_var_types(self, stmts: list[A.Stmt]) -> None:
        an = self.an
        names: set[str] = set(an.scalar_inputs) | set(an.tile_vars)
        for s in stmts:
            for e in _exprs(s):
                names |= {x.name for x in walk_exprs(e) if isinstance(x, A.Var)}
            if isinstance(s, A.For):
                names.add(s.var)
            if isinstance(s, A.DefFn):
                names |= {p for p, _ in s.params}
        for n in names:
            t: BasicType = STRING if n.endswith("$") else scalar(SIGIL_DTYPES[n[-1]])
            if n in an.scalar_inputs:
                d = an.scalar_inputs[n].dtype
                t = STRING if d is STRING else scalar(d)
            if n in an.tile_vars:
                shape, td, _ = an.tile_vars[n]
                if td is None:
                    assert isinstance(t, TileType)  # the analyzer refuses string tile variables
                    td = t.dtype
                t = TileType(td, shape)
            an.var_types[n] = t
        lets = [s for s in stmts if isinstance(s, A.Let) and isinstance(s.target, A.Var)]
        for _ in range(len(lets) + 2):  # a variable assigned a tile holds tiles of that shape
            changed = False
            for s in lets:
                try:
                    t = self.expr(s.expr, s.line)
                except BasicError:
                    continue
                cur = an.var_types[s.target.name]
                if t is BAD:
                    continue
                if t is not STRING and isinstance(cur, TileType) and t.shape != () and cur.shape == ():
                    an.var_types[s.target.name] = TileType(cur.dtype, t.shape)
                    changed = True
            if not changed:
                break

    # ------------------------------------------------------------------ expressions

    def numeric(self, e: A.Expr, line, locals_=None) -> TileType:
        t = self.expr(e, line, locals_)
        if t is BAD:
            raise Poisoned()
        if t is STRING:
            raise Mismatch("a string where a number is needed", e.pos)
        return t

    def string(self, e: A.Expr, line, locals_=None) -> None:
        t = self.expr(e, line, locals_)
        if t is BAD:
            raise Poisoned()
        if t is not STRING:
            raise Mismatch("a number where a string is needed", e.pos)

    def scalar_number(self, e: A.Expr, line, what: str, locals_=None) -> TileType:
        t = self.expr(e, line, locals_)
        if t is BAD:
            return scalar(SNG)
        if t is STRING:
            raise Mismatch("a string where a number is needed", e.pos)
        if t.shape != ():
            raise self.an.fail(f"{what} must be a number, not {shape_text(t)}", e.pos, line)
        return t

    def expr(self, e: A.Expr, line, locals_: dict | None = None):
        """The static type of an expression, or BAD where evaluating it stops the program with
        a deferred error (a string where a number belongs ...: GW-BASIC raises it once the
        operands are evaluated, so output and warnings before it still appear)."""
        try:
            return self._expr(e, line, locals_)
        except Mismatch as m:
            self.an.defer_expr(e, m.gw_message, m.detail, line)
        except Poisoned:
            self.an.bad_exprs.setdefault(id(e), None)
        return BAD

    def operand(self, e: A.Expr, line, locals_=None):
        t = self.expr(e, line, locals_)
        if t is BAD:
            raise Poisoned()
        return t

    def _expr(self, e: A.Expr, line, locals_: dict | None = None) -> BasicType:
        an = self.an
        if isinstance(e, A.Num):
            return scalar(dt.as_dtype(e.value.dtype))
        if isinstance(e, A.Str):
            return STRING
        if isinstance(e, A.Var):
            if locals_ and e.name in locals_:
                return locals_[e.name]
            return an.var_types.get(e.name, STRING if e.name.endswith("$") else scalar(SIGIL_DTYPES[e.name[-1]]))
        if isinstance(e, A.Bid):
            return scalar(LONG)
        if isinstance(e, A.Index):
            return self.index(e, line, locals_)
        if isinstance(e, A.Call):
            return self.call(e, line, locals_)
        if isinstance(e, A.FnCall):
            return self.fn_call(e, line, locals_)
        if isinstance(e, A.Unary):
            t = self.numeric(e.operand, line, locals_)
            if e.op == "NOT":
                return TileType(BOOL if t.dtype is BOOL else int_dtype(t.dtype), t.shape)
            return TileType(t.dtype if t.dtype is not BOOL else INT, t.shape)
        if isinstance(e, A.Binary):
            return self.binary(e, line, locals_)
        return scalar(SNG)  # pragma: no cover - the parser makes no other expressions

    def index(self, e: A.Index, line, locals_) -> BasicType:
        arr = self.an.arrays.get(e.name)
        shown = self.an.show(e.name)
        if arr is None:
            raise self.an.fail(f"{shown} is a tile variable, not an array; tiles cannot be indexed", e.pos, line)
        if len(e.args) != arr.ndim:
            what = "tile index" if arr.tile else "subscript"
            raise self.an.fail(f"{shown} has {arr.ndim} dimension(s) but {len(e.args)} {what}(s) were given",
                               e.pos, line)
        for a in e.args:
            t = self.numeric(a, line, locals_)
            if t.shape != ():
                raise self.an.fail(f"a {'tile index' if arr.tile else 'subscript'} of {shown} must be a number, "
                                   "not a tile", a.pos, line)
        if arr.is_string:
            return STRING
        return TileType(arr.dtype, arr.tile if arr.tile is not None else ())

    def call(self, e: A.Call, line, locals_) -> BasicType:
        lo, hi = FUNCTIONS[e.name]
        if not lo <= len(e.args) <= hi:
            n = f"{lo}" if lo == hi else f"{lo} or {hi}"
            raise self.an.fail(f"{e.name} takes {n} argument{'s' if hi != 1 else ''}, got {len(e.args)}", e.pos,
                               line)
        name = e.name
        if name in ("LEN", "ASC", "VAL"):
            self.string(e.args[0], line, locals_)
            return scalar(SNG if name == "VAL" else INT)
        if name == "INSTR":
            args = list(e.args)
            if len(args) == 3:
                self.scalar_number(args.pop(0), line, "the INSTR start", locals_)
            for a in args:
                self.string(a, line, locals_)
            return scalar(INT)
        if name in ("LEFT$", "RIGHT$", "MID$"):
            self.string(e.args[0], line, locals_)
            for a in e.args[1:]:
                self.scalar_number(a, line, f"a {name} argument", locals_)
            return STRING
        if name == "STRING$":
            self.scalar_number(e.args[0], line, "the STRING$ count", locals_)
            t = self.operand(e.args[1], line, locals_)
            if t is not STRING and t.shape != ():
                raise self.an.fail("the STRING$ character must be a number or a string", e.args[1].pos, line)
            return STRING
        types = [self.numeric(a, line, locals_) for a in e.args]
        if name in ("CHR$", "STR$", "SPACE$", "HEX$", "OCT$"):
            if types[0].shape != ():
                raise self.an.fail(f"{name} takes a number, not a tile", e.args[0].pos, line)
            return STRING
        return self.numeric_call(e, types, line)

    def numeric_call(self, e: A.Call, types: list[TileType], line) -> TileType:
        name = e.name
        if name == "MMA":
            return self.mma(e, types, line)
        if name == "RND":
            if types and types[0].shape != ():
                raise self.an.fail("RND takes a number, not a tile", e.args[0].pos, line)
            return scalar(SNG)
        t = types[0]
        if name == "SUM":
            return scalar(t.dtype if t.dtype is not BOOL else INT)
        if name in ("MIN", "MAX"):
            return TileType(arith_dtype(t.dtype, types[1].dtype, "+") if t.shape == types[1].shape == ()
                            else dt.promote(t.dtype, types[1].dtype),
                            self.broadcast(t.shape, types[1].shape, e, line))
        if name in ("INT", "FIX", "ABS"):
            return TileType(t.dtype if t.dtype is not BOOL else INT, t.shape)
        if name in ("SGN", "CINT"):
            return TileType(INT if t.shape == () else dt.int32, t.shape)
        if name in ("CSNG", "CDBL"):
            return TileType(SNG if name == "CSNG" else DBL, t.shape)
        return TileType(t.dtype if t.dtype.is_float and t.shape != () else SNG, t.shape)

    def mma(self, e: A.Call, types: list[TileType], line) -> TileType:
        a, b, acc = types
        if a.ndim != 2 or b.ndim != 2:
            raise self.an.fail(f"MMA needs two 2-D tiles, got shapes {a.shape} and {b.shape}", e.pos, line)
        if a.shape[1] != b.shape[0]:
            raise self.an.fail(f"MMA shape mismatch: {a.shape[0]}x{a.shape[1]} times {b.shape[0]}x{b.shape[1]} "
                               f"({a.shape[1]} != {b.shape[0]})", e.pos, line)
        out = (a.shape[0], b.shape[1])
        if acc.shape not in ((), out):
            raise self.an.fail(f"MMA accumulator has shape {acc.shape} but the product is {out[0]}x{out[1]}",
                               e.args[2].pos, line)
        return TileType(acc.dtype if acc.dtype.is_float or acc.dtype.is_int and a.dtype.is_int else SNG, out)

    def fn_call(self, e: A.FnCall, line, locals_) -> BasicType:
        fn = self.an.fns.get(e.name)
        shown = "FN" + self.an.show(e.name)
        arg_types = [self.operand(a, line, locals_) for a in e.args]  # evaluated first
        if fn is None:
            raise Mismatch(f"{shown} has no DEF FN", e.pos, "Undefined user function")
        if len(e.args) != len(fn.params):
            raise Mismatch(f"{shown} takes {len(fn.params)} argument(s), got {len(e.args)}", e.pos, "Syntax error")
        if fn.expr is None:
            raise Mismatch(f"the DEF FN{self.an.show(e.name)} body does not parse: {fn.stmt.broken.message}", e.pos,
                           "Syntax error")
        if e.name in self.calling:
            raise self.an.fail(f"{shown} calls itself; DEF FN functions cannot be recursive", e.pos, line)
        inner: dict[str, BasicType] = {}
        for p, a, at in zip(fn.params, e.args, arg_types):
            pt: BasicType = STRING if p.endswith("$") else scalar(SIGIL_DTYPES[p[-1]])
            if (at is STRING) != (pt is STRING):
                raise Mismatch(f"argument {self.an.show(p)} of {shown} gets {shape_text(at)}", a.pos)
            if at is not STRING and at.shape != ():
                raise self.an.fail(f"{shown} takes numbers, not tiles", a.pos, line)
            inner[p] = pt
        self.calling.append(e.name)
        try:
            body = self.expr(fn.expr, fn.stmt.line, inner)
        finally:
            self.calling.pop()
        if body is BAD:  # the call stops the program where the body's error arises
            message = next(m for x in walk_exprs(fn.expr) if (m := self.an.bad_exprs.get(id(x))))
            raise Mismatch(f"in the body of {shown}", e.pos, message)
        if (body is STRING) != (fn.type is STRING):
            raise Mismatch(f"{shown} is {shape_text(fn.type)} but its DEF FN gives {shape_text(body)}", e.pos)
        if body is not STRING and body.shape != ():
            raise self.an.fail(f"{shown} must give a number, not a tile", e.pos, line)
        return fn.type

    def binary(self, e: A.Binary, line, locals_) -> BasicType:
        a = self.operand(e.left, line, locals_)
        b = self.operand(e.right, line, locals_)
        if a is STRING or b is STRING:
            if a is not b:
                raise Mismatch(f"{shape_text(a)} {e.op} {shape_text(b)}", e.pos)
            if e.op in _CMP:
                return scalar(BOOL)
            if e.op == "+":
                return STRING
            raise Mismatch(f"{e.op} does not apply to strings", e.pos)
        shape = self.broadcast(a.shape, b.shape, e, line)
        if e.op in _CMP:
            return TileType(BOOL, shape)
        if e.op in _LOGIC:
            return TileType(BOOL if a.dtype is BOOL and b.dtype is BOOL else int_dtype(a.dtype, b.dtype), shape)
        if e.op in ("\\", "MOD"):
            if shape != ():
                return TileType(dt.promote(a.dtype, b.dtype), shape)
            return TileType(int_dtype(a.dtype, b.dtype), shape)
        ad = a.dtype if a.dtype is not BOOL else INT
        bd = b.dtype if b.dtype is not BOOL else INT
        if shape != () and ad.is_int and bd.is_int and e.op in ("+", "-", "*"):
            return TileType(dt.promote(ad, bd), shape)
        return TileType(arith_dtype(ad, bd, e.op), shape)

    def broadcast(self, a, b, e, line):
        try:
            return dt.broadcast_shapes(a, b)
        except ValueError:
            raise self.an.fail(f"tile shapes {a} and {b} do not fit together", e.pos, line) from None

    # ------------------------------------------------------------------ statements

    def stmt(self, s: A.Stmt) -> None:
        line = s.line
        an = self.an
        if isinstance(s, A.Let):
            t = self.expr(s.expr, line)
            if t is BAD:
                return
            if isinstance(s.target, A.Var):
                vt = an.var_types[s.target.name]
                self.assignable(vt, t, s.target, s.expr, line)
            else:
                self.store(s.target, t, line, s.expr.pos)
        elif isinstance(s, (A.If, A.ElseIf, A.While)):
            self.scalar_number(s.cond, line, "a condition")
        elif isinstance(s, A.For):
            vt = an.var_types.get(s.var, scalar(SNG))
            if vt is STRING:
                raise Mismatch(f"the loop variable {an.show(s.var)} is a string", s.var_pos)
            if vt.shape != ():
                raise an.fail(f"the loop variable {an.show(s.var)} holds tiles", s.var_pos, line)
            self.scalar_number(s.start, line, "the FOR start")
            self.scalar_number(s.stop, line, "the FOR limit")
            if s.step is not None:
                self.scalar_number(s.step, line, "the FOR step")
        elif isinstance(s, A.OnGoto):
            self.scalar_number(s.expr, line, "the ON expression")
        elif isinstance(s, A.Randomize):
            if s.seed is not None:
                self.scalar_number(s.seed, line, "the RANDOMIZE seed")
        elif isinstance(s, A.Read):
            for tgt in s.targets:
                self.read_target(tgt, line)
        elif isinstance(s, A.Swap):
            ta, tb = self.operand(s.a, line), self.operand(s.b, line)
            if ta is not tb and (ta is STRING or tb is STRING or ta.dtype is not tb.dtype or ta.shape != tb.shape):
                raise Mismatch(f"SWAP of {shape_text(ta)} and {shape_text(tb)} of different types", s.pos)
            for x in (s.a, s.b):
                if isinstance(x, A.Index):
                    self.store(x, ta, line, x.pos)
        elif isinstance(s, A.Print):
            for it in s.items:
                if isinstance(it, A.PrintFn):
                    self.scalar_number(it.arg, line, f"the {it.fn} argument")
                elif isinstance(it, A.Expr):
                    self.expr(it, line)

    def assignable(self, vt, t, target: A.Target, value: A.Expr, line) -> None:
        if (vt is STRING) != (t is STRING):
            raise Mismatch(f"{self.an.show(target.name)} is {shape_text(vt)}, the value {shape_text(t)}", value.pos)
        if t is not STRING and t.shape not in ((), vt.shape):
            raise self.an.fail(f"{self.an.show(target.name)} holds {shape_text(vt)} but is assigned {shape_text(t)}",
                               value.pos, line)

    def read_target(self, tgt: A.Target, line) -> None:
        an = self.an
        if isinstance(tgt, A.Var):
            t = an.var_types[tgt.name]
            if t is not STRING and t.shape != ():
                raise an.fail(f"READ {an.show(tgt.name)}: {an.show(tgt.name)} holds tiles", tgt.pos, line)
            return
        arr = an.arrays.get(tgt.name)
        if arr is not None and arr.tile is not None:
            raise an.fail(f"READ into the tiled array {an.show(tgt.name)} is not supported", tgt.pos, line)
        self.store(tgt, STRING if tgt.name.endswith("$") else scalar(SNG), line, tgt.pos)

    def store(self, tgt: A.Index, t, line, value_pos) -> None:
        an = self.an
        at = self.operand(tgt, line)  # checks existence, arity, subscripts
        arr = an.arrays[tgt.name]
        shown = an.show(tgt.name)
        if (at is STRING) != (t is STRING):
            raise Mismatch(f"{shown}() holds {'strings' if at is STRING else 'numbers'}, the value is "
                           f"{shape_text(t)}", value_pos)
        if arr.is_input and not arr.is_output:
            raise an.fail(f"{shown} is an INPUT array and is read-only; list it in OUTPUT to write it", tgt.pos, line)
        if t is not STRING and t.shape not in ((), at.shape):
            if arr.tile is None:
                raise an.fail(f"{shown} is not tiled: an element holds one number, not {shape_text(t)}",
                              value_pos, line)
            raise an.fail(f"cannot store {shape_text(t)} into {shown}, whose tiles are {shape_text(at)}", value_pos,
                          line)


def _exprs(s: A.Stmt) -> list[A.Expr]:
    from .structure import stmt_exprs
    out = stmt_exprs(s)
    if isinstance(s, A.DefFn) and s.expr is not None:
        out = out + [s.expr]
    if isinstance(s, A.Dim):
        out = out + [e for d in s.decls for e in d.sizes]
    return out
