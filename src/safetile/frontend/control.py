"""Control flow in the front end: ``if`` merging, run-time loops with inferred carried
types, and unrolled compile-time loops.

``break``, ``continue`` and ``return`` are boolean flags in the environment; after a
statement that may have set one, the rest of the statement list is guarded by an ``if``
on "no flag set", so the IR only has structured ``if``/``for``/``while`` ops.
"""
from __future__ import annotations

import ast
import builtins
from dataclasses import dataclass
from typing import Any
from collections.abc import Callable

import numpy as np

from .. import dtypes as dt
from ..errors import TileStaticEvalError, TileSyntaxError, TileTypeError, TileUnsupportedFeatureError, describe
from ..ir.core import Block, Value
from ..ir.types import TileType
from ..ops import elementwise as ew
from ..ops.values import Tile, as_tile, is_const
from . import budget
from .dataclass_values import DataclassValue
from .common import (MixinBase, BRK, CONT, FLAGS, IV, MISSING, RETVAL, RET, SCOPES, Undefined, StopBody, assigned_names,
                     carriable, contains, flatten, is_value, rebuild, same_static, same_structure, user_boundary, what)


STATIC_ITER_LIMIT = 1000  # items of one ct.static_iter (as in cuTile Python)


class ControlFlow(MixinBase):
    """``if``/``for``/``while`` statements of ``FunctionCompiler`` (a mixin)."""

    env: dict[str, Any]  # the variables in scope (FunctionCompiler sets them)

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
            a, b = env_a.get(name, MISSING), env_b.get(name, MISSING)
            if name in FLAGS:
                a, b = (False if a is MISSING else a), (False if b is MISSING else b)
            if a is b:
                if a is not MISSING:
                    self.env[name] = a
                continue
            a_missing = a is MISSING or isinstance(a, Undefined)
            b_missing = b is MISSING or isinstance(b, Undefined)
            if a_missing and b_missing:
                self.env[name] = a if a is not MISSING else b
                continue
            if a_missing or b_missing:
                missing_exited = exited[0] if a_missing else exited[1]
                if not (missing_exited or name == RETVAL):
                    which = "else" if a_missing else "if"
                    self.env[name] = Undefined(
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
        """A template for the merged value: leaves are kept values or ``Slot`` result indices."""
        if same_static(a, b):
            return a
        if isinstance(a, bool) and isinstance(b, bool):  # True/False per branch: the condition itself
            return cond if a else self._not(cond)
        if isinstance(a, DataclassValue) or isinstance(b, DataclassValue):
            if not same_structure(a, b):
                raise TileTypeError(f"{what(a)} on one path, {what(b)} on the other")
            return a.with_leaves(self._merge(a.leaves(), b.leaves(), pairs, cond))
        if isinstance(a, tuple) or isinstance(b, tuple):
            if not same_structure(a, b) or not (isinstance(a, tuple) and isinstance(b, tuple)):
                raise TileTypeError(f"{what(a)} on one path, {what(b)} on the other")
            return tuple(self._merge(x, y, pairs, cond) for x, y in zip(a, b))
        if not (is_value(a) and is_value(b)):
            raise TileTypeError(f"{what(a)} on one path, {what(b)} on the other (only "
                                "tiles and numbers can differ between run-time branches)")
        target = self._join(a, b)
        pairs.append((a, b, target))
        return Slot(len(pairs) - 1)

    def _join(self, a: Any, b: Any) -> TileType:
        """The tile type that holds a value of either branch."""
        ta = a.type if isinstance(a, Tile) else None
        tb = b.type if isinstance(b, Tile) else None
        if ta is None and tb is None:
            return TileType(dt.promote(dt.scalar_dtype(a), dt.scalar_dtype(b)), ())
        if ta is None:
            assert tb is not None  # both None is the case above
            return TileType(dt.promote_with_scalar(tb.dtype, a), tb.shape)
        if tb is None:
            return TileType(dt.promote_with_scalar(ta.dtype, b), ta.shape)
        if ta.shape != tb.shape:
            raise TileTypeError(f"{ta} on one path, {tb} on the other (shapes differ)")
        return TileType(dt.promote(ta.dtype, tb.dtype), ta.shape)

    def _fill(self, template: Any, results: list[Tile]) -> Any:
        if isinstance(template, Slot):
            return results[template.index]
        if isinstance(template, tuple):
            return tuple(self._fill(t, results) for t in template)
        if isinstance(template, DataclassValue):
            return template.with_leaves(self._fill(template.leaves(), results))
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
        if isinstance(v, DataclassValue):
            return v.with_leaves(self._placeholder(v.leaves()))
        if isinstance(v, Tile):
            return self._coerce(0, v.type)
        return v

    # ------------------------------------------------------------------ loops

    def stmt_For(self, s: ast.For) -> None:
        if s.orelse:
            raise self.error(TileSyntaxError, "'for-else' is not supported", s.orelse[0])
        it = s.iter
        if isinstance(it, ast.Call) and not it.keywords and len(it.args) >= 1:
            from ..ops.meta import static_iter
            fn = self.expr(it.func)
            if fn is static_iter:
                if len(it.args) != 1:
                    raise self.error(TileTypeError, "ct.static_iter() takes exactly one iterable", it)
                for kind, word in ((ast.Continue, "Continue"), (ast.Break, "Break")):
                    node = _first(s.body, kind)
                    if node is not None:
                        raise self.error(TileSyntaxError, f"{word} in a for loop with static_iter() is not supported",
                                         node)
                return self._unroll(s, self._static_iterable(it.args[0]))
            if fn is builtins.range:
                return self._range_loop(s, it)
        iterable = self.expr(it)
        if hasattr(type(iterable), "__tile_range__"):  # range-like loop protocol (safe/device.py iter_indices)
            start, stop, step, bind = iterable.__tile_range__()
            if not isinstance(s.target, ast.Name) or contains(s.body, (ast.Break,), into_loops=False):
                raise self.error(TileUnsupportedFeatureError, "this loop takes a single loop variable and no "
                                 "'break'", s)
            name, bounds = s.target.id, [self._coerce(a, TileType(dt.int32, ())) for a in (start, stop, step)]

            def body():
                self.env[name] = bind(self.env[name])
                self.run_body(s.body)
            self._loop(s, "for", None, body, bounds=bounds, target=name)
            self.env[name] = Undefined(f"is the variable of the loop at line {self.loc(s).line} and cannot be "
                                        "used after the loop")
            return
        if isinstance(iterable, (tuple, range)):
            return self._unroll(s, iterable)
        if isinstance(iterable, Tile):
            raise self.error(TileUnsupportedFeatureError, f"cannot iterate over a {iterable.type}: tile code "
                             "loops over range(...), ct.static_iter(...) or a tuple", it)
        raise self.error(TileUnsupportedFeatureError, "tile code loops over range(...), ct.static_iter(...) "
                         f"or a tuple of compile-time values, not {what(iterable)}", it)

    @user_boundary
    def _static_iterable(self, node: ast.expr) -> tuple:
        """The items of ``ct.static_iter(node)``: at most ``STATIC_ITER_LIMIT`` of them (an endless
        iterable is an error, not an endless compilation)."""
        value = self._static_eval_node(node)
        try:
            it = iter(value)
        except TypeError:
            raise self.error(TileStaticEvalError, f"ct.static_iter needs an iterable, got {what(value)}",
                             node) from None
        items: list[Any] = []
        for i in range(STATIC_ITER_LIMIT + 1):
            try:
                item = next(it)
            except StopIteration:
                return tuple(items)
            except Exception as e:  # noqa: BLE001 - the user's iterator failed
                raise self.error(TileTypeError, f"Error was raised while obtaining item #{i} from the static_iter() "
                                 f"iterable: {describe(e)}", node) from None
            items.append(item)
        raise self.error(TileStaticEvalError, f"Maximum number of iterations ({STATIC_ITER_LIMIT}) has been reached "
                         "while unpacking the static_iter() iterable", node)

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
            raise StopBody

    def _unroll_from(self, s: ast.For, values: tuple, start: int) -> None:
        for k in range(start, len(values)):
            budget.check(self.builder.deadline, self.loc(s))
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
            self._emit_if(guard, lambda k=k: self._resume_unroll(s, values, k + 1), self._exited_branch, s)
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
                                 f"{what(a)}", a_node)
        if is_const(step) and step <= 0:
            raise self.error(TileTypeError, f"Step must be positive, got {step}",
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
        if contains(s.body, (ast.Break,), into_loops=False):
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
        self.env[target] = Undefined(f"is the variable of the range loop at line {self.loc(s).line} and "
                                      "cannot be used after the loop; copy it to another variable inside the loop")

    def stmt_While(self, s: ast.While) -> None:
        if s.orelse:
            raise self.error(TileSyntaxError, "'while-else' is not supported", s.orelse[0])
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
        has_brk = contains(s.body, (ast.Break,), into_loops=False)
        if has_brk:
            self.env[BRK] = False
        assigned = assigned_names(s.body) | set(extra_carried) | ({BRK} if has_brk else set())
        outer = dict(self.env)
        names = [n for n in outer if n in assigned and n != target and not isinstance(outer[n], Undefined)]
        init = {n: outer[n] for n in names}
        static = {n for n in names if not carriable(init[n])}
        unstable: dict[str, str] = {}  # static names the body changes → reason they cannot be used
        # per carried name and leaf: None = still the constant it started as, else the carried type
        leaf_types: dict[str, list[TileType | None]] = {
            n: [x.type if isinstance(x, Tile) else None for x in flatten(init[n])] for n in names if n not in static}
        weak = {n: [not isinstance(x, Tile) for x in flatten(init[n])] for n in leaf_types}
        for _round in range(8):
            body_block, cond_block, out_env = self._loop_round(kind, cond_fn, body_fn, outer, init, leaf_types,
                                                               unstable, bounds, target)
            changed = False
            for n in names:
                out = out_env.get(n, MISSING)
                if n in static:
                    if n not in unstable and not (out is init[n] or same_static(out, init[n])):
                        unstable[n] = (f"changes in the loop at line {self.loc(s).line} from "
                                       f"{what(init[n])} to {what(out)}; only tiles and numbers can "
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
                         for x, t in zip(flatten(init[n]), leaf_types[n]) if t is not None]
        result_types = tuple(t for n in leaf_types for t in leaf_types[n] if t is not None)
        if kind == "for":
            assert bounds is not None  # a for loop's start, stop and step
            op = self.builder.emit("for", [b.value for b in bounds] + init_operands,
                                   {"result_types": result_types}, regions=[body_block])
        else:
            op = self.builder.emit("while", init_operands, {"result_types": result_types},
                                   regions=[cond_block, body_block])
        results = iter(Tile(v) for v in op.results)
        for n, types_ in leaf_types.items():
            leaves = [next(results) if t is not None else x for x, t in zip(flatten(init[n]), types_)]
            self.env[n] = rebuild(init[n], leaves)
        for n, reason in unstable.items():
            self.env[n] = Undefined(reason)
        line = self.loc(s).line
        for n in assigned_names(s.body) - set(names) - {target}:
            self.env[n] = Undefined(f"is assigned only inside the loop at line {line}; assign it before the "
                                     "loop to use it after the loop")
        for f in (BRK, CONT):
            self.env.pop(f, None)
        self.env.update(saved_flags)

    def _loop_round(self, kind, cond_fn, body_fn, outer, init, leaf_types, unstable, bounds, target):
        """Compile the loop's regions once with the given carried types."""
        def bind(block: Block) -> None:
            for n, types_ in leaf_types.items():
                leaves = []
                for x, t in zip(flatten(init[n]), types_):
                    if t is None:
                        leaves.append(x)
                    else:
                        arg = Value(t, hint=n.lstrip("$"))
                        block.args.append(arg)
                        leaves.append(Tile(arg))
                self.env[n] = rebuild(init[n], leaves)
            for n, reason in unstable.items():
                self.env[n] = Undefined(reason)

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
                    out = out_env.get(n, MISSING)
                    if not (carriable(out) and same_structure(out, init[n])):
                        continue  # _carried_types reports the problem
                    ys += [self._coerce(x, t).value for x, t in zip(flatten(out), types_)
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
        if x.dtype is not t.dtype and dt.promote(x.dtype, t.dtype) is not t.dtype:
            return False
        try:
            return dt.broadcast_shapes(x.shape, t.shape) == t.shape
        except ValueError:
            return False

    def _carried_types(self, name: str, init: Any, out: Any, types_: list, weak: list, s) -> list:
        """The carried leaf types after one more round (raises when a variable changes type)."""
        where = self.last_assignment.get(name, s) if name[0] != "$" else s
        label = f"loop-carried variable {name!r}"
        if out is MISSING or isinstance(out, Undefined):
            raise self.error(TileTypeError, f"{label} is not defined at the end of the loop body", where)
        if not carriable(out) or not same_structure(init, out):
            raise self.error(TileTypeError, f"{label} changes from {what(init)} to {what(out)} in the "
                             "loop body; it must keep its type from one iteration to the next", where)
        new: list[TileType | None] = []
        for x0, x, t, is_weak in zip(flatten(init), flatten(out), types_, weak):
            if t is None:  # still the constant it started as
                if is_const(x) and same_static(x, x0):
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
                got = what(x)
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


@dataclass(frozen=True)
class Slot:
    """A leaf of a merged-value template: the index of an ``if`` result."""

    index: int


def _first(stmts: list, kind: type):
    """The first ``kind`` node in ``stmts`` that belongs to this loop (not to a nested loop or scope)."""
    def visit(node):
        if isinstance(node, kind):
            return node
        if isinstance(node, SCOPES + (ast.For, ast.While, ast.AsyncFor)):
            return None
        for c in ast.iter_child_nodes(node):
            found = visit(c)
            if found is not None:
                return found
        return None
    for st in stmts:
        found = visit(st)
        if found is not None:
            return found
    return None
