"""DeviceOp: laziness, combinators, terminals (sync, sync_on, await, graph), streams."""
from __future__ import annotations

import asyncio
import threading
import time

import numpy as np
import pytest
from triton_interp import triton_interpreter

import safetile as ct


@ct.entry
def axpb(z: ct.Mut[ct.f32, "B"], a: ct.f32, b: ct.f32):
    z.store(z.load() * a + b)


@ct.entry
def add(z: ct.Mut[ct.f32, "B"], x: ct.Ref[ct.f32, -1], y: ct.Ref[ct.f32, -1]):
    z.store(ct.load_tile_like(x, z) + ct.load_tile_like(y, z))


def vec(n, seed):
    return ct.randn(n, seed=seed).sync()


def test_ops_are_lazy_until_driven():
    ran = []
    op = ct.rand(64, seed=1).inspect(lambda t: ran.append(t))
    assert ran == []
    t = op.sync()
    assert ran == [t] and isinstance(t, ct.Tensor) and t.shape == (64,)
    z = vec(256, 2)
    before = z.to_numpy()
    op = axpb(z.partition(64), 2.0, 1.0)
    (zp, a, b) = op.sync()
    assert (a, b) == (2.0, 1.0)
    assert np.allclose(zp.to_numpy(), before * 2 + 1)


def test_factories_values_and_determinism():
    assert np.array_equal(ct.zeros((3, 4)).sync().to_numpy(), np.zeros((3, 4), np.float32))
    assert np.array_equal(ct.ones(5, ct.i32).sync().to_numpy(), np.ones(5, np.int32))
    assert np.array_equal(ct.full(3, 7.5).sync().to_numpy(), np.full(3, 7.5, np.float32))
    assert ct.full(3, 7).sync().dtype is ct.int32
    assert np.array_equal(ct.arange(6, dtype=ct.f32, start=1, step=2).sync().to_numpy(),
                          np.arange(1, 13, 2, dtype=np.float32))
    r1, r2 = ct.rand(100, seed=5).sync().to_numpy(), ct.rand(100, seed=5).sync().to_numpy()
    assert np.array_equal(r1, r2) and r1.min() >= 0 and r1.max() < 1 and r1.std() > 0.1
    n = ct.randn(4000, seed=6).sync().to_numpy()
    assert abs(n.mean()) < 0.1 and abs(n.std() - 1) < 0.1
    assert ct.randn(8, seed=1, dtype=ct.f16).sync().dtype is ct.float16


def test_then_chains_on_one_stream_and_map_inspect():
    z = vec(512, 3)
    ref = z.to_numpy()
    seen = []
    op = axpb(z.partition(128), 2.0, 0.0)
    for _ in range(4):
        op = op.then(lambda r: axpb(r[0], 2.0, 0.0))
    op = op.inspect(lambda r: seen.append(r[0].grid())).map(lambda r: r[0].unpartition())
    out = op.sync()
    assert seen == [(4,)]
    assert np.allclose(out.to_numpy(), ref * 32)


def test_zip_unzip_first_last():
    a, b = ct.zip(ct.ones(4), ct.full(4, 2.0)).sync()
    assert np.array_equal(a.to_numpy() + b.to_numpy(), np.full(4, 3.0, np.float32))
    assert ct.zip(ct.value(1), 2, ct.value(3)).last().sync() == 3
    assert ct.zip(ct.value(1), 2).first().sync() == 1
    x, y = vec(256, 4), vec(256, 5)
    count = []
    op = add(ct.zeros(256).partition(64), x, y).inspect(lambda r: count.append(1))
    zo, xo, yo = op.unzip()
    z = zo.map(lambda p: p.unpartition()).sync()
    x2 = xo.sync()
    assert count == [1]  # the launch ran once for all three outputs
    assert x2 is x and np.array_equal(z.to_numpy(), x.to_numpy() + y.to_numpy())


def test_shared_runs_at_most_once_and_gives_shared_tensors():
    runs = []
    op = ct.rand(32, seed=7).inspect(lambda t: runs.append(t)).shared()
    s1 = op.sync()
    s2 = op.sync()
    assert len(runs) == 1 and s1 is s2 and isinstance(s1, ct.Shared)
    z = ct.zeros(32).partition(32)
    z, x, y = add(z, op, op).sync()  # one shared input used twice
    assert np.allclose(z.to_numpy(), 2 * s1.to_numpy())


