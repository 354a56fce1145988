"""Shared pieces of the front end: hidden variable names, markers, local functions, and
small helpers on front-end values and on the AST."""
from __future__ import annotations

import ast
import enum
import operator
import os
import types
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any
from collections.abc import Callable

from .. import dtypes as dt
from ..errors import ArgumentError
from ..ops.values import Array, Tile, describe, is_const
from ..runtime import env
from .dataclass_values import BoundMethod, DataclassValue

if TYPE_CHECKING:
    from .compiler import FunctionCompiler

    # A compiler is assembled from mixins (Expressions and ControlFlow here, basic's lowering
    # mixins) whose methods call each other's and the host class's: the type checker reads
    # those through Any rather than through a copy of the host's interface in every mixin.
    MixinBase = Any
else:
    MixinBase = object

# Hidden variables in a function's environment (never valid Python identifiers).
BRK, CONT, RET, RETVAL, IV = "$break", "$continue", "$return", "$retval", "$iv"
FLAGS = (BRK, CONT, RET)

BINOPS = {
    ast.Add: "+", ast.Sub: "-", ast.Mult: "*", ast.Div: "/", ast.FloorDiv: "//", ast.Mod: "%",
    ast.Pow: "**", ast.BitAnd: "&", ast.BitOr: "|", ast.BitXor: "^", ast.LShift: "<<", ast.RShift: ">>",
    ast.MatMult: "@",
}
CMPOPS = {ast.Eq: "==", ast.NotEq: "!=", ast.Lt: "<", ast.LtE: "<=", ast.Gt: ">", ast.GtE: ">="}
PY_OPS: dict[str, Callable[[Any, Any], Any]] = {
    "+": operator.add, "-": operator.sub, "*": operator.mul, "/": operator.truediv,
    "//": operator.floordiv, "%": operator.mod, "**": operator.pow,
    "&": operator.and_, "|": operator.or_, "^": operator.xor,
    "<<": operator.lshift, ">>": operator.rshift, "@": operator.matmul,
    "==": operator.eq, "!=": operator.ne, "<": operator.lt,
    "<=": operator.le, ">": operator.gt, ">=": operator.ge,
}

# Compile-time arithmetic on Python constants stays quick: integer results up to this many bits,
# repeated sequences up to this many items (``9**9**9`` or ``"a" * 10**10`` would otherwise take
# minutes or all of memory while compiling). Preconditions use the same bounds.
MAX_CONST_BITS = 1 << 16
MAX_CONST_ITEMS = 1 << 24


def fold_too_big(op: str, a: Any, b: Any, max_bits: int = MAX_CONST_BITS) -> str | None:
    """Why folding ``a op b`` on constants would be too big (an integer of more than ``max_bits``
    bits, a sequence of more than ``MAX_CONST_ITEMS`` items), or None."""
    def is_int(x: Any) -> bool:
        return isinstance(x, int)  # bool included; NumPy integers wrap and cannot grow
    if is_int(a) and is_int(b):
        bits = 0
        if op == "**" and abs(a) > 1 and b > 0:
            bits = abs(a).bit_length() * b if b <= max_bits else max_bits + 1
        elif op == "*":
            bits = a.bit_length() + b.bit_length()
        elif op == "<<" and a != 0 and b > 0:
            bits = a.bit_length() + b
        if bits > max_bits:
            return f"the constant {a} {op} {b} has more than {max_bits} bits"
        return None
    if op == "*":
        seq, n = (a, b) if is_int(b) else (b, a)
        if isinstance(seq, (str, bytes, tuple, list)) and is_int(n) and len(seq) * n > MAX_CONST_ITEMS:
            return (f"repeating a {type(seq).__name__} of length {len(seq)} {n} times gives more than "
                    f"{MAX_CONST_ITEMS} items")
    return None


