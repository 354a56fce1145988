"""Python AST → tile IR.

The compiler walks a kernel's AST. Expressions are evaluated to front-end values: Python
constants (folded eagerly), ``Tile``/``Array`` symbols that wrap IR values, tuples, and
callables. Calls of ``safetile`` functions emit IR through the catalogue; calls of any
other Python function inline its AST. Variables are SSA names: ``if`` merges the names
either branch changed, loops carry the names their body reassigns, and ``break``,
``continue`` and ``return`` become boolean flags that guard the statements after them,
so the IR keeps purely structured control flow.
"""
from __future__ import annotations

import ast
import builtins
import inspect
import math
import operator
import types
from dataclasses import dataclass
from typing import Any, Callable

import numpy as np

from .. import dtypes as dt
from ..errors import (TileError, TileInternalError, TileRecursionError, TileStaticAssertionError,
                      TileStaticEvalError, TileSyntaxError, TileTypeError, TileUnsupportedFeatureError,
                      TileValueError)
from ..ir.builder import Builder, building
from ..ir.core import Block, Value
from ..ir.types import TileType
from ..ops import elementwise as ew
from ..ops.values import Array, Tile, as_tile, const_tile, describe, is_const
from .source import ParsedFunction, parse_function

BRK, CONT, RET, RETVAL, IV = "$break", "$continue", "$return", "$retval", "$iv"
FLAGS = (BRK, CONT, RET)

_BINOPS = {
    ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul, ast.Div: operator.truediv,
    ast.FloorDiv: operator.floordiv, ast.Mod: operator.mod, ast.Pow: operator.pow,
    ast.BitAnd: operator.and_, ast.BitOr: operator.or_, ast.BitXor: operator.xor,
    ast.LShift: operator.lshift, ast.RShift: operator.rshift, ast.MatMult: operator.matmul,
}
_CMPOPS = {
    ast.Eq: operator.eq, ast.NotEq: operator.ne, ast.Lt: operator.lt, ast.LtE: operator.le,
    ast.Gt: operator.gt, ast.GtE: operator.ge,
}


class _Undefined:
    """Marks a name that is not defined on every path reaching this point."""

    def __init__(self, reason: str):
        self.reason = reason


@dataclass
class LocalFunction:
    """A ``def`` or ``lambda`` written inside tile code, closed over the current scope."""

    node: ast.FunctionDef | ast.Lambda
    parsed: ParsedFunction
    scope: dict[str, Any]
    globals: dict[str, Any]


class _Stop(Exception):
    """Unwinds the rest of a statement list after an unconditional break/continue/return."""


# ---------------------------------------------------------------------------------- scans

def _assigned_names(stmts: list[ast.stmt]) -> set[str]:
    """Names (re)bound by ``stmts``, not looking into nested function definitions."""
    out: set[str] = set()

    def visit(node):
        if isinstance(node, (ast.FunctionDef, ast.Lambda, ast.AsyncFunctionDef, ast.ClassDef)):
            if isinstance(node, ast.FunctionDef):
                out.add(node.name)
            return
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            out.add(node.id)
        for child in ast.iter_child_nodes(node):
            visit(child)

    for s in stmts:
        visit(s)
    return out


def _contains(stmts, kinds, into_loops: bool) -> bool:
    def visit(node) -> bool:
        if isinstance(node, kinds):
            return True
        if isinstance(node, (ast.FunctionDef, ast.Lambda, ast.AsyncFunctionDef, ast.ClassDef)):
            return False
        if not into_loops and isinstance(node, (ast.For, ast.While)):
            return False
        return any(visit(c) for c in ast.iter_child_nodes(node))
    return any(visit(s) for s in stmts)


# ---------------------------------------------------------------------------------- compiler

