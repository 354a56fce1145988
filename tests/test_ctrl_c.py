"""Ctrl-C is held back while safetile changes shared state (runtime/interrupts.py): the handler's
decisions, a held-back interrupt delivered right after the critical section (a test hook and a real
signal), a program's own handler left alone, a long CPU kernel still stopped promptly, and a short
form of the real-Ctrl-C fuzz of attack 301b."""
from __future__ import annotations

import gc
import random
import signal
import subprocess
import sys
import textwrap
import threading
import time

import numpy as np
import pytest

import safetile as ct
from safetile.runtime import interrupts
from safetile.runtime.interrupts import GATE, raise_now
from safetile.safe import claims as claims_mod
from safetile.safe.memory import REGISTRY, InFlight

MAIN = threading.main_thread().ident
pytestmark = [pytest.mark.threads,
              pytest.mark.skipif(threading.current_thread() is not threading.main_thread()
                                 or not GATE.installed,
                                 reason="needs the main thread with safetile's SIGINT handler")]


@ct.entry
def add(z: ct.Mut[ct.f32, "B"], x: ct.Ref[ct.f32, -1]):
    z.store(z.load() + ct.load_tile_like(x, z))


@ct.entry
def spin(z: ct.Mut[ct.f32, "B"], n: ct.i32):
    acc = z.load()
    for _ in range(n):
        acc = acc + 1.0
    z.store(acc)


def here() -> bool:
    """What a Ctrl-C arriving in the caller's frame would do (True: raised at once)."""
    return raise_now(sys._getframe(1))


def settle(seconds: float = 0.3) -> None:
    """Sleep in test code, where a held-back interrupt is raised."""
    end = time.perf_counter() + seconds
    while time.perf_counter() < end:
        time.sleep(0.001)


# ------------------------------------------------------------------------------ decisions

def test_user_code_raises_at_once():
    assert here()


def test_held_inside_a_claims_registration(monkeypatch):
    seen = []
    real = claims_mod.overlaps
    monkeypatch.setattr(claims_mod, "overlaps", lambda a, b: seen.append(here()) or real(a, b))
    t = ct.zeros(64).sync()
    s = t[:32].shared()  # a frozen claim: the next claim compares against it
    p = t[32:].partition(32)
    assert seen and not any(seen)
    del s, p


def test_held_inside_the_in_flight_registry(monkeypatch):
    seen = []
    real = InFlight.add
    monkeypatch.setattr(InFlight, "add", lambda self, *a: seen.append(here()) or real(self, *a))
    t = ct.zeros(64).sync()
    t.to_numpy()
    add(t.partition(64), ct.ones(64).sync()).sync()
    assert seen and not any(seen)


def test_raised_at_once_inside_a_cpu_kernel_body(monkeypatch):
    from safetile.backends.cpu import executor
    seen = []
    real = executor.Run.execute
    monkeypatch.setattr(executor.Run, "execute", lambda self: seen.append(here()) or real(self))
    add(ct.zeros(64).sync().partition(64), ct.ones(64).sync()).sync()
    assert seen == [True]


def test_raised_at_once_in_a_then_closure_and_at_compile_time():
    seen = []
    ct.zeros(64).then(lambda t: seen.append(here()) or ct.value(t)).sync()
    ct.zeros(64).map(lambda t: seen.append(here())).sync()
    ct.zeros(64).inspect(lambda t: seen.append(here())).sync()

    @ct.entry
    def k(z: ct.Mut[ct.f32, "B"]):
        ct.static_eval(seen.append(here()))
        z.store(z.load())
    k(ct.zeros(64).sync().partition(64)).sync()
    assert seen == [True, True, True, True]


def test_raised_at_once_while_blocked_in_a_safetile_wait():
    """The main thread waits for a launch held running on a stream worker: its frame, read from
    another thread, is a blocking wait."""
    s = ct.Stream("cpu")
    busy = threading.Event()
    s.submit(busy.wait)
    decided = []

    def look():
        time.sleep(0.2)
        decided.append(raise_now(sys._current_frames()[MAIN]))
        busy.set()
    threading.Thread(target=look, daemon=True).start()
    add(ct.zeros(64).sync().partition(64), ct.ones(64).sync()).sync_on(s)
    assert decided == [True]


# ------------------------------------------------------------------------------ delivery