def test_launch_arguments_may_be_device_ops():
    z, x, y = add(ct.full(300, np.nan).partition(128), ct.rand(300, seed=8), ct.rand(300, seed=9).shared()).sync()
    assert isinstance(z, ct.Partition) and isinstance(x, ct.Tensor) and isinstance(y, ct.Shared)
    assert np.array_equal(z.to_numpy(), x.to_numpy() + y.to_numpy())


def test_results_return_same_kinds():
    x = vec(200, 10)
    y = vec(200, 11).shared()
    a = np.random.default_rng(0).standard_normal(200).astype(np.float32)
    z = ct.zeros(200).sync().partition(64)
    z2, x2, y2 = add(z, x, y).sync()
    assert (z2, x2, y2) == (z, x, y)
    z3, a2, y3 = add(z2, a, y2).sync()
    assert a2 is a and isinstance(z3, ct.Partition) and isinstance(y3, ct.Shared)


def test_sync_on_explicit_stream_and_round_robin_pool():
    pool = ct.default_pool("cpu")
    assert len(pool.streams) == 4
    got = [pool.next() for _ in range(8)]
    assert len({s.id for s in got}) == 4 and got[0] is got[4]
    s = ct.Stream("cpu")
    t = ct.ones(8).sync_on(s)
    assert np.array_equal(t.to_numpy(), np.ones(8, np.float32))


def test_nested_sync_is_an_error_and_gives_arguments_back():
    z = ct.zeros(64).sync().partition(64)
    op = axpb(z, 1.0, 1.0).then(lambda r: axpb(r[0], 1.0, 1.0).sync())
    with pytest.raises(ct.NestedSyncError, match="then"):
        op.sync()
    assert not z.is_moved
    assert np.array_equal(z.to_numpy(), np.ones(64, np.float32))  # only the outer launch ran


@pytest.mark.parametrize("combinator", ["map", "then", "inspect"])
def test_a_closure_raising_stopiteration_fails_an_await_instead_of_hanging_it(combinator):
    """An asyncio future cannot hold a StopIteration: the await must fail (as a DeviceOpError from
    it), not wait forever, and what the chain moved is given back."""
    rng = np.random.default_rng(7)
    start = rng.standard_normal(64).astype(np.float32)
    z = ct.from_dlpack(start.copy()).partition(16)

    def exhausted(v):
        return next(iter(()))
    op = getattr(axpb(z, 2.0, 1.0), combinator)(exhausted)

    async def main():
        return await asyncio.wait_for(op, 10)
    with pytest.raises(ct.DeviceOpError, match="raised StopIteration") as e:
        asyncio.run(main())
    assert isinstance(e.value.__cause__, StopIteration)
    assert not z.is_moved
    np.testing.assert_array_equal(z.unpartition().to_numpy(), start * 2.0 + 1.0)  # the launch before it ran


@pytest.mark.parametrize("where", ["shared before the slow step", "shared after it", "partition combinator"])
def test_a_timed_out_await_whose_work_finishes_undoes_the_combinators_moves(where):
    """The await gives up while the work runs; the work then succeeds, but its value (a Shared
    made by .shared(), a partition made by .partition()) reaches nobody: those moves are undone
    as for a failed terminal, so the handles the program holds are usable again (red team round 6,
    618)."""
    rng = np.random.default_rng(9)
    start = rng.standard_normal(64).astype(np.float32)
    p = ct.from_dlpack(start.copy()).partition(16)
    gate = threading.Event()

    def slow(v):
        gate.wait(10)
        return v
    if where == "shared before the slow step":
        op = axpb(p, 2.0, 1.0).map(slow).shared()
    elif where == "shared after it":
        op = axpb(p, 2.0, 1.0).shared().map(slow)
    else:
        t = p.unpartition()
        op = ct.value(t).partition(16).map(slow)

    async def main():
        return await asyncio.wait_for(op, 0.2)
    with pytest.raises(asyncio.TimeoutError):
        asyncio.run(main())
    gate.set()
    del op
    deadline = time.monotonic() + 10
    while True:  # the work ends on the stream's worker, then the moves are undone
        try:
            t = t if where == "partition combinator" else p.unpartition()
            t.to_numpy()
            break
        except ct.OwnershipError:
            assert time.monotonic() < deadline, "the value stayed moved into a handle nobody holds"
            time.sleep(0.02)
    expected = start if where == "partition combinator" else start * 2.0 + 1.0
    np.testing.assert_array_equal(t.to_numpy(), expected)
    q = axpb(t.partition(16), 1.0, 1.0).sync()[0]  # writable again
    np.testing.assert_array_equal(q.unpartition().to_numpy(), expected + 1.0)


