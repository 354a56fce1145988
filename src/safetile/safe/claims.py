"""Read-only memory has no mutable alias: the ledger of frozen and writable claims.

A ``Shared`` handle promises that nothing writes its memory while it lives. Ownership
alone cannot keep that promise, because other objects can reach the same bytes: a view
taken before ``.shared()``, a second ``ct.from_dlpack`` of the same array, a captured
graph whose replays write memory that became shared after the capture. So memory is
claimed, by extent:

* frozen, by every live ``Shared`` handle;
* writable, by every live ``Partition`` / ``MappedPartition`` (the only way a launch
  writes), every ``memcpy`` not yet run, and every live ``Graph`` (for the memory its
  replays write).

A new claim that overlaps a live claim of the other kind is refused with an
``AliasError`` naming the holder; nothing is moved. A claim ends when its holder gives the
memory back (``unpartition``, ``release``, ``try_unwrap``, ``Graph.close``) or is
garbage-collected.
"""
from __future__ import annotations

import collections
import itertools
import threading
import weakref
from typing import Any

from .errors import AliasError
from .memory import Extent, overlaps

FROZEN, WRITABLE = "frozen", "writable"


class Claims:
    """The live claims, by kind (one lock; claims are made when holders are made, not per launch)."""

    def __init__(self):
        self._lock = threading.Lock()
        self._ids = itertools.count(1)
        self._live: dict[str, dict[int, tuple[list[Extent], Any]]] = {FROZEN: {}, WRITABLE: {}}
        # claims of collected holders: a finalizer may run inside any allocation, also while this
        # thread holds the lock, so it only queues the token (deque.append is atomic) and the
        # next operation under the lock drops it
        self._collected: collections.deque[int] = collections.deque()

    def _drop_collected(self) -> None:
        """Drop the claims of collected holders (the caller holds the lock)."""
        while self._collected:
            token = self._collected.popleft()
            for live in self._live.values():
                live.pop(token, None)

    def claim(self, holder: Any, kind: str, extents: list[Extent], label: Any, what: str) -> int:
        """Register ``holder``'s claim (ended by ``release`` or when ``holder`` is collected);
        raise ``AliasError`` (``what`` is being refused) if it overlaps a claim of the other kind."""
        other = WRITABLE if kind == FROZEN else FROZEN
        with self._lock:
            self._drop_collected()
            for ext_b, label_b in self._live[other].values():
                for a in extents:
                    if any(overlaps(a, b) for b in ext_b):
                        why = ("it is read-only shared memory" if other == FROZEN else "it can still be written")
                        raise AliasError(f"{what}: its memory overlaps memory held by {label_b}, and {why}; "
                                         "a Shared value has no writable alias anywhere")
            token = next(self._ids)
            self._live[kind][token] = (list(extents), label)
        weakref.finalize(holder, self._collected.append, token)
        return token

    def release(self, token: int | None) -> None:
        if token is None:
            return
        with self._lock:
            self._drop_collected()
            for live in self._live.values():
                live.pop(token, None)

    def holders(self, kind: str) -> int:
        """How many claims of ``kind`` are live (for tests)."""
        with self._lock:
            self._drop_collected()
            return len(self._live[kind])


CLAIMS = Claims()
