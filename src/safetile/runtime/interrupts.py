"""Ctrl-C is held back while safetile changes shared state, and delivered right after.

A KeyboardInterrupt raised by Python's default SIGINT handler lands at whatever bytecode the
main thread is running. Inside safetile that can be between a claim's registration and the
finalizer that ends it, or between taking a lock and the ``try`` that releases it: the claim or
the in-flight entry is left behind for good, or the lock is, and a later call hangs. No
Python code is safe against an exception at every bytecode (PEP 419 was rejected; the
standard library's locks and queues are not either), so safetile does not try to be:
instead it decides *where* a Ctrl-C is raised.

``GATE`` owns a SIGINT handler, installed when safetile is imported from the main thread and
SIGINT still has Python's default handler (a handler the program installed is never
replaced; one installed later replaces this one and opts out). The handler walks outward
from the interrupted frame; the first frame that decides wins:

* a function marked ``interruptible`` (a blocking wait, ``block``; a kernel body running on
  the CPU backend; compilation; a user callback a terminal runs): raise KeyboardInterrupt now,
  exactly as the default handler would. Every caller of these handles an exception there;
* a frame of a module that changes shared state (``PROTECTED``: ownership, claims, the
  in-flight registry, launches, device operations, graphs, streams, host access...): hold it
  back. It is delivered by a short-lived thread that sends SIGINT to the main thread again
  every millisecond while it is pending, so it arrives within about a millisecond of the
  critical section's end, and at once when the main thread blocks in a safetile wait;
* any other frame (the program's code, the standard library, other safetile modules): look
  further out. At the bottom of the stack: raise now.

Deciding costs nothing until a signal arrives: functions are marked by their code objects
(``interruptible`` returns the function itself) and modules by file. A Ctrl-C held back for
longer than ``FORCE_AFTER`` seconds (the main thread stuck inside safetile, e.g. blocked on a
lock another thread holds) is raised anyway, with a warning, as Python would have.
"""
from __future__ import annotations

import _thread
import atexit
import os
import signal
import threading
import time
import warnings
from collections.abc import Callable
from types import CodeType, FrameType
from typing import Any, TypeVar

F = TypeVar("F", bound=Callable[..., Any])

_PACKAGE = os.path.dirname(os.path.dirname(__file__))  # the form co_filename has for this package's modules

# Modules whose frames hold a Ctrl-C back: they change state shared beyond one call.
PROTECTED = (
    "safe/__init__.py", "safe/checks.py", "safe/claims.py", "safe/deviceop.py", "safe/entry.py",
    "safe/factories.py", "safe/facts.py", "safe/forking.py", "safe/graph.py", "safe/launch.py", "safe/memory.py",
    "safe/native.py", "safe/ownership.py", "safe/partition.py", "safe/race.py", "safe/streams.py", "safe/tensor.py",
    "integrations/distributed.py", "integrations/torch.py", "locks.py",
)
# Modules of safe/ and integrations/ that change no shared state (compile-time, pure, presentation): walked past.
NEUTRAL = ("safe/device.py", "safe/errors.py", "safe/native_lock.py", "safe/native_methods.py", "safe/native_run.py",
           "safe/native_source.py", "safe/picture.py", "safe/preconditions.py", "safe/tile_api.py", "safe/types.py",
           "safe/verify.py")

RESEND_EVERY = 0.001  # s between looks at a held-back interrupt (a delivery is sent once the last one arrived)
FORCE_AFTER = 5.0  # s: an interrupt held back longer is raised anyway

RAISE, HOLD, WALK = "raise", "hold", "walk"
_INTERRUPTIBLE: set[CodeType] = set()


def interruptible(fn: F) -> F:
    """Mark ``fn``: a Ctrl-C arriving while it (or code it calls that does not decide) runs is
    raised there at once. Its callers must handle an exception from it. Returns ``fn`` itself."""
    _INTERRUPTIBLE.add(fn.__code__)
    return fn


@interruptible
def block(lock: Any) -> None:
    """``lock.acquire()``, the one place a safetile wait is interrupted. ``lock`` is a waiter's own
    one-shot lock, so whether it was taken when the interrupt arrived does not matter."""
    lock.acquire()


def classify(code: CodeType) -> str:
    """What a frame running ``code`` decides (``RAISE``, ``HOLD``) or ``WALK`` (look further out)."""
    if code in _INTERRUPTIBLE:
        return RAISE
    if code.co_filename in _PROTECTED_FILES:
        return HOLD
    return WALK


_PROTECTED_FILES = frozenset(os.path.join(_PACKAGE, *p.split("/")) for p in PROTECTED)


