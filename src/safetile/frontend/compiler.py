"""Python AST → tile IR.

The compiler walks a kernel's AST. Expressions evaluate to front-end values: Python
constants (folded eagerly), ``Tile``/``Array`` symbols that wrap IR values, tuples, and
callables. Calls of ``safetile`` functions emit IR through the catalogue; calls of any
other Python function inline its AST. Variables are SSA names: ``if`` merges the names
either branch changed, loops carry the names their body reassigns, and ``break``,
``continue`` and ``return`` become boolean flags that guard the statements after them,
so the IR keeps purely structured control flow.

Every user mistake becomes a ``Tile*Error`` located at the innermost statement or
expression being compiled; inlined calls add one frame each.
"""
from __future__ import annotations

import ast
import builtins
import contextlib
import os
import types
from dataclasses import dataclass
from typing import Any, Callable, Iterator

import numpy as np

from .. import dtypes as dt
from ..errors import (TileError, TileInternalError, TileRecursionError, TileStaticAssertionError,
                      TileStaticEvalError, TileSyntaxError, TileTypeError, TileUnsupportedFeatureError,
                      TileValueError)
from ..ir.builder import Builder
from ..ir.core import Block, Value
from ..ir.types import TileType
from ..ops import elementwise as ew
from ..ops.values import Array, Tile, as_tile, describe, is_const
from .source import ParsedFunction, parse_function

# Hidden variables in a function's environment (never valid Python identifiers).
BRK, CONT, RET, RETVAL, IV = "$break", "$continue", "$return", "$retval", "$iv"
FLAGS = (BRK, CONT, RET)

_BINOPS = {
    ast.Add: "+", ast.Sub: "-", ast.Mult: "*", ast.Div: "/", ast.FloorDiv: "//", ast.Mod: "%",
    ast.Pow: "**", ast.BitAnd: "&", ast.BitOr: "|", ast.BitXor: "^", ast.LShift: "<<", ast.RShift: ">>",
    ast.MatMult: "@",
}
_CMPOPS = {ast.Eq: "==", ast.NotEq: "!=", ast.Lt: "<", ast.LtE: "<=", ast.Gt: ">", ast.GtE: ">="}
_PY_OPS: dict[str, Callable[[Any, Any], Any]] = {
    "+": lambda a, b: a + b, "-": lambda a, b: a - b, "*": lambda a, b: a * b, "/": lambda a, b: a / b,
    "//": lambda a, b: a // b, "%": lambda a, b: a % b, "**": lambda a, b: a ** b,
    "&": lambda a, b: a & b, "|": lambda a, b: a | b, "^": lambda a, b: a ^ b,
    "<<": lambda a, b: a << b, ">>": lambda a, b: a >> b, "@": lambda a, b: a @ b,
    "==": lambda a, b: a == b, "!=": lambda a, b: a != b, "<": lambda a, b: a < b,
    "<=": lambda a, b: a <= b, ">": lambda a, b: a > b, ">=": lambda a, b: a >= b,
}

_UNSUPPORTED_STMTS = {
    "With": "'with' statements are not supported in tile code",
    "AsyncWith": "'async with' is not supported in tile code",
    "Try": "'try' statements are not supported in tile code (tile code has no exceptions; use "
           "ct.static_assert or ct.assert_ to check conditions)",
    "TryStar": "'try' statements are not supported in tile code",
    "Raise": "'raise' is not supported in tile code; use ct.static_assert (compile time) or ct.assert_ "
             "(run time)",
    "ClassDef": "class definitions are not supported in tile code; define classes at module level",
    "Global": "'global' is not supported in tile code: module globals are read-only compile-time constants",
    "Nonlocal": "'nonlocal' is not supported in tile code: enclosing variables are read-only",
    "Import": "import statements are not supported in tile code; import at module level",
    "ImportFrom": "import statements are not supported in tile code; import at module level",
    "Delete": "'del' is not supported in tile code",
    "AsyncFunctionDef": "async functions are not supported in tile code",
    "AsyncFor": "'async for' is not supported in tile code",
    "Match": "'match' statements are not supported in tile code; use if/elif",
}
_UNSUPPORTED_EXPRS = {
    "Yield": "generators ('yield') are not supported in tile code",
    "YieldFrom": "generators ('yield from') are not supported in tile code",
    "Await": "'await' is not supported in tile code",
    "SetComp": "set comprehensions are not supported in tile code",
    "DictComp": "dict comprehensions are not supported in tile code",
    "Set": "sets are not supported in tile code; use a tuple",
    "Starred": "a starred expression is only allowed in a tuple, a call or an assignment target",
}


class _Undefined:
    """Marks a name that is not usable here; reading it raises an error with ``reason``."""

    def __init__(self, reason: str):
        self.reason = reason


class _Stop(Exception):
    """Unwinds the rest of a statement list after an unconditional break/continue/return."""


@dataclass
class LocalFunction:
    """A ``def`` or ``lambda`` written inside tile code.

    Free names are looked up in the defining function's environment when the function is
    called (Python's late binding); defaults are evaluated at definition, like Python.
    """

    node: ast.FunctionDef | ast.Lambda
    owner: "FunctionCompiler"
    defaults: list[Any]
    kw_defaults: list[Any]

    @property
    def name(self) -> str:
        return getattr(self.node, "name", "<lambda>")


_MISSING = object()


# ---------------------------------------------------------------------------------- AST scans

_SCOPES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef,
           ast.ListComp, ast.GeneratorExp, ast.SetComp, ast.DictComp)


def _assigned_names(stmts: list[ast.stmt]) -> set[str]:
    """Names (re)bound by ``stmts``, not looking into nested scopes."""
    out: set[str] = set()

    def visit(node: ast.AST) -> None:
        if isinstance(node, _SCOPES):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                out.add(node.name)
            return
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            out.add(node.id)
        for child in ast.iter_child_nodes(node):
            visit(child)

    for s in stmts:
        visit(s)
    return out


def _contains(stmts: list[ast.stmt], kinds: tuple, into_loops: bool) -> bool:
    """Whether ``stmts`` contain a node of ``kinds`` (outside nested scopes, optionally loops)."""
    def visit(node: ast.AST) -> bool:
        if isinstance(node, kinds):
            return True
        if isinstance(node, _SCOPES):
            return False
        if not into_loops and isinstance(node, (ast.For, ast.While, ast.AsyncFor)):
            return False
        return any(visit(c) for c in ast.iter_child_nodes(node))
    return any(visit(s) for s in stmts)


# ---------------------------------------------------------------------------------- value helpers

def _flatten(v: Any) -> list[Any]:
    if isinstance(v, tuple):
        return [x for item in v for x in _flatten(item)]
    return [v]


def _rebuild(template: Any, flat: list[Any]) -> Any:
    it = iter(flat)

    def build(t):
        if isinstance(t, tuple):
            return tuple(build(x) for x in t)
        return next(it)
    return build(template)


def _same_structure(a: Any, b: Any) -> bool:
    if isinstance(a, tuple) or isinstance(b, tuple):
        return isinstance(a, tuple) and isinstance(b, tuple) and len(a) == len(b) and \
            all(_same_structure(x, y) for x, y in zip(a, b))
    return True


def _is_value(v: Any) -> bool:
    """A tile or a number: something that can live in a register and change at run time."""
    return isinstance(v, Tile) or is_const(v)


def _carriable(v: Any) -> bool:
    if isinstance(v, tuple):
        return all(_carriable(x) for x in v)
    return _is_value(v)


