"""Python AST → tile IR.

The compiler walks a kernel's AST. Expressions evaluate to front-end values: Python
constants (folded eagerly), ``Tile``/``Array`` symbols that wrap IR values, tuples, and
callables. Calls of ``safetile`` functions emit IR through the catalogue; calls of any
other Python function inline its AST. Variables are SSA names: ``if`` merges the names
either branch changed, loops carry the names their body reassigns, and ``break``,
``continue`` and ``return`` become boolean flags that guard the statements after them,
so the IR keeps purely structured control flow.

Every user mistake becomes a ``Tile*Error`` located at the innermost statement or
expression being compiled; inlined calls add one frame each. Statements live here;
control flow in ``control.py``; expressions and calls in ``expressions.py``.
"""
from __future__ import annotations

import ast
import builtins
import contextlib
from typing import Any
from collections.abc import Iterator

from ..errors import (TileError, TileInternalError, TileRecursionError, TileStaticAssertionError,
                      TileSyntaxError, TileTypeError, TileUnsupportedFeatureError, TileValueError)
from ..ir.builder import Builder
from ..ops import elementwise as ew
from ..ops.values import Array, Tile
from . import budget
from .common import (BINOPS, BRK, CONT, FLAGS, MISSING, RET, RETVAL, UNSUPPORTED_STMTS, ContextManagerCall,
                     LocalFunction, StopBody, Undefined, context_manager_function, debug_cause, raised_by_user,
                     user_boundary, what)
from .control import ControlFlow
from .dataclass_values import DataclassValue
from .expressions import Expressions
from .captures import ABSENT, Captures
from .source import ParsedFunction

__all__ = ["FunctionCompiler", "LocalFunction"]