def literal_too_big(node: ast.AST) -> str | None:
    """Why an expression's literal arithmetic (``9**9**9``, ``"a" * 10**10``) would be too big to
    evaluate, or None: for code Python evaluates itself (``ct.static_eval``). Subexpressions
    that are not literals are not looked into."""
    problem: list[str] = []

    def value(n: ast.AST) -> Any:
        if isinstance(n, ast.Constant):
            return n.value
        if isinstance(n, ast.UnaryOp) and isinstance(n.op, ast.USub):
            v = value(n.operand)
            return -v if isinstance(v, (int, float)) else MISSING
        if isinstance(n, (ast.Tuple, ast.List)):
            items = [value(e) for e in n.elts]
            return MISSING if any(v is MISSING for v in items) else tuple(items)
        if isinstance(n, ast.BinOp) and type(n.op) in BINOPS:
            a, b = value(n.left), value(n.right)
            if a is MISSING or b is MISSING:
                return MISSING
            why = fold_too_big(BINOPS[type(n.op)], a, b)
            if why:
                problem.append(why)
                return MISSING
            try:
                return PY_OPS[BINOPS[type(n.op)]](a, b)
            except Exception:  # noqa: BLE001 - Python reports it when it evaluates the expression
                return MISSING
        for child in ast.iter_child_nodes(n):
            value(child)
        return MISSING

    value(node)
    return problem[0] if problem else None


UNSUPPORTED_STMTS = {
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
UNSUPPORTED_EXPRS = {
    "Yield": "generators ('yield') are not supported in tile code",
    "YieldFrom": "generators ('yield from') are not supported in tile code",
    "Await": "'await' is not supported in tile code",
    "SetComp": "set comprehensions are not supported in tile code",
    "DictComp": "dict comprehensions are not supported in tile code",
    "Set": "sets are not supported in tile code; use a tuple",
    "Starred": "a starred expression is only allowed in a tuple, a call or an assignment target",
}


class Undefined:
    """Marks a name that is not usable here; reading it raises an error with ``reason``."""

    def __init__(self, reason: str):
        self.reason = reason


class StopBody(Exception):
    """Unwinds the rest of a statement list after an unconditional break/continue/return."""


@dataclass
class ContextManagerCall:
    """A call of a ``@contextlib.contextmanager`` function in tile code, entered by ``with``:
    the generator function and its arguments."""

    fn: Any
    args: list
    kwargs: dict


def context_manager_function(fn: Any) -> Any:
    """The generator function behind a ``@contextlib.contextmanager`` wrapper, else None."""
    import contextlib
    import inspect
    wrapped = getattr(fn, "__wrapped__", None)
    code = getattr(fn, "__code__", None)
    if wrapped is None or code is None or not inspect.isgeneratorfunction(wrapped):
        return None
    return wrapped if code.co_filename == contextlib.__file__ else None


@dataclass
class LocalFunction:
    """A ``def`` or ``lambda`` written inside tile code.

    Free names are looked up in the defining function's environment when the function is
    called (Python's late binding); defaults are evaluated at definition, like Python.
    """

    node: ast.FunctionDef | ast.Lambda
    owner: FunctionCompiler
    defaults: list[Any]
    kw_defaults: list[Any]

    @property
    def name(self) -> str:
        return getattr(self.node, "name", "<lambda>")


MISSING = object()


# ---------------------------------------------------------------------------------- AST scans

SCOPES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef,
           ast.ListComp, ast.GeneratorExp, ast.SetComp, ast.DictComp)


def assigned_names(stmts: list[ast.stmt]) -> set[str]:
    """Names (re)bound by ``stmts``, not looking into nested scopes."""
    out: set[str] = set()

    def visit(node: ast.AST) -> None:
        if isinstance(node, SCOPES):
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


def contains(stmts: list[ast.stmt], kinds: tuple, into_loops: bool) -> bool:
    """Whether ``stmts`` contain a node of ``kinds`` (outside nested scopes, optionally loops)."""
    def visit(node: ast.AST) -> bool:
        if isinstance(node, kinds):
            return True
        if isinstance(node, SCOPES):
            return False
        if not into_loops and isinstance(node, (ast.For, ast.While, ast.AsyncFor)):
            return False
        return any(visit(c) for c in ast.iter_child_nodes(node))
    return any(visit(s) for s in stmts)


