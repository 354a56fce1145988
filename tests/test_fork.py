"""os.fork() with the safe runtime (safe/forking.py; red team round 4, 404): the child never waits
for work whose thread does not exist there, and never inherits a lock held by such a thread.

Each child reports through a pipe and ends with ``os._exit``; a child that does not answer in
time is killed and the test fails (a hang is the failure these tests look for).
"""
from __future__ import annotations

import asyncio
import multiprocessing
import os
import signal
import sys
import threading
import time

import numpy as np
import pytest

import safetile as ct

from attack_helpers import spin_write
from safetile.safe.memory import REGISTRY

pytestmark = pytest.mark.skipif(not hasattr(os, "fork") or sys.platform != "linux", reason="needs os.fork (Linux)")


@ct.entry
def add_one(z: ct.Mut[ct.f32, "B"], x: ct.Ref[ct.f32, -1]):
    z.store(ct.load_tile_like(x, z) + 1.0)


def in_child(body, timeout=10.0) -> str:
    """Fork; the child runs ``body()`` (returning text) and writes it to a pipe. The parent's answer."""
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the child
        os.close(r)
        signal.alarm(int(timeout))  # a hung child dies instead of hanging the suite
        try:
            msg = body()
        except BaseException as e:  # noqa: BLE001 - reported to the parent
            msg = f"EXC {type(e).__name__}: {e}"
        os.write(w, msg.encode()[:4000])
        os._exit(0)
    os.close(w)
    deadline = time.monotonic() + timeout + 5
    while time.monotonic() < deadline:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            break
        time.sleep(0.02)
    else:
        os.kill(pid, signal.SIGKILL)
        os.waitpid(pid, 0)
        pytest.fail("the forked child did not answer (hung)")
    out = os.read(r, 4096).decode()
    os.close(r)
    assert os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0, (status, out)
    return out


def test_work_in_flight_at_fork_is_refused_in_the_child_and_other_memory_works():
    t = ct.zeros(4096).sync()
    view = t[:]  # taken before the move: reading it waits for the launch writing it
    other = ct.rand(64, seed=3).sync()
    started = threading.Event()

    async def warm():  # the default pool's stream workers run in the parent
        return await add_one(ct.zeros(64).sync().partition(16), other)
    asyncio.run(warm())

    def long_launch():
        op = spin_write(t.partition(64), 3.0, 20000)
        started.set()
        op.sync()

    th = threading.Thread(target=long_launch)
    th.start()
    started.wait(5)
    time.sleep(0.05)  # the launch is running on that thread

    def child():
        t0 = time.monotonic()
        out = []
        for what, call in (("read", view.to_numpy),
                           ("launch", lambda: add_one(view.partition(64), ct.rand(4096, seed=2).sync()).sync())):
            try:
                call()
                out.append(f"{what}: ran")
            except ct.ForkError as e:
                out.append(f"{what}: ForkError {'parent process when it forked' in str(e)}")
        z, _ = add_one(ct.zeros(64).sync().partition(16), other).sync()  # fresh memory, memory not in flight
        ok = np.array_equal(z.unpartition().to_numpy(), other.to_numpy() + 1)
        async def awaited():  # on the default pool's streams, whose workers were the parent's
            return await add_one(ct.zeros(64).sync().partition(16), other)
        z2, _ = asyncio.run(awaited())
        z3, _ = add_one(z2, other).sync_on(ct.StreamPool("cpu", 2).next())  # a pool made in the child
        ok2 = np.array_equal(z3.unpartition().to_numpy(), other.to_numpy() + 1)  # it stores x + 1 again
        return f"{out} fresh={ok} awaited={ok2} secs={time.monotonic() - t0:.1f}"

    out = in_child(child)
    th.join(30)
    assert not th.is_alive()
    assert "'read: ForkError True'" in out and "'launch: ForkError True'" in out, out
    assert "fresh=True awaited=True" in out, out
    assert float(out.rsplit("secs=", 1)[1]) < 5, out
    assert np.all(view.to_numpy() == 3.0)  # the parent's launch finished normally


def test_fork_while_another_thread_churns_the_locks_does_not_deadlock_the_child():
    stop = threading.Event()
    x = ct.rand(256, seed=4).sync().shared()  # read by every launch at once

    def churn():
        while not stop.is_set():
            with REGISTRY._lock:  # the registry lock, held as often as possible
                pass
            z, _ = add_one(ct.zeros(256).sync().partition(64), x).sync()  # ownership, claims, registry
            z.unpartition()

    threads = [threading.Thread(target=churn) for _ in range(2)]
    for th in threads:
        th.start()
    try:
        for _ in range(3):
            out = in_child(lambda: "ok %s" % np.array_equal(
                add_one(ct.zeros(256).sync().partition(64), x).sync()[0].unpartition().to_numpy(),
                x.to_numpy() + 1))
            assert out == "ok True", out
    finally:
        stop.set()
        for th in threads:
            th.join(10)


def _small_launch(q):
    x = ct.rand(128, seed=5).sync()
    z, _ = add_one(ct.zeros(128).sync().partition(32), x).sync()
    q.put(bool(np.array_equal(z.unpartition().to_numpy(), x.to_numpy() + 1)))


def test_multiprocessing_fork_start_method_runs_a_safe_launch_in_the_child():
    add_one(ct.zeros(128).sync().partition(32), ct.rand(128, seed=6).sync()).sync()  # compiled, pools made
    ctx = multiprocessing.get_context("fork")
    q = ctx.Queue()
    p = ctx.Process(target=_small_launch, args=(q,))
    p.start()
    try:
        assert q.get(timeout=20) is True
    finally:
        p.join(10)
        if p.is_alive():  # pragma: no cover - a hang
            p.kill()
    assert p.exitcode == 0
