"""``@ct.entry``: safe-style kernels (cuTile Rust semantics) and their compilation.

An entry kernel's parameters are annotated (``ct.Mut``, ``ct.Ref``, ``ct.MappedMut``,
scalar types, ``ct.Constant``). Calling the kernel with host values returns a lazy
``LaunchOp`` (see ``launch.py``) that validates everything first. Compilation binds each
parameter to its device-side value (``device.py``) and runs the ordinary front end on
the body, once per specialisation: element types, ranks, partition shapes, static sizes
and const generics. Dynamic (``-1``) sizes never recompile.
"""
from __future__ import annotations

import inspect
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any
from collections.abc import Callable

from ..errors import ArgumentError
from .. import dtypes as dt
from ..errors import TileDeclarationError, describe
from ..frontend.captures import CaptureSet, Captures, closure_scope
from ..frontend.captures import current as captures_current
from ..frontend.kernel import (ArraySpec, ConstSpec, ScalarSpec, compile_body,
                               validate_hints)
from ..frontend.source import declaration_loc, parse_function, require_source
from ..ir.builder import Builder
from ..ir.core import Block, Function, Param, Value
from ..ir.types import ArrayType, TileType
from ..runtime.interrupts import interruptible
from ..runtime.kernel import Kernel
from ..ops.values import Array, Tile
from .device import MappedMutTensor, MutTensor, RefTensor
from .native import FAST
from .preconditions import Precondition
from .types import ConstParam, ScalarParam, TensorParam, parse_annotation
from .verify import verify_entry
from ..locks import FORK_LOCKS

if TYPE_CHECKING:  # launch.py imports this module
    from .launch import LaunchOp


_LaunchOp = None  # safe.launch.LaunchOp, bound on the first launch (circular import)


@dataclass(frozen=True)
class ParamKey:
    """The compile-relevant facts of one bound parameter."""

    kind: str  # 'mut' | 'mapped' | 'ref' | 'scalar' | 'const'
    dtype: Any = None
    ndim: int = 0
    shape: tuple = ()  # mut/mapped: sub-tensor shape; ref: static sizes (None = dynamic)
    grid_rank: int = 0
    value: Any = None  # const
    signature: Any = None  # const: what == ignores about the value (frontend.kernel.const_signature)

    def spec(self):
        if self.kind == "const":
            return ConstSpec(self.value)
        if self.kind == "scalar":
            return ScalarSpec(self.dtype)
        if self.kind == "ref":
            static = self.shape if any(s is not None for s in self.shape) else None
            return ArraySpec(self.dtype, self.ndim, True, static)
        return ArraySpec(self.dtype, self.ndim, False, None)


@dataclass
class Compiled:
    fn: Function
    shim: Kernel  # carries constant_params and the backend cache for this specialisation
    specs: tuple
    gpu: Any = None  # the Triton backend's launcher for it, made on the first GPU launch (launch.run_plan)


class KernelCaches:
    """Everything an entry kernel caches, shared by its configured copies (``kernel.grid(...)``
    and friends put their configuration into the keys): compiled specialisations, the
    type-level checks' results and checked plans (``launch.prepare``), each keyed on every
    fact it depends on. Reads are plain dict reads (atomic); stores take the lock, and the
    first result stored wins."""

    __slots__ = ("compiled", "types", "plans", "lock", "compile_lock", "captured", "last")
    LIMIT = 256  # type checks / plans kept (then that table starts over)

    def __init__(self):
        self.compiled: dict[tuple, Compiled] = {}
        self.types: dict[tuple, Any] = {}
        self.plans: dict[tuple, Any] = {}
        self.lock = FORK_LOCKS.new()
        self.compile_lock = FORK_LOCKS.new()
        self.captured = CaptureSet()  # the Python state compiled specialisations read
        # the latest (key, plan) found in ``plans``, one tuple replaced whole (threads see a consistent
        # pair): a launch like the previous one compares keys (identity per fact) instead of hashing one
        self.last: tuple = ((), None)

    def refresh(self) -> None:
        """Drop compiled code, and the checks and plans that hold it, if Python state it read
        has changed since (docs/semantics.md: values read at compile time)."""
        with self.compile_lock, self.lock:
            if not captures_current(self.captured.entries):
                self.compiled.clear()
                self.types.clear()
                self.plans.clear()
                self.last = ((), None)
                self.captured.clear()

    def store(self, table: dict, key: tuple, value: Any) -> Any:
        with self.lock:
            if len(table) >= self.LIMIT:
                table.clear()
            return table.setdefault(key, value)