# ---------------------------------------------------------------------------------- value helpers

def flatten(v: Any) -> list[Any]:
    """The leaves of a value: tuples and dataclass values element by element."""
    if isinstance(v, tuple):
        return [x for item in v for x in flatten(item)]
    if isinstance(v, DataclassValue):
        return flatten(v.leaves())
    return [v]


def rebuild(template: Any, flat: list[Any]) -> Any:
    it = iter(flat)

    def build(t):
        if isinstance(t, tuple):
            return tuple(build(x) for x in t)
        if isinstance(t, DataclassValue):
            return t.with_leaves(build(t.leaves()))
        return next(it)
    return build(template)


def same_structure(a: Any, b: Any) -> bool:
    if isinstance(a, DataclassValue) or isinstance(b, DataclassValue):
        return isinstance(a, DataclassValue) and isinstance(b, DataclassValue) and a.cls is b.cls and \
            same_structure(a.leaves(), b.leaves())
    if isinstance(a, tuple) or isinstance(b, tuple):
        return isinstance(a, tuple) and isinstance(b, tuple) and len(a) == len(b) and \
            all(same_structure(x, y) for x, y in zip(a, b))
    return True


def is_value(v: Any) -> bool:
    """A tile or a number: something that can live in a register and change at run time."""
    return isinstance(v, Tile) or is_const(v)


def carriable(v: Any) -> bool:
    if isinstance(v, tuple):
        return all(carriable(x) for x in v)
    if isinstance(v, DataclassValue):
        return carriable(v.leaves())
    return is_value(v)


def same_static(a: Any, b: Any) -> bool:
    """Whether two compile-time values are interchangeable (same type and value)."""
    if a is b:
        return True
    if isinstance(a, (Tile, Array)) or isinstance(b, (Tile, Array)):
        return False
    if isinstance(a, tuple) and isinstance(b, tuple):
        return len(a) == len(b) and all(same_static(x, y) for x, y in zip(a, b))
    if isinstance(a, DataclassValue) and isinstance(b, DataclassValue):
        return a.cls is b.cls and same_static(a.leaves(), b.leaves())
    if type(a) is not type(b):
        return False
    try:
        return bool(a == b)
    except Exception:  # noqa: BLE001 - objects with exotic __eq__ are simply not equal
        return False


def is_static(v: Any) -> bool:
    """A compile-time value that may be handed to ordinary Python code.

    Objects of safetile's own classes are refused unless they are plain compile-time values
    (dtypes, enums, ...): ordinary Python code must never get hold of a tile, an array or a
    device object (``vars(z)`` would reach its private state)."""
    if isinstance(v, tuple):
        return all(is_static(x) for x in v)
    if isinstance(v, (Tile, Array, LocalFunction, Undefined, DataclassValue, BoundMethod)):
        return False
    return not _is_safetile_object(v) or isinstance(v, _STATIC_SAFETILE_TYPES)


def _is_safetile_object(v: Any) -> bool:
    if isinstance(v, types.ModuleType):
        return v.__name__.split(".", 1)[0] == "safetile"
    return (type(v).__module__ or "").split(".", 1)[0] == "safetile" and not isinstance(v, type)


_STATIC_SAFETILE_TYPES = (enum.Enum, dt.DType)


def _is_slot(klass: type, attr: str) -> bool:
    """Whether ``attr`` is slot data of ``klass`` (a tile's IR value, an array's name...)."""
    for k in klass.__mro__:
        if attr in k.__dict__:
            return isinstance(k.__dict__[attr], types.MemberDescriptorType)
    return False