def _same_static(a: Any, b: Any) -> bool:
    """Whether two compile-time values are interchangeable (same type and value)."""
    if a is b:
        return True
    if isinstance(a, (Tile, Array)) or isinstance(b, (Tile, Array)):
        return False
    if isinstance(a, tuple) and isinstance(b, tuple):
        return len(a) == len(b) and all(_same_static(x, y) for x, y in zip(a, b))
    if type(a) is not type(b):
        return False
    try:
        return bool(a == b)
    except Exception:  # noqa: BLE001 - objects with exotic __eq__ are simply not equal
        return False


def _is_static(v: Any) -> bool:
    """A compile-time value that may be handed to ordinary Python code."""
    if isinstance(v, tuple):
        return all(_is_static(x) for x in v)
    return not isinstance(v, (Tile, Array, LocalFunction, _Undefined))


def _is_safetile_callable(fn: Any) -> bool:
    """Functions and bound methods of safetile's op modules are called directly."""
    target = fn.__func__ if isinstance(fn, types.MethodType) else fn
    mod = getattr(target, "__module__", None) or ""
    return mod.startswith("safetile.ops") and callable(fn)


def _is_library_function(fn: Any) -> bool:
    """Python functions of NumPy/the standard library are evaluated, never inlined."""
    mod = getattr(fn, "__module__", None) or ""
    root = mod.split(".")[0]
    return root in ("numpy", "math", "builtins", "operator", "functools", "typing", "enum", "dataclasses",
                    "ml_dtypes", "torch")


def _cause(e: BaseException) -> BaseException | None:
    """The cause to chain to a user error: hidden unless SAFETILE_DEBUG is set."""
    return e if os.environ.get("SAFETILE_DEBUG") else None


