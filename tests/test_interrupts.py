"""Interrupts (KeyboardInterrupt) while a host thread waits for work on a stream worker, and
the wait cycle between stream workers and graph replays (round-2 attacks 200/201/202/211/222).

The launch's CPU run is held at a gate (``run_cpu`` wrapped), so "the work is running when the
interrupt arrives" is a fact, not a timing guess; the interrupt is a real SIGINT to the main
thread (pytest and pytest-xdist run tests there).
"""
from __future__ import annotations

import signal
import threading
import time

import numpy as np
import pytest

import safetile as ct
from safetile.runtime import launch as rt_launch
from safetile.runtime.interrupts import GATE
from safetile.safe.memory import REGISTRY

pytestmark = [pytest.mark.threads,
              pytest.mark.skipif(threading.current_thread() is not threading.main_thread()
                                 or signal.getsignal(signal.SIGINT) not in (signal.default_int_handler, GATE.handler),
                                 reason="needs the main thread with Python's SIGINT handler")]


@ct.entry
def add(z: ct.Mut[ct.f32, "B"], x: ct.Ref[ct.f32, -1], v: ct.f32):
    z.store(z.load() + ct.load_tile_like(x, z) + v)


@pytest.fixture
def gate(monkeypatch):
    """Hold every CPU launch at its start until ``gate.open`` is set (``gate.started`` says one is held)."""
    real = rt_launch.run_cpu

    class Gate:
        started = threading.Event()
        open = threading.Event()

    def held(*a, **k):
        Gate.started.set()
        assert Gate.open.wait(30), "the gate was never opened"
        return real(*a, **k)
    monkeypatch.setattr(rt_launch, "run_cpu", held)
    yield Gate
    Gate.open.set()


def interrupt_when(event: threading.Event, delay: float = 0.05) -> None:
    """Send SIGINT to the main thread once ``event`` is set."""
    main = threading.main_thread().ident

    def fire():
        assert event.wait(30)
        time.sleep(delay)
        signal.pthread_kill(main, signal.SIGINT)
    threading.Thread(target=fire, daemon=True).start()


def read_in_thread(view) -> tuple[threading.Thread, list]:
    out: list = []
    th = threading.Thread(target=lambda: out.append(view.to_numpy()), daemon=True)
    th.start()
    return th, out


def setup(n=4096):
    x = ct.from_numpy(np.full(n, 2.0, np.float32)).sync()
    t = ct.zeros(n).sync()
    view = t[:]  # another object over the same memory, taken before the move
    return t.partition(1024), x, view


def test_interrupted_sync_on_keeps_the_running_launch_registered_and_gives_values_back(gate):
    p, x, view = setup()
    s = ct.Stream("cpu")
    busy = threading.Event()
    s.submit(busy.wait)  # the launch queues behind this: its worker runs it
    op = add(p, x, 1.0)
    interrupt_when(gate.started)
    busy.set()
    with pytest.raises(KeyboardInterrupt):
        op.sync_on(s)
    th, out = read_in_thread(view)  # waits for the launch still running on the worker
    th.join(0.3)
    assert th.is_alive() and not out, "a host read of a view ran while the interrupted launch ran"
    with pytest.raises(ct.UseAfterMoveError):
        p.to_numpy()  # still in the launch
    gate.open.set()
    th.join(10)
    np.testing.assert_array_equal(out[0], np.full(4096, 3.0, np.float32))
    s.synchronize()
    np.testing.assert_array_equal(p.to_numpy(), np.full(4096, 3.0, np.float32))  # given back
    p, x, _ = add(p, x, 1.0).sync()  # usable by anyone
    assert not REGISTRY._entries


def test_interrupted_sync_on_before_the_launch_started_never_runs_it(gate):
    p, x, _ = setup()
    s = ct.Stream("cpu")
    busy = threading.Event()
    s.submit(busy.wait)
    op = add(p, x, 1.0)
    queued = threading.Event()
    threading.Timer(0.1, queued.set).start()
    interrupt_when(queued, 0)
    with pytest.raises(KeyboardInterrupt):
        op.sync_on(s)
    busy.set()
    gate.open.set()
    s.synchronize()
    assert not gate.started.is_set()  # withdrawn from the queue: it never ran
    p, x, _ = op.cancel()  # the op still holds its arguments: they come back through it
    np.testing.assert_array_equal(p.to_numpy(), np.zeros(4096, np.float32))
    assert not REGISTRY._entries and s._queued == 0