def test_an_interrupt_held_back_in_a_critical_section_arrives_right_after_it(monkeypatch):
    """The test hook: the handler called from inside the registry's critical section (as a signal
    arriving there would call it) holds the interrupt; the launch completes and registers nothing
    left over; the KeyboardInterrupt arrives in the test's code within milliseconds."""
    real = InFlight.add
    calls = []

    def add_and_interrupt(self, *a):
        if not calls:
            calls.append(time.perf_counter())
            GATE.handle(signal.SIGINT, sys._getframe())  # returns: held back
            assert GATE.pending
        return real(self, *a)
    monkeypatch.setattr(InFlight, "add", add_and_interrupt)
    p, x = add(ct.zeros(64).sync().partition(64), ct.ones(64).sync()).sync()
    with pytest.raises(KeyboardInterrupt):
        settle()
    took = time.perf_counter() - calls[0]
    assert not GATE.pending and not REGISTRY._entries
    np.testing.assert_array_equal(p.to_numpy(), np.ones(64, np.float32))
    assert took < 0.1


def test_a_real_sigint_during_a_claim_is_delivered_after_it(monkeypatch):
    """A real SIGINT arrives while the main thread is inside Claims.claim (made slow): the claim
    is completed and tied to its holder, then KeyboardInterrupt is raised in the test's code."""
    real = claims_mod.overlaps
    inside = threading.Event()

    def slow(a, b):
        inside.set()
        time.sleep(0.2)  # the signal arrives here
        return real(a, b)

    def fire():
        assert inside.wait(10)
        signal.pthread_kill(MAIN, signal.SIGINT)
    t = ct.zeros(64).sync()
    s = t[:32].shared()
    monkeypatch.setattr(claims_mod, "overlaps", slow)
    threading.Thread(target=fire, daemon=True).start()
    p = None
    with pytest.raises(KeyboardInterrupt):
        p = t[32:].partition(32)
        settle()
    monkeypatch.setattr(claims_mod, "overlaps", real)
    assert p is not None and p.to_numpy().shape == (32,)  # the partition was made whole
    with pytest.raises(ct.AliasError):
        t[32:].shared()  # with its claim
    del p
    gc.collect()
    t[32:].shared()  # which ended with it
    del s


def _no_delivery_thread(timeout=5.0):
    """An earlier test's delivery thread may still be running (CI's busy machine: it then starts
    no new one, which would be right and fail the count below)."""
    deadline = time.time() + timeout
    while GATE._resending and time.time() < deadline:
        time.sleep(0.005)
    assert not GATE._resending


def test_repeated_interrupts_while_held_start_one_delivery_thread(monkeypatch):
    _no_delivery_thread()
    started = []
    real = interrupts._thread.start_new_thread
    monkeypatch.setattr(interrupts._thread, "start_new_thread", lambda *a: started.append(1) or real(*a))
    seen = []

    def held(*a):
        for _ in range(3):  # three Ctrl-C inside one critical section
            GATE.handle(signal.SIGINT, sys._getframe())
        seen.append(GATE.pending)
        return real_add(*a)
    real_add = InFlight.add
    monkeypatch.setattr(InFlight, "add", held)
    with pytest.raises(KeyboardInterrupt):
        add(ct.zeros(64).sync().partition(64), ct.ones(64).sync()).sync()
        settle()
    assert seen == [True] and started == [1]
    deadline = time.time() + 2
    while GATE._resending and time.time() < deadline:
        time.sleep(0.005)
    assert not GATE._resending  # the delivery thread ended with its interrupt


def test_an_interrupt_held_back_too_long_is_raised_anyway(monkeypatch):
    """A main thread stuck in a critical section (here: simulated) still yields to Ctrl-C after
    FORCE_AFTER seconds, with a warning."""
    monkeypatch.setattr(interrupts, "FORCE_AFTER", 0.05)
    monkeypatch.setattr(GATE, "_resend_loop", lambda: None)  # no delivery: only the force path
    frame = []

    def inside(self, *a):
        frame.append(sys._getframe())
        GATE.handle(signal.SIGINT, frame[0])  # held
        time.sleep(0.1)
        GATE.handle(signal.SIGINT, frame[0])  # the same Ctrl-C, still held: forced now
    monkeypatch.setattr(InFlight, "add", inside)
    with pytest.warns(RuntimeWarning, match="held Ctrl-C back"):
        with pytest.raises(KeyboardInterrupt):
            ct.zeros(64).sync().to_numpy()
    assert not GATE.pending
    GATE._resending = False


