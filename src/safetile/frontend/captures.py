"""What a compiled kernel read from Python at compile time, so a change is never missed.

The front end folds module globals, closure variables and attributes of user objects into
the code it generates (``SCALE = 2.0`` becomes a literal, a helper function is inlined).
Each such read is recorded as ``(holder, key, value)``: the dict (module ``__dict__``,
object ``__dict__``, class namespace) or closure cell it came from and the value seen.
Before a launch reuses compiled code, ``Captures.current`` checks that every holder still
holds the same value; when one changed (``SCALE = 3.0``, a redefined helper), the kernel's
compiled code is dropped and the next launch compiles again.

Values are compared by identity, except plain immutable scalars and tuples of them, which
compare by type and value (re-assigning an equal constant does not recompile). Reads of
library modules and objects (safetile, NumPy, math, ...) are not recorded: their APIs are
taken as fixed. Values computed by properties or ``__getattr__`` are read once, at compile
time (documented in docs/semantics.md).
"""
from __future__ import annotations

import functools
import math
import types
from collections.abc import Callable
from typing import Any

from .common import Undefined
from ..locks import FORK_LOCKS

_LIBRARY_ROOTS = frozenset({"safetile", "numpy", "math", "builtins", "operator", "functools", "typing", "enum",
                            "dataclasses", "ml_dtypes", "torch", "triton", "cmath", "itertools", "collections"})
_SCALARS = (int, float, bool, str, bytes, complex, type(None))
ABSENT = object()  # recorded for a name that was not defined (a later definition recompiles)
TORN = object()  # recorded for a name read twice with two values in one compile: never current


def _root(name: Any) -> str:
    return name.split(".", 1)[0] if isinstance(name, str) else ""


def is_library(obj: Any) -> bool:
    """Objects whose attributes are a fixed API: library modules, and library classes/instances."""
    if isinstance(obj, types.ModuleType):
        return _root(obj.__name__) in _LIBRARY_ROOTS
    owner = obj if isinstance(obj, type) else type(obj)
    return _root(getattr(owner, "__module__", None)) in _LIBRARY_ROOTS


def same_value(a: Any, b: Any) -> bool:
    """Identity, or equal plain constants of the same type (NaN equals NaN; 0.0 and -0.0 differ)."""
    if a is b:
        return True
    if type(a) is not type(b):
        return False
    if isinstance(a, float):
        return (a == b and math.copysign(1.0, a) == math.copysign(1.0, b)) or (a != a and b != b)
    if isinstance(a, complex):
        return same_value(a.real, b.real) and same_value(a.imag, b.imag)
    if isinstance(a, _SCALARS):
        return a == b
    if isinstance(a, tuple):
        return len(a) == len(b) and all(same_value(x, y) for x, y in zip(a, b))
    return False


def _cell_value(cell: Any) -> Any:
    try:
        return cell.cell_contents
    except ValueError:  # emptied or not yet bound
        return ABSENT


class Captures:
    """The Python state one compilation read; owned by that compilation (not shared)."""

    __slots__ = ("_entries",)

    def __init__(self) -> None:
        self._entries: dict[tuple[int, Any], tuple[Any, Any, Any]] = {}

    def _read(self, holder: Any, key: Any, value: Any) -> None:
        """One read. A second read of the same place that sees another value (the code changed it
        mid-compile, e.g. in ``ct.static_eval``, or another thread did) means the compiled code
        mixes two values: it is recorded as ``TORN``, never current, so the next launch compiles
        again rather than keep code that no single state of the program gives."""
        k = (id(holder), key)
        old = self._entries.get(k)
        if old is None:
            self._entries[k] = (holder, key, value)
        elif old[2] is not value and not same_value(old[2], value):
            self._entries[k] = (holder, key, TORN)

    def name(self, namespace: dict, key: str, value: Any) -> None:
        """A global (or builtin-shadowing) name looked up in ``namespace``."""
        self._read(namespace, key, value)

    def cell(self, cell: Any, value: Any) -> None:
        """A closure variable read from ``cell``."""
        self._read(cell, None, value)

    def attribute(self, obj: Any, attr: str, value: Any) -> None:
        """``obj.attr`` read at compile time: recorded on the namespace that holds it, and as
        absent from every namespace searched before it (an instance attribute set later would
        shadow a class attribute)."""
        if is_library(obj):
            return
        found = _lookup_path(obj, attr)
        if found is None:
            return
        before, holder = found
        for ns in before:
            self._read(ns, attr, ABSENT)
        self._read(holder, attr, value)

    def function(self, fn: Any) -> None:
        """A Python function inlined as tile code: its code, defaults and closure cells are part
        of what was compiled (``fn.__code__ = ...`` or new defaults recompile)."""
        self._entries.setdefault((id(fn), FUNCTION_STATE), (fn, FUNCTION_STATE, _function_state(fn)))

    def freeze(self) -> tuple:
        return tuple(self._entries.values())


