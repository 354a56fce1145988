"""Structured control flow: ``if``/``for``/``while`` ops carrying BASIC variables, and the
FOR/NEXT, WHILE/WEND and IF constructs that need no jumps.

Loop-carried variables are the ones a body changes (a string is carried as its bytes and its
length); variables the body sets to the constant they already hold stay constants. A FOR
follows GW-BASIC: the limit and step are evaluated once, converted to the loop variable's
type; when the start is already past the limit the body is skipped and the variable still
takes one step; afterwards the variable holds the first value that failed the test. A FOR
with a constant whole step whose body leaves the variable alone becomes a counted ``for``
loop (the K loop of a GEMM carries only its accumulator).
"""
from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np

from ...ir.core import Block, Value
from ...ir.types import TileType
from ...ops import elementwise as ew
from ...ops.values import Tile, as_tile
from .. import ast as A
from ..structure import (
    ForNode,
    IfNode,
    LineMark,
    SimpleNode,
    WhileNode,
    assigned_in,
    node_stmts,
    stmt_exprs,
    walk_exprs,
    walk_nodes,
)
from ..vtypes import BOOL, INT, LONG
from .values import const, is_tile, same
from ...frontend.common import MixinBase


def _hint(name: str) -> str:
    return "".join(c if c.isalnum() else "_" for c in name.strip("$")) or "v"