def raise_now(frame: FrameType | None) -> bool:
    """Whether a Ctrl-C interrupting ``frame`` is raised at once (False: held back)."""
    while frame is not None:
        d = classify(frame.f_code)
        if d is not WALK:
            return d is RAISE
        frame = frame.f_back
    return True


class InterruptGate:
    """The SIGINT handler, and the delivery of interrupts it holds back (one per process)."""

    def __init__(self) -> None:
        # re-entrant: a signal may arrive while this thread holds it (``discard`` at exit)
        self._lock = threading.RLock()
        self._pending_since: float | None = None  # when the held-back interrupt arrived
        # a delivery was sent that no handler call has seen yet: the next call is that delivery, so a
        # call finding one and nothing pending is a delivery arriving after its interrupt was raised,
        # not a new Ctrl-C. Never two at once: two could be seen as one call (signals coalesce) or two.
        self._unseen = False
        self._resending = False  # a delivery thread runs (changed under the lock)
        self._in_handler = False  # main thread only
        self._main: int = threading.main_thread().ident or 0
        self.handler = self.handle  # the object installed (compared by identity)
        self.forced = 0  # interrupts raised after FORCE_AFTER (for tests)

    # ------------------------------------------------------------------ installation

    def install(self) -> bool:
        """Become SIGINT's handler if it has Python's default one and this is the main thread."""
        if threading.current_thread() is not threading.main_thread():
            return False
        try:
            if signal.getsignal(signal.SIGINT) is not signal.default_int_handler:
                return False
            signal.signal(signal.SIGINT, self.handler)
            self._unseen = False  # a delivery sent before an earlier opt-out is no longer told apart
        except (ValueError, OSError):  # an embedded interpreter without signal support
            return False
        return True

    def uninstall(self) -> None:
        """Give SIGINT back to Python's default handler (if this gate still has it)."""
        if self.installed:
            signal.signal(signal.SIGINT, signal.default_int_handler)
        self.discard()

    @property
    def installed(self) -> bool:
        return signal.getsignal(signal.SIGINT) is self.handler

    @property
    def pending(self) -> bool:
        return self._pending_since is not None

    def discard(self) -> None:
        """Forget a held-back interrupt (interpreter exit; the delivery thread then stops)."""
        with self._lock:
            self._pending_since = None

    def _after_fork(self) -> None:
        self._lock = threading.RLock()
        self._pending_since = None
        self._unseen = False
        self._resending = False
        self._in_handler = False
        self._main = threading.get_ident()

    # ------------------------------------------------------------------ the handler

    def handle(self, signum: int, frame: FrameType | None) -> None:
        """SIGINT: raise KeyboardInterrupt now, or hold it back (see the module docstring)."""
        if self._in_handler:  # a signal arriving while this handler runs: the running call decides
            with self._lock:
                self._unseen = False
            return
        self._in_handler = True
        try:
            now = time.monotonic()
            with self._lock:
                delivery, self._unseen = self._unseen, False
                since = self._pending_since
                if since is None:
                    if delivery:
                        return  # a delivery arriving after its interrupt was raised
                    since = self._pending_since = now
            forced = now - since > FORCE_AFTER
            if forced or raise_now(frame):
                with self._lock:
                    self._pending_since = None
                if forced and not raise_now(frame):
                    self.forced += 1
                    warnings.warn(f"safetile held Ctrl-C back for over {FORCE_AFTER:g} s (the main thread is "
                                  "stuck inside safetile); raising it now: safetile's state may be left "
                                  "inconsistent", RuntimeWarning, stacklevel=2)
                raise KeyboardInterrupt
            with self._lock:
                if self._resending:
                    return
                self._resending = True
            try:  # not threading.Thread: starting one takes threading's module locks, which the
                _thread.start_new_thread(self._resend_loop, ())  # interrupted code may hold
            except RuntimeError:  # the interpreter is shutting down: nothing left to protect
                with self._lock:
                    self._resending = False
                    self._pending_since = None
        finally:
            self._in_handler = False

    def _resend_loop(self) -> None:
        """While an interrupt is held back, send SIGINT to the main thread once the handler has seen
        the last one sent (one at a time, so a late one is known for what it is), every ``RESEND_EVERY`` s."""
        while True:
            time.sleep(RESEND_EVERY)
            with self._lock:
                if self._pending_since is not None and not self.installed:
                    self._pending_since = None  # the program installed its own handler: it opted out
                if self._pending_since is None:
                    self._resending = False
                    return
                if self._unseen:
                    continue  # the main thread has not run Python since (a long call in C): wait
                self._unseen = True
                if hasattr(signal, "pthread_kill"):  # a real signal: it also ends a blocked wait
                    signal.pthread_kill(self._main, signal.SIGINT)
                else:
                    _thread.interrupt_main()


GATE = InterruptGate()
atexit.register(GATE.discard)
if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=GATE._after_fork)
