"""GOTO, GOSUB and friends: the program as a state machine.

Parts of a program that jump (GOTO, GOSUB, RETURN, ON ... GOTO, END/STOP inside loops, or
lines that are jumped to) are split into basic blocks and run by a state machine: ``while
pc >= 0`` around a binary tree of ``if`` ops on the program counter ``pc``. A block with a
single predecessor is inlined into it, so only jump targets with several predecessors (loop
heads, join points, GOSUB return points) are states. GOSUB pushes the return state on a
32-entry stack held in an int32 tile; RETURN pops it into ``pc``; deeper nesting stops with
*Out of memory*, a RETURN without GOSUB with *RETURN without GOSUB*. END and STOP set ``pc``
to -1 (STOP shows *Break in <line>*).
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ...ir.types import TileType
from ...ops import elementwise as ew
from ...ops import factories as fac
from ...ops import reduction as red
from .. import ast as A
from ..structure import (
    ForNode,
    IfNode,
    LineMark,
    SimpleNode,
    WhileNode,
    node_stmts,
    walk_nodes,
)
from ..vtypes import BOOL, LONG
from .values import is_tile
from ...frontend.common import MixinBase

STACK_DEPTH = 32
MAX_INLINE_DEPTH = 32
_CONTROL = (A.Goto, A.Gosub, A.Return, A.OnGoto, A.End)
STACK = TileType(LONG, (STACK_DEPTH,))


@dataclass
class CfgBlock:
    id: int
    stmts: list = field(default_factory=list)  # callables lowering straight-line code
    term: tuple = ("halt",)
    preds: int = 0
    dynamic: bool = False
    reachable: bool = False
    state: int | None = None



class MachineMixin(MixinBase):
    def init_machine(self) -> None:
        self.machine = False
        self.states: list[CfgBlock] = []
        self.flat_fors: list[ForNode] = []
        self.labels: dict = {}
        self.cfg: list[CfgBlock] = []


    def clean(self, node) -> bool:
        """Whether a construct can be lowered as structured control flow."""
        if not isinstance(node, (IfNode, ForNode, WhileNode)):
            return True
        for n in walk_nodes([node]):
            if isinstance(n, LineMark) and n.number in self.an.jump_targets:
                return False
            for s in node_stmts(n):
                if isinstance(s, _CONTROL):
                    return False
        return True

    def linearize(self, seq: list, out: list) -> None:
        for node in seq:
            if isinstance(node, LineMark):
                out.append(("label", ("line", node.number)))
                out.append(("stmt", lambda n=node.number: setattr(self, "line", n)))
                continue
            if isinstance(node, SimpleNode) and isinstance(node.stmt, _CONTROL):
                self.linearize_control(node.stmt, out)
                continue
            if self.clean(node):
                out.append(("stmt", lambda node=node: self.lower_node(node)))
                continue
            if isinstance(node, IfNode):
                end = object()
                for cond, body, head in node.arms:
                    t, f = object(), object()
                    out.append(("branch", head, cond, t, f))
                    out.append(("label", t))
                    self.linearize(body, out)
                    out.append(("goto", end))
                    out.append(("label", f))
                if node.orelse is not None:
                    self.linearize(node.orelse, out)
                out.append(("label", end))
            elif isinstance(node, ForNode):
                test, body, after = object(), object(), object()
                state = {k: f"$for{node.index}{k}" for k in ("lim", "step", "on", "fresh")}
                self.flat_fors.append(node)
                out.append(("stmt", lambda node=node, state=state: self.at(node.stmt.pos, self.for_init, node, state)))
                out.append(("label", test))
                out.append(("forbranch", node, state, body, after))
                out.append(("label", body))
                self.linearize(node.body, out)
                nxt = node.next
                out.append(("stmt", lambda node=node, state=state, nxt=nxt:
                            self.at(nxt.pos, self.for_next, node, state, nxt)))
                out.append(("goto", test))
                out.append(("label", after))
            elif isinstance(node, WhileNode):
                test, body, after = object(), object(), object()
                out.append(("label", test))
                out.append(("branch", node.stmt, node.stmt.cond, body, after))
                out.append(("label", body))
                self.linearize(node.body, out)
                out.append(("goto", test))
                out.append(("label", after))

    def linearize_control(self, s: A.Stmt, out: list) -> None:
        if id(s) in self.an.deferred:  # e.g. GOTO to a line that does not exist: stops there
            out.append(("stmt", lambda s=s: self.stmt(s)))
            out.append(("halt", None))
            return
        if isinstance(s, A.Goto):
            out.append(("goto", ("line", s.target)))
        elif isinstance(s, A.Gosub):
            ret = object()
            out.append(("gosub", s, ("line", s.target), ret))
            out.append(("label", ret))
        elif isinstance(s, A.Return):
            out.append(("return", s))
        elif isinstance(s, A.OnGoto):
            fall = object()
            out.append(("on", s, [("line", t) for t, _ in s.targets], fall))
            out.append(("label", fall))
        elif isinstance(s, A.End):
            out.append(("halt", s))

    def for_init(self, node: ForNode, state: dict) -> None:
        s = node.stmt
        self.line = s.line
        if self.deferred_error(s):
            return
        vt, start, lim, step = self.for_parts(s)
        self.env[s.var] = start
        self.mark_set(s.var)
        self.env[state["lim"]] = lim
        self.env[state["step"]] = step
        self.env[state["on"]] = True
        self.env[state["fresh"]] = True

    def for_cond(self, node: ForNode, state: dict):
        return self.for_test(self.env[node.stmt.var], self.env[state["lim"]], self.env[state["step"]])

    def for_next(self, node: ForNode, state: dict, nxt) -> None:
        self.line = nxt.line if nxt is not None else self.line
        self.runtime_error(self.env[state["on"]], "NEXT without FOR")
        self.for_step(node.stmt.var, self.env[state["step"]])
        self.env[state["fresh"]] = False

    def for_exit(self, node: ForNode, state: dict) -> None:
        """Leaving a FOR by its test: a loop whose body never ran still steps its variable."""
        self.skip_step(node.stmt.var, self.env[state["fresh"]], self.env[state["step"]])
        self.env[state["fresh"]] = False

    def build_cfg(self, instrs: list) -> CfgBlock:
        blocks: list[CfgBlock] = [CfgBlock(0)]
        cur = blocks[0]
        open_, fresh = True, True  # cur has no terminator / no statements yet
        for ins in instrs:
            kind = ins[0]
            if kind == "label":
                if open_ and fresh:
                    self.labels[ins[1]] = cur
                    continue
                new = CfgBlock(len(blocks))
                blocks.append(new)
                if open_:
                    cur.term = ("goto", ins[1])
                cur = new
                self.labels[ins[1]] = cur
                open_, fresh = True, True
                continue
            if not open_:  # code after a jump that no label leads to: unreachable
                cur = CfgBlock(len(blocks))
                blocks.append(cur)
                open_, fresh = True, True
            if kind == "stmt":
                cur.stmts.append(ins[1])
                fresh = False
            else:
                cur.term = ins
                open_ = False
        if open_:
            cur.term = ("halt", None)
        self.cfg = blocks
        return blocks[0]

    def successors(self, b: CfgBlock) -> list:
        t = b.term
        kind = t[0]
        if kind == "goto":
            return [t[1]]
        if kind == "branch":
            return [t[3], t[4]]
        if kind == "forbranch":
            return [t[3], t[4]]
        if kind == "gosub":
            return [t[2], t[3]]
        if kind == "on":
            return list(t[2]) + [t[3]]
        return []

    def analyse_cfg(self, entry: CfgBlock) -> None:
        entry.dynamic = True
        stack = [entry]
        entry.reachable = True
        while stack:
            b = stack.pop()
            for lab in self.successors(b):
                s = self.labels[lab]
                if not s.reachable:
                    s.reachable = True
                    stack.append(s)
        for b in self.cfg:
            if not b.reachable:
                continue
            t = b.term
            for lab in self.successors(b):
                self.labels[lab].preds += 1
            if t[0] == "gosub":
                self.labels[t[3]].dynamic = True
            if t[0] == "on" and t[1].gosub:
                self.labels[t[3]].dynamic = True
        for b in self.cfg:
            if b.reachable and (b.dynamic or b.preds != 1):
                b.state = -1
        # Inlined blocks nest inside the branches that reach them; bound that nesting.
        nesting = [(b, 0) for b in self.cfg if b.state is not None]
        while nesting:
            b, depth = nesting.pop()
            inc = 0 if b.term[0] == "goto" else 1
            for lab in self.successors(b):
                s = self.labels[lab]
                if s.state is not None:
                    continue
                if depth + inc > MAX_INLINE_DEPTH:
                    s.state = -1
                    nesting.append((s, 0))
                else:
                    nesting.append((s, depth + inc))
        self.states = [b for b in self.cfg if b.state is not None]
        for k, b in enumerate(self.states):
            b.state = k
        # A loop is needed unless the entry is the only state and nothing jumps back to it.
        self.machine = len(self.states) > 1 or entry.preds > 0 or any(
            b.reachable and b.term[0] == "return" for b in self.cfg)

    def jump(self, lab) -> None:
        b = self.labels[lab]
        if b.state is None:
            self.run_block(b)
        else:
            self.set_pc(b.state)

    def set_pc(self, k: int) -> None:
        if self.machine:
            self.env["$pc"] = np.int32(k)

    def run_block(self, b: CfgBlock) -> None:
        while True:
            for fn in b.stmts:
                fn()
            t = b.term
            if t[0] != "goto":
                break
            nb = self.labels[t[1]]
            if nb.state is not None:
                self.set_pc(nb.state)
                return
            b = nb
        kind = t[0]
        if kind == "halt":
            if t[1] is not None:
                self.line = t[1].line
                if t[1].kind == "STOP":
                    self.stop_message()
            self.set_pc(-1)
        elif kind == "branch":
            head, cond = t[1], t[2]
            self.line = head.line
            c = self.at(cond.pos, lambda: self.truth(self.ev(cond)))
            self.emit_if(c, lambda: self.jump(t[3]), lambda: self.jump(t[4]))
        elif kind == "forbranch":
            node, state = t[1], t[2]
            self.line = node.stmt.line
            c = self.at(node.stmt.pos, self.for_cond, node, state)

            def leave():
                self.at(node.stmt.pos, self.for_exit, node, state)
                self.jump(t[4])
            self.emit_if(c, lambda: self.jump(t[3]), leave)
        elif kind == "gosub":
            s = t[1]
            self.line = s.line
            self.at(s.pos, self.push, self.labels[t[3]].state, s)
            self.jump(t[2])
        elif kind == "return":
            s = t[1]
            self.line = s.line
            self.at(s.pos, self.pop, s)
        elif kind == "on":
            s, targets, fall = t[1], t[2], t[3]
            self.line = s.line
            k = self.at(s.expr.pos, lambda: self.on_index(self.ev(s.expr)))

            def choose(i: int) -> None:
                if i == len(targets):
                    self.jump(fall)
                    return
                c = ew.equal(k, i + 1) if is_tile(k) else bool(int(k) == i + 1)

                def go():
                    if s.gosub:
                        self.at(s.pos, self.push, self.labels[fall].state, s)
                    self.jump(targets[i])
                self.emit_if(c, go, lambda: choose(i + 1))
            choose(0)

    def on_index(self, v):
        """ON n GOTO/GOSUB: n rounded; outside 0..255 is *Illegal function call*."""
        from ..vtypes import INT
        n = self.round_int(v, INT)
        if is_tile(n):
            self.runtime_error(ew.bitwise_and(ew.greater_equal(n, 0), ew.less_equal(n, 255)), "Illegal function call")
        elif not 0 <= int(n) <= 255:
            self.runtime_error(False, "Illegal function call")
        return n

    def push(self, ret_state: int, s: A.Stmt) -> None:
        sp = self.env["$sp"]
        self.runtime_error(ew.less(sp, STACK_DEPTH) if is_tile(sp) else bool(int(sp) < STACK_DEPTH), "Out of memory")
        stk = self.materialize(self.env["$stk"], STACK)
        lanes = fac.arange(STACK_DEPTH, dtype=LONG)
        self.env["$stk"] = ew.where(ew.equal(lanes, sp), ret_state, stk)
        self.env["$sp"] = ew.add(sp, 1) if is_tile(sp) else np.int32(int(sp) + 1)

    def pop(self, s: A.Stmt) -> None:
        sp = self.env["$sp"]
        self.runtime_error(ew.greater(sp, 0) if is_tile(sp) else bool(int(sp) > 0), "RETURN without GOSUB")
        sp = ew.sub(sp, 1) if is_tile(sp) else np.int32(int(sp) - 1)
        stk = self.materialize(self.env["$stk"], STACK)
        lanes = fac.arange(STACK_DEPTH, dtype=LONG)
        self.env["$pc"] = red.sum(ew.where(ew.equal(lanes, sp), stk, 0))
        self.env["$sp"] = sp

    def dispatch(self, lo: int, hi: int) -> None:
        if hi - lo == 1:
            self.run_block(self.states[lo])
            return
        mid = (lo + hi) // 2
        pc = self.env["$pc"]
        c = ew.less(pc, mid) if is_tile(pc) else bool(int(pc) < mid)
        self.emit_if(c, lambda: self.dispatch(lo, mid), lambda: self.dispatch(mid, hi))

    def lower_program(self) -> None:
        instrs: list = []
        self.linearize(self.an.tree, instrs)
        entry = self.build_cfg(instrs)
        self.analyse_cfg(entry)
        for node in self.flat_fors:
            vt = self.types[node.stmt.var]
            for key in ("lim", "step"):
                name = f"$for{node.index}{key}"
                self.types[name] = vt
                self.env[name] = self.zero(vt)
            for key in ("on", "fresh"):
                self.types[f"$for{node.index}{key}"] = TileType(BOOL, ())
                self.env[f"$for{node.index}{key}"] = False
        if not self.machine:
            self.run_block(entry)
            return
        self.env["$pc"] = np.int32(0)
        names = self.loop_changes(self.an.tree) | {n for n in self.env if n.startswith("$")}
        optimistic = self.optimistic(self.an.tree)
        self.emit_loop("while", names, optimistic,
                       lambda: ew.greater_equal(self.env["$pc"], 0) if is_tile(self.env["$pc"])
                       else bool(int(self.env["$pc"]) >= 0),
                       lambda: self.dispatch(0, len(self.states)))