def test_await_does_not_block_the_event_loop():
    z = ct.zeros(1 << 14).sync().partition(1 << 10)
    op = axpb(z, 1.0, 1.0)
    for i in range(30):
        if i == 15:  # work that surely outlasts the loop's thread-switch interval (the launches may not)
            op = op.inspect(lambda r: time.sleep(0.05))
        op = op.then(lambda r: axpb(*r))
    ticks = []

    async def ticker(stop):
        while not stop.is_set():
            ticks.append(time.perf_counter())
            await asyncio.sleep(0)

    async def main():
        stop = asyncio.Event()
        t = asyncio.create_task(ticker(stop))
        worker_threads = []
        res = await op.inspect(lambda r: worker_threads.append(threading.current_thread().name))
        stop.set()
        await t
        return res, worker_threads

    (zp, a, b), names = asyncio.run(main())
    assert np.array_equal(zp.to_numpy(), np.full(1 << 14, 31.0, np.float32))
    assert names[0].startswith("safetile-stream")  # CPU work ran on the stream's worker thread
    assert len(ticks) > 3  # the loop kept running while the work executed


def test_host_reads_during_async_launch_raise_or_wait():
    x = vec(1 << 12, 12)
    view = x[0:16]  # a view taken before the move
    z = ct.zeros(1 << 12).sync()
    zview = z[0:8]
    gate = threading.Event()
    y = x.dup().sync()
    launch = add(z.partition(1 << 10), x, y)  # moves z (into the partition), x and y (into the launch)
    op = ct.value(None).then(lambda _: gate.wait(5) and None).then(lambda _: launch)

    async def main():
        task = asyncio.ensure_future(op)
        await asyncio.sleep(0.01)
        with pytest.raises(ct.UseAfterMoveError, match="moved into partition"):
            z.to_numpy()
        with pytest.raises(ct.UseAfterMoveError, match="moved into launch 'add'"):
            x.to_numpy()
        assert np.array_equal(zview.to_numpy(), np.zeros(8, np.float32))  # the launch has not started
        gate.set()
        res = await task
        return res

    zp, _, _ = asyncio.run(main())
    assert np.array_equal(zview.to_numpy(), 2 * view.to_numpy()[:8])
    assert np.array_equal(zp.to_numpy(), 2 * x.to_numpy())


def test_view_reads_wait_for_inflight_writer():
    """A view taken before the move is readable, but only between launches, never during one."""
    big = 1 << 16
    z = ct.zeros(big).sync()
    zview = z[0:4]
    started = threading.Event()
    chain = axpb(z.partition(1 << 12), 1.0, 3.0)
    for _ in range(20):
        chain = chain.then(lambda r: axpb(*r))
    op = ct.value(None).inspect(lambda _: started.set()).then(lambda _: chain)
    th = threading.Thread(target=op.sync)
    th.start()
    started.wait(5)
    seen = [zview.to_numpy() for _ in range(5)]
    th.join()
    for v in seen:
        assert np.all(v == v[0]) and v[0] % 3 == 0 and 0 <= v[0] <= 63
    assert np.array_equal(zview.to_numpy(), np.full(4, 63.0, np.float32))


def test_graph_capture_and_replay_with_memcpy_refresh():
    x = vec(256, 13)
    y = vec(256, 14).shared()
    z = ct.zeros(256).sync()
    ran = []
    op = add(z.partition(64), x, y).inspect(lambda r: ran.append(1)).then(lambda r: add(*r))
    g = op.graph()
    assert ran == [1] and g.num_ops == 2  # host closures run at capture only
    assert np.array_equal(g.value[0].to_numpy(), np.zeros(256, np.float32))  # capture ran nothing
    zp, x2, y2 = g.launch()
    assert np.allclose(zp.to_numpy(), x.to_numpy() + y.to_numpy())
    for seed in (15, 16):
        new = np.random.default_rng(seed).standard_normal(256).astype(np.float32)
        ct.memcpy(x, new).sync()
        zp, _, _ = g.launch()
        assert np.allclose(zp.to_numpy(), new + y.to_numpy())
    assert g.replays == 3 and ran == [1]


def test_graph_scope_records_several_ops():
    x, y = vec(128, 17), vec(128, 18)
    z = ct.zeros(128).sync().partition(32)
    with ct.graph_scope() as s:
        z, x, y = s.record(add(z, x, y))
        (z, a, b) = s.record(axpb(z, 2.0, 1.0))
    g = s.graph
    assert g.num_ops == 2
    for _ in range(3):
        first, last = g.launch()  # the values of every recorded op
        z = last[0]
    assert np.allclose(z.to_numpy(), 2 * (x.to_numpy() + y.to_numpy()) + 1)
    with pytest.raises(ct.GraphCaptureError):
        with ct.graph_scope() as s2:
            s2.record(ct.zeros(4))


