"""Read-only memory has no mutable alias: the ledger of frozen and writable claims.

A ``Shared`` handle promises that nothing writes its memory while it lives. Ownership
alone cannot keep that promise, because other objects can reach the same bytes: a view
taken before ``.shared()``, a second ``ct.from_dlpack`` of the same array, a captured
graph whose replays write memory that became shared after the capture. So memory is
claimed, by extent:

* frozen, by every live ``Shared`` handle;
* writable, by every live ``Partition`` / ``MappedPartition`` (the only way a launch
  writes), every ``memcpy`` not yet run, and every live ``Graph`` (for the memory its
  replays write);
* exported, by every live DLPack export of a tensor (``Tensor.__dlpack__``: the consumer may
  write it), held by a fresh alias object that lives exactly as long as the export.

A new claim that overlaps a live claim of the other kind (frozen against writable or
exported) is refused with an ``AliasError`` naming the holder; nothing is moved. A claim ends when its holder gives the
memory back (``unpartition``, ``release``, ``try_unwrap``, ``Graph.close``) or is
garbage-collected.
"""
from __future__ import annotations

import itertools
import threading
import weakref
from typing import Any

from .errors import AliasError
from .memory import Extent, overlaps, reinit_lock

FROZEN, WRITABLE, EXPORTED = "frozen", "writable", "exported"


class Claims:
    """The live claims, by kind (one lock; claims are made when holders are made, not per launch)."""

    def __init__(self):
        # re-entrant: a finalizer (a collected holder, a dropped unrun memcpy) may run inside any
        # allocation, also while this thread holds the lock, and it releases its claim
        self._lock = threading.RLock()
        self._ids = itertools.count(1)
        self._live: dict[str, dict[int, tuple[list[Extent], Any]]] = {FROZEN: {}, WRITABLE: {}, EXPORTED: {}}
        # the thread is between a claim's check and its registration: the lock, re-entrant, does
        # not keep out a signal handler or finalizer run on this thread in that window
        self._checking = threading.local()

    def claim(self, holder: Any, kind: str, extents: list[Extent], label: Any, what: str) -> int:
        """Register ``holder``'s claim (ended by ``release`` or when ``holder`` is collected);
        raise ``AliasError`` (``what`` is being refused) if it overlaps a claim of the other kind."""
        others = (WRITABLE, EXPORTED) if kind == FROZEN else (FROZEN,)
        with self._lock:
            if getattr(self._checking, "active", False):
                raise AliasError(f"{what}: refused because it interrupts another claim on this thread (a "
                                 "signal handler or finalizer running between that claim's check and its "
                                 "registration); make it outside such handlers")
            self._checking.active = True
            try:
                for other in others:
                    for ext_b, label_b in list(self._live[other].values()):  # a snapshot: see __init__
                        for a in extents:
                            if any(overlaps(a, b) for b in ext_b):
                                why = ("it is read-only shared memory" if other == FROZEN
                                       else "it can still be written")
                                err = AliasError(f"{what}: its memory overlaps memory held by {label_b}, and "
                                                 f"{why}; a Shared value has no writable alias anywhere")
                                err.conflict = other  # the kind of claim in the way (see Shared._take)
                                raise err
                token = next(self._ids)
                # the finalizer first: a claim is never registered without what ends it
                weakref.finalize(holder, self._forget, token)
                self._live[kind][token] = (list(extents), label)
            finally:
                self._checking.active = False  # pragma: no mutate (read only for its truth)
        return token

    def release(self, token: int | None) -> None:
        """End a claim (its holder gave the memory back)."""
        if token is not None:
            self._forget(token)

    def _forget(self, token: int) -> None:  # pragma: no mutate block (runs as a finalizer too)
        with self._lock:
            for live in self._live.values():
                live.pop(token, None)

    def exported(self, extents: list[Extent]) -> bool:
        """Whether a live DLPack export overlaps ``extents``."""
        with self._lock:
            return any(overlaps(a, b) for ext_b, _ in list(self._live[EXPORTED].values()) for a in extents
                       for b in ext_b)

    def after_fork_in_child(self) -> None:
        """os.fork() (safe/forking.py): the claims stay as they were (their holders were copied too);
        the lock is fresh."""
        reinit_lock(self._lock)

    def holders(self, kind: str) -> int:
        """How many claims of ``kind`` are live (for tests)."""
        with self._lock:
            return len(self._live[kind])


CLAIMS = Claims()
