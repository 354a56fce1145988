"""Move semantics for host values: a moved value cannot be used until it is given back.

Every host value of the safe style (tensor, partition, mapped partition) carries an
ownership state. ``t.partition(...)`` moves ``t`` into the partition; calling a kernel
moves its tensor and partition arguments into the launch until the launch's result
gives them back. Using a moved value raises ``UseAfterMoveError`` naming what moved it.
"""
from __future__ import annotations

import itertools
import os
import sys
import warnings
import weakref
from typing import TYPE_CHECKING, Any

from .errors import OwnershipError, UseAfterMoveError
from .native import new_lock
from .streams import current_context

if TYPE_CHECKING:  # deviceop.py imports this module
    from types import FrameType

    from .deviceop import ExecContext

_ids = itertools.count(1)

# Every ownership transition (a check that a value is usable and the move that follows, a give
# back, a borrow, a shared handle's holders) happens under this one lock, so two threads can never
# both take one value: the check and the move are one step. It is held for microseconds.
OWNERSHIP = new_lock()  # threading.RLock's interface; a C lock when the safe C module is built (native.py)
_PKG_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


# frames that are not where the user made a call: the package, the event loop and thread machinery,
# and mutmut's trampolines (mutation testing wraps every function of the package in one)
_SKIP = (_PKG_DIR, os.sep + "asyncio" + os.sep, os.sep + "concurrent" + os.sep, os.sep + "threading.py",
         os.sep + "mutmut" + os.sep)


_internal: dict[str, bool] = {}  # code file name -> whether caller_site skips its frames


def caller_location(depth: int = 1) -> tuple[str, int] | None:
    """(file name, line) of the first frame outside safetile (where the user made the call),
    looking from ``depth`` frames up (callers that know their own depth skip frames of the package)."""
    f: FrameType | None = sys._getframe(depth)
    while f is not None:
        fn = f.f_code.co_filename
        skip = _internal.get(fn)  # pragma: no mutate (a cache: computing it again gives the same)
        if skip is None:
            if len(_internal) > 4096:  # pragma: no mutate (the cache's size bound)
                _internal.clear()
            skip = _internal[fn] = fn.startswith(_PKG_DIR) or any(s in fn for s in _SKIP[1:])
        if not skip:
            return fn, f.f_lineno
        f = f.f_back
    return None


def warn_at_caller(message: str, category: type[Warning]) -> None:
    """``warnings.warn`` pointing at the first frame outside safetile (where ``caller_location``
    points), whatever frames wrap the ones in between."""
    target = caller_location(2)
    f: FrameType | None = sys._getframe(1)
    level = 2  # warn's stack level of f (1: this function)
    while f is not None and (f.f_code.co_filename, f.f_lineno) != target:
        f = f.f_back
        level += 1
    warnings.warn(message, category, stacklevel=level if f is not None else 2)


def format_location(loc: tuple[str, int] | None) -> str:
    """``file:line`` of a ``caller_location``."""
    if loc is None:
        return "<unknown>"
    return f"{os.path.basename(loc[0])}:{loc[1]}"


def caller_site() -> str:
    """``file:line`` of the first frame outside safetile (where the user made the call)."""
    return format_location(caller_location())


class LazyText:
    """``make(*args)``, built only when shown (an error message, a repr): labels on the launch
    path name live objects, and most are never shown (no closure is made per launch)."""

    __slots__ = ("make", "args")

    def __init__(self, make, *args):
        self.make = make
        self.args = args

    def __str__(self) -> str:
        return self.make(*self.args)

    def __format__(self, spec: str) -> str:
        return format(str(self), spec)

    def __repr__(self) -> str:
        return repr(str(self))


def _no_copy(obj, how: str, instead: str):
    raise OwnershipError(f"{obj.label} cannot be {how}: it owns or holds device memory, and a duplicate would be a "
                         f"second owner of it; {instead}")


