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

import functools
import itertools
import threading
import weakref
from typing import Any

from .errors import AliasError
from .memory import Extent, overlaps
from .ownership import OWNERSHIP

FROZEN, WRITABLE, EXPORTED = "frozen", "writable", "exported"


class Claims:
    """The live claims, by kind (claims are made when holders are made, not per launch)."""

    def __init__(self):
        # OWNERSHIP itself, re-entrant: a finalizer (a collected holder, a dropped unrun memcpy or
        # launch) may run inside any allocation, also while this thread holds it, and it releases its
        # claim or gives arguments back. One lock for claims and moves, so no lock order to break:
        # with two, a finalizer run under the claims lock waited for OWNERSHIP while another thread
        # held OWNERSHIP and waited for the claims lock (red team round 9, case 900)
        self._lock = OWNERSHIP
        self._ids = itertools.count(1)
        self._refs: dict[int, weakref.ref] = {}  # token -> the weak reference whose callback ends it
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
                # what ends it first: a claim is never registered without it. A weak reference whose
                # callback is this module's code (not weakref.finalize's, in the standard library):
                # a Ctrl-C arriving as it runs is held back until it is done (runtime/interrupts.py;
                # red team round 9, case 912: one cut weakref.finalize short and the claim outlived it)
                self._refs[token] = weakref.ref(holder, functools.partial(self._collected, token))
                self._live[kind][token] = (list(extents), label)
            finally:
                self._checking.active = False  # pragma: no mutate (read only for its truth)
        return token

    def release(self, token: int | None) -> None:
        """End a claim (its holder gave the memory back)."""
        if token is not None:
            self._forget(token)

    def _collected(self, token: int, _ref: Any) -> None:  # pragma: no mutate block (a finalizer)
        self._forget(token)

    def _forget(self, token: int) -> None:  # pragma: no mutate block (runs as a finalizer too)
        with self._lock:
            self._refs.pop(token, None)
            for live in self._live.values():
                live.pop(token, None)

    def exported(self, extents: list[Extent]) -> bool:
        """Whether a live DLPack export overlaps ``extents``."""
        with self._lock:
            return any(overlaps(a, b) for ext_b, _ in list(self._live[EXPORTED].values()) for a in extents
                       for b in ext_b)

    def holders(self, kind: str) -> int:
        """How many claims of ``kind`` are live (for tests)."""
        with self._lock:
            return len(self._live[kind])


CLAIMS = Claims()