class FunctionCompiler:
    """Compiles one function body (the kernel, or an inlined tile function) into IR."""

    def __init__(self, parsed: ParsedFunction, globals_: dict[str, Any], scope: dict[str, Any],
                 builder: Builder, call_stack: tuple, is_kernel: bool):
        self.parsed = parsed
        self.globals = globals_
        self.env: dict[str, Any] = dict(scope)
        self.builder = builder
        self.call_stack = call_stack
        self.is_kernel = is_kernel
        self.loop_flags: list[tuple[bool, bool]] = []  # per enclosing loop: (has break, has continue)

    # ------------------------------------------------------------------ errors & locations

    def loc(self, node):
        return self.parsed.loc(node) if node is not None else self.builder.loc

    def call_value(self, fn: Any, args: list) -> Any:
        """Call a tile function from an op (e.g. a reduce combiner) at the current location."""
        return self.call(fn, args, {}, None)

    def at(self, node: ast.AST):
        """Context manager: set the builder location and attach it to errors raised inside."""
        compiler = self

        class _At:
            def __enter__(self):
                self.saved = (compiler.builder.loc, getattr(compiler.builder, "compiler", None))
                compiler.builder.loc = compiler.loc(node)
                compiler.builder.compiler = compiler

            def __exit__(self, et, ev, tb):
                compiler.builder.loc, compiler.builder.compiler = self.saved
                if ev is None or isinstance(ev, _Stop):
                    return False
                if isinstance(ev, TileError):
                    if not ev.locs:
                        ev.locs.append(compiler.loc(node))
                    return False
                if isinstance(ev, (TypeError, ValueError, ZeroDivisionError, OverflowError,
                                   IndexError, KeyError, AttributeError)):
                    cls = TileValueError if isinstance(ev, (ValueError, ZeroDivisionError, OverflowError)) \
                        else TileTypeError
                    raise cls(str(ev), compiler.loc(node)) from ev
                if isinstance(ev, RecursionError):
                    raise TileRecursionError("tile functions are too deeply nested", compiler.loc(node)) from ev
                raise TileInternalError(f"internal error: {type(ev).__name__}: {ev}", compiler.loc(node)) from ev
        return _At()

    # ------------------------------------------------------------------ names

    def lookup(self, name: str, node: ast.AST) -> Any:
        if name in self.env:
            v = self.env[name]
            if isinstance(v, _Undefined):
                raise TileSyntaxError(f"name {name!r} {v.reason}", self.loc(node))
            return v
        if name in self.globals:
            return self.globals[name]
        if hasattr(builtins, name):
            return getattr(builtins, name)
        raise TileSyntaxError(f"name {name!r} is not defined", self.loc(node))

    def assign(self, target: ast.expr, value: Any) -> None:
        if isinstance(target, ast.Name):
            if isinstance(value, (list,)):
                value = tuple(value)
            self.env[target.id] = value
        elif isinstance(target, (ast.Tuple, ast.List)):
            if not isinstance(value, tuple):
                raise TileTypeError(f"cannot unpack {describe(value)}", self.loc(target))
            stars = [i for i, e in enumerate(target.elts) if isinstance(e, ast.Starred)]
            if stars:
                i = stars[0]
                n_after = len(target.elts) - i - 1
                if len(value) < len(target.elts) - 1:
                    raise TileValueError(f"not enough values to unpack (expected at least "
                                         f"{len(target.elts) - 1}, got {len(value)})", self.loc(target))
                for t, v in zip(target.elts[:i], value[:i]):
                    self.assign(t, v)
                self.assign(target.elts[i].value, tuple(value[i:len(value) - n_after]))
                for t, v in zip(target.elts[i + 1:], value[len(value) - n_after:]):
                    self.assign(t, v)
                return
            if len(value) != len(target.elts):
                raise TileValueError(f"cannot unpack {len(value)} values into {len(target.elts)} names",
                                     self.loc(target))
            for t, v in zip(target.elts, value):
                self.assign(t, v)
        elif isinstance(target, ast.Subscript):
            raise TileUnsupportedFeatureError(
                "tiles and arrays are immutable in tile code; store to arrays with ct.store and build "
                "new tiles with ct.where or ct.insert", self.loc(target))
        elif isinstance(target, ast.Attribute):
            raise TileUnsupportedFeatureError("attribute assignment is not supported in tile code",
                                              self.loc(target))
        else:
            raise TileSyntaxError(f"cannot assign to {type(target).__name__}", self.loc(target))

    # ------------------------------------------------------------------ statements

    def run_body(self, stmts: list[ast.stmt]) -> None:
        """Compile a statement list; statements after a possible exit are guarded."""
        try:
            self._stmts(stmts)
        except _Stop:
            pass

    def _stmts(self, stmts: list[ast.stmt]) -> None:
        for k, s in enumerate(stmts):
            self.stmt(s)
            rest = stmts[k + 1:]
            if rest and self._may_exit(s):
                guard = self._exit_guard()
                if guard is True:
                    continue
                if guard is False:
                    raise _Stop
                self._emit_if(guard, lambda: self.run_body(rest), lambda: None, s)
                return

    def _may_exit(self, s: ast.stmt) -> bool:
        if not isinstance(s, (ast.If, ast.With, ast.Try)):
            return False
        if _contains([s], (ast.Return,), into_loops=True):
            return True
        return bool(self.loop_flags) and _contains([s], (ast.Break, ast.Continue), into_loops=False)

    def _exit_guard(self) -> Any:
        """True when no exit flag is set (constant-folded where possible)."""
        live = True
        for flag in FLAGS:
            v = self.env.get(flag, False)
            if isinstance(v, _Undefined):
                continue
            live = self._and(live, self._not(v))
        return live

    def _not(self, v):
        if is_const(v):
            return not v
        return ew.equal(self._truth(v), False)

    def _and(self, a, b):
        if is_const(a):
            return b if a else False
        if is_const(b):
            return a if b else False
        return ew.bitwise_and(self._truth(a), self._truth(b))

    def _or(self, a, b):
        if is_const(a):
            return True if a else b
        if is_const(b):
            return True if b else a
        return ew.bitwise_or(self._truth(a), self._truth(b))

    def _truth(self, v, node=None) -> Any:
        """A bool scalar tile (or constant) for a condition."""
        if is_const(v):
            return bool(v)
        if isinstance(v, Tile):
            if v.shape != ():
                raise TileTypeError(f"a condition must be a scalar, got a {v.type}; reduce it first "
                                    "(e.g. ct.sum) or use ct.where")
            return v if v.dtype.is_bool else ew.not_equal(v, 0)
        if v is None:
            return False
        if isinstance(v, tuple):
            return len(v) > 0
        raise TileTypeError(f"{describe(v)} cannot be used as a condition")

    def stmt(self, s: ast.stmt) -> None:
        method = getattr(self, "stmt_" + type(s).__name__, None)
        if method is None:
            raise TileUnsupportedFeatureError(f"{type(s).__name__} statements are not supported in tile code",
                                              self.loc(s))
        with self.at(s):
            method(s)

    def stmt_Expr(self, s: ast.Expr) -> None:
        if isinstance(s.value, ast.Constant) and isinstance(s.value.value, str):
            return  # docstring
        self.expr(s.value)

    def stmt_Pass(self, s) -> None:
        pass

    def stmt_Assign(self, s: ast.Assign) -> None:
        value = self.expr(s.value)
        for t in s.targets:
            self.assign(t, value)

    def stmt_AnnAssign(self, s: ast.AnnAssign) -> None:
        if s.value is not None:
            self.assign(s.target, self.expr(s.value))

    def stmt_AugAssign(self, s: ast.AugAssign) -> None:
        if not isinstance(s.target, ast.Name):
            self.assign(s.target, None)  # raises the immutability error
        current = self.lookup(s.target.id, s.target)
        self.env[s.target.id] = self._binop(type(s.op), current, self.expr(s.value), s)

    def stmt_FunctionDef(self, s: ast.FunctionDef) -> None:
        if s.decorator_list:
            raise TileUnsupportedFeatureError("decorators on nested tile functions are not supported", self.loc(s))
        self.env[s.name] = LocalFunction(s, self.parsed, self.env, self.globals)

    def stmt_Assert(self, s: ast.Assert) -> None:
        cond = self.expr(s.test)
        msg = self.expr(s.msg) if s.msg is not None else None
        if is_const(cond):
            if not cond:
                raise TileStaticAssertionError(f"assertion failed{': ' + str(msg) if msg else ''}", self.loc(s))
            return
        from ..ops.debug import assert_
        assert_(cond, msg if msg is not None else "assertion failed")

    def stmt_Return(self, s: ast.Return) -> None:
        if any(self.loop_flags) or self.loop_flags:
            raise TileUnsupportedFeatureError("return inside a loop is not supported in tile code", self.loc(s))
        value = self.expr(s.value) if s.value is not None else None
        if self.is_kernel and value is not None:
            raise TileSyntaxError("a kernel cannot return a value; store results to an array", self.loc(s.value))
        self.env[RETVAL] = value
        self.env[RET] = True
        raise _Stop

    def stmt_Break(self, s) -> None:
        if not self.loop_flags:
            raise TileSyntaxError("'break' outside a loop", self.loc(s))
        self.env[BRK] = True
        raise _Stop

    def stmt_Continue(self, s) -> None:
        if not self.loop_flags:
            raise TileSyntaxError("'continue' outside a loop", self.loc(s))
        self.env[CONT] = True
        raise _Stop

    # ------------------------------------------------------------------ if

    def stmt_If(self, s: ast.If) -> None:
        cond = self._truth(self.expr(s.test))
        if is_const(cond):
            self._stmts_inline(s.body if cond else s.orelse)
            return
        self._emit_if(cond, lambda: self.run_body(s.body), lambda: self.run_body(s.orelse), s)

    def _stmts_inline(self, stmts) -> None:
        self._stmts(stmts)  # a _Stop propagates to the enclosing statement list

    def _emit_if(self, cond: Tile, then_fn: Callable, else_fn: Callable, node: ast.AST) -> None:
        before = dict(self.env)
        envs, blocks = [], []
        for fn in (then_fn, else_fn):
            self.env = dict(before)
            block = Block()
            with self.builder.inside(block):
                fn()
            envs.append(self.env)
            blocks.append(block)
        names = [n for n in dict.fromkeys([*envs[0], *envs[1]])
                 if envs[0].get(n, _MISSING) is not envs[1].get(n, _MISSING)
                 or envs[0].get(n, _MISSING) is not before.get(n, _MISSING)]
        merged: dict[str, Any] = {}
        yields: list[list[Tile]] = [[], []]
        result_types: list[TileType] = []
        plan: list[tuple[str, Any, int, int]] = []  # name, tuple template, first result, count
        for name in names:
            a, b = envs[0].get(name, _MISSING), envs[1].get(name, _MISSING)
            a_missing = a is _MISSING or isinstance(a, _Undefined)
            b_missing = b is _MISSING or isinstance(b, _Undefined)
            if name == RETVAL and a_missing != b_missing:
                # the branch that did not return yields a placeholder; the return flag guards it
                a, b = (_placeholder(b), b) if a_missing else (a, _placeholder(a))
            elif a_missing or b_missing:
                merged[name] = _Undefined(f"is not defined on every path through the if at line "
                                          f"{self.loc(node).line}")
                continue
            if is_const(a) and is_const(b) and type(a) is type(b) and a == b:
                merged[name] = a
                continue
            try:
                ta, tb = self._merge_pair(a, b, blocks, name)
            except TileTypeError as e:
                e.message = f"variable {name!r} has different types after the if: {e.message}"
                e.args = (e.message,)
                raise
            plan.append((name, a if isinstance(a, tuple) else None, len(result_types), len(ta)))
            for t_a, t_b in zip(ta, tb):
                yields[0].append(t_a)
                yields[1].append(t_b)
                result_types.append(t_a.type)
        for block, ys in zip(blocks, yields):
            with self.builder.inside(block):
                self.builder.emit("yield", [t.value for t in ys])
        op = self.builder.emit("if", [cond.value], {"result_types": tuple(result_types)}, regions=blocks)
        results = [Tile(v) for v in op.results]
        self.env = dict(before)
        self.env.update(merged)
        for name, template, start, count in plan:
            vals = results[start:start + count]
            self.env[name] = _rebuild(template, vals) if template is not None else vals[0]

    def _merge_pair(self, a: Any, b: Any, blocks: list[Block], name: str) -> tuple[list[Tile], list[Tile]]:
        """Flatten two branch values into matching lists of tiles (materialising constants)."""
        if isinstance(a, tuple) or isinstance(b, tuple):
            if not (isinstance(a, tuple) and isinstance(b, tuple)) or len(a) != len(b):
                raise TileTypeError(f"{describe(a)} vs {describe(b)}")
            out_a, out_b = [], []
            for x, y in zip(a, b):
                xa, yb = self._merge_pair(x, y, blocks, name)
                out_a += xa
                out_b += yb
            return out_a, out_b
        for v in (a, b):
            if not (is_const(v) or isinstance(v, Tile)):
                raise TileTypeError(f"{describe(a)} vs {describe(b)} (only tiles and numbers can differ "
                                    "between branches)")
        target = self._merge_type(a, b)
        out = []
        for v, block in zip((a, b), blocks):
            with self.builder.inside(block):
                out.append(self._coerce(v, target))
        return [out[0]], [out[1]]

    def _merge_type(self, a, b) -> TileType:
        ta = a.type if isinstance(a, Tile) else None
        tb = b.type if isinstance(b, Tile) else None
        if ta is None and tb is None:
            d = dt.promote(dt.scalar_dtype(a), dt.scalar_dtype(b))
            return TileType(d, ())
        if ta is None or tb is None:
            t, c = (ta, b) if ta is not None else (tb, a)
            return TileType(dt.promote_with_scalar(t.dtype, c), t.shape)
        if ta.shape != tb.shape:
            raise TileTypeError(f"{ta} vs {tb}")
        return TileType(dt.promote(ta.dtype, tb.dtype), ta.shape)

    def _coerce(self, v, target: TileType) -> Tile:
        t = as_tile(v, target.dtype) if is_const(v) else ew.cast(v, target.dtype)
        if t.shape != target.shape:
            from ..ops.shape import broadcast_to
            t = broadcast_to(t, target.shape)
        return t

    # ------------------------------------------------------------------ loops

    def stmt_For(self, s: ast.For) -> None:
        if s.orelse:
            raise TileUnsupportedFeatureError("for ... else is not supported in tile code", self.loc(s))
        it = s.iter
        if isinstance(it, ast.Call):
            fn = self.expr(it.func)
            from ..ops.meta import static_iter
            if fn is static_iter:
                if len(it.args) != 1:
                    raise TileTypeError("static_iter takes one iterable", self.loc(it))
                return self._unroll(s, self._static_eval_node(it.args[0]))
            if fn is range:
                return self._range_loop(s, it)
        iterable = self.expr(it)
        if isinstance(iterable, tuple):
            return self._unroll(s, iterable)
        raise TileUnsupportedFeatureError(
            "tile code loops over range(...), ct.static_iter(...) or a tuple of compile-time values, "
            f"not {describe(iterable)}", self.loc(it))

    def _unroll(self, s: ast.For, values) -> None:
        if _contains(s.body, (ast.Break, ast.Continue), into_loops=False):
            raise TileUnsupportedFeatureError("break/continue in an unrolled static loop is not supported",
                                              self.loc(s))
        for v in values:
            self.assign(s.target, v)
            self._stmts_inline(s.body)

    def _range_loop(self, s: ast.For, call: ast.Call) -> None:
        if call.keywords or not 1 <= len(call.args) <= 3:
            raise TileTypeError("range() takes 1 to 3 positional arguments", self.loc(call))
        args = [self.expr(a) for a in call.args]
        start, stop, step = (0, args[0], 1) if len(args) == 1 else (args[0], args[1], args[2] if len(args) == 3 else 1)
        for a in (start, stop, step):
            if not ((is_const(a) and isinstance(a, (int, np.integer)) and not isinstance(a, bool))
                    or (isinstance(a, Tile) and a.shape == () and a.dtype.is_int)):
                raise TileTypeError(f"range() arguments must be integer scalars, got {describe(a)}", self.loc(call))
        if is_const(step) and step <= 0:
            raise TileValueError(f"range() step must be positive in tile code, got {step}", self.loc(call))
        if not isinstance(s.target, ast.Name):
            raise TileSyntaxError("a range loop variable must be a single name", self.loc(s.target))
        has_brk = _contains(s.body, (ast.Break,), into_loops=False)
        has_cont = _contains(s.body, (ast.Continue,), into_loops=False)
        d = dt.int32
        for a in (start, stop, step):
            if isinstance(a, Tile):
                d = dt.promote(d, a.dtype)
            elif not dt.representable(a, dt.int32):
                d = dt.int64
        if has_brk:
            # for with break → while over an explicit induction variable
            self.env[IV] = as_tile(start, d) if is_const(start) else ew.cast(start, d)
            target = s.target.id

            def cond():
                return self._and(self._not(self.env[BRK]), ew.less(self.env[IV], stop))

            def body():
                self.env[target] = self.env[IV]
                self.run_body(s.body)
                self.env[IV] = ew.add(self.env[IV], step)

            self._loop(s, "while", cond, body, has_brk, has_cont, extra_carried=(IV,))
            self.env.pop(IV, None)
            self.env[target] = _Undefined(f"(a range loop variable) cannot be used after its loop "
                                          f"(line {self.loc(s).line})")
            return
        bounds = [as_tile(a, d) if is_const(a) else ew.cast(a, d) for a in (start, stop, step)]
        self._loop(s, "for", None, lambda: self.run_body(s.body), has_brk, has_cont, bounds=bounds,
                   target=s.target.id)
        self.env[s.target.id] = _Undefined(f"(a range loop variable) cannot be used after its loop "
                                           f"(line {self.loc(s).line})")

    def stmt_While(self, s: ast.While) -> None:
        if s.orelse:
            raise TileUnsupportedFeatureError("while ... else is not supported in tile code", self.loc(s))
        has_brk = _contains(s.body, (ast.Break,), into_loops=False)
        has_cont = _contains(s.body, (ast.Continue,), into_loops=False)

        def cond():
            c = self._truth(self.expr(s.test))
            return self._and(self._not(self.env[BRK]), c) if has_brk else c

        self._loop(s, "while", cond, lambda: self.run_body(s.body), has_brk, has_cont)

    def _loop(self, s, kind: str, cond_fn, body_fn, has_brk: bool, has_cont: bool,
              bounds=None, target: str | None = None, extra_carried: tuple = ()) -> None:
        """Emit a ``for``/``while`` op whose carried values are the names the body reassigns."""
        saved_flags = {f: self.env.pop(f) for f in (BRK, CONT) if f in self.env}
        if has_brk:
            self.env[BRK] = False
        assigned = _assigned_names(s.body) | set(extra_carried) | ({BRK} if has_brk else set())
        carried = [n for n in self.env if n in assigned and n != target
                   and self._carriable(self.env[n])]
        init = {n: self.env[n] for n in carried}
        block_types = {n: [x.type if isinstance(x, Tile) else TileType(dt.scalar_dtype(x), ())
                           for x in _flatten(init[n])] for n in carried}
        for _ in range(4):  # widen carried types until the body preserves them
            body_block, cond_block, out_types, outer_env = self._lower_loop_body(
                kind, cond_fn, body_fn, carried, init, block_types, has_cont, target,
                bounds[0].dtype if bounds else None)
            changed = {n: ts for n, ts in out_types.items() if ts != block_types[n]}
            if not changed:
                break
            for n, ts in changed.items():
                inits = list(_flatten(init[n]))
                block_types[n] = [self._widen(a, b, x, n, s) for a, b, x in zip(block_types[n], ts, inits)]
        else:
            raise TileTypeError("loop-carried variable types do not settle", self.loc(s))
        self.env = outer_env
        flat_init = [self._coerce(x, t) for n in carried for x, t in zip(_flatten(init[n]), block_types[n])]
        operands = [t.value for t in flat_init]
        result_types = tuple(t for n in carried for t in block_types[n])
        if kind == "for":
            op = self.builder.emit("for", [b.value for b in bounds] + operands,
                                   {"result_types": result_types}, regions=[body_block])
        else:
            op = self.builder.emit("while", operands, {"result_types": result_types},
                                   regions=[cond_block, body_block])
        results = [Tile(v) for v in op.results]
        i = 0
        for n in carried:
            k = len(block_types[n])
            self.env[n] = _rebuild(init[n], results[i:i + k]) if isinstance(init[n], tuple) else results[i]
            i += k
        for n in _assigned_names(s.body) - set(carried) - {target}:
            if not n.startswith("$"):
                self.env[n] = _Undefined(f"is assigned only inside the loop at line {self.loc(s).line}; "
                                         "define it before the loop to use it afterwards")
        self.env.pop(BRK, None)
        self.env.pop(CONT, None)
        self.env.update(saved_flags)

    def _carriable(self, v) -> bool:
        if isinstance(v, tuple):
            return len(v) > 0 and all(self._carriable(x) for x in v)
        return isinstance(v, Tile) or is_const(v)

    def _widen(self, a: TileType, b: TileType, init: Any, name: str, s) -> TileType:
        """The carried type that holds both the value before the loop and after one iteration."""
        if a == b:
            return a
        if is_const(init) and (a.shape == () or a.shape == b.shape):
            return b if a.dtype.is_float == b.dtype.is_float or b.dtype.is_float else \
                TileType(dt.promote(a.dtype, b.dtype), b.shape)
        if a.shape == b.shape:
            return TileType(dt.promote(a.dtype, b.dtype), a.shape)
        raise TileTypeError(f"loop-carried variable {name!r} changes type in the loop body: {a} before, "
                            f"{b} after; initialise it with the final shape (e.g. ct.zeros)", self.loc(s))

    def _lower_loop_body(self, kind, cond_fn, body_fn, carried, init, block_types, has_cont, target,
                         iv_dtype):
        outer_env = dict(self.env)
        self.loop_flags.append((True, has_cont))
        try:
            def bind_args(block: Block) -> None:
                for n in carried:
                    args = [Value(t, hint=n) for t in block_types[n]]
                    block.args.extend(args)
                    tiles = [Tile(a) for a in args]
                    self.env[n] = _rebuild(init[n], tiles) if isinstance(init[n], tuple) else tiles[0]

            cond_block = None
            if kind == "while":
                cond_block = Block()
                self.env = dict(outer_env)
                bind_args(cond_block)
                with self.builder.inside(cond_block):
                    c = cond_fn()
                    c = c if isinstance(c, Tile) else as_tile(bool(c), dt.bool_)
                    self.builder.emit("yield", [c.value])
            body_block = Block()
            self.env = dict(outer_env)
            if kind == "for":
                iv = Value(TileType(iv_dtype, ()), hint=target)
                body_block.args.append(iv)
                self.env[target] = Tile(iv)
            bind_args(body_block)
            if has_cont:
                self.env[CONT] = False
            with self.builder.inside(body_block):
                body_fn()
                out_types = {}
                ys = []
                for n in carried:
                    v = self.env.get(n)
                    if isinstance(v, _Undefined) or v is None and init[n] is not None:
                        raise TileTypeError(f"loop-carried variable {n!r} {getattr(v, 'reason', 'is undefined')}")
                    flat = list(_flatten(v)) if self._carriable(v) else None
                    if flat is None or len(flat) != len(block_types[n]):
                        raise TileTypeError(f"loop-carried variable {n!r} changes from "
                                            f"{describe(init[n])} to {describe(v)} in the loop body")
                    tiles = []
                    for x, t in zip(flat, block_types[n]):
                        if is_const(x):
                            x = as_tile(x, t.dtype) if dt.representable(x, t.dtype) else as_tile(x)
                        if x.type != t and x.shape == () and t.shape != () and x.dtype is t.dtype:
                            from ..ops.shape import broadcast_to
                            x = broadcast_to(x, t.shape)
                        tiles.append(x)
                    out_types[n] = [x.type for x in tiles]
                    ys.extend(tiles)
                self.builder.emit("yield", [t.value for t in ys])
            return body_block, cond_block, out_types, outer_env
        finally:
            self.loop_flags.pop()

    # ------------------------------------------------------------------ expressions

    def expr(self, node: ast.expr) -> Any:
        method = getattr(self, "expr_" + type(node).__name__, None)
        if method is None:
            raise TileUnsupportedFeatureError(f"{type(node).__name__} expressions are not supported in tile code",
                                              self.loc(node))
        with self.at(node):
            return method(node)

    def expr_Constant(self, node: ast.Constant) -> Any:
        return node.value

    def expr_Name(self, node: ast.Name) -> Any:
        return self.lookup(node.id, node)

    def expr_Tuple(self, node: ast.Tuple) -> tuple:
        out = []
        for e in node.elts:
            if isinstance(e, ast.Starred):
                v = self.expr(e.value)
                if not isinstance(v, tuple):
                    raise TileTypeError(f"cannot unpack {describe(v)}", self.loc(e))
                out.extend(v)
            else:
                out.append(self.expr(e))
        return tuple(out)

    expr_List = expr_Tuple

    def expr_Attribute(self, node: ast.Attribute) -> Any:
        base = self.expr(node.value)
        if node.attr.startswith("__"):
            raise TileUnsupportedFeatureError(f"access to {node.attr} is not supported", self.loc(node))
        try:
            return getattr(base, node.attr)
        except AttributeError:
            raise TileTypeError(f"{describe(base)} has no attribute {node.attr!r}", self.loc(node)) from None

    def expr_Subscript(self, node: ast.Subscript) -> Any:
        base = self.expr(node.value)
        key = self._subscript_key(node.slice)
        if isinstance(base, tuple):
            if isinstance(key, Tile):
                raise TileTypeError("tuples can only be indexed by compile-time constants", self.loc(node))
            return base[key]
        if isinstance(base, Tile):
            return base[key]
        if isinstance(base, Array):
            raise TileTypeError("arrays cannot be indexed directly in tile code; use ct.load, ct.gather "
                                "or a tiled view", self.loc(node))
        if isinstance(base, dict):
            return base[key]
        raise TileTypeError(f"{describe(base)} is not subscriptable", self.loc(node))

    def _subscript_key(self, node: ast.expr) -> Any:
        if isinstance(node, ast.Slice):
            parts = [self.expr(p) if p is not None else None for p in (node.lower, node.upper, node.step)]
            return slice(*parts)
        if isinstance(node, ast.Tuple):
            return tuple(self._subscript_key(e) for e in node.elts)
        return self.expr(node)

    def _binop(self, op_type, a, b, node):
        fn = _BINOPS.get(op_type)
        if fn is None:
            raise TileUnsupportedFeatureError(f"operator {op_type.__name__} is not supported", self.loc(node))
        if isinstance(a, tuple) and isinstance(b, tuple) and op_type is ast.Add:
            return a + b
        if isinstance(a, tuple) and is_const(b) and op_type is ast.Mult:
            return a * b
        if not (isinstance(a, Tile) or is_const(a)) or not (isinstance(b, Tile) or is_const(b)):
            raise TileTypeError(f"unsupported operand types for {op_type.__name__}: {describe(a)} and {describe(b)}")
        if is_const(a) and is_const(b):
            try:
                return fn(a, b)
            except (ZeroDivisionError, OverflowError, ValueError) as e:
                raise TileValueError(f"constant expression failed: {e}") from None
        return fn(a, b)

    def expr_BinOp(self, node: ast.BinOp) -> Any:
        return self._binop(type(node.op), self.expr(node.left), self.expr(node.right), node)

    def expr_UnaryOp(self, node: ast.UnaryOp) -> Any:
        v = self.expr(node.operand)
        if isinstance(node.op, ast.Not):
            return self._not(self._truth(v))
        if not (isinstance(v, Tile) or is_const(v)):
            raise TileTypeError(f"bad operand for unary {type(node.op).__name__}: {describe(v)}")
        if isinstance(node.op, ast.USub):
            return -v
        if isinstance(node.op, ast.UAdd):
            return +v
        if isinstance(node.op, ast.Invert):
            return ~v
        raise TileUnsupportedFeatureError(f"unary {type(node.op).__name__} is not supported")

    def expr_BoolOp(self, node: ast.BoolOp) -> Any:
        acc = self.expr(node.values[0])
        for v in node.values[1:]:
            if is_const(acc) or acc is None or isinstance(acc, tuple):
                truthy = bool(acc) if not isinstance(acc, Tile) else None
                if isinstance(node.op, ast.And) and not truthy:
                    return acc
                if isinstance(node.op, ast.Or) and truthy:
                    return acc
                acc = self.expr(v)
                continue
            rhs = self.expr(v)
            acc = self._and(acc, rhs) if isinstance(node.op, ast.And) else self._or(acc, rhs)
        return acc

    def expr_Compare(self, node: ast.Compare) -> Any:
        left = self.expr(node.left)
        result: Any = True
        for op, right_node in zip(node.ops, node.comparators):
            right = self.expr(right_node)
            if isinstance(op, (ast.Is, ast.IsNot)):
                r = (left is right) if isinstance(op, ast.Is) else (left is not right)
            elif isinstance(op, (ast.In, ast.NotIn)):
                if not isinstance(right, (tuple, dict, str)):
                    raise TileTypeError(f"'in' needs a compile-time tuple, got {describe(right)}")
                r = (left in right) if isinstance(op, ast.In) else (left not in right)
            else:
                fn = _CMPOPS[type(op)]
                if (isinstance(left, tuple) and isinstance(right, tuple)) or (
                        isinstance(left, (str, dt.DType)) or isinstance(right, (str, dt.DType))):
                    r = fn(left, right)
                elif not (isinstance(left, Tile) or is_const(left)) or not (isinstance(right, Tile) or is_const(right)):
                    if isinstance(op, (ast.Eq, ast.NotEq)):
                        r = fn(left, right)
                    else:
                        raise TileTypeError(f"cannot compare {describe(left)} and {describe(right)}")
                else:
                    r = fn(left, right)
            result = self._and(result, r)
            left = right
        return result

    def expr_IfExp(self, node: ast.IfExp) -> Any:
        cond = self._truth(self.expr(node.test))
        if is_const(cond):
            return self.expr(node.body if cond else node.orelse)
        from ..ops.elementwise import where
        return where(cond, self.expr(node.body), self.expr(node.orelse))

    def expr_Lambda(self, node: ast.Lambda) -> Any:
        return LocalFunction(node, self.parsed, dict(self.env), self.globals)

    def expr_JoinedStr(self, node: ast.JoinedStr) -> Any:
        from ..ops.debug import FormatString
        parts: list[Any] = []
        for v in node.values:
            if isinstance(v, ast.Constant):
                parts.append(str(v.value))
            else:
                value = self.expr(v.value)
                spec = ""
                if v.format_spec is not None:
                    spec_val = self.expr(v.format_spec)
                    spec = spec_val.text() if isinstance(spec_val, FormatString) else str(spec_val)
                conv = {-1: "", 115: "!s", 114: "!r", 97: "!a"}[v.conversion]
                if is_const(value) or isinstance(value, (str, dt.DType)) or value is None:
                    parts.append(format(value if not conv else (repr(value) if conv == "!r" else str(value)), spec))
                else:
                    parts.append((value, spec))
        return FormatString(parts)

    def expr_Call(self, node: ast.Call) -> Any:
        fn = self.expr(node.func)
        from ..ops import meta
        if fn is meta.static_eval:
            if len(node.args) != 1 or node.keywords:
                raise TileTypeError("static_eval takes exactly one expression", self.loc(node))
            return self._static_eval_node(node.args[0])
        if fn is meta.static_assert:
            return self._static_assert(node)
        args: list[Any] = []
        for a in node.args:
            if isinstance(a, ast.Starred):
                v = self.expr(a.value)
                if not isinstance(v, tuple):
                    raise TileTypeError(f"cannot unpack {describe(v)} with *", self.loc(a))
                args.extend(v)
            else:
                args.append(self.expr(a))
        kwargs: dict[str, Any] = {}
        for kw in node.keywords:
            if kw.arg is None:
                v = self.expr(kw.value)
                if not isinstance(v, dict):
                    raise TileTypeError("** needs a compile-time dict", self.loc(kw))
                kwargs.update(v)
            else:
                kwargs[kw.arg] = self.expr(kw.value)
        return self.call(fn, args, kwargs, node)

    def call(self, fn: Any, args: list, kwargs: dict, node: ast.AST) -> Any:
        from .kernel import Kernel, TileFunction
        from . import builtins_map
        if isinstance(fn, Kernel):
            raise TileTypeError(f"kernel {fn.__name__!r} cannot be called from tile code; move the shared "
                                "code into a tile function", self.loc(node))
        if isinstance(fn, TileFunction):
            fn = fn.fn
        if isinstance(fn, LocalFunction):
            return self.inline(fn, args, kwargs, node)
        if _is_safetile_callable(fn):
            return fn(*args, **kwargs)
        special = builtins_map.lookup(fn)
        if special is not None:
            return special(self, args, kwargs)
        if isinstance(fn, dt.DType):
            if len(args) != 1 or kwargs:
                raise TileTypeError(f"{fn.name}(x) takes one argument")
            return ew.astype(args[0], fn)
        if isinstance(fn, types.FunctionType):
            return self.inline(fn, args, kwargs, node)
        if callable(fn) and all(_is_static(a) for a in args) and all(_is_static(v) for v in kwargs.values()):
            return fn(*args, **kwargs)  # compile-time evaluation (e.g. math.log2(TILE))
        raise TileUnsupportedFeatureError(f"cannot call {describe(fn)} with run-time values in tile code",
                                          self.loc(node))

    def inline(self, fn: Any, args: list, kwargs: dict, node: ast.AST) -> Any:
        """Inline a tile function (module-level def, nested def or lambda) at this call."""
        if isinstance(fn, LocalFunction):
            parsed, fnode, globals_, scope = fn.parsed, fn.node, fn.globals, dict(fn.scope)
            key = id(fnode)
            defaults_src = fnode.args
            bound = self._bind_ast(fnode.args, args, kwargs, node, fn)
        else:
            parsed = parse_function(fn)
            fnode, globals_ = parsed.node, fn.__globals__
            scope = {}
            if fn.__closure__:
                for name, cell in zip(fn.__code__.co_freevars, fn.__closure__):
                    try:
                        scope[name] = cell.cell_contents
                    except ValueError:
                        pass
            key = fn.__code__
            try:
                sig = inspect.signature(fn)
                ba = sig.bind(*args, **kwargs)
            except TypeError as e:
                raise TileTypeError(f"{fn.__name__}(): {e}", self.loc(node)) from None
            ba.apply_defaults()
            bound = dict(ba.arguments)
        if any(k == key for k in self.call_stack):
            raise TileRecursionError(f"recursive call of {parsed.name!r}: tile functions are inlined and "
                                     "cannot recurse", self.loc(node))
        scope.update(bound)
        sub = FunctionCompiler(parsed, globals_, scope, self.builder, self.call_stack + (key,), is_kernel=False)
        try:
            if isinstance(fnode, ast.Lambda):
                return sub.expr(fnode.body)
            sub.run_body(fnode.body)
        except TileError as e:
            e.add_frame(self.loc(node))
            raise
        result = sub.env.get(RETVAL)
        if isinstance(result, _Undefined):
            raise TileTypeError(f"{parsed.name}() does not return a value on every path", self.loc(node))
        return result

    def _bind_ast(self, a: ast.arguments, args, kwargs, node, fn: LocalFunction) -> dict[str, Any]:
        names = [p.arg for p in a.posonlyargs + a.args]
        defaults = a.defaults
        bound: dict[str, Any] = {}
        if len(args) > len(names) and a.vararg is None:
            raise TileTypeError(f"too many arguments ({len(args)} given, {len(names)} expected)", self.loc(node))
        for n, v in zip(names, args):
            bound[n] = v
        if a.vararg is not None:
            bound[a.vararg.arg] = tuple(args[len(names):])
        for k, v in kwargs.items():
            if k in bound:
                raise TileTypeError(f"argument {k!r} given twice", self.loc(node))
            bound[k] = v
        missing = [n for n in names if n not in bound]
        sub = FunctionCompiler(fn.parsed, fn.globals, fn.scope, self.builder, self.call_stack, False)
        for n, d in zip(names[len(names) - len(defaults):], defaults):
            if n not in bound:
                bound[n] = sub.expr(d)
        for kwarg, d in zip(a.kwonlyargs, a.kw_defaults):
            if kwarg.arg not in bound:
                if d is None:
                    raise TileTypeError(f"missing keyword argument {kwarg.arg!r}", self.loc(node))
                bound[kwarg.arg] = sub.expr(d)
        missing = [n for n in names if n not in bound]
        if missing:
            raise TileTypeError(f"missing argument(s): {', '.join(missing)}", self.loc(node))
        return bound

    # ------------------------------------------------------------------ static evaluation

    def _static_namespace(self) -> dict[str, Any]:
        ns = dict(self.globals)
        ns.update({k: v for k, v in self.env.items() if not k.startswith("$") and not isinstance(v, _Undefined)})
        return ns

    def _static_eval_node(self, node: ast.expr) -> Any:
        expr = ast.Expression(body=node)
        ast.fix_missing_locations(expr)
        try:
            value = eval(compile(expr, self.parsed.filename, "eval"), self._static_namespace())
        except TileError:
            raise
        except Exception as e:
            raise TileStaticEvalError(f"cannot evaluate at compile time: {type(e).__name__}: {e}",
                                      self.loc(node)) from None
        if isinstance(value, (Tile, Array)):
            raise TileStaticEvalError("static_eval produced a run-time value; only compile-time facts "
                                      "(shapes, dtypes, constants) can be evaluated", self.loc(node))
        return value

    def _static_assert(self, node: ast.Call) -> None:
        if not 1 <= len(node.args) <= 2:
            raise TileTypeError("static_assert(cond, message=None)", self.loc(node))
        cond = self.expr(node.args[0])
        msg = self.expr(node.args[1]) if len(node.args) == 2 else None
        if not (is_const(cond) or isinstance(cond, (tuple, str)) or cond is None):
            raise TileStaticAssertionError(f"static_assert needs a compile-time condition, got {describe(cond)}",
                                           self.loc(node.args[0]))
        if not cond:
            raise TileStaticAssertionError(str(msg) if msg is not None else "static assertion failed",
                                           self.loc(node))
        return None


