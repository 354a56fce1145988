"""Declared launch preconditions of entry kernels, checked before anything runs.

``@ct.entry(preconditions=["dim(a, 1) % 64 == 0", "dim(a, 1) == dim(b, 0)"])`` — each
string is a small expression over the parameters: ``dim(t, axis)``, ``rank(t)``,
``numel(t)``, scalar and constant parameters, generic names, integer arithmetic,
comparisons and ``and``/``or``/``not``. A callable form receives the arguments it names
(tensor-like arguments as read-only ``ArgInfo``: ``shape``, ``ndim``, ``dtype``)::

    @ct.entry(preconditions=[lambda a, b: a.shape[1] == b.shape[0]])
"""
from __future__ import annotations

import ast
import functools
import inspect
import operator
from dataclasses import dataclass
from typing import Any
from collections.abc import Callable

import numpy as np

from ..errors import TileDeclarationError, describe
from ..frontend.common import fold_too_big
from ..runtime.interrupts import interruptible
from .errors import PreconditionError


@dataclass(frozen=True)
class ArgInfo:
    """What a precondition sees of a tensor-like argument (never its data)."""

    name: str
    shape: tuple[int, ...]
    dtype: Any

    @property
    def ndim(self) -> int:
        return len(self.shape)


MAX_BITS = 4096  # integers in precondition strings stay below 2**MAX_BITS: evaluation is quick


def _bounded(symbol: str, fn: Callable[[Any, Any], Any], a: Any, b: Any) -> Any:
    """``fn(a, b)``, refused when its integer result would pass ``MAX_BITS`` bits."""
    too_big = fold_too_big(symbol, a, b, MAX_BITS)
    if too_big:
        raise OverflowError(too_big)
    return fn(a, b)


_BIN: dict[type, Callable[[Any, Any], Any]] = {
    ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: functools.partial(_bounded, "*", operator.mul),
    ast.FloorDiv: operator.floordiv, ast.Mod: operator.mod, ast.Pow: functools.partial(_bounded, "**", operator.pow),
    ast.Div: operator.truediv}
_CMP = {ast.Eq: operator.eq, ast.NotEq: operator.ne, ast.Lt: operator.lt, ast.LtE: operator.le,
        ast.Gt: operator.gt, ast.GtE: operator.ge}
_FUNCS: dict[str, Callable[..., Any]] = {"min": min, "max": max, "abs": abs}


def _lambda_text(fn: Callable) -> str:
    """The source of a lambda itself (``lambda x: x.ndim == 2``), not the statement around it."""
    try:
        lines, start = inspect.getsourcelines(fn)
    except (OSError, TypeError):
        return "lambda"
    line = lines[fn.__code__.co_firstlineno - start]  # a lambda's first line is the one of its keyword
    text = line[line.find("lambda"):]
    while text:  # the longest prefix that parses as a lambda expression (and what follows it: a comment)
        try:
            body = ast.parse(text, mode="eval").body
            if isinstance(body, ast.Lambda):
                return text.encode()[:body.end_col_offset].decode()  # (offsets count UTF-8 bytes)
        except SyntaxError:
            pass
        text = text[:-1]
    return "lambda"