class FunctionCompiler(ControlFlow, Expressions):
    """Compiles one function body (the kernel, or an inlined tile function) into IR."""

    def __init__(self, parsed: ParsedFunction, globals_: dict[str, Any], scope: dict[str, Any],
                 builder: Builder, call_stack: tuple, is_kernel: bool, captures: Captures):
        self.parsed = parsed
        self.captures = captures  # the Python state this compilation read (shared by inlined calls)
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
        except StopBody:
            raise
        except TileError as e:
            if not e.locs:
                e.locs.append(self.loc(node))
            raise
        except RecursionError:
            raise TileRecursionError("tile functions are nested too deeply", self.loc(node)) from None
        except Exception as e:  # noqa: BLE001 - classified: the user's mistake, or a bug in safetile
            raise self.classify(e, node) from (debug_cause(e) if raised_by_user(e) else e)
        finally:
            builder.loc, builder.compiler = saved

    def classify(self, e: Exception, node: ast.AST) -> TileError:
        """The located error for a Python exception: a user error when the user's code or values
        raised it, otherwise a ``TileInternalError`` (a bug in safetile) carrying the cause."""
        loc = self.loc(node)
        if not raised_by_user(e):
            return TileInternalError(f"internal compiler error: {type(e).__name__}: {e} (a bug in safetile; "
                                     "please report it with this kernel)", loc)
        if isinstance(e, (TypeError, AttributeError)):
            return TileTypeError(str(e), loc)
        if isinstance(e, NotImplementedError):
            return TileUnsupportedFeatureError(str(e) or "not supported in tile code", loc)
        if isinstance(e, KeyError) and e.args:
            return TileValueError(f"key {e.args[0]!r} not found", loc)
        if isinstance(e, (ValueError, ArithmeticError, IndexError, LookupError)):
            return TileValueError(str(e), loc)
        return TileTypeError(f"{type(e).__name__}: {e}", loc)

    def call_value(self, fn: Any, args: list) -> Any:
        """Call a tile function from an op (e.g. a reduce combiner) at the current location."""
        return self.call(fn, args, {}, None)

    # ------------------------------------------------------------------ names

    def lookup(self, name: str, node: ast.AST | None) -> Any:
        if name in self.env:
            v = self.env[name]
            if isinstance(v, Undefined):
                raise self.error(TileSyntaxError, f"name {name!r} {v.reason}", node)
            return v
        value = self.globals.get(name, ABSENT)
        self.captures.name(self.globals, name, value)  # a later definition or change recompiles
        if value is not ABSENT:
            return value
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
            raise self.error(TileTypeError,
                             "Tiles are immutable: item assignment is not supported (nor on arrays) in tile code; "
                             "write to arrays with ct.store/ct.scatter and build new tiles with ct.where "
                             "or ct.insert", target)
        elif isinstance(target, ast.Attribute) and isinstance(target.value, ast.Name) and \
                isinstance(self.env.get(target.value.id), DataclassValue):
            holder = self.env[target.value.id]
            raise self.error(TileTypeError, f"cannot assign to field {target.attr!r} of frozen dataclass "
                             f"{holder.cls.__name__}", target)
        elif isinstance(target, ast.Attribute):
            raise self.error(TileUnsupportedFeatureError,
                             f"cannot assign to attribute {target.attr!r}: objects are immutable in tile code",
                             target)
        elif isinstance(target, ast.Starred):
            raise self.error(TileSyntaxError, "a starred assignment target must be in a tuple or list", target)
        else:
            raise self.error(TileSyntaxError, f"cannot assign to {type(target).__name__}", target)

    @user_boundary
    def _unpack(self, target: ast.Tuple | ast.List, value: Any) -> None:
        if not isinstance(value, tuple):
            raise self.error(TileTypeError, f"cannot unpack {what(value)}: only tuples can be unpacked "
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
        starred = elts[i]
        assert isinstance(starred, ast.Starred)  # stars holds the starred elements' positions
        self.assign(starred.value, tuple(value[i:len(value) - n_after]))
        for t, v in zip(elts[i + 1:], value[len(value) - n_after:]):
            self.assign(t, v)

    # ------------------------------------------------------------------ truth values

    @user_boundary
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
        if isinstance(v, Undefined):
            raise self.error(TileSyntaxError, v.reason, node)
        return bool(v)

    @user_boundary
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
        except StopBody:
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
                raise StopBody
            self._emit_if(guard, lambda rest=rest: self._resume(rest), self._exited_branch, s)
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
            message = UNSUPPORTED_STMTS.get(kind, f"{kind} statements are not supported in tile code")
            raise self.error(TileSyntaxError, f"Unsupported syntax: {message}", s)
        saved, self.statement = self.statement, s
        budget.check(self.builder.deadline, self.loc(s))
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
        assert isinstance(s.target, ast.Name)  # assign raised for the others
        current = self.lookup(s.target.id, s.target)
        value = self._binop(BINOPS.get(type(s.op)), current, self.expr(s.value), s)
        self.assign(s.target, value)

    def stmt_FunctionDef(self, s: ast.FunctionDef) -> None:
        from .kernel import TileFunction, function
        for d in s.decorator_list:
            deco = self.expr(d)
            if deco is not function and not isinstance(deco, TileFunction):
                raise self.error(TileSyntaxError, "Decorators on nested functions are not supported "
                                 "(other than @ct.function)", d)
        self.env[s.name] = self._local_function(s)
        self.last_assignment[s.name] = s

    def _local_function(self, node: ast.FunctionDef | ast.Lambda) -> LocalFunction:
        a = node.args
        defaults = [self.expr(d) for d in a.defaults]
        kw_defaults = [self.expr(d) if d is not None else MISSING for d in a.kw_defaults]
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

    def stmt_With(self, s: ast.With) -> None:
        """``with`` over ``@contextlib.contextmanager`` helpers: each generator runs up to its
        ``yield`` on entry and from there on exit (in reverse order, whatever the body did)."""
        entered = []
        for item in s.items:
            node = item.context_expr
            # the callee is checked before anything is called (`with open(...)` must not open a file)
            if isinstance(node, ast.Call) and context_manager_function(self.expr(node.func)) is None:
                raise self.error(TileUnsupportedFeatureError, "'with' statements in tile code take a "
                                 "@contextlib.contextmanager function call", node)
            cm = self.expr(node)
            if not isinstance(cm, ContextManagerCall):
                raise self.error(TileUnsupportedFeatureError, "'with' statements in tile code take a "
                                 f"@contextlib.contextmanager function call, got {what(cm)}", node)
            value, sub, after = self.enter_context(cm, item.context_expr)
            entered.append((sub, after, item.context_expr))
            if item.optional_vars is not None:
                self.assign(item.optional_vars, value)
        self.run_body(s.body)
        for sub, after, node in reversed(entered):
            self.exit_context(sub, after, node)
        if self._exit_guard() is False:
            raise StopBody

    def stmt_Return(self, s: ast.Return) -> None:
        if self.loop_depth:
            raise self.error(TileSyntaxError, "Returning from a loop is not supported in tile "
                             "code; set a variable and 'break', then return after the loop", s)
        value = self.expr(s.value) if s.value is not None else None
        if self.is_kernel and value is not None:
            raise self.error(TileTypeError, "Tile kernels cannot return values; store results to an array",
                             s.value)
        self.env[RETVAL] = value
        self.env[RET] = True
        raise StopBody

    def stmt_Break(self, s: ast.Break) -> None:
        if not (self.loop_depth or self.unrolled_depth):
            raise self.error(TileSyntaxError, "'break' outside a loop", s)
        self.env[BRK] = True
        raise StopBody

    def stmt_Continue(self, s: ast.Continue) -> None:
        if not (self.loop_depth or self.unrolled_depth):
            raise self.error(TileSyntaxError, "'continue' outside a loop", s)
        self.env[CONT] = True
        raise StopBody
