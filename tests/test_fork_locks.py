"""The locks of safetile's objects in a forked child (safetile/locks.py). Red team round 10 (1016):
a fork while another thread compiled a kernel left the kernel's compile lock held in the child,
by a thread the child does not have: the child's next compile of that kernel waited forever."""
from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import threading

import pytest

import safetile as ct
from safetile.locks import FORK_LOCKS, ForkLocks, OwnedLock

SRC = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "src")

FORK_WHILE_COMPILING = textwrap.dedent("""
    import os, sys, threading, time
    import numpy as np
    import safetile as ct

    {kernel}

    def first():
        if SAFE:
            k(ct.from_dlpack(np.zeros(64, np.float32)).partition(16), 1).sync()
        else:
            ct.launch(None, (4,), k, (np.zeros(64, np.float32), 1))

    th = threading.Thread(target=first)
    th.start()
    time.sleep(0.4)  # the thread is inside the compile (static_eval sleeps 1.5 s)
    pid = os.fork()
    if pid == 0:  # the child: the same kernel, another specialisation (a compile), then the same one
        try:
            for c in (2, 1):
                out = np.zeros(64, np.float32)
                if SAFE:
                    z, _ = k(ct.from_dlpack(out).partition(16), c).sync()
                    out = z.unpartition().to_numpy()
                else:
                    ct.launch(None, (4,), k, (out, c))
                assert (out == c).all(), out
        except BaseException as e:
            print("child failed:", repr(e), flush=True)
            os._exit(1)
        os._exit(0)
    th.join()
    _, status = os.waitpid(pid, 0)
    print("child", os.waitstatus_to_exitcode(status))
""")

SAFE_KERNEL = """
SAFE = True
@ct.entry
def k(z: ct.Mut[ct.f32, "B"], c: ct.Constant[int]):
    ct.static_eval(time.sleep(1.5) if c == 1 else None)
    z.store(ct.full((16,), float(c), ct.float32))
"""

UNCHECKED_KERNEL = """
SAFE = False
@ct.kernel
def k(out, c: ct.Constant[int]):
    ct.static_eval(time.sleep(1.5) if c == 1 else None)
    ct.store(out, (ct.bid(0),), ct.full((16,), float(c), ct.float32))
"""


@pytest.mark.skipif(not hasattr(os, "fork"), reason="os.fork")
@pytest.mark.parametrize("kernel", [SAFE_KERNEL, UNCHECKED_KERNEL], ids=["safe", "unchecked"])
def test_a_fork_while_another_thread_compiles_leaves_the_kernel_usable_in_the_child(kernel):
    env = {**os.environ, "PYTHONPATH": SRC}
    script = FORK_WHILE_COMPILING.format(kernel=textwrap.indent(kernel, "").strip())
    out = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr[-3000:]
    assert out.stdout.split()[-2:] == ["child", "0"], out.stdout


def test_an_owned_lock_knows_its_holder_and_may_be_released_by_another_thread():
    lock = OwnedLock()
    assert not lock.locked() and not lock._is_owned()
    with lock:
        assert lock.locked() and lock._is_owned()
        seen = []
        t = threading.Thread(target=lambda: seen.append(lock._is_owned()))
        t.start()
        t.join()
        assert seen == [False]
        assert not lock.acquire(blocking=False)
        assert not lock.acquire(timeout=0.01)
    assert not lock.locked()
    lock.acquire()
    t = threading.Thread(target=lock.release)  # a graph's replay ends on the thread that ran it
    t.start()
    t.join()
    assert not lock.locked() and not lock._is_owned()


def test_a_fork_renews_every_lock_but_those_the_forking_thread_holds():
    """The hooks alone, on a ForkLocks of the test's own: held by another thread → fresh; held by
    this (the forking) thread → kept, for this thread to release; reentrant locks alike."""
    locks = ForkLocks()
    other, mine, other_r, mine_r, free = (locks.new(), locks.new(), locks.new(reentrant=True),
                                          locks.new(reentrant=True), locks.new())
    held, release = threading.Event(), threading.Event()

    def hold():  # never releases: in a real child this thread does not exist
        other.acquire()
        other_r.acquire()
        held.set()
        release.wait(10)

    t = threading.Thread(target=hold)
    t.start()
    assert held.wait(10)
    with mine, mine_r:
        locks.before()
        locks.after_in_child()  # as in the child (nothing forked: the renewal is what is tested)
        assert not other.locked() and other.acquire(blocking=False)
        other.release()
        assert other_r.acquire(blocking=False)  # fresh: this thread may take it
        other_r.release()
        assert mine.locked() and mine._is_owned() and mine_r._is_owned()
        assert not free.locked()
    assert not mine.locked() and not mine_r._is_owned()
    release.set()
    t.join()


def test_the_package_s_locks_are_made_by_fork_locks():
    """A kernel's compile locks and the caches' locks are known to FORK_LOCKS (renewed in a child)."""
    @ct.entry
    def k(z: ct.Mut[ct.f32, "B"]):
        z.store(z.load())

    @ct.kernel
    def u(out):
        ct.store(out, (0,), ct.zeros((4,), ct.float32))

    made = list(FORK_LOCKS._made)
    for lock in (k.caches.compile_lock, k.caches.lock, u._lock):
        assert any(lock is m for m in made)