class EntryKernel:
    """A ``@ct.entry`` kernel. ``kernel(*args)`` builds a lazy, validated ``LaunchOp``."""

    def __init__(self, fn: Callable, preconditions=(), hints: dict | None = None,
                 generics: dict | None = None, grid: Any = None, backend: str | None = None):
        self.fn = fn
        self.__name__ = fn.__name__
        self.__qualname__ = fn.__qualname__
        self.__doc__ = fn.__doc__
        self.__wrapped__ = fn
        self.hints = validate_hints(hints or {})
        sig = inspect.signature(fn)
        self.param_names: list[str] = []
        self.decls: list[Any] = []
        for p in sig.parameters.values():
            if p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD, p.KEYWORD_ONLY):
                raise TileDeclarationError(f"entry kernel {fn.__name__!r}: parameter {p.name!r} must be positional",
                                           declaration_loc(fn, p.name))
            self.param_names.append(p.name)
            try:
                self.decls.append(parse_annotation(self._annotation(p), p.name, fn.__name__))
            except TileDeclarationError as e:
                e.locs[:] = [loc for loc in [declaration_loc(fn, p.name)] if loc is not None]
                raise
        # per parameter, for the launch's per-call checks (launch._signature, launch._ownership)
        self.const_flags = tuple(isinstance(d, ConstParam) for d in self.decls)
        self.mut_flags = tuple(isinstance(d, TensorParam) and d.mutable for d in self.decls)
        self.preconditions = []
        for c in preconditions or ():
            try:
                self.preconditions.append(Precondition(c, fn.__name__, self._precondition_names()))
            except TileDeclarationError as e:
                e.locs[:] = [loc for loc in [declaration_loc(fn)] if loc is not None]
                raise
        # callables may read any Python state, so they run on every launch (strings are a pure
        # function of the facts a plan is cached on: they run when the plan is made)
        self.callable_preconditions = tuple(pc for pc in self.preconditions if pc.fn is not None)
        self.explicit_generics = dict(generics or {})
        self.explicit_grid = grid
        self.backend_name = backend
        self.caches = KernelCaches()
        self.config_key = self._config()

    def _config(self) -> tuple:
        """This configuration's part of the launch caches' keys (copies share the caches)."""
        return (tuple(sorted((k, repr(v)) for k, v in self.explicit_generics.items())), self.explicit_grid,
                self.backend_name)

    def _precondition_names(self) -> set[str]:
        """The names a precondition may use: the parameters and the generic names."""
        names = set(self.param_names)
        for d in self.decls:
            if isinstance(d, TensorParam):
                names.update(x for x in (d.dtype, *d.shape) if isinstance(x, str))
            elif isinstance(d, ScalarParam) and isinstance(d.dtype, str):
                names.add(d.dtype)
        return names

    def _annotation(self, p: inspect.Parameter) -> Any:
        ann = p.annotation
        if ann is inspect.Parameter.empty:
            return None
        if isinstance(ann, str):
            try:
                return eval(ann, self.fn.__globals__)  # noqa: S307 - the user's own annotation
            except TileDeclarationError:
                raise
            except Exception as e:  # noqa: BLE001 - the user's annotation text does not evaluate
                if isinstance(e, NameError) and ann.isidentifier():
                    return ann  # a generic element-type name
                raise TileDeclarationError(f"kernel {self.__name__!r}, parameter {p.name!r}: the annotation "
                                           f"{ann!r} does not evaluate: {describe(e)}") from None
        return ann

    # ------------------------------------------------------------------ configuration

    def _clone(self, **changes) -> EntryKernel:
        k = object.__new__(EntryKernel)
        k.__dict__.update(self.__dict__)
        k.__dict__.update(changes)
        k.config_key = k._config()
        return k

    def generics(self, mapping: dict | None = None, **values) -> EntryKernel:
        """The same kernel with explicit const generics / element types: ``k.generics(B=128)``."""
        g = dict(self.explicit_generics)
        g.update(mapping or {})
        g.update(values)
        for name, v in g.items():
            if isinstance(v, bool) or not (isinstance(v, int) or dt.is_dtype_like(v)):
                raise ArgumentError(f"generic {name}={v!r}: generics are integers or element types")
        g = {n: (v if isinstance(v, int) else dt.as_dtype(v)) for n, v in g.items()}
        return self._clone(explicit_generics=g)

    def grid(self, grid) -> EntryKernel:
        """The same kernel with an explicit launch grid (checked against the partitions)."""
        from ..runtime.launch import normalize_grid
        from .errors import GridError
        try:
            g = normalize_grid(grid)
        except ValueError as e:
            raise GridError(str(e)) from None
        return self._clone(explicit_grid=g)

    const_grid = grid

    def backend(self, name: str | None) -> EntryKernel:
        """Force a backend: 'cpu', 'triton' (GPU code generation), or None (by device)."""
        if name not in (None, "cpu", "triton"):
            raise ArgumentError(f"unknown backend {name!r}: use 'cpu', 'triton' or None")
        return self._clone(backend_name=name)

    # ------------------------------------------------------------------ launching

    def __call__(self, *args, **kwargs) -> LaunchOp:
        # the Python path: while the C twin is loaded, a C method in this name builds the common case
        # (``FAST.build``) and calls this for the rest (safe/native_methods.py)
        global _LaunchOp
        if kwargs:
            self._positional(kwargs)
        if _LaunchOp is None:  # launch.py imports this module: bind the class on first use
            from .launch import LaunchOp
            _LaunchOp = LaunchOp
        return _LaunchOp(self, args)

    def _positional(self, kwargs: dict) -> None:
        if kwargs:
            from .errors import LaunchTypeError
            raise LaunchTypeError(f"kernel {self.__name__!r} takes its arguments by position "
                                  f"({', '.join(self.param_names)}); got keyword argument(s) {', '.join(kwargs)}")

    def compile(self, *args, **kwargs) -> Function:
        """Validate a launch with these arguments and compile it, without running or moving anything."""
        self._positional(kwargs)
        from .launch import check_ownership, prepare
        check_ownership(self, args)
        return prepare(self, args).compiled.fn

    def ir(self, *args) -> str:
        from ..ir.printer import format_function
        return format_function(self.compile(*args))

    def __repr__(self) -> str:
        return f"<safetile entry kernel {self.__name__}>"

    # ------------------------------------------------------------------ specialisation

    def specialize(self, keys: tuple[ParamKey, ...], generics: dict[str, Any]) -> Compiled:
        cache_key = (keys, tuple(sorted(generics.items())), tuple(sorted(self.hints.items())))  # names are distinct
        cache = self.caches.compiled
        c = cache.get(cache_key)
        if c is None:
            with self.caches.compile_lock:
                c = cache.get(cache_key)
                if c is None:
                    FAST.start()  # the C launch path: loaded, or built in the background, once
                    fn = compile_entry(self.fn, self.param_names, keys, generics, self.hints)
                    verify_entry(fn, keys)  # what runs keeps the ownership rules, whatever the Python did
                    shim = Kernel(self.fn, self.hints)
                    self.caches.captured.add(fn.captures)
                    c = cache[cache_key] = Compiled(fn, shim, tuple(k.spec() for k in keys))
        return c

    @property
    def num_compiled(self) -> int:
        """How many specialisations have been compiled (shared by configured copies)."""
        return len(self.caches.compiled)


