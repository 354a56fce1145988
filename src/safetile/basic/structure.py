"""The structure of a BASIC program: FOR/NEXT, WHILE/WEND and block IF/ELSEIF/ELSE/ENDIF
pair up lexically (in program order) into a tree; single-line IF bodies are sub-trees.
Unmatched parts are errors (``NEXT without FOR`` ...). Also the walkers over statements,
nodes and expressions that the later stages share.
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from . import ast as A


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
    if isinstance(e, (A.Index, A.Call, A.FnCall)):
        for a in e.args:
            yield from walk_exprs(a)
    elif isinstance(e, A.Unary):
        yield from walk_exprs(e.operand)
    elif isinstance(e, A.Binary):
        yield from walk_exprs(e.left)
        yield from walk_exprs(e.right)


def stmt_exprs(s: A.Stmt) -> list[A.Expr]:
    """The expressions a statement evaluates (not those of nested IF bodies or DEF FN)."""
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
    if isinstance(s, A.Swap):
        return [s.a, s.b]
    if isinstance(s, A.Randomize):
        return [s.seed] if s.seed is not None else []
    return []


class TreeBuilder:
    """Builds the structure tree, reporting pairing errors through ``error(message, pos, line)``."""

    def __init__(self, error: Callable[[str, A.Pos | None, int | None], None], show: Callable[[str], str]):
        self.error = error
        self.show = show  # canonical names as the program wrote them
        self.for_count = 0  # FOR and WHILE nodes get consecutive indices

    def build_tree(self, program: A.Program) -> list:
        items: list = []
        for ln in program.lines:
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
                var = f" {self.show(s.var)}" if s.var else ""
                if not stack or not isinstance(stack[-1][0], ForNode):
                    if not fors:
                        self.error(f"NEXT{var} without FOR", s.pos, s.line)
                    else:
                        open_ = stack[-1][0]
                        self.error(f"NEXT{var} closes FOR {self.show(fors[-1].stmt.var)} (line {fors[-1].stmt.line}) "
                                   f"but the {_open_name(open_)} opened in line {_open_line(open_)} is still open",
                                   s.pos, s.line)
                    continue
                node = stack[-1][0]
                inner = self.show(node.stmt.var)
                if s.var is not None and s.var != node.stmt.var:
                    if any(f.stmt.var == s.var for f in fors):
                        self.error(f"NEXT{var} comes before NEXT {inner}: FOR {inner} (line {node.stmt.line}) is "
                                   "the innermost open loop", s.pos, s.line)
                    else:
                        self.error(f"NEXT{var} without FOR{var} (the open loop is FOR {inner} in line "
                                   f"{node.stmt.line})", s.pos, s.line)
                    continue
                node.next = s
                stack.pop()
            elif isinstance(s, A.While):
                while_node = WhileNode(s, [], index=self.for_count)
                self.for_count += 1
                cur().append(while_node)
                stack.append((while_node, while_node.body))
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
                if_node = IfNode(s, [(s.cond, [], s)], None, single=False)
                cur().append(if_node)
                stack.append((if_node, if_node.arms[0][1]))
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
                if_node = stack[-1][0]
                if isinstance(s, A.EndIf):
                    if_node.end = s
                    stack.pop()
                elif if_node.orelse is not None:
                    self.error(f"{what} after ELSE in the IF of line {if_node.stmt.line}", s.pos, s.line)
                elif isinstance(s, A.ElseIf):
                    if_node.arms.append((s.cond, [], s))
                    stack[-1] = (if_node, if_node.arms[-1][1])
                else:
                    if_node.orelse = []
                    stack[-1] = (if_node, if_node.orelse)
            elif isinstance(s, A.If):
                then = self._build(s.then or [], top=False)
                orelse = self._build(s.orelse, top=False) if s.orelse is not None else None
                cur().append(IfNode(s, [(s.cond, then, s)], orelse, single=True))
            else:
                cur().append(SimpleNode(s))
        for node, _ in reversed(stack):
            s = node.stmt
            if isinstance(node, ForNode):
                what = f"FOR {self.show(s.var)} without NEXT"
            elif isinstance(node, WhileNode):
                what = "WHILE without WEND"
            else:
                what = "IF ... THEN without ENDIF"
            if not top:
                what += " in the same single-line IF"
            self.error(what, s.pos, s.line)
        return root


def _assigned_vars(s: A.Stmt) -> list[str]:
    if isinstance(s, A.Let) and isinstance(s.target, A.Var):
        return [s.target.name]
    if isinstance(s, A.For):
        return [s.var]
    if isinstance(s, A.Read):
        return [t.name for t in s.targets if isinstance(t, A.Var)]
    if isinstance(s, A.Swap):
        return [t.name for t in (s.a, s.b) if isinstance(t, A.Var)]
    return []


def assigned_in(seq: list) -> set[str]:
    """Variables that statements of a tree (recursively) may assign."""
    out: set[str] = set()
    for n in walk_nodes(seq):
        for s in node_stmts(n):
            out.update(_assigned_vars(s))
    return out


def _open_name(node) -> str:
    if isinstance(node, ForNode):
        return f"FOR {node.stmt.var.rstrip('!')}"
    if isinstance(node, WhileNode):
        return "WHILE"
    return "block IF"


def _open_line(node):
    return node.stmt.line