def test_a_long_cpu_kernel_is_still_stopped_promptly():
    t = ct.zeros(256).sync()
    view = t[:]
    op = spin(t.partition(256), 10**7)  # minutes on the CPU backend

    def fire():
        time.sleep(0.3)
        sent.append(time.perf_counter())
        signal.pthread_kill(MAIN, signal.SIGINT)
    sent: list = []
    threading.Thread(target=fire, daemon=True).start()
    with pytest.raises(KeyboardInterrupt):
        op.sync()
    assert time.perf_counter() - sent[0] < 0.5
    del op
    gc.collect()
    assert view.partition(256).unpartition().shared().to_numpy().shape == (256,)  # nothing left claimed


def test_a_programs_own_handler_is_never_replaced():
    code = textwrap.dedent("""
        import signal, threading
        def mine(s, f): pass
        signal.signal(signal.SIGINT, mine)
        import safetile
        from safetile.runtime.interrupts import GATE
        assert signal.getsignal(signal.SIGINT) is mine and not GATE.installed
        assert not GATE.install()
        signal.signal(signal.SIGINT, signal.default_int_handler)
        out = []
        th = threading.Thread(target=lambda: out.append(GATE.install()))
        th.start(); th.join()
        assert out == [False]  # only from the main thread
        assert GATE.install() and GATE.installed
        GATE.uninstall()
        assert signal.getsignal(signal.SIGINT) is signal.default_int_handler
        print("ok")
    """)
    import os
    src = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "src")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120,
                       env={**os.environ, "PYTHONPATH": src})
    assert r.returncode == 0 and r.stdout.strip() == "ok", r.stderr


# ------------------------------------------------------------------------------ fuzz (attack 301b, short)

def test_ctrl_c_at_random_moments_of_a_life_cycle_leaves_nothing_behind():
    rng = random.Random(301)
    xs = ct.ones(1024).sync().shared()

    def life(t):
        p = t.partition(256)
        z, _ = add(p, xs).sync()
        s = z.unpartition().shared()
        s.to_numpy()
        t = s.try_unwrap()
        with ct.borrow_mut(t) as b:
            add(b.partition(256), xs).sync()
        return t.to_numpy()

    life(ct.zeros(1024).sync())  # compiles
    durs = []
    for _ in range(3):
        t0 = time.perf_counter()
        life(ct.zeros(1024).sync())
        durs.append(time.perf_counter() - t0)
    dur = min(durs)
    hits = 0
    for trial in range(300):  # 60 trials, more while none landed (a loaded machine may schedule late)
        if trial >= 60 and hits:
            break
        t = ct.zeros(1024).sync()
        view = t[:]
        stop = threading.Event()

        def fire(stop: threading.Event, delay: float) -> None:
            if not stop.wait(delay):
                signal.pthread_kill(MAIN, signal.SIGINT)
        th = threading.Thread(target=fire, args=(stop, rng.uniform(0, dur)), daemon=True)
        try:
            th.start()
            try:
                life(t)
            finally:
                stop.set()
                th.join()
                settle(0.01)
        except KeyboardInterrupt:
            hits += 1
        del t
        gc.collect(1)  # a failed launch and its in-flight entry refer to each other (young: cheap)
        # the memory is free: readable, partitionable, launchable, shareable, unwrappable
        view.to_numpy()
        p, _ = add(view.partition(256), xs).sync()
        try:
            s = p.unpartition().shared()
        except ct.AliasError:  # the failed launch was promoted to the oldest generation
            gc.collect()
            s = view.shared()
        s.try_unwrap()
        assert not REGISTRY._entries
    assert hits > 0


def test_every_state_module_is_classified():
    """A new module of safe/ or integrations/ must say whether its frames hold a Ctrl-C back."""
    import pathlib
    root = pathlib.Path(interrupts.__file__).resolve().parent.parent
    found = {f"{d}/{f.name}" for d in ("safe", "integrations") for f in (root / d).glob("*.py")
             if f.name != "__init__.py" or d == "safe"} | {"locks.py"}  # the object locks (safetile/locks.py)
    assert found == set(interrupts.PROTECTED) | set(interrupts.NEUTRAL)
    assert not set(interrupts.PROTECTED) & set(interrupts.NEUTRAL)