def _what(v: Any) -> str:
    """A short description of a front-end value for error messages."""
    if isinstance(v, Tile):
        return f"a {v.type}"
    if isinstance(v, Array):
        return f"the array {v.name!r}" if v.name else "an array"
    if isinstance(v, LocalFunction):
        return f"the function {v.name}()"
    if is_const(v):
        return f"the constant {v!r}"
    return describe(v)


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
        self.loop_depth = 0  # enclosing run-time loops (return is not allowed inside them)
        self.unrolled_depth = 0  # enclosing compile-time (unrolled) loops
        self.last_assignment: dict[str, ast.AST] = {}  # the statement that last assigned each name
        self.statement: ast.stmt | None = None  # the statement being compiled

    # ------------------------------------------------------------------ errors & locations

    def loc(self, node: ast.AST | None):
        return self.parsed.loc(node) if node is not None else self.builder.loc

    def error(self, cls: type[TileError], message: str, node: ast.AST | None) -> TileError:
        return cls(message, self.loc(node) if node is not None else None)

    @contextlib.contextmanager
    def at(self, node: ast.AST) -> Iterator[None]:
        """Set the builder location to ``node`` and turn anything raised inside into a located TileError."""
        builder = self.builder
        saved = (builder.loc, builder.compiler)
        builder.loc, builder.compiler = self.loc(node), self
        try:
            yield
        except _Stop:
            raise
        except TileError as e:
            if not e.locs:
                e.locs.append(self.loc(node))
            raise
        except (TypeError, AttributeError) as e:
            raise TileTypeError(str(e), self.loc(node)) from _cause(e)
        except (ValueError, ZeroDivisionError, OverflowError, IndexError, KeyError, ArithmeticError) as e:
            msg = f"key {e.args[0]!r} not found" if isinstance(e, KeyError) and e.args else str(e)
            raise TileValueError(msg, self.loc(node)) from _cause(e)
        except NotImplementedError as e:
            raise TileUnsupportedFeatureError(str(e) or "not supported in tile code", self.loc(node)) from None
        except RecursionError:
            raise TileRecursionError("tile functions are nested too deeply", self.loc(node)) from None
        except Exception as e:  # noqa: BLE001 - a bug in safetile: keep the cause for the report
            raise TileInternalError(f"internal compiler error: {type(e).__name__}: {e}", self.loc(node)) from e
        finally:
            builder.loc, builder.compiler = saved

    def call_value(self, fn: Any, args: list) -> Any:
        """Call a tile function from an op (e.g. a reduce combiner) at the current location."""
        return self.call(fn, args, {}, None)

    # ------------------------------------------------------------------ names

    def lookup(self, name: str, node: ast.AST | None) -> Any:
        if name in self.env:
            v = self.env[name]
            if isinstance(v, _Undefined):
                raise self.error(TileSyntaxError, f"name {name!r} {v.reason}", node)
            return v
        if name in self.globals:
            return self.globals[name]
        if hasattr(builtins, name):
            return getattr(builtins, name)
        raise self.error(TileSyntaxError, f"name {name!r} is not defined", node)

    def assign(self, target: ast.expr, value: Any) -> None:
        if isinstance(target, ast.Name):
            if isinstance(value, list):
                value = tuple(value)
            self.env[target.id] = value
            self.last_assignment[target.id] = self.statement or target
        elif isinstance(target, (ast.Tuple, ast.List)):
            self._unpack(target, value)
        elif isinstance(target, ast.Subscript):
            raise self.error(TileUnsupportedFeatureError,
                             "cannot assign to an element: tiles and arrays are immutable in tile code; "
                             "write to arrays with ct.store/ct.scatter and build new tiles with ct.where "
                             "or ct.insert", target)
        elif isinstance(target, ast.Attribute):
            raise self.error(TileUnsupportedFeatureError,
                             f"cannot assign to attribute {target.attr!r}: objects are immutable in tile code",
                             target)
        elif isinstance(target, ast.Starred):
            raise self.error(TileSyntaxError, "a starred assignment target must be in a tuple or list", target)
        else:
            raise self.error(TileSyntaxError, f"cannot assign to {type(target).__name__}", target)

    def _unpack(self, target: ast.Tuple | ast.List, value: Any) -> None:
        if not isinstance(value, tuple):
            raise self.error(TileTypeError, f"cannot unpack {_what(value)}: only tuples can be unpacked "
                             "in tile code", target)
        elts = target.elts
        stars = [i for i, e in enumerate(elts) if isinstance(e, ast.Starred)]
        if len(stars) > 1:
            raise self.error(TileSyntaxError, "multiple starred expressions in assignment", target)
        if not stars:
            if len(value) != len(elts):
                raise self.error(TileValueError, f"cannot unpack {len(value)} value(s) into {len(elts)} "
                                 "name(s)", target)
            for t, v in zip(elts, value):
                self.assign(t, v)
            return
        i = stars[0]
        n_after = len(elts) - i - 1
        if len(value) < len(elts) - 1:
            raise self.error(TileValueError, f"not enough values to unpack (expected at least {len(elts) - 1}, "
                             f"got {len(value)})", target)
        for t, v in zip(elts[:i], value[:i]):
            self.assign(t, v)
        self.assign(elts[i].value, tuple(value[i:len(value) - n_after]))
        for t, v in zip(elts[i + 1:], value[len(value) - n_after:]):
            self.assign(t, v)

    # ------------------------------------------------------------------ truth values

    def _truth(self, v: Any, node: ast.AST | None = None) -> Any:
        """A Python bool (compile-time) or a bool scalar tile (run time) for a condition."""
        if isinstance(v, Tile):
            if v.shape != ():
                raise self.error(TileTypeError,
                                 f"a {v.type} cannot be used as a condition (a tile has no single truth "
                                 "value); reduce it to a scalar first (e.g. ct.sum(t) > 0) or select element-"
                                 "wise with ct.where; use & | ~ for element-wise logic", node)
            return v if v.dtype.is_bool else ew.not_equal(v, 0)
        if isinstance(v, Array):
            raise self.error(TileTypeError, "an array cannot be used as a condition", node)
        if isinstance(v, _Undefined):
            raise self.error(TileSyntaxError, v.reason, node)
        return bool(v)

    def _not(self, v: Any) -> Any:
        if isinstance(v, Tile):
            return ew.equal(v, False)
        return not v

    def _and(self, a: Any, b: Any) -> Any:
        if not isinstance(a, Tile):
            return b if a else False
        if not isinstance(b, Tile):
            return a if b else False
        return ew.bitwise_and(a, b)

    def _or(self, a: Any, b: Any) -> Any:
        if not isinstance(a, Tile):
            return True if a else b
        if not isinstance(b, Tile):
            return True if b else a
        return ew.bitwise_or(a, b)

    # ------------------------------------------------------------------ statements

    def run_body(self, stmts: list[ast.stmt]) -> None:
        """Compile a statement list; an unconditional exit ends it early."""
        try:
            self._stmts(stmts)
        except _Stop:
            pass

    def _stmts(self, stmts: list[ast.stmt]) -> None:
        """Compile statements; after a statement that may have exited, guard the rest."""
        for k, s in enumerate(stmts):
            self.stmt(s)
            rest = stmts[k + 1:]
            if not rest:
                return
            guard = self._exit_guard()
            if guard is True:
                continue
            if guard is False:
                raise _Stop
            self._emit_if(guard, lambda: self._resume(rest), self._exited_branch, s)
            return

    def _live_flags(self) -> list[str]:
        return [f for f in FLAGS if self.env.get(f, False) is not False]

    def _exit_guard(self) -> Any:
        """True while no exit flag is set: a bool, or a bool tile when it depends on run-time values."""
        live: Any = True
        for f in self._live_flags():
            live = self._and(live, self._not(self.env[f]))
        return live

    def _resume(self, stmts: list[ast.stmt]) -> None:
        """Continue with ``stmts`` on the path where no exit flag is set."""
        for f in self._live_flags():
            self.env[f] = False
        self.run_body(stmts)

    def _exited_branch(self) -> None:
        """The path where an exit flag is set: if only one flag could be set, it is known true."""
        live = self._live_flags()
        if len(live) == 1:
            self.env[live[0]] = True

    def stmt(self, s: ast.stmt) -> None:
        kind = type(s).__name__
        method = getattr(self, "stmt_" + kind, None)
        if method is None:
            message = _UNSUPPORTED_STMTS.get(kind, f"{kind} statements are not supported in tile code")
            raise self.error(TileUnsupportedFeatureError, message, s)
        saved, self.statement = self.statement, s
        try:
            with self.at(s):
                method(s)
        finally:
            self.statement = saved

    def stmt_Expr(self, s: ast.Expr) -> None:
        if isinstance(s.value, ast.Constant):
            return  # a docstring or a bare constant
        self.expr(s.value)

    def stmt_Pass(self, s: ast.Pass) -> None:
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
        value = self._binop(_BINOPS.get(type(s.op)), current, self.expr(s.value), s)
        self.assign(s.target, value)

    def stmt_FunctionDef(self, s: ast.FunctionDef) -> None:
        from .kernel import TileFunction, function
        for d in s.decorator_list:
            deco = self.expr(d)
            if deco is not function and not isinstance(deco, TileFunction):
                raise self.error(TileUnsupportedFeatureError, "nested tile functions cannot have decorators "
                                 "(other than @ct.function)", d)
        self.env[s.name] = self._local_function(s)
        self.last_assignment[s.name] = s

    def _local_function(self, node: ast.FunctionDef | ast.Lambda) -> LocalFunction:
        a = node.args
        defaults = [self.expr(d) for d in a.defaults]
        kw_defaults = [self.expr(d) if d is not None else _MISSING for d in a.kw_defaults]
        return LocalFunction(node, self, defaults, kw_defaults)

    def stmt_Assert(self, s: ast.Assert) -> None:
        cond = self.expr(s.test)
        msg = self.expr(s.msg) if s.msg is not None else None
        if not isinstance(cond, Tile):
            if not self._truth(cond, s.test):
                raise self.error(TileStaticAssertionError,
                                 "assertion failed" + (f": {msg}" if msg is not None else ""), s)
            return
        from ..ops.debug import assert_
        assert_(cond, str(msg) if msg is not None else "assertion failed")

    def stmt_Return(self, s: ast.Return) -> None:
        if self.loop_depth:
            raise self.error(TileUnsupportedFeatureError, "'return' inside a loop is not supported in tile "
                             "code; set a variable and 'break', then return after the loop", s)
        value = self.expr(s.value) if s.value is not None else None
        if self.is_kernel and value is not None:
            raise self.error(TileSyntaxError, "a kernel cannot return a value; store results to an array",
                             s.value)
        self.env[RETVAL] = value
        self.env[RET] = True
        raise _Stop

    def stmt_Break(self, s: ast.Break) -> None:
        if not (self.loop_depth or self.unrolled_depth):
            raise self.error(TileSyntaxError, "'break' outside a loop", s)
        self.env[BRK] = True
        raise _Stop

    def stmt_Continue(self, s: ast.Continue) -> None:
        if not (self.loop_depth or self.unrolled_depth):
            raise self.error(TileSyntaxError, "'continue' outside a loop", s)
        self.env[CONT] = True
        raise _Stop

    # ------------------------------------------------------------------ if

    def stmt_If(self, s: ast.If) -> None:
        cond = self._truth(self.expr(s.test), s.test)
        if not isinstance(cond, Tile):
            self._stmts(s.body if cond else s.orelse)  # compile-time condition: one branch only
            return
        self._emit_if(cond, lambda: self.run_body(s.body), lambda: self.run_body(s.orelse), s)

    def _emit_if(self, cond: Tile, then_fn: Callable, else_fn: Callable, node: ast.AST) -> None:
        """Emit an ``if`` op and merge the variables the two branches left different."""
        before = self.env
        branches: list[tuple[Block, dict[str, Any]]] = []
        for fn in (then_fn, else_fn):
            self.env = dict(before)
            block = Block()
            with self.builder.inside(block):
                fn()
            branches.append((block, self.env))
        self.env = dict(before)
        (block_a, env_a), (block_b, env_b) = branches
        exited = [any(e.get(f, False) is True for f in FLAGS) for e in (env_a, env_b)]
        line = self.loc(node).line
        pairs: list[tuple[Any, Any, TileType]] = []
        templates: dict[str, Any] = {}
        for name in dict.fromkeys([*env_a, *env_b]):
            a, b = env_a.get(name, _MISSING), env_b.get(name, _MISSING)
            if name in FLAGS:
                a, b = (False if a is _MISSING else a), (False if b is _MISSING else b)
            if a is b:
                if a is not _MISSING:
                    self.env[name] = a
                continue
            a_missing = a is _MISSING or isinstance(a, _Undefined)
            b_missing = b is _MISSING or isinstance(b, _Undefined)
            if a_missing and b_missing:
                self.env[name] = a if a is not _MISSING else b
                continue
            if a_missing or b_missing:
                missing_exited = exited[0] if a_missing else exited[1]
                if not (missing_exited or name == RETVAL):
                    which = "else" if a_missing else "if"
                    self.env[name] = _Undefined(
                        f"is assigned only in the {which} branch of the if at line {line}, so it is not "
                        "defined on every path; assign it before the if or in both branches")
                    continue
                # the missing side never reaches a use of the name: any value of the right type will do
                with self.builder.inside(block_a if a_missing else block_b):
                    filler = self._placeholder(b if a_missing else a)
                a, b = (filler, b) if a_missing else (a, filler)
            try:
                templates[name] = self._merge(a, b, pairs, cond)
            except TileTypeError as e:
                where = self.last_assignment.get(name, node) if name[0] != "$" else node
                what = "the return value" if name == RETVAL else f"variable {name!r}"
                raise self.error(TileTypeError, f"{what} has different types after the if at line {line}: "
                                 f"{e.message}", where) from None
        if not pairs and not block_a.ops and not block_b.ops:
            for name, template in templates.items():
                self.env[name] = template
            return  # nothing happens on either path
        yields: list[list[Value]] = [[], []]
        for a, b, target in pairs:
            for k, (v, block) in enumerate(((a, block_a), (b, block_b))):
                with self.builder.inside(block):
                    yields[k].append(self._coerce(v, target).value)
        for block, ys in zip((block_a, block_b), yields):
            with self.builder.inside(block):
                self.builder.emit("yield", ys)
        op = self.builder.emit("if", [cond.value], {"result_types": tuple(t for _, _, t in pairs)},
                               regions=[block_a, block_b])
        results = [Tile(v) for v in op.results]
        for name, template in templates.items():
            self.env[name] = self._fill(template, results)

    def _merge(self, a: Any, b: Any, pairs: list, cond: Tile) -> Any:
        """A template for the merged value: leaves are kept values or ``_Slot`` result indices."""
        if _same_static(a, b):
            return a
        if isinstance(a, bool) and isinstance(b, bool):  # True/False per branch: the condition itself
            return cond if a else self._not(cond)
        if isinstance(a, tuple) or isinstance(b, tuple):
            if not _same_structure(a, b) or not (isinstance(a, tuple) and isinstance(b, tuple)):
                raise TileTypeError(f"{_what(a)} on one path, {_what(b)} on the other")
            return tuple(self._merge(x, y, pairs, cond) for x, y in zip(a, b))
        if not (_is_value(a) and _is_value(b)):
            raise TileTypeError(f"{_what(a)} on one path, {_what(b)} on the other (only "
                                "tiles and numbers can differ between run-time branches)")
        target = self._join(a, b)
        pairs.append((a, b, target))
        return _Slot(len(pairs) - 1)

    def _join(self, a: Any, b: Any) -> TileType:
        """The tile type that holds a value of either branch."""
        ta = a.type if isinstance(a, Tile) else None
        tb = b.type if isinstance(b, Tile) else None
        if ta is None and tb is None:
            return TileType(dt.promote(dt.scalar_dtype(a), dt.scalar_dtype(b)), ())
        if ta is None:
            return TileType(dt.promote_with_scalar(tb.dtype, a), tb.shape)
        if tb is None:
            return TileType(dt.promote_with_scalar(ta.dtype, b), ta.shape)
        if ta.shape != tb.shape:
            raise TileTypeError(f"{ta} on one path, {tb} on the other (shapes differ)")
        return TileType(dt.promote(ta.dtype, tb.dtype), ta.shape)

    def _fill(self, template: Any, results: list[Tile]) -> Any:
        if isinstance(template, _Slot):
            return results[template.index]
        if isinstance(template, tuple):
            return tuple(self._fill(t, results) for t in template)
        return template

    def _coerce(self, v: Any, target: TileType) -> Tile:
        """``v`` (a constant or a tile) as a tile of exactly ``target``."""
        t = as_tile(v, target.dtype) if is_const(v) else ew.cast(v, target.dtype)
        if t.shape != target.shape:
            from ..ops.shape import broadcast_to
            t = broadcast_to(t, target.shape)
        return t

    def _placeholder(self, v: Any) -> Any:
        """A same-typed stand-in for a value on a path that never uses it."""
        if isinstance(v, tuple):
            return tuple(self._placeholder(x) for x in v)
        if isinstance(v, Tile):
            return self._coerce(0, v.type)
        return v

    # ------------------------------------------------------------------ loops

    def stmt_For(self, s: ast.For) -> None:
        if s.orelse:
            raise self.error(TileUnsupportedFeatureError, "'for ... else' is not supported in tile code", s)
        it = s.iter
        if isinstance(it, ast.Call) and not it.keywords and len(it.args) >= 1:
            from ..ops.meta import static_iter
            fn = self.expr(it.func)
            if fn is static_iter:
                if len(it.args) != 1:
                    raise self.error(TileTypeError, "ct.static_iter() takes exactly one iterable", it)
                return self._unroll(s, self._static_iterable(it.args[0]))
            if fn is builtins.range:
                return self._range_loop(s, it)
        iterable = self.expr(it)
        if hasattr(type(iterable), "__tile_range__"):  # range-like loop protocol (safe/device.py iter_indices)
            start, stop, step, bind = iterable.__tile_range__()
            if not isinstance(s.target, ast.Name) or _contains(s.body, (ast.Break,), into_loops=False):
                raise self.error(TileUnsupportedFeatureError, "this loop takes a single loop variable and no "
                                 "'break'", s)
            name, bounds = s.target.id, [self._coerce(a, TileType(dt.int32, ())) for a in (start, stop, step)]

            def body():
                self.env[name] = bind(self.env[name])
                self.run_body(s.body)
            self._loop(s, "for", None, body, bounds=bounds, target=name)
            self.env[name] = _Undefined(f"is the variable of the loop at line {self.loc(s).line} and cannot be "
                                        "used after the loop")
            return
        if isinstance(iterable, (tuple, range)):
            return self._unroll(s, iterable)
        if isinstance(iterable, Tile):
            raise self.error(TileUnsupportedFeatureError, f"cannot iterate over a {iterable.type}: tile code "
                             "loops over range(...), ct.static_iter(...) or a tuple", it)
        raise self.error(TileUnsupportedFeatureError, "tile code loops over range(...), ct.static_iter(...) "
                         f"or a tuple of compile-time values, not {_what(iterable)}", it)

    def _static_iterable(self, node: ast.expr) -> tuple:
        value = self._static_eval_node(node)
        try:
            return tuple(value)
        except TypeError:
            raise self.error(TileStaticEvalError, f"ct.static_iter needs an iterable, got {_what(value)}",
                             node) from None

    def _unroll(self, s: ast.For, values) -> None:
        """A loop over compile-time values: the body is compiled once per value."""
        values = tuple(values)
        saved = {f: self.env.pop(f) for f in (BRK, CONT) if f in self.env}
        self.unrolled_depth += 1
        try:
            self._unroll_from(s, values, 0)
        finally:
            self.unrolled_depth -= 1
        self.env.pop(BRK, None)
        self.env.pop(CONT, None)
        self.env.update(saved)
        if self.env.get(RET, False) is True:
            raise _Stop

    def _unroll_from(self, s: ast.For, values: tuple, start: int) -> None:
        for k in range(start, len(values)):
            self.assign(s.target, values[k])
            self.run_body(s.body)
            self.env.pop(CONT, None)  # continue ends only this iteration
            if k + 1 == len(values):
                return
            guard = self._exit_guard()
            if guard is True:
                continue
            if guard is False:
                return
            self._emit_if(guard, lambda: self._resume_unroll(s, values, k + 1), self._exited_branch, s)
            return

    def _resume_unroll(self, s: ast.For, values: tuple, start: int) -> None:
        for f in self._live_flags():
            self.env[f] = False
        self._unroll_from(s, values, start)

    def _range_loop(self, s: ast.For, call: ast.Call) -> None:
        if not 1 <= len(call.args) <= 3:
            raise self.error(TileTypeError, f"range expected 1 to 3 arguments, got {len(call.args)}", call)
        args = [self.expr(a) for a in call.args]
        start, stop, step = (0, args[0], 1) if len(args) == 1 else \
            (args[0], args[1], args[2] if len(args) == 3 else 1)
        for a, a_node in zip(args, call.args):
            if not ((is_const(a) and isinstance(a, (int, np.integer)) and not isinstance(a, (bool, np.bool_)))
                    or (isinstance(a, Tile) and a.shape == () and a.dtype.is_int)):
                raise self.error(TileTypeError, f"range() arguments must be integer scalars, got "
                                 f"{_what(a)}", a_node)
        if is_const(step) and step <= 0:
            raise self.error(TileValueError, f"range() step must be positive in tile code, got {step}",
                             call.args[2])
        if not isinstance(s.target, ast.Name):
            raise self.error(TileUnsupportedFeatureError, "the variable of a range loop must be a single name",
                             s.target)
        d = dt.int32
        for a in (start, stop, step):
            d = dt.promote(d, a.dtype) if isinstance(a, Tile) else \
                (d if dt.representable(a, dt.int32) else dt.int64)
        bounds = [self._coerce(a, TileType(d, ())) for a in (start, stop, step)]
        target = s.target.id
        if _contains(s.body, (ast.Break,), into_loops=False):
            # a for loop that may break becomes a while loop over an explicit induction variable
            iv = f"{IV}{self.loop_depth}"
            self.env[iv] = bounds[0]

            def cond():
                return ew.less(self.env[iv], bounds[1])

            def body():
                self.env[target] = self.env[iv]
                self.last_assignment[target] = s.target
                self.run_body(s.body)
                self.env[iv] = ew.add(self.env[iv], bounds[2])

            self._loop(s, "while", cond, body, extra_carried=(iv,))
            self.env.pop(iv, None)
        else:
            self._loop(s, "for", None, lambda: self.run_body(s.body), bounds=bounds, target=target)
        self.env[target] = _Undefined(f"is the variable of the range loop at line {self.loc(s).line} and "
                                      "cannot be used after the loop; copy it to another variable inside the loop")

    def stmt_While(self, s: ast.While) -> None:
        if s.orelse:
            raise self.error(TileUnsupportedFeatureError, "'while ... else' is not supported in tile code", s)
        walrus = next((n for n in ast.walk(s.test) if isinstance(n, ast.NamedExpr)), None)
        if walrus is not None:
            raise self.error(TileUnsupportedFeatureError, "an assignment expression (:=) in a while condition "
                             "is not supported; assign before the loop and at the end of its body", walrus)

        def cond():
            with self.at(s.test):
                return self._truth(self.expr(s.test), s.test)

        self._loop(s, "while", cond, lambda: self.run_body(s.body))

    def _loop(self, s: ast.For | ast.While, kind: str, cond_fn: Callable | None, body_fn: Callable,
              bounds: list[Tile] | None = None, target: str | None = None, extra_carried: tuple = ()) -> None:
        """Emit a ``for``/``while`` op carrying the variables its body reassigns.

        The body is compiled in rounds. The first binds variables that hold Python
        constants to those constants: one that comes out unchanged is a loop invariant and
        stays a constant; otherwise its type is what one iteration makes of it (so
        ``acc = 0.0`` followed by ``acc = acc + tile`` carries the tile's type). Later
        rounds bind carried variables to block arguments of the inferred types until the
        body preserves them. Variables that start as tiles must keep their type.
        """
        saved_flags = {f: self.env.pop(f) for f in (BRK, CONT) if f in self.env}
        has_brk = _contains(s.body, (ast.Break,), into_loops=False)
        if has_brk:
            self.env[BRK] = False
        assigned = _assigned_names(s.body) | set(extra_carried) | ({BRK} if has_brk else set())
        outer = dict(self.env)
        names = [n for n in outer if n in assigned and n != target and not isinstance(outer[n], _Undefined)]
        init = {n: outer[n] for n in names}
        static = {n for n in names if not _carriable(init[n])}
        unstable: dict[str, str] = {}  # static names the body changes → reason they cannot be used
        # per carried name and leaf: None = still the constant it started as, else the carried type
        leaf_types: dict[str, list[TileType | None]] = {
            n: [x.type if isinstance(x, Tile) else None for x in _flatten(init[n])] for n in names if n not in static}
        weak = {n: [not isinstance(x, Tile) for x in _flatten(init[n])] for n in leaf_types}
        for _round in range(8):
            body_block, cond_block, out_env = self._loop_round(kind, cond_fn, body_fn, outer, init, leaf_types,
                                                               unstable, bounds, target)
            changed = False
            for n in names:
                out = out_env.get(n, _MISSING)
                if n in static:
                    if n not in unstable and not (out is init[n] or _same_static(out, init[n])):
                        unstable[n] = (f"changes in the loop at line {self.loc(s).line} from "
                                       f"{_what(init[n])} to {_what(out)}; only tiles and numbers can "
                                       "change from one iteration to the next")
                        changed = True
                    continue
                new = self._carried_types(n, init[n], out, leaf_types[n], weak[n], s)
                if new != leaf_types[n]:
                    leaf_types[n] = new
                    changed = True
            if not changed:
                break
        else:
            raise self.error(TileTypeError, "the types of the loop-carried variables do not settle", s)
        self.env = outer
        init_operands = [self._coerce(x, t).value for n in leaf_types
                         for x, t in zip(_flatten(init[n]), leaf_types[n]) if t is not None]
        result_types = tuple(t for n in leaf_types for t in leaf_types[n] if t is not None)
        if kind == "for":
            op = self.builder.emit("for", [b.value for b in bounds] + init_operands,
                                   {"result_types": result_types}, regions=[body_block])
        else:
            op = self.builder.emit("while", init_operands, {"result_types": result_types},
                                   regions=[cond_block, body_block])
        results = iter(Tile(v) for v in op.results)
        for n, types_ in leaf_types.items():
            leaves = [next(results) if t is not None else x for x, t in zip(_flatten(init[n]), types_)]
            self.env[n] = _rebuild(init[n], leaves)
        for n, reason in unstable.items():
            self.env[n] = _Undefined(reason)
        line = self.loc(s).line
        for n in _assigned_names(s.body) - set(names) - {target}:
            self.env[n] = _Undefined(f"is assigned only inside the loop at line {line}; assign it before the "
                                     "loop to use it after the loop")
        for f in (BRK, CONT):
            self.env.pop(f, None)
        self.env.update(saved_flags)

    def _loop_round(self, kind, cond_fn, body_fn, outer, init, leaf_types, unstable, bounds, target):
        """Compile the loop's regions once with the given carried types."""
        def bind(block: Block) -> None:
            for n, types_ in leaf_types.items():
                leaves = []
                for x, t in zip(_flatten(init[n]), types_):
                    if t is None:
                        leaves.append(x)
                    else:
                        arg = Value(t, hint=n.lstrip("$"))
                        block.args.append(arg)
                        leaves.append(Tile(arg))
                self.env[n] = _rebuild(init[n], leaves)
            for n, reason in unstable.items():
                self.env[n] = _Undefined(reason)

        cond_block = None
        self.loop_depth += 1
        try:
            if kind == "while":
                cond_block = Block()
                self.env = dict(outer)
                bind(cond_block)
                with self.builder.inside(cond_block):
                    c = cond_fn()
                    if BRK in self.env:
                        c = self._and(self._not(self.env[BRK]), c)
                    c = c if isinstance(c, Tile) else as_tile(bool(c), dt.bool_)
                    self.builder.emit("yield", [c.value])
            body_block = Block()
            self.env = dict(outer)
            if kind == "for":
                iv = Value(TileType(bounds[0].dtype, ()), hint=target)
                body_block.args.append(iv)
            bind(body_block)
            if kind == "for":
                self.env[target] = Tile(iv)
            if BRK in self.env:
                self.env[BRK] = False  # the body only runs while no break happened
            self.env[CONT] = False
            with self.builder.inside(body_block):
                body_fn()
                out_env = self.env
                ys = []
                for n, types_ in leaf_types.items():
                    out = out_env.get(n, _MISSING)
                    if not (_carriable(out) and _same_structure(out, init[n])):
                        continue  # _carried_types reports the problem
                    ys += [self._coerce(x, t).value for x, t in zip(_flatten(out), types_)
                           if t is not None and self._fits(x, t)]
                self.builder.emit("yield", ys)
            return body_block, cond_block, out_env
        finally:
            self.loop_depth -= 1

    @staticmethod
    def _fits(x: Any, t: TileType) -> bool:
        """Whether ``x`` can be yielded as ``t`` without changing the carried type."""
        if is_const(x):
            return dt.representable(x, t.dtype)
        if not isinstance(x, Tile):
            return False
        if x.dtype is not t.dtype and not dt.promote(x.dtype, t.dtype) is t.dtype:
            return False
        try:
            return dt.broadcast_shapes(x.shape, t.shape) == t.shape
        except ValueError:
            return False

    def _carried_types(self, name: str, init: Any, out: Any, types_: list, weak: list, s) -> list:
        """The carried leaf types after one more round (raises when a variable changes type)."""
        where = self.last_assignment.get(name, s) if name[0] != "$" else s
        label = f"loop-carried variable {name!r}"
        if out is _MISSING or isinstance(out, _Undefined):
            raise self.error(TileTypeError, f"{label} is not defined at the end of the loop body", where)
        if not _carriable(out) or not _same_structure(init, out):
            raise self.error(TileTypeError, f"{label} changes from {_what(init)} to {_what(out)} in the "
                             "loop body; it must keep its type from one iteration to the next", where)
        new = []
        for x0, x, t, is_weak in zip(_flatten(init), _flatten(out), types_, weak):
            if t is None:  # still the constant it started as
                if is_const(x) and _same_static(x, x0):
                    new.append(None)
                elif is_const(x):
                    new.append(TileType(dt.promote(dt.scalar_dtype(x0), dt.scalar_dtype(x)), ()))
                else:
                    new.append(TileType(dt.promote_with_scalar(x.dtype, x0), x.shape))
                continue
            if self._fits(x, t) and (is_weak or is_const(x) or x.type == t):
                new.append(t)
                continue
            if not is_weak:
                got = _what(x)
                raise self.error(TileTypeError,
                                 f"{label} changes type in the loop: it is a {t} before the loop and "
                                 f"{got} after an iteration; a loop must keep each variable's type and shape "
                                 f"(convert with .astype({t.dtype.name}) or initialise it with the right type)",
                                 where)
            # a variable that started as a Python constant takes the type the loop gives it
            if is_const(x):
                new.append(TileType(dt.promote_with_scalar(t.dtype, x), t.shape))
                continue
            try:
                shape = dt.broadcast_shapes(t.shape, x.shape)
            except ValueError:
                raise self.error(TileTypeError, f"{label} changes shape in the loop: {t} vs {x.type}",
                                 where) from None
            new.append(TileType(dt.promote(t.dtype, x.dtype), shape))
        return new

    # ------------------------------------------------------------------ expressions

    def expr(self, node: ast.expr) -> Any:
        kind = type(node).__name__
        method = getattr(self, "expr_" + kind, None)
        if method is None:
            message = _UNSUPPORTED_EXPRS.get(kind, f"{kind} expressions are not supported in tile code")
            raise self.error(TileUnsupportedFeatureError, message, node)
        with self.at(node):
            return method(node)

    def expr_Constant(self, node: ast.Constant) -> Any:
        return node.value

    def expr_Name(self, node: ast.Name) -> Any:
        return self.lookup(node.id, node)

    def expr_NamedExpr(self, node: ast.NamedExpr) -> Any:
        value = self.expr(node.value)
        self.assign(node.target, value)
        return value

    def expr_Tuple(self, node: ast.Tuple | ast.List) -> tuple:
        out: list[Any] = []
        for e in node.elts:
            if isinstance(e, ast.Starred):
                v = self.expr(e.value)
                if not isinstance(v, (tuple, range)):
                    raise self.error(TileTypeError, f"cannot unpack {_what(v)} with *", e)
                out.extend(v)
            else:
                out.append(self.expr(e))
        return tuple(out)

    expr_List = expr_Tuple  # lists are immutable tuples in tile code

    def expr_Dict(self, node: ast.Dict) -> dict:
        out: dict[Any, Any] = {}
        for k, v in zip(node.keys, node.values):
            if k is None:
                out.update(self.expr(v))
                continue
            key = self.expr(k)
            if not _is_static(key):
                raise self.error(TileTypeError, "dictionary keys must be compile-time values", k)
            out[key] = self.expr(v)
        return out

    def expr_ListComp(self, node: ast.ListComp | ast.GeneratorExp) -> tuple:
        """A comprehension over compile-time tuples/ranges, unrolled into a tuple."""
        out: list[Any] = []
        saved = dict(self.env)

        def run(k: int) -> None:
            if k == len(node.generators):
                out.append(self.expr(node.elt))
                return
            gen = node.generators[k]
            if gen.is_async:
                raise self.error(TileUnsupportedFeatureError, "async comprehensions are not supported", gen)
            iterable = self._comprehension_iterable(gen.iter)
            if not isinstance(iterable, (tuple, range, str, dict)):
                raise self.error(TileUnsupportedFeatureError,
                                 f"a comprehension in tile code must iterate over a compile-time tuple or "
                                 f"range, not {_what(iterable)}; use a for loop over range(...) instead",
                                 gen.iter)
            for item in iterable:
                self.assign(gen.target, item)
                keep = True
                for cond_node in gen.ifs:
                    c = self._truth(self.expr(cond_node), cond_node)
                    if isinstance(c, Tile):
                        raise self.error(TileUnsupportedFeatureError, "a comprehension filter must be a "
                                         "compile-time condition", cond_node)
                    keep = keep and c
                if keep:
                    run(k + 1)

        try:
            run(0)
        finally:
            self.env = saved
        return tuple(out)

    expr_GeneratorExp = expr_ListComp

    def _comprehension_iterable(self, node: ast.expr) -> Any:
        if isinstance(node, ast.Call) and self.expr(node.func) is builtins.range:
            args = [self.expr(a) for a in node.args]
            if any(isinstance(a, Tile) for a in args):
                raise self.error(TileUnsupportedFeatureError, "a comprehension in tile code is unrolled at "
                                 "compile time, so its range() needs constant bounds; use a for loop for "
                                 "run-time bounds", node)
        return self.expr(node)

    def expr_Attribute(self, node: ast.Attribute) -> Any:
        base = self.expr(node.value)
        if node.attr.startswith("__"):
            raise self.error(TileUnsupportedFeatureError, f"access to {node.attr} is not supported in tile code",
                             node)
        try:
            return getattr(base, node.attr)
        except AttributeError:
            what = f"module {base.__name__!r}" if isinstance(base, types.ModuleType) else _what(base)
            raise self.error(TileTypeError, f"{what} has no attribute {node.attr!r}", node) from None

    def expr_Subscript(self, node: ast.Subscript) -> Any:
        base = self.expr(node.value)
        key = self._subscript_key(node.slice)
        if isinstance(base, Array):
            raise self.error(TileTypeError, "arrays cannot be indexed directly in tile code; use ct.load, "
                             "ct.gather or a tiled view", node)
        if isinstance(base, Tile):
            return base[key]
        if isinstance(key, Tile) or (isinstance(key, tuple) and any(isinstance(k, Tile) for k in key)):
            raise self.error(TileTypeError, f"{_what(base)} can only be indexed by compile-time constants",
                             node.slice)
        return base[key]

    def _subscript_key(self, node: ast.expr) -> Any:
        if isinstance(node, ast.Slice):
            return slice(*(self.expr(p) if p is not None else None for p in (node.lower, node.upper, node.step)))
        if isinstance(node, ast.Tuple):
            return tuple(self._subscript_key(e) for e in node.elts)
        return self.expr(node)

    def _binop(self, op: str | None, a: Any, b: Any, node: ast.AST) -> Any:
        if op is None:
            raise self.error(TileUnsupportedFeatureError, "this operator is not supported in tile code", node)
        fn = _PY_OPS[op]
        if isinstance(a, (Tile, Array)) or isinstance(b, (Tile, Array)):
            for v in (a, b):
                if not _is_value(v):
                    raise self.error(TileTypeError, f"unsupported operand types for {op}: {_what(a)} "
                                     f"and {_what(b)}", node)
        return fn(a, b)  # constants fold; tiles emit ops through their operators

    def expr_BinOp(self, node: ast.BinOp) -> Any:
        return self._binop(_BINOPS.get(type(node.op)), self.expr(node.left), self.expr(node.right), node)

    def expr_UnaryOp(self, node: ast.UnaryOp) -> Any:
        v = self.expr(node.operand)
        if isinstance(node.op, ast.Not):
            return self._not(self._truth(v, node.operand))
        if isinstance(v, Array):
            raise self.error(TileTypeError, f"bad operand for unary operator: {_what(v)}", node)
        if isinstance(node.op, ast.USub):
            return -v
        if isinstance(node.op, ast.UAdd):
            return +v
        return ~v

    def expr_BoolOp(self, node: ast.BoolOp) -> Any:
        """``and``/``or``: Python semantics on compile-time values, bool results on scalar tiles."""
        is_and = isinstance(node.op, ast.And)
        acc = self.expr(node.values[0])
        for value_node in node.values[1:]:
            if not isinstance(acc, Tile):
                if self._truth(acc, node) != is_and:
                    return acc  # short circuit, like Python
                acc = self.expr(value_node)
                continue
            a = self._truth(acc, node.values[0])
            b = self._truth(self.expr(value_node), value_node)
            acc = self._and(a, b) if is_and else self._or(a, b)
        return acc

    def expr_Compare(self, node: ast.Compare) -> Any:
        left = self.expr(node.left)
        result: Any = True
        for op, right_node in zip(node.ops, node.comparators):
            right = self.expr(right_node)
            r = self._compare(op, left, right, node)
            if result is True:
                result = r
            elif isinstance(result, Tile) or isinstance(r, Tile):
                result = self._and(result, r) if not (isinstance(result, Tile) and isinstance(r, Tile)) \
                    else ew.bitwise_and(result, r)
            else:
                result = result and r
            if not isinstance(result, Tile) and not result:
                return result  # a chain stops at its first false link, like Python
            left = right
        return result

    def _compare(self, op: ast.cmpop, left: Any, right: Any, node: ast.AST) -> Any:
        if isinstance(op, (ast.Is, ast.IsNot)):
            return (left is right) if isinstance(op, ast.Is) else (left is not right)
        if isinstance(op, (ast.In, ast.NotIn)):
            if not isinstance(right, (tuple, dict, str, range)):
                raise self.error(TileTypeError, f"'in' needs a compile-time tuple, got {_what(right)}", node)
            if isinstance(right, str):
                found = left in right
            elif isinstance(left, Tile) or any(isinstance(x, Tile) for x in right):
                found = False  # a run-time membership test: an or-chain of equalities
                for x in right:
                    if _is_value(x):
                        eq = self._compare(ast.Eq(), left, x, node)
                        found = ew.bitwise_or(found, eq) if isinstance(found, Tile) and isinstance(eq, Tile) \
                            else self._or(found, eq)
            else:
                found = any(_same_static(left, x) or (is_const(left) and is_const(x) and left == x) for x in right)
            return found if isinstance(op, ast.In) else self._not(found)
        sym = _CMPOPS[type(op)]
        if isinstance(left, Array) or isinstance(right, Array):
            raise self.error(TileTypeError, f"cannot compare {_what(left)} and {_what(right)}", node)
        if (isinstance(left, Tile) or isinstance(right, Tile)) and not (_is_value(left) and _is_value(right)):
            if sym in ("==", "!="):
                return (sym == "!=")  # a tile never equals a non-numeric object
            raise self.error(TileTypeError, f"cannot compare {_what(left)} and {_what(right)}",
                             node)
        return _PY_OPS[sym](left, right)

    def expr_IfExp(self, node: ast.IfExp) -> Any:
        cond = self._truth(self.expr(node.test), node.test)
        if not isinstance(cond, Tile):
            return self.expr(node.body if cond else node.orelse)
        a, b = self.expr(node.body), self.expr(node.orelse)
        return self._select(cond, a, b, node)

    def _select(self, cond: Tile, a: Any, b: Any, node: ast.AST) -> Any:
        if _same_static(a, b):
            return a
        if isinstance(a, tuple) and isinstance(b, tuple) and len(a) == len(b):
            return tuple(self._select(cond, x, y, node) for x, y in zip(a, b))
        if not (_is_value(a) and _is_value(b)):
            raise self.error(TileTypeError, "a conditional expression with a run-time condition must give tiles "
                             f"or numbers on both sides, got {_what(a)} and {_what(b)}", node)
        return ew.where(cond, a, b)

    def expr_Lambda(self, node: ast.Lambda) -> LocalFunction:
        return self._local_function(node)

    def expr_JoinedStr(self, node: ast.JoinedStr) -> Any:
        from ..ops.debug import FormatString
        parts: list[Any] = []
        for v in node.values:
            if isinstance(v, ast.Constant):
                parts.append(str(v.value))
                continue
            value = self.expr(v.value)
            spec = ""
            if v.format_spec is not None:
                spec_val = self.expr(v.format_spec)
                spec = spec_val.text() if isinstance(spec_val, FormatString) else str(spec_val)
            if isinstance(value, FormatString) and value.parts and all(isinstance(p, str) for p in value.parts):
                value = value.text()
            if isinstance(value, (Tile, FormatString)):
                parts.append((value, spec) if isinstance(value, Tile) else value.text())
            else:
                if v.conversion == ord("r"):
                    value = repr(value)
                elif v.conversion in (ord("s"), ord("a")):
                    value = str(value) if v.conversion == ord("s") else ascii(value)
                elif isinstance(value, dt.DType):
                    value = value.name
                parts.append(format(value, spec))
        return FormatString(parts)

    # ------------------------------------------------------------------ calls

    def expr_Call(self, node: ast.Call) -> Any:
        fn = self.expr(node.func)
        from ..ops import meta
        if fn is meta.static_eval:
            if len(node.args) != 1 or node.keywords:
                raise self.error(TileTypeError, "ct.static_eval() takes exactly one expression", node)
            return self._static_eval_node(node.args[0])
        if fn is meta.static_assert:
            return self._static_assert(node)
        if fn is meta.static_iter:
            raise self.error(TileSyntaxError, "ct.static_iter(...) can only be the iterable of a for loop", node)
        args: list[Any] = []
        for a in node.args:
            if isinstance(a, ast.Starred):
                v = self.expr(a.value)
                if not isinstance(v, (tuple, range)):
                    raise self.error(TileTypeError, f"cannot unpack {_what(v)} with *", a)
                args.extend(v)
            else:
                args.append(self.expr(a))
        kwargs: dict[str, Any] = {}
        for kw in node.keywords:
            if kw.arg is None:
                v = self.expr(kw.value)
                if not isinstance(v, dict):
                    raise self.error(TileTypeError, "** needs a compile-time dict", kw.value)
                kwargs.update(v)
            else:
                kwargs[kw.arg] = self.expr(kw.value)
        return self.call(fn, args, kwargs, node)

    def call(self, fn: Any, args: list, kwargs: dict, node: ast.AST | None) -> Any:
        from . import builtins_map
        from .kernel import Kernel, TileFunction
        if isinstance(fn, Kernel):
            raise self.error(TileTypeError, f"kernel {fn.__name__!r} cannot be called from tile code; move the "
                             "shared code into a tile function", node)
        if isinstance(fn, TileFunction):
            fn = fn.fn
        if isinstance(fn, LocalFunction):
            return self.inline(fn, args, kwargs, node)
        if isinstance(fn, (Tile, Array)):
            raise self.error(TileTypeError, f"{_what(fn)} is not callable", node)
        if _is_safetile_callable(fn):
            return fn(*args, **kwargs)
        special = builtins_map.lookup(fn)
        if special is not None:
            return special(self, args, kwargs)
        if isinstance(fn, dt.DType):
            if len(args) != 1 or kwargs:
                raise self.error(TileTypeError, f"{fn.name}(x) takes exactly one argument", node)
            return as_tile(args[0], fn) if is_const(args[0]) else ew.astype(args[0], fn)
        if isinstance(fn, types.FunctionType) and not _is_library_function(fn):
            return self.inline(fn, args, kwargs, node)
        if not callable(fn):
            raise self.error(TileTypeError, f"{_what(fn)} is not callable", node)
        if all(_is_static(a) for a in args) and all(_is_static(v) for v in kwargs.values()):
            return fn(*args, **kwargs)  # compile-time evaluation (e.g. math.log2(TILE))
        name = getattr(fn, "__qualname__", None) or getattr(fn, "__name__", None) or _what(fn)
        raise self.error(TileUnsupportedFeatureError, f"{name}() cannot be called with run-time values in tile "
                         "code; use the ct.* equivalent", node)

    def inline(self, fn: Any, args: list, kwargs: dict, node: ast.AST | None) -> Any:
        """Inline a tile function (module-level def, nested def or lambda) at this call."""
        if isinstance(fn, LocalFunction):
            owner = fn.owner
            parsed, fnode, globals_ = owner.parsed, fn.node, owner.globals
            scope = {k: v for k, v in owner.env.items() if not k.startswith("$")}
            key: Any = fnode
            name = fn.name
            bound = self._bind_local(fn, args, kwargs, node)
        else:
            parsed = parse_function(fn)
            fnode, globals_, name, key = parsed.node, fn.__globals__, fn.__name__, fn.__code__
            if isinstance(fnode, ast.AsyncFunctionDef):
                raise self.error(TileUnsupportedFeatureError, f"{name}() is async; tile functions cannot be "
                                 "async", node)
            scope = {}
            for var, cell in zip(fn.__code__.co_freevars, fn.__closure__ or ()):
                try:
                    scope[var] = cell.cell_contents
                except ValueError:  # a free variable not assigned yet
                    scope[var] = _Undefined("is a free variable that has no value yet")
            bound = self._bind_python(fn, args, kwargs, node)
        if key in self.call_stack:
            raise self.error(TileRecursionError, f"{name}() calls itself: tile functions are inlined at every "
                             "call, so recursion is not supported (use a loop)", node)
        scope.update(bound)
        sub = FunctionCompiler(parsed, globals_, scope, self.builder, self.call_stack + (key,), is_kernel=False)
        try:
            if isinstance(fnode, ast.Lambda):
                return sub.expr(fnode.body)
            sub.run_body(fnode.body)
            result = sub.env.get(RETVAL)
            if result is not None and sub.env.get(RET) is not True:
                raise sub.error(TileTypeError, f"{name}() does not return a value on every path; add a "
                                "return at the end or in every branch", fnode)
            return result
        except TileError as e:
            if node is not None or self.builder.loc is not None:
                e.add_frame(self.loc(node))
            raise

    def _bind_python(self, fn: types.FunctionType, args: list, kwargs: dict, node) -> dict[str, Any]:
        import inspect
        sig = inspect.signature(fn)
        try:
            ba = sig.bind(*args, **kwargs)
        except TypeError as e:
            raise self.error(TileTypeError, f"{fn.__name__}(): {e}: called with {len(args)} positional and "
                             f"{len(kwargs)} keyword argument(s) for {fn.__name__}{sig}", node) from None
        ba.apply_defaults()
        return dict(ba.arguments)

    def _bind_local(self, fn: LocalFunction, args: list, kwargs: dict, node) -> dict[str, Any]:
        """Bind call arguments to a local function's parameters, like Python does."""
        a = fn.node.args
        name = fn.name
        positional = [p.arg for p in a.posonlyargs + a.args]
        bound: dict[str, Any] = {}
        if len(args) > len(positional) and a.vararg is None:
            raise self.error(TileTypeError, f"{name}() takes {len(positional)} positional argument(s) but "
                             f"{len(args)} were given", node)
        for p, v in zip(positional, args):
            bound[p] = v
        if a.vararg is not None:
            bound[a.vararg.arg] = tuple(args[len(positional):])
        keyword_ok = [p.arg for p in a.args + a.kwonlyargs]
        extra: dict[str, Any] = {}
        for k, v in kwargs.items():
            if k in bound:
                raise self.error(TileTypeError, f"{name}() got multiple values for argument {k!r}", node)
            if k in keyword_ok:
                bound[k] = v
            elif a.kwarg is not None:
                extra[k] = v
            else:
                raise self.error(TileTypeError, f"{name}() got an unexpected keyword argument {k!r}", node)
        for p, d in zip(positional[len(positional) - len(fn.defaults):], fn.defaults):
            bound.setdefault(p, d)
        for p, d in zip(a.kwonlyargs, fn.kw_defaults):
            if p.arg not in bound and d is not _MISSING:
                bound[p.arg] = d
        missing = [p for p in positional + [k.arg for k in a.kwonlyargs] if p not in bound]
        if missing:
            raise self.error(TileTypeError, f"{name}() missing argument(s): {', '.join(map(repr, missing))}", node)
        if a.kwarg is not None:
            bound[a.kwarg.arg] = extra
        return bound

    # ------------------------------------------------------------------ static evaluation

    def _static_namespace(self) -> dict[str, Any]:
        ns = dict(self.globals)
        ns.update({k: v for k, v in self.env.items() if not k.startswith("$") and not isinstance(v, _Undefined)})
        return ns

    def _static_eval_node(self, node: ast.expr) -> Any:
        expr = ast.Expression(body=node)
        try:
            code = compile(expr, self.parsed.filename, "eval")
            value = eval(code, self._static_namespace())  # noqa: S307 - the user's own kernel code
        except TileError:
            raise
        except Exception as e:  # noqa: BLE001 - any failure is the user's expression failing
            raise self.error(TileStaticEvalError, f"cannot evaluate at compile time: {type(e).__name__}: {e}",
                             node) from None
        if isinstance(value, (Tile, Array)) or (isinstance(value, tuple) and not _is_static(value)):
            raise self.error(TileStaticEvalError, "ct.static_eval produced a run-time value; only compile-time "
                             "facts (shapes, dtypes, constants) can be evaluated", node)
        return value

    def _static_assert(self, node: ast.Call) -> None:
        args = list(node.args)
        kw = {k.arg: k.value for k in node.keywords}
        if "message" in kw:
            args.append(kw.pop("message"))
        if not 1 <= len(args) <= 2 or kw:
            raise self.error(TileTypeError, "ct.static_assert(condition, message=None) takes a condition and an "
                             "optional message", node)
        cond = self.expr(args[0])
        msg = self.expr(args[1]) if len(args) == 2 else None
        if isinstance(cond, (Tile, Array)):
            raise self.error(TileStaticAssertionError, f"ct.static_assert needs a compile-time condition, got "
                             f"a run-time {cond.type}", args[0])
        if not cond:
            from ..ops.debug import FormatString
            text = msg.text() if isinstance(msg, FormatString) else (str(msg) if msg is not None else None)
            src = ast.unparse(args[0])
            raise self.error(TileStaticAssertionError, f"static assertion failed: {text}" if text else
                             f"static assertion failed: {src}", node)
        return None


@dataclass(frozen=True)
class _Slot:
    """A leaf of a merged-value template: the index of an ``if`` result."""

    index: int