@interruptible  # compilation: a failure anywhere in it is an ordinary refusal (nothing was cached)
def compile_entry(fn: Callable, names: list[str], keys: tuple[ParamKey, ...], generics: dict[str, Any],
                  hints: dict[str, Any]) -> Function:
    """Compile an entry kernel body with its parameters bound to device-side values."""
    parsed = parse_function(fn)
    builder = Builder()
    body = Block()
    params: list[Param] = []
    captures = Captures()
    scope = closure_scope(fn, captures)
    scope.update(generics)
    for name, k in zip(names, keys):
        if k.kind == "const":
            scope[name] = k.value
            params.append(Param(name, "constant", constant=k.value))
        elif k.kind == "scalar":
            v = Value(TileType(k.dtype, ()), hint=name)
            body.args.append(v)
            scope[name] = Tile(v)
            params.append(Param(name, "scalar", value=v))
        else:
            readonly = k.kind == "ref"
            static = tuple(k.shape) if readonly and any(s is not None for s in k.shape) else None
            v = Value(ArrayType(k.dtype, k.ndim, readonly, static), hint=name)
            body.args.append(v)
            if k.kind == "ref":
                scope[name] = RefTensor(v, name, k.shape)
            elif k.kind == "mut":
                scope[name] = MutTensor(name, Array(v, name), k.shape, k.grid_rank)
            else:
                scope[name] = MappedMutTensor(name, Array(v, name), k.shape, k.grid_rank)
            params.append(Param(name, "array", value=v))
    return compile_body(fn, parsed, builder, body, scope, params, hints, captures)


def entry(fn: Callable | None = None, *, preconditions=(), unchecked: bool = False, **hints):
    """Decorator for safe-style kernels: ``@ct.entry`` or ``@ct.entry(preconditions=[...])``.

    ``@ct.entry(unchecked=True)`` is the explicit escape hatch: it makes an ordinary
    ``@ct.kernel`` (cuTile Python style, launched with ``ct.launch``) with no ownership checks.
    """
    def make(f: Callable):
        require_source(f)
        if unchecked:
            if preconditions:
                raise TileDeclarationError("preconditions belong to safe entry kernels, not unchecked ones",
                                           declaration_loc(f))
            return Kernel(f, hints)
        return EntryKernel(f, preconditions, hints)
    return make if fn is None else make(fn)