def _lookup_path(obj: Any, attr: str) -> tuple[list, Any] | None:
    """The namespaces searched for ``obj.attr`` before the one holding it, and that one
    (None: a computed attribute, e.g. a property or a slot)."""
    before: list = []
    own = getattr(obj, "__dict__", None)
    if own is not None:
        if attr in own:
            return before, own
        if not isinstance(obj, type):
            before.append(own)
    for klass in (obj.__mro__ if isinstance(obj, type) else type(obj).__mro__):
        ns = klass.__dict__
        if attr in ns:
            member = ns[attr]
            if hasattr(member, "__get__") and not isinstance(member, (types.FunctionType, staticmethod, classmethod)):
                return None  # a property or other descriptor: computed, read once
            return before, ns
        before.append(ns)
    return None


FUNCTION_STATE = object()  # the key of a function's recorded state (code, defaults, closure)
_FUNCTION_ATTRS = ("__code__", "__defaults__", "__kwdefaults__", "__closure__")  # as _function_state reads them


def _unchanged() -> bool:
    return True


def identity_check(entries: tuple) -> Callable[[], bool]:
    """A function computing ``current(entries)``: the identity tests of every recorded read,
    generated as one expression (a launch pays a few attribute reads, not a loop), then
    ``current`` itself when any differs (an equal constant re-assigned is still current)."""
    if not entries:
        return _unchanged
    if len(entries) > 200:
        return functools.partial(current, entries)
    scope: dict[str, Any] = {"current": current, "entries": entries, "ABSENT": ABSENT, "_cell_value": _cell_value}
    terms = []
    for i, (holder, key, value) in enumerate(entries):
        scope[f"h{i}"] = holder
        if key is FUNCTION_STATE:
            for j, attr in enumerate(_FUNCTION_ATTRS):
                scope[f"v{i}_{j}"] = value[j]
                terms.append(f"h{i}.{attr} is v{i}_{j}")
        elif key is None:
            scope[f"v{i}"] = value
            terms.append(f"_cell_value(h{i}) is v{i}")
        else:
            scope[f"k{i}"], scope[f"v{i}"] = key, value
            terms.append(f"h{i}.get(k{i}, ABSENT) is v{i}")
    source = f"def check():\n    return ({' and '.join(terms)}) or current(entries)\n"
    exec(compile(source, "<safetile capture check>", "exec"), scope)  # noqa: S102 - our own text
    return scope["check"]


def _function_state(fn: Any) -> tuple:
    return (fn.__code__, fn.__defaults__, fn.__kwdefaults__, fn.__closure__)


def closure_scope(fn: Any, captures: Captures) -> dict[str, Any]:
    """``fn``'s closure variables, each read recorded (a cell not yet bound is an ``Undefined``);
    ``fn`` is about to be compiled, so its code and defaults are recorded too."""
    captures.function(fn)
    scope: dict[str, Any] = {}
    for name, cell in zip(fn.__code__.co_freevars, fn.__closure__ or ()):
        value = _cell_value(cell)
        captures.cell(cell, value)
        scope[name] = Undefined("is a free variable that has no value yet") if value is ABSENT else value
    return scope


def current(entries: tuple) -> bool:
    """Whether every recorded read would still give the same value."""
    for holder, key, value in entries:
        if key is FUNCTION_STATE:
            if any(a is not b for a, b in zip(_function_state(holder), value)):
                return False
            continue
        now = _cell_value(holder) if key is None else holder.get(key, ABSENT)
        if now is not value and not same_value(now, value):
            return False
    return True


class CaptureSet:
    """The union of what a kernel's compiled specialisations read (checked before each launch).

    Owned by one kernel; ``add`` runs under the kernel's compile lock, ``current`` is a read of
    an immutable tuple, so launches never take a lock. ``check()`` is ``current(entries)`` for
    launches: one generated expression of identity tests (every holder still holds the very
    object recorded), falling back to ``current`` when any differs. It is replaced after
    ``entries``, so a launch that sees an older one checks a subset that covers every
    specialisation compiled before it.
    """

    __slots__ = ("entries", "check", "_lock")

    def __init__(self) -> None:
        self.entries: tuple = ()
        self.check: Callable[[], bool] = _unchanged
        self._lock = FORK_LOCKS.new()

    def add(self, entries: tuple) -> None:
        if not entries:
            return
        with self._lock:
            seen = {(id(h), k) for h, k, _ in self.entries}
            self.entries = self.entries + tuple(e for e in entries if (id(e[0]), e[1]) not in seen)
            self.check = identity_check(self.entries)

    def clear(self) -> None:
        with self._lock:
            self.entries = ()
            self.check = _unchanged
