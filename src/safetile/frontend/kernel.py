"""Kernel functions as the front end sees them: ``TileKernel``, ``@ct.function``,
``ct.Constant``, argument specs and kernel hints.

A ``TileKernel`` compiles lazily, once per specialisation key (dtypes and ranks of arrays,
dtypes of scalars, values of constants, hints); dynamic array sizes never recompile. The
launchable ``@ct.kernel`` object (``runtime.kernel.Kernel``) builds on it; the front end
knows no runtime and no backend.
"""
from __future__ import annotations

import ast
import dataclasses
import inspect
import math
from dataclasses import dataclass
from typing import Any
from collections.abc import Callable

from .. import dtypes as dt
from ..errors import (ArgumentError, describe, TileDeclarationError, TileError, TileInternalError, TileRecursionError,
                      TileSyntaxError)
from ..ir.builder import Builder, building
from ..ir.core import Block, Function, Param, Value
from ..ir.types import ArrayType, TileType
from ..ir.verify import verify
from ..ops.values import Array, Tile
from ..runtime import env
from . import budget
from .annotations import Constant, ConstantAnnotation, param_kind  # noqa: F401 - re-exported
from .captures import Captures, CaptureSet, closure_scope, is_library
from .captures import current as captures_current
from .compiler import FunctionCompiler
from .dataclass_values import DataclassValue
from .source import declaration_loc, parse_function, require_source
from ..locks import FORK_LOCKS


def is_constant_annotation(ann: Any) -> bool:
    return param_kind(ann).kind == "constant"


class ByTarget:
    """A per-architecture hint value: ``ByTarget(sm_90=4, sm_100=8, default=2)``."""

    def __init__(self, *, default: Any = None, **targets: Any):
        for key in targets:
            if not (key.startswith("sm_") and key[3:].isdigit()):
                raise ArgumentError(f"ByTarget keys must look like 'sm_90', got {key!r}")
        self.default = default
        self.targets = targets

    def resolve(self, target: str | None) -> Any:
        if target is not None and target in self.targets:
            return self.targets[target]
        return self.default

    def values(self) -> list[Any]:
        return [v for v in [self.default, *self.targets.values()] if v is not None]

    def __eq__(self, other):
        return isinstance(other, ByTarget) and (self.default, self.targets) == (other.default, other.targets)

    def __hash__(self):
        return hash((self.default, tuple(sorted(self.targets.items()))))

    def __repr__(self):
        items = [f"{k}={v!r}" for k, v in self.targets.items()]
        if self.default is not None:
            items.append(f"default={self.default!r}")
        return f"ByTarget({', '.join(items)})"


def _check_int(name: str, allowed: Callable[[int], bool], text: str):
    def check(v):
        if isinstance(v, bool) or not isinstance(v, int) or not allowed(v):
            raise ArgumentError(f"hint {name}={v!r} is invalid: {text}")
    return check


def _check_warp_specialize(v):
    if not isinstance(v, bool) and v != "pingpong":
        raise ArgumentError(f"hint warp_specialize={v!r} is invalid: must be True, False or 'pingpong'")


def _check_persistent(v):
    if not isinstance(v, bool):
        raise ArgumentError(f"hint persistent={v!r} is invalid: must be True or False")


HINTS: dict[str, Callable[[Any], None]] = {
    "num_ctas": _check_int("num_ctas", lambda v: v in (1, 2, 4, 8, 16), "must be 1, 2, 4, 8 or 16"),
    "occupancy": _check_int("occupancy", lambda v: 1 <= v <= 32, "must be between 1 and 32"),
    "opt_level": _check_int("opt_level", lambda v: 0 <= v <= 3, "must be between 0 and 3"),
    "num_warps": _check_int("num_warps", lambda v: v in (1, 2, 4, 8, 16, 32), "must be a power of two ≤ 32"),
    "num_stages": _check_int("num_stages", lambda v: 1 <= v <= 8, "must be between 1 and 8"),
    "warp_specialize": _check_warp_specialize,
    "persistent": _check_persistent,
}


def validate_hints(hints: dict[str, Any]) -> dict[str, Any]:
    """Check kernel-level hints; hints never change results, so bad values are rejected early."""
    for name, value in hints.items():
        if name not in HINTS:
            raise ArgumentError(f"unknown kernel hint {name!r}; known hints: {', '.join(HINTS)}")
        for v in (value.values() if isinstance(value, ByTarget) else [value]):
            HINTS[name](v)
    return dict(hints)


