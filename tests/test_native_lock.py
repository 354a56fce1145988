"""The safe style's C lock (safe/native_lock.py): ``threading.RLock``'s behaviour, mutual exclusion
under threads that release the GIL inside it, and the choice at import (the C lock once the module
is built, ``RLock`` before that or with the C twin off), with the C twin working over either."""
from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import threading
import time

import pytest

from safetile.safe import memory, ownership
from safetile.safe.native import MODULE

SRC = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "src")


@pytest.fixture
def Lock():
    m = MODULE.get(build=True)
    if m is None or not hasattr(m, "Lock"):
        pytest.skip("the safe C module cannot be built here (no C compiler, or a free-threaded Python)")
    return m.Lock


def in_thread(f):
    out: list = []
    t = threading.Thread(target=lambda: out.append(f()))
    t.start()
    t.join(10)
    assert not t.is_alive()
    return out[0]


def test_it_is_reentrant_and_says_who_holds_it(Lock):
    lock = Lock()
    assert not lock.locked() and not lock._is_owned()
    assert lock.acquire() is True and lock.acquire(False) is True and lock.acquire(timeout=0) is True
    assert lock.locked() and lock._is_owned() and "depth 3" in repr(lock)
    assert in_thread(lock._is_owned) is False and in_thread(lock.locked) is True
    for _ in range(3):
        lock.release()
    assert not lock.locked()
    with pytest.raises(RuntimeError, match="un-acquired"):
        lock.release()
    with lock as entered:
        assert entered is True and lock._is_owned()
    assert not lock.locked()


def test_another_thread_waits_times_out_or_gives_up(Lock):
    lock = Lock()
    lock.acquire()
    assert in_thread(lambda: lock.acquire(False)) is False
    t0 = time.monotonic()
    assert in_thread(lambda: lock.acquire(timeout=0.2)) is False
    assert time.monotonic() - t0 >= 0.19
    got = threading.Event()

    def waiter():
        with lock:
            got.set()

    t = threading.Thread(target=waiter)
    t.start()
    assert not got.wait(0.1)  # blocked while held
    lock.release()
    assert got.wait(10)  # let through by the release
    t.join()
    assert not lock.locked()


def in_thread_raises(f):
    errors: list = []

    def run():
        try:
            f()
        except BaseException as e:  # noqa: BLE001 - handed to the caller
            errors.append(e)

    t = threading.Thread(target=run)
    t.start()
    t.join(10)
    if errors:
        raise errors[0]


def test_a_release_by_another_thread_is_refused(Lock):
    lock = Lock()
    lock.acquire()
    with pytest.raises(RuntimeError, match="un-acquired"):
        in_thread_raises(lock.release)
    assert lock._is_owned()
    lock.release()


@pytest.mark.parametrize("call, error", [
    (lambda lk: lk.acquire(False, 1.0), ValueError),
    (lambda lk: lk.acquire(True, -2), ValueError),
    (lambda lk: lk.acquire(True, 1, 2), TypeError),
    (lambda lk: lk.acquire(wait=True), TypeError),
    (lambda lk: lk.acquire(True, blocking=True), TypeError),
    (lambda lk: lk.acquire(timeout="soon"), TypeError),
])
def test_bad_arguments_are_refused_as_rlock_refuses_them(Lock, call, error):
    lock = Lock()
    with pytest.raises(error):
        call(lock)
    with pytest.raises(error):
        call(threading.RLock())
    assert not lock.locked()


@pytest.mark.skipif(threading.current_thread() is not threading.main_thread(), reason="signals reach the main thread")
@pytest.mark.parametrize("how", ["with", "acquire", "timeout"])
def test_a_ctrl_c_interrupts_a_wait_as_it_interrupts_rlocks(Lock, how):
    """The main thread waits for a lock another thread holds; a SIGINT raises KeyboardInterrupt out
    of the wait, the lock not taken, and the next release finds no stale waiter."""
    import signal
    lock, held, stop = Lock(), threading.Event(), threading.Event()

    def holder():
        with lock:
            held.set()
            stop.wait(10)

    t = threading.Thread(target=holder)
    t.start()
    assert held.wait(10)
    main = threading.main_thread().ident
    old = signal.signal(signal.SIGINT, signal.default_int_handler)
    timer = threading.Timer(0.2, signal.pthread_kill, (main, signal.SIGINT))
    try:
        timer.start()
        with pytest.raises(KeyboardInterrupt):
            if how == "with":
                with lock:
                    pass
            elif how == "acquire":
                lock.acquire()
            else:
                lock.acquire(timeout=30)
    finally:
        timer.cancel()
        signal.signal(signal.SIGINT, old)
        stop.set()
        t.join(10)
    assert not lock.locked() and lock.acquire(False)
    lock.release()


def test_threads_that_release_the_gil_inside_never_overlap(Lock):
    """8 threads, each critical section sleeping (the GIL released while the lock is held): one
    thread inside at a time and no lost update, as with torch calls made under the registry's lock."""
    lock = Lock()
    state = {"n": 0, "inside": 0, "overlaps": 0}

    def worker():
        for _ in range(300):
            with lock:
                state["inside"] += 1
                state["overlaps"] += state["inside"] != 1
                n = state["n"]
                time.sleep(0)
                state["n"] = n + 1
                state["inside"] -= 1

    ts = [threading.Thread(target=worker) for _ in range(8)]
    for t in ts:
        t.start()
    for t in ts:
        t.join(60)
    assert state == {"n": 2400, "inside": 0, "overlaps": 0}
    assert not lock.locked()


