"""``os.fork()`` with the safe runtime: the child never waits for work that does not exist there.

A fork copies the process's memory but only the thread that called it. Without care, the
child inherits locks held by threads that are gone (a deadlock on first use) and in-flight
work whose threads are gone (a read or launch over that memory waits forever). So, around
every fork (``os.register_at_fork``; multiprocessing's default start method on Linux forks):

* before: the runtime's process-wide locks are taken in one fixed order, outermost first
  (ownership, which the claims ledger shares, interned facts, stream pools, the in-flight
  registry, its condition), so no other thread is half-way through a change the child would
  see; each is waited for a bounded time (a lock that stays held is still made fresh in the
  child);
* after, in the parent: released in reverse order;
* after, in the child: every lock is fresh (one the forking thread held before, because it
  forked inside a section under it, stays held at its depth for that thread to leave); every
  live stream forgets its worker thread (made again on first use) and fails jobs queued in
  the parent; the work that was in flight is abandoned (``Registry.after_fork_in_child``): its
  memory is refused with ``ForkError``, other memory is usable. Ownership and claims are plain
  objects copied with the process and stay as they were (values moved into abandoned work stay
  moved).

CUDA cannot be used in a forked child at all (torch refuses once the parent used it):
CUDA devices are refused there (``TensorError``); use multiprocessing's 'spawn' or
'forkserver' start method for GPU workers.
"""
from __future__ import annotations

import os

from . import facts, memory, ownership, streams
from .errors import ForkError

LOCK_WAIT = 2.0  # seconds before a fork waits for each lock at most


class ForkGuard:
    """The one registration with ``os.register_at_fork``: calls each owner of per-process state."""

    def __init__(self):
        self._held: list = []  # the locks taken before the fork in progress (the forking thread's)
        self._owned: list = []  # of those, the ones the forking thread held already (it forked under them)

    @staticmethod
    def locks() -> list:
        """The runtime's locks in their order (the claims ledger takes OWNERSHIP itself)."""
        return [ownership.OWNERSHIP, facts._INTERN_LOCK, streams._pool_lock, memory.REGISTRY._lock, memory._FLAGS]

    def before(self) -> None:
        locks = self.locks()
        self._owned = [lock for lock in locks if getattr(lock, "_is_owned", lambda: False)()]
        self._held = [lock for lock in locks if lock.acquire(timeout=LOCK_WAIT)]

    def after_in_parent(self) -> None:
        held, self._held = self._held, []
        for lock in reversed(held):
            lock.release()

    def after_in_child(self) -> None:
        held, owned, self._held, self._owned = self._held, self._owned, [], []
        for lock in self.locks():  # fresh, or kept for the forking thread that held it before the fork
            memory.reinit_lock(lock, keep=any(lock is o for o in owned))
        memory.REGISTRY.after_fork_in_child()
        memory.flags_after_fork_in_child()
        error = ForkError("this work was queued in the parent process when it forked; it never runs in this child")
        for s in list(streams.Stream._live):
            s.after_fork_in_child(error)
        for lock in reversed(held):  # a kept lock: the guard's own take of it ends, the thread's stays
            if any(lock is o for o in owned):
                lock.release()


FORK_GUARD = ForkGuard()
if hasattr(os, "register_at_fork"):
    os.register_at_fork(before=FORK_GUARD.before, after_in_parent=FORK_GUARD.after_in_parent,
                        after_in_child=FORK_GUARD.after_in_child)