class TileFunction:
    """``@ct.function``: a helper compiled as tile code (inlined at every call)."""

    fn: Callable  # the decorated Python function

    def __init__(self, fn: Callable):
        if isinstance(fn, TileFunction):
            fn = fn.fn
        if not inspect.isfunction(fn):
            raise TileDeclarationError(f"@ct.function must decorate a function, got {fn!r}")
        require_source(fn)
        self.fn = fn
        self.__name__ = fn.__name__
        self.__doc__ = fn.__doc__
        self.__wrapped__ = fn

    def __call__(self, *args, **kwargs):
        from ..ir.builder import active
        if not active():
            raise ArgumentError(f"tile function {self.__name__!r} can only be called from tile code")
        return self.fn(*args, **kwargs)


def function(fn: Callable | None = None, **options):
    """Mark a tile function (optional: any function called from a kernel is tile code)."""
    if options:
        raise TileDeclarationError(f"@ct.function takes no options, got {', '.join(options)}")
    if fn is None:
        return lambda f: TileFunction(f)
    return TileFunction(fn)


# ----------------------------------------------------------------------------- argument specs

@dataclass(frozen=True)
class ArraySpec:
    dtype: dt.DType
    ndim: int
    readonly: bool = False
    static_shape: tuple | None = None
    static_strides: tuple | None = None
    index_int64: bool = False


@dataclass(frozen=True)
class ScalarSpec:
    dtype: dt.DType


@dataclass(frozen=True)
class TupleSpec:
    """A tuple (or list) argument: one spec per element (constants included)."""

    items: tuple


@dataclass(frozen=True)
class DataclassSpec:
    """A dataclass instance argument: its class and one spec per field (in field order)."""

    cls: type
    items: tuple


@dataclass(frozen=True)
class ConstSpec:
    """A compile-time argument. ``types`` keeps ``1``, ``1.0`` and ``True`` (equal in Python)
    from sharing one compiled kernel."""

    value: Any
    types: Any = None

    @staticmethod
    def of(value: Any) -> ConstSpec:
        return ConstSpec(value, const_signature(value))


def const_signature(value: Any, _open: frozenset = frozenset()) -> Any:
    """What ``==`` ignores about a compile-time value, so that values Python calls equal but that
    compute differently never share a compiled kernel: the type of every element (``1``, ``1.0``
    and ``True``), the sign of a zero float (``0.0`` and ``-0.0``) or of a complex number's zero
    part, every field of a dataclass (its ``__eq__`` may skip some: ``field(compare=False)``), the
    text of any other value type (``repr``: ``np.float64(-0.0)``, ``Decimal('1.00')``, an aware
    datetime's zone), and every attribute of a value compared by value (an ``__eq__`` of its own
    class may skip some, and an instance of a subclass of ``int``, ``str`` or a namedtuple may carry
    attributes ``==`` never sees). Only the equality of identity and of Python's and libraries'
    value types, on their own state, is trusted. ``_open``: the objects being keyed further out
    (one that contains itself is refused)."""
    t = type(value)
    if t is float and value == 0.0:
        return (t, math.copysign(1.0, value))
    if t is complex and 0.0 in (value.real, value.imag):
        return (t, math.copysign(1.0, value.real), math.copysign(1.0, value.imag))
    if t in _PLAIN:
        return t
    if t is tuple:
        return tuple(const_signature(v, _open) for v in value)
    owner = _eq_owner(t)
    if isinstance(value, type) or owner is object:
        return t  # identity: the compiled code's reads of the object itself are tracked (captures.py)
    if id(value) in _open:
        raise ArgumentError(f"a Constant {t.__name__} refers to itself: it cannot key compiled code")
    inner = _open | {id(value)}
    if dataclasses.is_dataclass(value):
        fields = [(f.name, getattr(value, f.name)) for f in dataclasses.fields(value)]
    else:
        fields = sorted(_instance_state(value, t).items())
    if isinstance(value, tuple):
        items = tuple(const_signature(v, inner) for v in value)
        return (t, items, _fields_signature(t, fields, inner)) if fields else items
    if fields or not _trusted_eq(owner):
        return (t, _fields_signature(t, fields, inner))
    # a value type's own text: what its == ignores shows there (a NumPy or complex zero's sign, a
    # Decimal's exponent, an aware datetime's zone), and equal values that print alike share code
    return (t, repr(value))


def _instance_state(value: Any, t: type) -> dict:
    """An object's own attributes: its ``__dict__`` and the slots it has set."""
    state = dict(getattr(value, "__dict__", None) or {})
    for k in t.__mro__:
        slots = k.__dict__.get("__slots__", ())
        for name in (slots,) if isinstance(slots, str) else slots:
            if name not in ("__dict__", "__weakref__") and hasattr(value, name):
                state.setdefault(name, getattr(value, name))
    return state