class NoCopy:
    """A value that is the only owner (or holder) of what it refers to: ``copy.copy``,
    ``copy.deepcopy`` and pickling (``__reduce_ex__``, ``__reduce__``, and ``__getstate__``, which
    would hand out the private slots) are refused (a duplicate would be a second owner, outside
    every ownership rule)."""

    __slots__ = ()
    _copy_hint = "make a new one instead"  # what to do instead of copying
    _pickle_hint = "pickle its data (.to_numpy()) instead"

    def __copy__(self):
        _no_copy(self, "copied", self._copy_hint)

    def __deepcopy__(self, memo):
        _no_copy(self, "deep-copied", self._copy_hint)

    def __reduce_ex__(self, protocol):
        _no_copy(self, "pickled", self._pickle_hint)

    def __reduce__(self):
        _no_copy(self, "pickled", self._pickle_hint)

    def __getstate__(self):  # the pickling protocol's state: the private slots, writable arrays included
        _no_copy(self, "pickled", self._pickle_hint)


class Handle(NoCopy):
    """A handle on one-shot work (a DeviceOp, a graph): a copy is the handle itself, as when the
    same object is referenced twice (the work still runs once); pickling is refused."""

    __slots__ = ()
    _pickle_hint = "build it again where it is needed"

    def __copy__(self):
        return self

    def __deepcopy__(self, memo):
        return self


class Unique(NoCopy):
    """``NoCopy``, and final outside safetile: a subclass could override the ownership checks."""

    __slots__ = ()

    def __init_subclass__(cls, **kw):
        super().__init_subclass__(**kw)
        if cls.__module__.split(".")[0] != __name__.split(".")[0]:
            raise OwnershipError(f"{cls.__name__}: safetile's {cls.__mro__[1].__name__} cannot be subclassed (its "
                            "ownership checks would be open to overriding)")


class Owned(Unique):
    """Base of host values with move semantics."""

    __slots__ = ("_id", "_name", "_moved", "_holder", "_lent", "__weakref__")

    _kind = "value"
    _copy_hint = "use .dup() (a lazy copy of the data) or a view instead"

    def __init__(self, name: str | None = None):
        self._id = next(_ids)
        self._name = name
        # what moved it (text, or an object that formats to it: a LazyText, a launch's weak
        # reference), None while usable
        self._moved: str | LazyText | weakref.ref[Any] | None = None
        self._holder: weakref.ref[Any] | None = None  # the launch op holding it, if moved into a launch
        self._lent: ExecContext | None = None  # the running terminal it was given back to, until that ends

    @property
    def label(self) -> str:
        return f"{self._kind} {self._name!r}" if self._name else f"{self._kind}#{self._id}{self._brief()}"

    def _brief(self) -> str:
        return ""

    def _check(self, action: str | LazyText) -> None:
        """Raise if this value was moved; ``action`` says what the caller tried to do."""
        if self._moved is not None:
            raise UseAfterMoveError(f"{self.label} cannot be {action}: it was moved into {self._moved}")
        lent = self._lent
        if lent is not None and lent is not current_context():
            raise UseAfterMoveError(f"{self.label} cannot be {action}: it is in use by {lent.label}, which has not "
                                    "finished; that terminal's result gives it back")

    def _move(self, into: str, holder=None) -> None:
        """Move the value (the caller has checked, under ``OWNERSHIP``, that it is usable). ``holder``
        (an operation) is kept weakly: a dropped operation is not kept alive by its arguments."""
        with OWNERSHIP:
            self._moved = into
            self._holder = (getattr(holder, "_ref", None) or weakref.ref(holder)) if holder is not None else None

    @property
    def holder(self):
        """The operation this value was moved into, while it is alive and holds it (else None)."""
        h = self._holder
        return h() if h is not None else None

    def _give_back(self, ctx=None) -> None:
        """Usable again; when given back inside a running terminal (``ctx``), only by that
        terminal's own code (its ``then`` closures) until it ends: the launches it submitted
        may still be running, and the values belong to the whole chain (as moves do in Rust)."""
        with OWNERSHIP:
            self._moved = None
            self._holder = None
            if ctx is not None and self._lent is not ctx:
                self._lent = ctx
                ctx.lent.append(self)

    @property
    def is_moved(self) -> bool:
        """Whether this value was moved away (checking this never raises)."""
        return self._moved is not None