def test_interrupted_graph_replay_stays_registered_and_the_graph_stays_usable(gate):
    p, x, view = setup()
    s = ct.Stream("cpu")
    gate.open.set()
    g = add(p, x, 1.0).graph_on(s)
    gate.open.clear()
    gate.started.clear()
    busy = threading.Event()
    s.submit(busy.wait)
    interrupt_when(gate.started)
    busy.set()
    with pytest.raises(KeyboardInterrupt):
        g.launch()
    th, out = read_in_thread(view)
    th.join(0.3)
    assert th.is_alive() and not out, "a host read of a view ran while the interrupted replay ran"
    gate.open.set()
    th.join(10)
    np.testing.assert_array_equal(out[0], np.full(4096, 3.0, np.float32))
    s.synchronize()
    g.launch()  # the values came back and the graph's lock was let go
    np.testing.assert_array_equal(view.to_numpy(), np.full(4096, 6.0, np.float32))
    g.close()
    assert not REGISTRY._entries


def test_interrupt_while_leaving_a_borrow_still_ends_the_borrow(gate):
    t = ct.zeros(4096).sync()
    x = ct.from_numpy(np.full(4096, 2.0, np.float32)).sync()
    interrupt_when(gate.started, 0.1)
    with pytest.raises(KeyboardInterrupt):
        with ct.borrow_mut(t) as b:
            op = add(b.partition(1024), x, 1.0)
            threading.Timer(0.5, gate.open.set).start()  # after the interrupt has arrived
            th = threading.Thread(target=op.sync, daemon=True)
            th.start()
    assert gate.open.is_set(), "the borrow's exit stopped waiting for its running launch"
    th.join(10)
    np.testing.assert_array_equal(t.to_numpy(), np.full(4096, 3.0, np.float32))  # the borrow has ended


def test_a_stream_worker_never_waits_for_a_replay_queued_behind_it():
    """211's wait cycle, made deterministic: a sync_on job and then a graph replay queue on one
    stream; the replay used to claim its memory before queueing, so the job ahead of it (the
    stream's worker) waited in the registry for a replay that could only run after it."""
    p, x, view = setup()
    x = x.shared()  # read by both
    other = view[:]
    s = ct.Stream("cpu")
    g = add(view.partition(1024), x, 1.0).graph_on(s)
    busy = threading.Event()
    s.submit(busy.wait)
    results: list = []
    t1 = threading.Thread(target=lambda: results.append(add(p, x, 1.0).sync_on(s)), daemon=True)
    t1.start()
    deadline = time.time() + 10
    while s._queued < 2 and time.time() < deadline:
        time.sleep(0.005)
    t2 = threading.Thread(target=lambda: results.append(g.launch()), daemon=True)
    t2.start()
    time.sleep(0.1)  # the replay is queued behind the launch (or, before the fix, claimed and queued)
    busy.set()
    t1.join(10)
    t2.join(10)
    assert not t1.is_alive() and not t2.is_alive(), "deadlock between a stream worker and a queued replay"
    g.close()
    np.testing.assert_array_equal(other.to_numpy(), np.full(4096, 6.0, np.float32))


def test_await_abandoned_with_its_closed_loop_gives_the_values_back_when_the_work_ends(gate):
    """Round-2 attack 215 c: the coroutine awaiting a launch is never resumed (its loop is closed
    while the launch runs); the values come back when the launch ends, not at some later gc."""
    import asyncio
    import gc
    p, x, _ = setup()
    x = x.shared()
    gc.disable()  # no collection may close the abandoned coroutine for us
    try:
        async def start():
            task = asyncio.ensure_future(_await(add(p, x, 1.0)))  # never awaited: abandoned
            await asyncio.sleep(0)
            return task
        loop = asyncio.new_event_loop()
        loop.run_until_complete(start())
        assert gate.started.wait(10)
        loop.close()  # while the launch runs on a stream worker
        gate.open.set()
        for s in ct.default_pool("cpu").streams:
            s.synchronize()
        np.testing.assert_array_equal(p.to_numpy(), np.full(4096, 3.0, np.float32))
    finally:
        gc.enable()


async def _await(op):
    return await op