def _fields_signature(t: type, fields: Any, _open: frozenset) -> tuple:
    out = []
    for name, v in fields:
        try:
            hash(v)
        except Exception as e:  # noqa: BLE001 - unhashable, or a __hash__ of the user's that raises
            why = f"{name!r} holds a {type(v).__name__}" if isinstance(e, TypeError) else \
                f"hashing {name!r} raised {describe(e)}"
            raise ArgumentError(f"a Constant {t.__name__} must be hashable in every field: {why}") from None
        out.append((name, v, const_signature(v, _open)))
    return tuple(out)


_PLAIN = frozenset({int, float, bool, str, bytes, complex, type(None)})  # Python's own scalars: no state of their own
_VALUE_TYPE_MODULES = frozenset({"builtins", "fractions", "decimal", "enum", "numbers", "datetime", "uuid",
                                 "pathlib", "ipaddress"})


def _eq_owner(t: type) -> type:
    """The class in ``t``'s MRO that defines ``__eq__`` (``object``: identity)."""
    return next(k for k in t.__mro__ if "__eq__" in k.__dict__)


def _trusted_eq(owner: type) -> bool:
    """Whether ``==`` defined by ``owner`` (``_eq_owner``) can key compiled code for values that carry
    no state of their own: the equality of a Python or library value type."""
    module = (owner.__module__ or "").split(".", 1)[0]
    return module in _VALUE_TYPE_MODULES or is_library(owner)


ArgSpec = ArraySpec | ScalarSpec | ConstSpec | TupleSpec | DataclassSpec


def runtime_leaves(spec: ArgSpec) -> list:
    """The array and scalar specs inside ``spec`` in the order their values are passed."""
    if isinstance(spec, (TupleSpec, DataclassSpec)):
        return [leaf for item in spec.items for leaf in runtime_leaves(item)]
    return [] if isinstance(spec, ConstSpec) else [spec]


class TileKernel:
    """A kernel function and its compiled specialisations: what the front end owns.

    ``runtime.kernel.Kernel`` (``@ct.kernel``) adds launching; entry kernels and BASIC
    programs build on it too. Compiled IR is cached per argument specs; the Python state a
    specialisation read while compiling (``captured``) is checked before compiled code is
    reused, and a change drops every cached specialisation (``forget_compiled``).
    """

    fn: Callable  # the decorated Python function

    def __init__(self, fn: Callable, hints: dict[str, Any] | None = None):
        if isinstance(fn, (TileKernel, TileFunction)):
            fn = fn.fn
        if not inspect.isfunction(fn) or fn.__name__ == "<lambda>":
            raise TileDeclarationError(f"@ct.kernel must decorate a function defined with def, got {fn!r}")
        self.fn = fn
        self.__name__ = fn.__name__
        self.__qualname__ = getattr(fn, "__qualname__", fn.__name__)
        self.__doc__ = fn.__doc__
        self.__wrapped__ = fn
        self.hints = validate_hints(hints or {})
        self.signature = inspect.signature(fn)
        self.params = list(self.signature.parameters.values())
        for p in self.params:
            if p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD, p.KEYWORD_ONLY):
                raise TileDeclarationError(f"kernel {self.__name__!r}: parameter {p.name!r} must be positional",
                                           declaration_loc(fn, p.name))
        # annotations are evaluated once, here (string annotations too): launches only read them
        self.annotations = [self._annotation(p) for p in self.params]
        self.kinds = [param_kind(a) for a in self.annotations]
        self.constant_params = [k.kind == "constant" for k in self.kinds]
        # sizes or strides of some array are part of the specialisation: launches take the checked path
        self.static_arrays = any(k.array is not None and (k.array.static_shape_dims or k.array.static_stride_dims)
                                 for k in self.kinds)
        self._cache: dict[tuple, Function] = {}
        self._lock = FORK_LOCKS.new(reentrant=True)
        self.captured = CaptureSet()  # what every cached specialisation read from Python

    def _annotation(self, p: inspect.Parameter) -> Any:
        ann = p.annotation
        if isinstance(ann, str):
            try:
                ann = eval(ann, self.fn.__globals__)  # noqa: S307 - the user's own annotation
            except Exception:  # noqa: BLE001
                return None
        return ann

    def __call__(self, *args, **kwargs):
        raise ArgumentError(f"kernel {self.__name__!r} cannot be called directly; launch it with "
                            f"ct.launch(stream, grid, {self.__name__}, args)")

    def specialize(self, specs: tuple[ArgSpec, ...]) -> Function:
        """The compiled IR for these argument specs (cached)."""
        fn = self._cache.get(specs)
        if fn is None:
            with self._lock:
                fn = self._cache.get(specs)
                if fn is None:
                    try:
                        fn = compile_function(self.fn, specs, self.hints)
                    except TileError as e:
                        if env.debug():
                            raise
                        # the message already shows where in the kernel; the compiler's own
                        # frames would only hide it (a bug in safetile keeps its cause)
                        cause = e.__cause__ if isinstance(e, TileInternalError) else None
                        raise e.with_traceback(None) from cause
                    self.captured.add(fn.captures)
                    self._cache[specs] = fn
        return fn

    def refresh(self) -> None:
        """Drop every compiled specialisation if Python state they read has changed since."""
        if self.captured.entries and not captures_current(self.captured.entries):
            with self._lock:
                if not captures_current(self.captured.entries):
                    self.forget_compiled()

    def forget_compiled(self) -> None:
        """Drop compiled code and everything derived from it (the caller holds ``_lock``)."""
        self._cache.clear()
        self.captured.clear()

    def __repr__(self) -> str:
        return f"<safetile kernel {self.__name__}>"


