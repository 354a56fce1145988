"""The safe launch's common case in C (the source: native_source.py).

* ``build(kernel, args)``: ``LaunchOp(kernel, args)`` when every argument is an exact
  ``Partition``, ``Shared``, ``Tensor`` or raw ``torch.Tensor`` (aliased as ``prepare_runtime``
  does), or a plain ``int``/``float``/``bool``, and the key is the latest plan's fact for fact
  (identity; scalars as tuples compare them, a zero float with its sign), with the same
  ``SAFETILE_BACKEND``, no callable precondition, the captured Python state unchanged and torch
  memory not moved; ownership is moved under ``OWNERSHIP`` as ``LaunchOp._take`` does.
* ``run(op, ctx)``: ``LaunchOp._run`` for a bound GPU plan whose terminal's in-flight entry is the
  only one registered and already holds the plan (``Registry.reclaim``'s case); it checks
  ``Plan.pins``, keeps the arguments' memory with the terminal, submits, and gives the arguments
  back. Past the state change it never declines: a lost registry race continues in
  ``LaunchOp._execute``, a failure in ``LaunchOp._fail``.

A chained safe launch was ~14 Python frames of bookkeeping against the unchecked launch's one
C call (bench/NOTES.md, issue 9 "no regression"). ``FAST.build(kernel, args)`` and
``FAST.run(op, ctx)`` do that bookkeeping in C for the case that dominates (a plan launched
again with the same facts) and answer ``None`` for everything else, which then takes the
Python path: the checks themselves stay in Python and are not duplicated, the C code only
finds the existing plan and moves ownership as ``LaunchOp._take``/``_give_back`` do. While
loaded, the methods that call them (``EntryKernel.__call__``, ``LaunchOp._run``, and the
frames around them, ``LaunchOp.__del__`` and ``DeviceOp.then``) are C method descriptors too
(native_methods.py), each falling back to the Python definition it replaced.

The module is built once per installation (``runtime/native.py``), in the background beside a
safe kernel's first compile; until it is loaded (or where it cannot be built, or with
``SAFETILE_SAFE_NATIVE=0``) both entry points are ``None`` and every launch takes the Python path.
"""
from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

from ..runtime import env, torch_facts
from ..runtime.native import NativeModule
from ..runtime.native import cache_dir as native_cache_dir
from .native_lock import LOCK
from .native_methods import METHODS
from .native_run import RUN
from .native_source import SOURCE
from ..locks import FORK_LOCKS

MODULE = NativeModule("safetile_safe_native", LOCK + SOURCE + RUN + METHODS)


class FastPath:
    """The loaded C entry points (``None`` until loaded, or when unavailable or turned off).

    Each attribute is replaced whole, once; readers take it without locking."""

    __slots__ = ("build", "run", "_lock", "_tried")

    def __init__(self) -> None:
        self.build: Callable[[Any, tuple], Any] | None = None
        self.run: Callable[[Any, Any], Any] | None = None
        self._lock = FORK_LOCKS.new()
        self._tried = False

    def load(self, build: bool) -> bool:
        """Load the module (building it first when ``build``) and set the entry points; True when set."""
        if self.build is not None:
            return True
        if not env.safe_native() or env.backend_source() is None:
            return False
        m = MODULE.get(build)
        if m is None:
            return False
        with self._lock:
            if self.build is None:
                classes, objects = _objects()
                m.setup(classes, objects)
                m.methods_setup(classes, {**objects, "fast": self, "build": m.build, "run": m.run})
                m.use_facts(torch_facts.capsule())
                self.run = m.run
                self.build = m.build
                m.install(True)
        return True

    def use_facts(self, capsule: Any) -> None:
        """Read torch tensors' facts through this C++ reader (runtime/torch_facts.py's capsule), or
        through torch's Python methods (None)."""
        m = MODULE.loaded()
        if m is not None:
            m.use_facts(capsule)

    def start(self) -> None:
        """On a safe kernel's first compile: load the module if built, else build it in the background."""
        if self._tried or self.build is not None:
            return
        self._tried = True
        facts = torch_facts.prebuild()
        if facts is not None:
            threading.Thread(target=_facts_after, args=(self, facts), daemon=True,
                             name="safetile-safe-facts-load").start()
        if not self.load(build=False) and env.safe_native():
            t = MODULE.prebuild()
            if t is not None:
                threading.Thread(target=_load_after, args=(self, t), daemon=True,
                                 name="safetile-safe-native-load").start()

    def off(self) -> None:
        """Back to the Python path (tests compare both): the Python methods too."""
        with self._lock:
            self.build = self.run = None
            m = MODULE.loaded()
            if m is not None:
                m.install(False)


def new_lock() -> Any:
    """A re-entrant lock the C twin takes as well (``OWNERSHIP``, the registry's): the module's
    ``Lock`` when the module is already built (native_lock.py says why), else ``threading.RLock``.
    Chosen when the lock is made, without building or waiting: the C twin takes either kind."""
    if env.safe_native() and native_cache_dir() is not None:
        m = MODULE.get(build=False)
        if m is not None and hasattr(m, "Lock"):
            return m.Lock()
    return threading.RLock()


def _load_after(fast: FastPath, t: threading.Thread) -> None:
    t.join()
    fast.load(build=False)


def _facts_after(fast: FastPath, builder: Any) -> None:
    builder.wait()
    if fast.build is not None:
        fast.use_facts(torch_facts.capsule())


def _objects() -> tuple[dict, dict]:
    """What the C code reads: the classes whose slots it uses and the runtime's shared objects."""
    try:
        from ..backends.triton.launcher import Bound
    except ImportError:  # no GPU backend: no plan is ever bound
        class Bound:  # type: ignore[no-redef]
            __slots__ = ("call", "grid", "tail", "device")
    from ..frontend.captures import ABSENT, FUNCTION_STATE, CaptureSet, _unchanged
    from . import memory, ownership, streams
    from .checks import Plan, TypeCheck
    from .deviceop import DeviceOp, ExecContext, Then
    from .entry import EntryKernel, KernelCaches
    from .facts import ArgFacts
    from .launch import LaunchOp, _op_ids, _OpRef, _TorchTensor
    from .partition import Partition, Shared
    from .tensor import Tensor
    classes = {"Partition": Partition, "Shared": Shared, "Tensor": Tensor, "LaunchOp": LaunchOp,
               "KernelCaches": KernelCaches, "ExecContext": ExecContext, "InFlight": memory.InFlight,
               "torch_Tensor": _TorchTensor, "ArgFacts": ArgFacts, "CaptureSet": CaptureSet,
               "Bound": Bound, "Plan": Plan, "EntryKernel": EntryKernel, "DeviceOp": DeviceOp, "Then": Then,
               "FastPath": FastPath, "TypeCheck": TypeCheck, "Registry": memory.Registry}
    source = env.backend_source()
    assert source is not None  # checked by load()
    data, key = source
    objects = {"OpRef": _OpRef, "op_ids": _op_ids, "acquire": ownership.OWNERSHIP.acquire,
               "release": ownership.OWNERSHIP.release, "local": streams._local, "internal": ownership._internal,
               "unchanged": _unchanged, "env_data": data, "env_key": key, "registry": memory.REGISTRY,
               "waiters": memory._WAITERS, "notify_all": memory.notify_all,
               "caller_location": ownership.caller_location, "function_state": FUNCTION_STATE, "absent": ABSENT}
    return classes, objects


FAST = FastPath()