def test_a_fork_child_gets_it_fresh(Lock):
    """Held by a thread that does not exist after a fork: ``_at_fork_reinit`` frees it in place."""
    lock = Lock()
    held, stop = threading.Event(), threading.Event()

    def holder():  # never releases: in a fork's child this thread is gone
        lock.acquire()
        held.set()
        stop.wait(10)

    t = threading.Thread(target=holder)
    t.start()
    assert held.wait(10)
    lock._at_fork_reinit()
    assert not lock.locked() and lock.acquire(False)
    lock.release()
    stop.set()
    t.join()


def test_a_fork_child_keeps_it_held_by_the_forking_thread(Lock):
    """Forked inside a section under the lock (red team round 9, case 904): the child's forking
    thread still holds it at its depth and leaves it as it would have."""
    lock = Lock()
    lock.acquire()
    lock.acquire()
    lock._at_fork_reinit(True)
    assert lock._is_owned() and "depth 2" in repr(lock)
    lock.release()
    lock.release()
    assert not lock.locked()
    lock.acquire()
    lock._at_fork_reinit()  # not kept: fresh and free whoever held it
    assert not lock.locked()


def test_a_thread_that_keeps_taking_it_cannot_starve_a_waiter(Lock):
    """Red team round 9, case 911: a thread whose sections release the GIL takes the lock again
    right after each release; a waiting thread is handed the lock at the next release."""
    lock = Lock()
    stop = threading.Event()
    started = threading.Event()

    def hog():
        while not stop.is_set():
            with lock:
                started.set()
                time.sleep(0.002)  # the GIL released while held, as torch calls do

    t = threading.Thread(target=hog)
    t.start()
    try:
        assert started.wait(10)
        waits = []
        for _ in range(20):
            t0 = time.monotonic()
            with lock:
                waits.append(time.monotonic() - t0)
        assert max(waits) < 1.0, waits  # one section of the hog (2 ms), not seconds
    finally:
        stop.set()
        t.join(10)


def test_waiters_are_served_in_arrival_order(Lock):
    lock = Lock()
    lock.acquire()
    order: list = []
    ts = []
    for k in range(5):
        ts.append(threading.Thread(target=lambda k=k: (lock.acquire(), order.append(k), lock.release())))
        ts[-1].start()
        time.sleep(0.05)  # queued behind the ones before it
    lock.release()
    for t in ts:
        t.join(10)
    assert order == [0, 1, 2, 3, 4]


def test_the_suite_runs_with_the_c_lock_as_a_warm_installation_does(Lock):
    """conftest builds the module before safetile is imported: OWNERSHIP and the registry's lock
    are the C lock (unless the C twin is off for this run)."""
    if os.environ.get("SAFETILE_SAFE_NATIVE") == "0":
        assert isinstance(ownership.OWNERSHIP, type(threading.RLock()))
    else:
        assert type(ownership.OWNERSHIP) is Lock and type(memory.REGISTRY._lock) is Lock


SCRIPT = textwrap.dedent("""
    import threading, numpy as np, safetile as ct
    from safetile.safe import memory, ownership
    from safetile.safe.native import FAST
    print(type(ownership.OWNERSHIP).__name__, type(memory.REGISTRY._lock).__name__)

    @ct.entry
    def bump(z: ct.Mut[ct.f32, "B"]):
        z.store(z.load() + 1.0)

    z = ct.from_dlpack(np.zeros(64, np.float32)).partition(64)
    (z,) = bump(z).sync()
    print(FAST.load(build=True))  # the C twin, over the locks chosen at import
    slot, lock, done = {"z": z}, threading.Lock(), [0] * 4

    def worker(k):
        for _ in range(100):
            with lock:
                z = slot.pop("z", None)
            if z is not None:
                (z,) = bump(z).sync()
                done[k] += 1
                with lock:
                    slot["z"] = z

    ts = [threading.Thread(target=worker, args=(k,)) for k in range(4)]
    [t.start() for t in ts]
    [t.join() for t in ts]
    print(int(slot["z"].unpartition().to_numpy()[0]) == 1 + sum(done))
""")


@pytest.mark.parametrize("warm", [False, True])
def test_a_first_process_uses_rlock_and_a_later_one_the_c_lock(Lock, tmp_path, warm):
    """The lock is chosen at import without building: a process that finds no built module (the
    first after installing) keeps ``RLock`` and its C twin, loaded later, takes that; the next
    process finds the module and takes the C lock. Both launch correctly from 4 threads."""
    env = {**os.environ, "SAFETILE_CACHE_DIR": str(tmp_path), "PYTHONPATH": SRC}
    env.pop("SAFETILE_SAFE_NATIVE", None)
    runs = 2 if warm else 1
    for _ in range(runs):
        out = subprocess.run([sys.executable, "-c", SCRIPT], env=env, capture_output=True, text=True, timeout=600)
        assert out.returncode == 0, out.stderr[-3000:]
    lines = out.stdout.split()
    assert lines[:2] == (["Lock", "Lock"] if warm else ["RLock", "RLock"])
    assert lines[2:] == ["True", "True"]