def test_memcpy_checks_shapes_and_types():
    t = ct.zeros(4).sync()
    with pytest.raises(ct.LaunchTypeError, match="shapes differ"):
        ct.memcpy(t, np.zeros(5, np.float32))
    with pytest.raises(ct.LaunchTypeError, match="element types differ"):
        ct.memcpy(t, np.zeros(4, np.float64))
    assert not t.is_moved
    t = ct.memcpy(t, np.arange(4, dtype=np.float32)).sync()
    assert np.array_equal(t.to_numpy(), np.arange(4, dtype=np.float32))


def test_graph_replay_on_triton_interpreter():
    """A captured chain replays through the Triton backend (interpreter on host memory)."""
    with triton_interpreter():
        k = axpb.backend("triton")
        z = ct.zeros(64).sync()
        g = k(z.partition(32), 2.0, 1.0).then(lambda r: k(*r)).graph()
        for _ in range(2):
            zp, _, _ = g.launch()
        # each replay: z -> (2z + 1) twice; from 0: 3, then 15
        assert np.array_equal(zp.to_numpy(), np.full(64, 15.0, np.float32))


def test_a_failed_terminal_gives_values_back_and_leaves_nothing_in_flight():
    from safetile.safe.memory import REGISTRY
    z = ct.zeros(64).sync().partition(16)
    before = REGISTRY._entries

    def boom(r):
        raise RuntimeError("boom")
    with pytest.raises(RuntimeError, match="boom"):
        axpb(z, 2.0, 1.0).then(boom).sync()
    assert REGISTRY._entries == before  # the CPU entry went with the terminal
    assert np.array_equal(z.to_numpy(), np.ones(64, np.float32))  # the launch ran; z is free again

    async def main():
        with pytest.raises(RuntimeError, match="boom"):
            await axpb(z, 2.0, 1.0).then(boom)
    asyncio.run(main())
    assert REGISTRY._entries == before
    assert np.array_equal(z.to_numpy(), np.full(64, 3.0, np.float32))


def test_an_op_dropped_inside_a_wait_gives_back_without_deadlock():
    """A finalizer (an unrun LaunchOp dropped and given back) may run inside any allocation,
    also while this thread waits on an in-flight state change: it must not deadlock."""
    import gc

    from safetile.safe.memory import wait_until

    def scenario(done: list) -> None:
        z = ct.zeros(64).sync().partition(16)
        holder = [add(z, ct.rand(64, seed=1).sync(), ct.rand(64, seed=2).sync())]  # built, never run
        calls: list = []

        def test() -> bool:
            calls.append(1)
            if len(calls) == 2:  # the second test runs under the condition's lock
                holder.clear()
                gc.collect()
                return True
            return False

        with pytest.warns(ct.LaunchDroppedWarning):
            wait_until(test)
        done.append(z.unpartition().to_numpy())  # given back: usable again

    done: list = []
    t = threading.Thread(target=scenario, args=(done,), daemon=True)
    t.start()
    t.join(20)
    assert not t.is_alive(), "deadlock: the dropped op's finalizer waited on a lock its own thread held"
    assert done and done[0].shape == (64,)


def test_a_holder_collected_while_a_claim_is_checked_does_not_deadlock(monkeypatch):
    """A shared handle collected in the middle of another claim's overlap check releases its
    claim from a finalizer on the same thread: no deadlock, and its claim is gone."""
    import gc

    import safetile.safe.claims as claims

    def scenario(done: list) -> None:
        doomed = [ct.rand(32, seed=3).sync().shared()]
        real = claims.overlaps
        calls: list = []

        def overlaps(a, b):
            if not calls:
                calls.append(1)
                doomed.clear()
                gc.collect()  # the Shared's finalizer runs here, inside claim()
            return real(a, b)

        monkeypatch.setattr(claims, "overlaps", overlaps)
        p = ct.zeros(64).sync().partition(16)  # a writable claim, checked against the frozen one
        done.append((calls, p.unpartition().to_numpy().shape))

    done: list = []
    t = threading.Thread(target=scenario, args=(done,), daemon=True)
    t.start()
    t.join(20)
    assert not t.is_alive(), "deadlock: a finalizer released a claim under the lock its thread held"
    assert done and done[0] == ([1], (64,))