def compile_function(fn: Callable, specs: tuple[ArgSpec, ...], hints: dict[str, Any]) -> Function:
    """Compile a kernel body for concrete argument specs into verified IR."""
    parsed = parse_function(fn)
    sig = inspect.signature(fn)
    names = list(sig.parameters)
    if len(names) != len(specs):
        raise TypeError(f"kernel {fn.__name__!r} takes {len(names)} arguments, got {len(specs)}")
    builder = Builder()
    builder.deadline = budget.deadline()
    body = Block()
    params: list[Param] = []
    captures = Captures()
    scope = closure_scope(fn, captures)
    for name, spec in zip(names, specs):
        scope[name] = _bind_param(name, spec, body, params)
    return compile_body(fn, parsed, builder, body, scope, params, hints, captures)


def _bind_param(name: str, spec: ArgSpec, body: Block, params: list[Param]) -> Any:
    """The front-end value of one parameter (tuples and dataclasses element by element); each
    runtime leaf becomes a block argument and a Param (named like ``t[0]`` or ``p.field``)."""
    if isinstance(spec, ConstSpec):
        params.append(Param(name, "constant", constant=spec.value))
        return spec.value
    if isinstance(spec, TupleSpec):
        return tuple(_bind_param(f"{name}[{i}]", s, body, params) for i, s in enumerate(spec.items))
    if isinstance(spec, DataclassSpec):
        fields = [f.name for f in dataclasses.fields(spec.cls)]
        values = {f: _bind_param(f"{name}.{f}", s, body, params) for f, s in zip(fields, spec.items)}
        return DataclassValue(spec.cls, values)
    if isinstance(spec, ArraySpec):
        v = Value(ArrayType(spec.dtype, spec.ndim, spec.readonly, spec.static_shape, spec.static_strides,
                            spec.index_int64), hint=name)
        body.args.append(v)
        params.append(Param(name, "array", value=v))
        return Array(v, name)
    v = Value(TileType(spec.dtype, ()), hint=name)
    body.args.append(v)
    params.append(Param(name, "scalar", value=v))
    return Tile(v)


def compile_body(fn: Callable, parsed, builder: Builder, body: Block, scope: dict[str, Any],
                 params: list[Param], hints: dict[str, Any], captures: Captures) -> Function:
    """Compile ``fn``'s statements into ``body`` with parameters already bound in ``scope``;
    shared by both kernel styles so errors and verification are the same. ``captures``
    already holds the closure reads; the compiled Function keeps every Python read."""
    if isinstance(parsed.node, ast.AsyncFunctionDef):
        raise TileSyntaxError("Unsupported syntax: a kernel cannot be an async function", parsed.loc(parsed.node))
    compiler = FunctionCompiler(parsed, fn.__globals__, scope, builder, (fn.__code__,), is_kernel=True,
                                captures=captures)
    builder.scalar_params = {p.value.id: p.name for p in params if p.kind == "scalar" and p.value is not None}
    try:
        with building(builder), builder.inside(body):
            compiler.run_body(parsed.node.body)
            builder.emit("yield", [])
    except TileError:
        raise
    except RecursionError:
        raise TileRecursionError("the kernel is nested too deeply to compile",
                                 parsed.loc(parsed.node)) from None
    except Exception as e:  # noqa: BLE001 - never leak a raw traceback from the compiler
        raise TileInternalError(f"internal compiler error: {type(e).__name__}: {e}",
                                parsed.loc(parsed.node)) from e
    function = Function(fn.__name__, params, body, dict(hints), parsed.filename, captures.freeze())
    verify(function)
    return function