_MISSING = object()


def _placeholder(v):
    """A same-typed stand-in for a value on a path where it is never used."""
    if isinstance(v, tuple):
        return tuple(_placeholder(x) for x in v)
    if isinstance(v, Tile):
        from ..ops.factories import zeros
        return zeros(v.shape, v.dtype) if v.shape else ew.cast(as_tile(0, v.dtype), v.dtype)
    return v


def _flatten(v):
    if isinstance(v, tuple):
        for x in v:
            yield from _flatten(x)
    else:
        yield v


def _rebuild(template, flat: list):
    it = iter(flat)

    def build(t):
        if isinstance(t, tuple):
            return tuple(build(x) for x in t)
        return next(it)
    return build(template)


def _is_static(v) -> bool:
    if isinstance(v, tuple):
        return all(_is_static(x) for x in v)
    return is_const(v) or isinstance(v, (str, dt.DType, type(None), type)) or (
        not isinstance(v, (Tile, Array)) and not callable(v))


def _is_safetile_callable(fn) -> bool:
    """Functions and bound methods defined by safetile's op modules are called directly."""
    mod = getattr(fn, "__module__", None) or ""
    if isinstance(fn, types.MethodType):
        mod = getattr(fn.__func__, "__module__", "") or ""
    return mod.startswith("safetile.ops") and callable(fn)