class FlowMixin(MixinBase):
    env: dict[str, Any]  # the BASIC variables' current values (Lowerer sets them)
    line: int | None  # the BASIC line being lowered
    # ------------------------------------------------------------------ if and loops

    def emit_if(self, cond, then_fn: Callable, else_fn: Callable) -> None:
        if not is_tile(cond):
            (then_fn if cond else else_fn)()
            return
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
                 if not same(envs[0].get(n), before.get(n)) or not same(envs[1].get(n), before.get(n))]
        yields: tuple[list[Tile], list[Tile]] = ([], [])
        merged, rtypes, keep = {}, [], []
        for n in names:
            a, b = envs[0].get(n), envs[1].get(n)
            if a is None or b is None:
                continue
            if same(a, b):
                merged[n] = a
                continue
            t = self.types[n]
            for k, (v, block) in enumerate(zip((a, b), blocks)):
                with self.builder.inside(block):
                    yields[k].extend(self.split(v, t))
            rtypes.extend(self.carried_types(t))
            keep.append(n)
        for ys, block in zip(yields, blocks):
            with self.builder.inside(block):
                self.builder.emit("yield", [y.value for y in ys])
        op = self.builder.emit("if", [cond.value], {"result_types": tuple(rtypes)}, regions=blocks)
        self.env = dict(before)
        self.env.update(merged)
        results = [Tile(r) for r in op.results]
        for n in keep:
            t = self.types[n]
            k = len(self.carried_types(t))
            self.env[n] = self.join(t, results[:k])
            results = results[k:]

    def emit_loop(self, kind: str, assigned: set[str], optimistic: set[str], cond_fn: Callable | None,
                  body_fn: Callable, bounds: list[Tile] | None = None, iv_type: TileType | None = None,
                  ignore: tuple = ()) -> None:
        """A ``while`` (cond_fn, body_fn) or ``for`` (bounds, body_fn(iv)) op carrying the
        variables the body changes. Variables in ``optimistic`` holding constants are first
        assumed unchanged; the body is lowered again (carrying them) if that was wrong."""
        entry = dict(self.env)
        carried = [n for n in entry if n in assigned and not (n in optimistic and not self.is_dynamic(entry[n]))]
        for _ in range(len(entry) + 2):
            attempt = self._loop_attempt(kind, entry, carried, cond_fn, body_fn, iv_type)
            out_env = attempt[2]
            changed = [n for n in entry if n not in carried and n not in ignore and not same(out_env.get(n), entry[n])]
            if not changed:
                break
            carried = [n for n in entry if n in carried or n in changed]
        else:  # pragma: no cover - each round carries at least one more variable
            raise self.error("internal error: loop-carried variables do not settle")
        cond_block, body_block, _ = attempt
        self.env = dict(entry)
        init = [y.value for n in carried for y in self.split(entry[n], self.types[n])]
        rtypes = tuple(t for n in carried for t in self.carried_types(self.types[n]))
        if kind == "for":
            assert bounds is not None  # a FOR loop's start, stop and step
            op = self.builder.emit("for", [b.value for b in bounds] + init, {"result_types": rtypes},
                                   regions=[body_block])
        else:
            op = self.builder.emit("while", init, {"result_types": rtypes}, regions=[cond_block, body_block])
        self._bind(carried, [Tile(r) for r in op.results])

    @staticmethod
    def is_dynamic(v) -> bool:
        from .strings import StrVal
        return is_tile(v) or isinstance(v, StrVal) and v.data is None

    def _bind(self, names: list[str], tiles: list[Tile]) -> None:
        for n in names:
            t = self.types[n]
            k = len(self.carried_types(t))
            self.env[n] = self.join(t, tiles[:k])
            tiles = tiles[k:]

    def _block_args(self, names: list[str]) -> list[Value]:
        return [Value(ct, hint=_hint(n)) for n in names for ct in self.carried_types(self.types[n])]

    def _loop_attempt(self, kind, entry, carried, cond_fn, body_fn, iv_type):
        cond_block = None
        if kind == "while":
            cond_block = Block(self._block_args(carried))
            self.env = dict(entry)
            self._bind(carried, [Tile(a) for a in cond_block.args])
            with self.builder.inside(cond_block):
                c = cond_fn()
                if not is_tile(c):
                    c = as_tile(bool(c), BOOL)
                self.builder.emit("yield", [c.value])
        args = self._block_args(carried)
        iv = None
        if kind == "for":
            iv = Value(iv_type, hint="iv")
            args = [iv] + args
        body_block = Block(args)
        self.env = dict(entry)
        self._bind(carried, [Tile(a) for a in (args[1:] if kind == "for" else args)])
        with self.builder.inside(body_block):
            if kind == "for":
                assert iv is not None  # made above for a FOR loop
                body_fn(Tile(iv))
            else:
                body_fn()
            ys = [y for n in carried for y in self.split(self.env[n], self.types[n])]
            self.builder.emit("yield", [y.value for y in ys])
        return cond_block, body_block, self.env

    # ------------------------------------------------------------------ structured nodes

    def lower_seq(self, seq: list) -> None:
        for node in seq:
            self.lower_node(node)

    def lower_node(self, node) -> None:
        if isinstance(node, LineMark):
            self.line = node.number
        elif isinstance(node, SimpleNode):
            self.stmt(node.stmt)
        elif isinstance(node, IfNode):
            self.lower_if(node, 0)
        elif isinstance(node, ForNode):
            self.line = node.stmt.line
            if not self.deferred_error(node.stmt):
                self.at(node.stmt.pos, self.lower_for, node)
        elif isinstance(node, WhileNode):
            self.line = node.stmt.line
            if not self.deferred_error(node.stmt):
                self.at(node.stmt.pos, self.lower_while, node)

    def lower_if(self, node: IfNode, k: int) -> None:
        if k == len(node.arms):
            self.lower_seq(node.orelse or [])
            return
        cond, body, head = node.arms[k]
        self.line = head.line
        if self.deferred_error(head):
            return
        c = self.at(cond.pos, lambda: self.truth(self.ev(cond)))
        self.emit_if(c, lambda: self.lower_seq(body), lambda: self.lower_if(node, k + 1))

    def hidden_assigned(self, seq: list) -> set[str]:
        """Hidden state that statements of a tree may change (DATA pointer, RND state ...)."""
        out: set[str] = set()
        for n in walk_nodes(seq):
            for s in node_stmts(n):
                if isinstance(s, (A.Read, A.Restore)):
                    out.add("$dp")
                if isinstance(s, A.Randomize):
                    out.add("$rnd")
                if isinstance(s, A.Dim):
                    out |= {f"$dim:{d.name}" for d in s.decls}
                if isinstance(s, A.DefFn):
                    out.add(f"$fn:{s.name}")
                for e in stmt_exprs(s):
                    out |= self.expr_hidden(e)
        return out

    def expr_hidden(self, e: A.Expr, depth: int = 0) -> set[str]:
        """Hidden state an expression changes: the RND state, also through DEF FN bodies."""
        out: set[str] = set()
        for x in walk_exprs(e):
            if isinstance(x, A.Call) and x.name == "RND":
                out.add("$rnd")
            elif isinstance(x, A.FnCall) and x.name in self.an.fns and depth < 16:
                out |= self.expr_hidden(self.an.fns[x.name].expr, depth + 1)
        return out

    def optimistic(self, seq: list) -> set[str]:
        """Variables whose every assignment in ``seq`` is a literal (so may stay constant)."""
        lits: dict[str, bool] = {}
        for n in walk_nodes(seq):
            for s in node_stmts(n):
                if isinstance(s, A.Let) and isinstance(s.target, A.Var):
                    name = s.target.name
                    lits[name] = lits.get(name, True) and isinstance(s.expr, (A.Num, A.Str))
                elif isinstance(s, A.For):
                    lits[s.var] = False
                elif isinstance(s, (A.Read, A.Swap)):
                    for t in ([s.a, s.b] if isinstance(s, A.Swap) else s.targets):
                        if isinstance(t, A.Var):
                            lits[t.name] = False
        return {n for n, ok in lits.items() if ok}

    def loop_changes(self, body: list) -> set[str]:
        assigned = assigned_in(body)
        return assigned | self.hidden_assigned(body) | {f"$set:{n}" for n in assigned & self.an.swap_checked}

    # ------------------------------------------------------------------ FOR / WHILE

    def for_parts(self, s: A.For):
        """(start, limit, step) of a FOR, converted to the loop variable's type."""
        vt = self.types[s.var]
        start = self.to_type(self.ev(s.start), vt)
        lim = self.to_type(self.ev(s.stop), vt)
        step = self.to_type(self.ev(s.step), vt) if s.step is not None else const(1, vt.dtype)
        return vt, start, lim, step

    def for_test(self, v, lim, step):
        """Whether the loop runs on: v <= lim (step >= 0) or v >= lim (step < 0)."""
        if not is_tile(step):
            if float(step) >= 0:
                return ew.less_equal(v, lim) if is_tile(v) or is_tile(lim) else bool(v <= lim)
            return ew.greater_equal(v, lim) if is_tile(v) or is_tile(lim) else bool(v >= lim)
        up = ew.bitwise_and(ew.greater_equal(step, 0), ew.less_equal(v, lim))
        down = ew.bitwise_and(ew.less(step, 0), ew.greater_equal(v, lim))
        return ew.bitwise_or(up, down)

    def for_step(self, var: str, step) -> None:
        cur = self.env[var]
        self.env[var] = self.to_type(self.arith("+", cur, step), self.types[var])

    def lower_for(self, node: ForNode) -> None:
        s = node.stmt
        var = s.var
        vt, start, lim, step = self.for_parts(s)
        assigned = self.loop_changes(node.body)
        optimistic = self.optimistic(node.body)
        def small(c: Any) -> bool:
            return math.isfinite(float(c)) and float(c).is_integer() and abs(float(c)) < 2 ** 14

        whole_start = (not is_tile(start) and small(start)) or (is_tile(start) and start.dtype.is_int)
        if var not in assigned and not is_tile(step) and float(step) != 0 and small(step) and whole_start:
            self._counted_for(node, var, vt, start, lim, int(step), assigned, optimistic)
            return
        self.env[var] = start
        self.mark_set(var)
        empty = self.negate(self.for_test(start, lim, step))
        lim_v, step_v = lim, step

        def body():
            self.lower_seq(node.body)
            self.line = node.next.line if node.next else self.line
            self.for_step(var, step_v)

        self.emit_loop("while", assigned | {var}, optimistic, lambda: self.for_test(self.env[var], lim_v, step_v), body)
        self.line = s.line
        self.skip_step(var, empty, step)

    def skip_step(self, var: str, empty, step) -> None:
        """A FOR whose body did not run still steps its variable once (GW-BASIC)."""
        if empty is False:
            return
        stepped = self.to_type(self.arith("+", self.env[var], step), self.types[var])
        if empty is True:
            self.env[var] = stepped
        else:
            self.env[var] = ew.where(empty, self.materialize(stepped, self.types[var]),
                                     self.materialize(self.env[var], self.types[var]))

    @staticmethod
    def negate(c):
        return ew.bitwise_not(c) if is_tile(c) else not c

    def _counted_for(self, node: ForNode, var: str, vt, start, lim, step: int, assigned, optimistic):
        """FOR with a whole constant step: a ``for`` op over an int32 counter."""
        start_i = self.convert(start, LONG) if is_tile(start) else np.int32(int(start))
        if is_tile(lim):
            lim_f = ew.floor(lim) if step > 0 else ew.ceil(lim)
            lim_i = ew.astype(ew.minimum(ew.maximum(lim_f, -2.0 ** 30), 2.0 ** 30), LONG) if lim_f.dtype.is_float \
                else ew.minimum(self.convert(lim_f, LONG), 2 ** 30)
        else:
            f = float(lim)
            f = 0.0 if math.isnan(f) else max(-2.0 ** 30, min(2.0 ** 30, f))
            lim_i = np.int32(math.floor(f) if step > 0 else math.ceil(f))
        if is_tile(lim_i) or is_tile(start_i):
            span = ew.sub(lim_i, start_i) if step > 0 else ew.sub(start_i, lim_i)
            trips = ew.maximum(ew.add(ew.floordiv(span, abs(step)), 1), 0)
        else:
            span = int(lim_i) - int(start_i) if step > 0 else int(start_i) - int(lim_i)
            trips = np.int32(max(span // abs(step) + 1, 0))
        bounds = [as_tile(np.int32(0), LONG), trips if is_tile(trips) else as_tile(trips, LONG),
                  as_tile(np.int32(1), LONG)]

        self.mark_set(var)

        def body(iv: Tile):
            v = iv if step == 1 and not is_tile(start_i) and int(start_i) == 0 else ew.add(start_i, ew.mul(iv, step))
            self.env[var] = self.to_type(v, vt)
            self.lower_seq(node.body)

        self.emit_loop("for", assigned - {var}, optimistic - {var}, None, body, bounds=bounds,
                       iv_type=TileType(LONG, ()), ignore=(var,))
        self.line = node.next.line if node.next else node.stmt.line
        # afterwards: the first value that failed the test (one step past the start when none ran)
        steps = ew.maximum(trips, 1) if is_tile(trips) else np.int32(max(int(trips), 1))
        final = ew.add(start_i, ew.mul(steps, step)) if is_tile(steps) or is_tile(start_i) else \
            np.int32(int(start_i) + int(steps) * step)
        self.env[var] = self.to_type(final if vt.dtype is not INT else self.convert(final, LONG), vt)

    def lower_while(self, node: WhileNode) -> None:
        assigned = self.loop_changes(node.body)
        cond_expr = node.stmt.cond

        def cond():
            self.line = node.stmt.line
            return self.at(cond_expr.pos, lambda: self.truth(self.ev(cond_expr)))

        self.emit_loop("while", assigned, self.optimistic(node.body), cond, lambda: self.lower_seq(node.body))