class Precondition:
    def __init__(self, cond: str | Callable, kernel: str, names: set[str] | None = None):
        """``names``: the parameter and generic names a condition may read (checked here, when the
        kernel is decorated, so a misspelt name is refused before any launch; None: unchecked)."""
        self.kernel = kernel
        if callable(cond):
            self.text = getattr(cond, "__name__", "precondition")
            if self.text == "<lambda>":
                self.text = _lambda_text(cond)
            self.fn: Callable[..., Any] | None = cond
            self.tree: ast.expr | None = None
            try:
                used = list(inspect.signature(cond).parameters)
            except (TypeError, ValueError):
                raise TileDeclarationError(f"kernel {kernel!r}: precondition {self.text} has no signature to "
                                           "match against the parameters") from None
        elif isinstance(cond, str):
            self.text = cond
            try:
                self.tree = ast.parse(cond, mode="eval").body
            except SyntaxError as e:
                raise TileDeclarationError(f"kernel {kernel!r}: precondition {cond!r} is not an expression: "
                                           f"{e.msg}") from None
            self.fn = None
            called = {id(n.func) for n in ast.walk(self.tree) if isinstance(n, ast.Call)}
            used = [n.id for n in ast.walk(self.tree) if isinstance(n, ast.Name) and id(n) not in called]
        else:
            raise TileDeclarationError(f"kernel {kernel!r}: a precondition is a string or a callable, got {cond!r}")
        unknown = [n for n in dict.fromkeys(used) if names is not None and n not in names]
        if unknown:
            assert names is not None  # names are checked only when given
            raise TileDeclarationError(f"kernel {kernel!r}: precondition `{self.text}` names {', '.join(unknown)}, "
                                       f"which is neither a parameter nor a generic ({', '.join(sorted(names))})")

    @interruptible  # runs the user's callable: the launch gives everything back when it raises
    def check(self, values: dict[str, Any]) -> None:
        try:
            if self.fn is not None:
                names = list(inspect.signature(self.fn).parameters)
                missing = [n for n in names if n not in values]
                if missing:
                    raise NameError(f"unknown parameter(s) {', '.join(missing)}")
                ok = self.fn(*(values[n] for n in names))
                detail = ""
            else:
                ok = self._eval(self.tree, values)
                detail = self._detail(values)
            if not isinstance(ok, (bool, np.bool_, int, np.integer)):
                raise TypeError(f"it gave {type(ok).__name__}, not a truth value (True or False)")
            ok = bool(ok)
        except PreconditionError:
            raise
        except Exception as e:  # noqa: BLE001 - report any evaluation problem as a failed check
            raise PreconditionError(f"kernel {self.kernel!r}: precondition `{self.text}` could not be evaluated: "
                                    f"{describe(e)}") from None
        if not ok:
            raise PreconditionError(f"kernel {self.kernel!r}: precondition `{self.text}` does not hold{detail}; "
                                    "the launch was rejected before running")

    def _detail(self, values) -> str:
        parts = []
        assert self.tree is not None  # a string precondition (the only kind with a detail) has its tree
        calls = [n for n in ast.walk(self.tree) if isinstance(n, ast.Call)]
        for node in sorted(calls, key=lambda n: n.col_offset):  # in source order
            if isinstance(node.func, ast.Name):
                try:
                    parts.append(f"{ast.unparse(node)} = {self._eval(node, values)}")
                except Exception:  # noqa: BLE001
                    pass
        return f" ({', '.join(dict.fromkeys(parts))})" if parts else ""

    def _eval(self, node, values):
        ev = lambda n: self._eval(n, values)  # noqa: E731
        if isinstance(node, ast.Constant) and isinstance(node.value, (int, float, bool)):
            return node.value
        if isinstance(node, ast.Name):
            if node.id not in values:
                raise NameError(f"unknown name {node.id!r}")
            return values[node.id]
        if isinstance(node, ast.BinOp) and type(node.op) in _BIN:
            return _BIN[type(node.op)](ev(node.left), ev(node.right))
        if isinstance(node, ast.UnaryOp):
            v = ev(node.operand)
            if isinstance(node.op, ast.Not):
                return not v
            if isinstance(node.op, ast.USub):
                return -v
            if isinstance(node.op, ast.UAdd):
                return +v
        if isinstance(node, ast.BoolOp):
            vals = (ev(v) for v in node.values)
            return all(vals) if isinstance(node.op, ast.And) else any(vals)
        if isinstance(node, ast.Compare):
            left = ev(node.left)
            for op, right_node in zip(node.ops, node.comparators):
                if type(op) not in _CMP:
                    raise ValueError(f"unsupported comparison {type(op).__name__}")
                right = ev(right_node)
                if not _CMP[type(op)](left, right):
                    return False
                left = right
            return True
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and not node.keywords:
            args = [ev(a) for a in node.args]
            if node.func.id == "dim" and len(args) == 2 and isinstance(args[0], ArgInfo):
                return args[0].shape[args[1]]
            if node.func.id == "rank" and len(args) == 1 and isinstance(args[0], ArgInfo):
                return args[0].ndim
            if node.func.id == "numel" and len(args) == 1 and isinstance(args[0], ArgInfo):
                n = 1
                for d in args[0].shape:
                    n *= d
                return n
            if node.func.id in ("min", "max", "abs") and args:
                return _FUNCS[node.func.id](*args)
            raise ValueError(f"unsupported call {ast.unparse(node)}; use dim(t, axis), rank(t), numel(t)")
        if isinstance(node, ast.Attribute) and node.attr in ("shape", "ndim"):
            return getattr(ev(node.value), node.attr)
        if isinstance(node, ast.Subscript):
            return ev(node.value)[ev(node.slice)]
        raise ValueError(f"unsupported expression {ast.unparse(node)}")