def check_kernel_attribute(obj: Any, attr: str) -> str | None:
    """Why kernel code may not read ``obj.attr`` (None when it may).

    A device object of the safe style shows exactly its declared ``__tile_surface__``. Other
    safetile modules, classes and objects show kernel code their public methods and properties.
    Private names and slot data (the IR behind a tile or an
    array, the array behind a sub-tensor) are refused, whichever way they are asked for
    (attribute syntax, ``getattr``, ``hasattr``); user objects are not restricted."""
    if attr.startswith("__"):
        return f"access to {attr} is not supported in tile code"
    surface = None if isinstance(obj, type) else getattr(type(obj), SURFACE, None)
    if surface is not None:  # a device object (safe/device.py): its declared surface, nothing else
        if attr in surface:
            return None
        return f"{what(obj)} has no attribute {attr!r} in tile code (it has: {', '.join(sorted(surface))})"
    is_class = isinstance(obj, type)
    owner = obj if is_class else type(obj)
    if not (_is_safetile_object(obj) or (is_class and (obj.__module__ or "").split(".", 1)[0] == "safetile")):
        return None
    if attr.startswith("_") or (not isinstance(obj, types.ModuleType) and _is_slot(owner, attr)):
        return f"{what(obj)} has no attribute {attr!r} in tile code (kernel code sees only the documented API)"
    return None


SURFACE = "__tile_surface__"  # a class attribute: the attribute names tile code may read


def static_facts(v: Any) -> Any:
    """What ``ct.static_eval`` sees of a value: a device object only as its static facts."""
    surface = getattr(type(v), SURFACE, None)
    if surface is None:
        return v
    facts = {}
    for name in surface:
        x = getattr(v, name, None)
        if callable(x):
            facts[name] = _compile_time_method(type(v).__name__, name)  # hasattr() sees it
        elif is_static(x):
            facts[name] = x
    return types.SimpleNamespace(**facts)


def _compile_time_method(owner: str, name: str):
    def method(*args, **kwargs):
        from ..errors import TileStaticEvalError
        raise TileStaticEvalError(f"{owner}.{name}() is a run-time operation; it cannot be called in a "
                                  "compile-time expression")
    method.__name__ = name
    return method


BUILTIN_MARK = "__safetile_builtin__"


def is_safetile_callable(fn: Any) -> bool:
    """Builders are called directly with symbolic values: the functions and methods of the
    op modules, and anything marked with ``BUILTIN_MARK`` (the safe style's device API)."""
    target = fn.__func__ if isinstance(fn, types.MethodType) else fn
    mod = getattr(target, "__module__", None) or ""
    return callable(fn) and (mod.startswith("safetile.ops") or getattr(target, BUILTIN_MARK, False))


def is_library_function(fn: Any) -> bool:
    """Python functions of NumPy/the standard library are evaluated, never inlined."""
    mod = getattr(fn, "__module__", None) or ""
    root = mod.split(".")[0]
    return root in ("numpy", "math", "builtins", "operator", "functools", "typing", "enum", "dataclasses",
                    "ml_dtypes", "torch")


# Code objects of the front end's functions whose own calls evaluate the user's Python: constant
# folding, attribute and item access on Python objects, calls of Python and safetile functions
# (argument binding). An exception raised directly in one of these frames (by a C function or
# by argument binding) is the user's mistake; one raised deeper inside safetile is a bug.
_USER_BOUNDARIES: set = set()
_PACKAGE_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep


def user_boundary(fn: Callable) -> Callable:
    """Mark a front-end function whose direct calls evaluate user values (applied at import)."""
    _USER_BOUNDARIES.add(fn.__code__)
    return fn


def raised_by_user(e: BaseException) -> bool:
    """Whether ``e`` comes from the user's code or values rather than from a bug in safetile:
    its innermost frame is outside the package, or is a marked user boundary, or safetile raised
    it on purpose about an argument (an ``ArgumentError``)."""
    if isinstance(e, ArgumentError):
        return True
    tb = e.__traceback__
    if tb is None:
        return True
    while tb.tb_next is not None:
        tb = tb.tb_next
    code = tb.tb_frame.f_code
    return code in _USER_BOUNDARIES or not code.co_filename.startswith(_PACKAGE_DIR)


def debug_cause(e: BaseException) -> BaseException | None:
    """The cause to chain to a user error: hidden unless SAFETILE_DEBUG is set."""
    return e if env.debug() else None


def what(v: Any) -> str:
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
