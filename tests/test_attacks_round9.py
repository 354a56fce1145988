"""Red team round 9 (attacks/round9/: ownership and threads with the C lock) as tests, one per class
that broke: a lock-order deadlock through a finalizer (900), a fork inside a section under OWNERSHIP
(904), a Ctrl-C cutting short the callback that ends a collected holder's claim (912). Starvation by
a thread that keeps re-taking the lock (911) is in tests/test_native_lock.py."""
from __future__ import annotations

import gc
import os
import subprocess
import sys
import textwrap
import threading
import time

import numpy as np
import pytest

import safetile as ct
from safetile.runtime import interrupts
from safetile.safe import claims, ownership

SRC = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "src")


@ct.entry
def inc(z: ct.Mut[ct.f32, "B"]):
    z.store(z.load() + 1.0)


def test_claims_and_moves_take_one_lock_so_a_finalizer_has_no_order_to_break():
    """900: with a claims lock beside OWNERSHIP, a holder's claim ending in a finalizer (under the
    claims lock, where the collector may run and drop an unrun launch, whose give-back takes
    OWNERSHIP) deadlocked against a thread holding OWNERSHIP and wanting the claims lock."""
    assert claims.CLAIMS._lock is ownership.OWNERSHIP


@pytest.mark.threads
def test_partitions_and_dropped_cyclic_launches_in_two_threads_never_deadlock():
    """900's program, bounded: one thread partitions and unpartitions, the other drops unrun
    launches held in cycles and partitions, with the collector run at nearly every allocation."""
    counts = [0, 0]
    stop = threading.Event()
    errors: list = []

    def a():
        t = ct.from_dlpack(np.zeros(64, np.float32))
        try:
            while not stop.is_set():
                t = t.partition(16).unpartition()
                counts[0] += 1
        except BaseException as e:  # noqa: BLE001 - asserted below
            errors.append(e)

    def b():
        try:
            while not stop.is_set():
                op = inc(ct.from_dlpack(np.zeros(64, np.float32)).partition(16))
                op.cycle = op  # dropped unrun in a cycle: given back by the collector
                del op
                q = ct.from_dlpack(np.zeros(64, np.float32)).partition(16)
                del q
                counts[1] += 1
        except BaseException as e:  # noqa: BLE001 - asserted below
            errors.append(e)

    thresholds, interval = gc.get_threshold(), sys.getswitchinterval()
    gc.collect()
    gc.set_threshold(1, 2, 2)
    sys.setswitchinterval(1e-5)
    ts = [threading.Thread(target=a, daemon=True), threading.Thread(target=b, daemon=True)]
    try:
        import warnings
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ct.LaunchDroppedWarning)
            for t in ts:
                t.start()
            seen = list(counts)
            for _ in range(6):  # both threads keep going, half a second at a time
                time.sleep(0.5)
                assert counts[0] > seen[0] and counts[1] > seen[1], f"stalled at {counts}"
                seen = list(counts)
            stop.set()
            for t in ts:
                t.join(30)
                assert not t.is_alive()
    finally:
        stop.set()
        gc.set_threshold(*thresholds)
        sys.setswitchinterval(interval)
    gc.collect()
    assert not errors


FORK = textwrap.dedent("""
    import os, threading, numpy as np, safetile as ct
    from safetile.safe import ownership

    @ct.entry
    def addk(z: ct.Mut[ct.f32, "B"], x: ct.Ref[ct.f32, -1]):
        z.store(z.load() + ct.load_tile_like(x, z))

    @ct.entry
    def inc(z: ct.Mut[ct.f32, "B"]):
        z.store(z.load() + 1.0)

    forked = {}

    class Forker:  # read by the launch's checks while it holds OWNERSHIP
        @property
        def __class__(self):
            if ownership.OWNERSHIP._is_owned() and "pid" not in forked:
                forked["pid"] = os.fork()
                if forked["pid"] == 0:
                    threading.Timer(20, lambda: os._exit(9)).start()
            return Forker

    p = ct.from_dlpack(np.zeros(64, np.float32)).partition(16)
    try:
        addk(p, Forker())
        outcome = "accepted"
    except (ct.LaunchError, ct.OwnershipError):
        outcome = "refused"
    except BaseException as e:
        outcome = "raw " + type(e).__name__
    pid = forked.get("pid")
    if pid == 0:  # the child: the launch ended as in the parent, the lock is free, p and new work usable
        code = 0 if outcome == "refused" else 2
        (p,) = inc(p).sync()
        z = ct.from_dlpack(np.zeros(64, np.float32)).partition(16)
        (z,) = inc(z).sync()
        ok = p.unpartition().to_numpy()[0] == 1.0 and z.unpartition().to_numpy()[0] == 1.0
        os._exit(code or (0 if ok and not ownership.OWNERSHIP._is_owned() else 3))
    assert pid is not None, "the fork did not happen under OWNERSHIP"
    _, st = os.waitpid(pid, 0)
    (p,) = inc(p).sync()
    print(type(ownership.OWNERSHIP).__name__, outcome, os.waitstatus_to_exitcode(st), p.unpartition().to_numpy()[0])
""")


@pytest.mark.skipif(not hasattr(os, "fork"), reason="os.fork")
@pytest.mark.parametrize("native", ["1", "0"])
def test_a_fork_inside_a_section_under_ownership_leaves_both_processes_usable(native):
    """904: the child kept the lock the forking thread held (C lock: at its depth; RLock: as it was)
    instead of freeing it under that thread, whose release then raised a raw RuntimeError and left
    the launch's partition moved for good."""
    env = {**os.environ, "PYTHONPATH": SRC, "SAFETILE_SAFE_NATIVE": native}
    if native == "1":  # built before the script imports safetile: its locks are the C lock
        subprocess.run([sys.executable, "-c", "from safetile.safe.native import MODULE; assert MODULE.get(build=True)"],
                       env=env, check=True, capture_output=True, timeout=600)
    out = subprocess.run([sys.executable, "-c", FORK], env=env, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-3000:]
    kind, outcome, child, value = out.stdout.split()
    assert kind == ("RLock" if native == "0" else "Lock")
    assert (outcome, child, value) == ("refused", "0", "1.0")


def test_a_claim_is_ended_by_this_package_s_code_where_a_ctrl_c_waits():
    """912: ``weakref.finalize`` ran the claim's end from the standard library's frame, where the
    interrupt gate raises a Ctrl-C at once: cut short, the claim outlived its holder. The callback
    is now claims.py's own code, a frame that holds a Ctrl-C back until it returns."""
    arr = np.zeros(64, np.float32)
    before = claims.CLAIMS.holders(claims.WRITABLE)
    p = ct.from_dlpack(arr).partition(16)
    assert claims.CLAIMS.holders(claims.WRITABLE) == before + 1
    callback = claims.CLAIMS._refs[max(claims.CLAIMS._refs)].__callback__  # the newest claim: p's
    assert callback.func.__func__ is claims.Claims._collected
    assert interrupts.classify(callback.func.__func__.__code__) == interrupts.HOLD
    del p
    gc.collect()
    assert claims.CLAIMS.holders(claims.WRITABLE) == before
    ct.from_dlpack(arr).shared()  # no claim outlived its holder
