"""The locks of safetile's objects (compile locks, caches, graphs, native builds), usable in a
forked child.

``os.fork()`` copies only the calling thread. A lock another thread held at that moment (a kernel
compiling, a C module building in the background) stays held in the child with nobody left to
release it: the child's first use of that kernel would wait forever. Every such lock is made by
``FORK_LOCKS``, which knows them all (weakly) and, in the child, makes each fresh and unlocked —
except one the forking thread itself holds (it forked inside that section, from user code safetile
ran there), which stays held for that thread to leave. What the lock guarded is left as the other
thread left it: safetile stores a result only once it is complete (a compile that was under way is
simply not there in the child).

The runtime's process-wide locks (ownership, the in-flight registry, ...) are taken before a fork
and renewed after it by ``safe/forking.py``; streams and the interrupt gate renew their own.
"""
from __future__ import annotations

import _thread
import os
import threading
import weakref
from typing import Any


class OwnedLock:
    """A non-reentrant lock that knows which thread holds it (``threading.Lock`` does not), so a
    fork can tell whether the forking thread holds it. It may be released by another thread (a
    graph's replay ends on the thread that ran it)."""

    __slots__ = ("_lock", "_owner", "__weakref__")

    def __init__(self) -> None:
        self._lock = _thread.allocate_lock()
        self._owner: int | None = None

    def acquire(self, blocking: bool = True, timeout: float = -1) -> bool:
        if self._lock.acquire(blocking, timeout):
            self._owner = _thread.get_ident()
            return True
        return False

    def release(self) -> None:
        self._owner = None
        self._lock.release()

    def __enter__(self) -> bool:
        return self.acquire()

    def __exit__(self, *exc: Any) -> None:
        self.release()

    def locked(self) -> bool:
        return self._lock.locked()

    def _is_owned(self) -> bool:
        return self._owner == _thread.get_ident() and self._lock.locked()

    def _at_fork_reinit(self) -> None:
        self._lock._at_fork_reinit()  # type: ignore[attr-defined]
        self._owner = None


class ForkLocks:
    """Makes the locks of safetile's objects and renews them in a forked child (module docstring)."""

    def __init__(self) -> None:
        self._made: weakref.WeakSet = weakref.WeakSet()
        self._guard = _thread.allocate_lock()  # for _made
        self._kept: list = []  # the locks the forking thread holds, during a fork

    def new(self, reentrant: bool = False) -> Any:
        """A fresh lock (``threading.RLock`` when ``reentrant``, else an ``OwnedLock``)."""
        lock = threading.RLock() if reentrant else OwnedLock()
        with self._guard:
            self._made.add(lock)
        return lock

    def before(self) -> None:
        with self._guard:
            locks = list(self._made)
        self._kept = [lock for lock in locks if lock._is_owned()]

    def after_in_parent(self) -> None:
        self._kept = []

    def after_in_child(self) -> None:
        self._guard = _thread.allocate_lock()  # another thread may have held it
        kept, self._kept = self._kept, []
        for lock in list(self._made):
            if not any(lock is k for k in kept):
                lock._at_fork_reinit()


FORK_LOCKS = ForkLocks()
if hasattr(os, "register_at_fork"):
    os.register_at_fork(before=FORK_LOCKS.before, after_in_parent=FORK_LOCKS.after_in_parent,
                        after_in_child=FORK_LOCKS.after_in_child)
