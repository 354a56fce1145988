"""Regressions of the independent red team's ownership findings (attacks/, issue 9).

Each test is one finding, fixed as a class: public constructors are the moving API
(attacks 23-25); copies and pickles never make a second owner (27-29); a live graph holds
what it reads and refuses to replay values moved elsewhere (39, 49); values an ``await``
gives back stay the awaiting coroutine's until it resumes (109); callable preconditions run
on every launch (73). Refusals are safetile errors that leave every argument byte-identical.
"""
from __future__ import annotations

import asyncio
import copy
import pickle
import time

import numpy as np
import pytest

import safetile as ct

from attack_helpers import is_safetile_error, poisoned, refused, rnd


@ct.entry
def fill(z: ct.Mut[ct.f32, "B"], x: ct.Ref[ct.f32, -1]):
    z.store(ct.load_tile_like(x, z) + 1.0)


@ct.entry
def mfill(c: ct.MappedMut[ct.f32, ("BM",)], v: ct.f32):
    for idx in c.iter_indices():
        c.store(ct.full((BM,), 1.0, ct.float32) * v, idx)


# ----------------------------------------------------------------------------- constructors (23-25)

def test_shared_constructor_moves_the_tensor():
    t = rnd(64, seed=1)
    s = ct.Shared(t)
    assert t.is_moved
    refused([s], lambda: t.partition(16), ct.UseAfterMoveError, "moved into shared")
    assert ct.Shared(s) is s  # a handle of a handle is the handle
    p = ct.zeros(64).sync().partition(16)
    refused([p], lambda: ct.Shared(p), ct.TensorError, "shares a Tensor, got Partition")
    assert np.array_equal(s.try_unwrap().to_numpy(), rnd(64, seed=1).to_numpy())


def test_partition_constructor_moves_the_tensor():
    t = rnd(64, seed=2)
    p = ct.Partition(t, (16,))
    assert isinstance(p, ct.Partition) and t.is_moved and p.grid() == (4,)
    refused([p], lambda: t.shared(), ct.UseAfterMoveError, "moved into partition")
    t2 = rnd(64, seed=3)
    refused([t2], lambda: ct.Partition(t2, (16,), False, True), ct.PartitionError, "borrow_mut")
    refused([t2], lambda: ct.Partition(np.zeros(4), (2,)), ct.PartitionError, "got ndarray")
    q = ct.Partition(rnd((4, 8), seed=4), (2,), True)  # prefix=True is partition_prefix
    assert q.is_prefix and q.tile_shape == (2, 8)
    p, x = fill(p, rnd(64, seed=9)).sync()
    assert np.allclose(p.unpartition().to_numpy(), rnd(64, seed=9).to_numpy() + 1)


def test_mapped_partition_constructor_moves_the_partition():
    p = ct.zeros(256).sync().partition(64)
    m = ct.MappedPartition(p, 2)
    assert p.is_moved and m.grid() == (2, 1, 1)
    refused([m], lambda: p.unpartition(), ct.UseAfterMoveError, "mapped partition")
    refused([m], lambda: ct.MappedPartition(m, 2), ct.PartitionError, "maps a Partition")
    m, _ = mfill(m, 5.0).sync()
    assert np.array_equal(m.unpartition().to_numpy(), np.full(256, 5.0, np.float32))


@pytest.mark.parametrize("cls", [ct.Tensor, ct.Partition, ct.MappedPartition, ct.Shared, ct.LaunchOp, ct.Graph])
def test_ownership_classes_cannot_be_subclassed(cls):
    with pytest.raises(ct.OwnershipError, match="cannot be subclassed"):
        type("Evil", (cls,), {"_check": lambda self, *a: None})


# ----------------------------------------------------------------------------- copies and pickles (27-29)

@pytest.mark.parametrize("dup", [copy.copy, copy.deepcopy, lambda v: pickle.loads(pickle.dumps(v))],
                         ids=["copy", "deepcopy", "pickle"])
@pytest.mark.parametrize("kind", ["tensor", "partition", "mapped", "borrow"])
def test_owners_cannot_be_duplicated(kind, dup):
    t = rnd(64, seed=5)
    v = {"tensor": lambda: t, "partition": lambda: t.partition(16), "mapped": lambda: t.partition(16).map(2),
         "borrow": lambda: ct.borrow_mut(t)}[kind]()
    e = refused([t] if kind in ("tensor", "borrow") else [v], lambda: dup(v), ct.OwnershipError,
                "cannot be (copied|deep-copied|pickled)")
    assert "second owner" in str(e)


def test_no_handle_hands_out_its_state():
    """Round 4's 413 note: ``__getstate__`` / ``__reduce__`` are the pickling protocol's public
    dunders; called directly they would hand out the private slots (a Shared's writable array)."""
    t = rnd(64, seed=9)
    x = rnd(64, seed=10)
    s = rnd(64, seed=11).shared()
    p = rnd(64, seed=12).partition(16)
    op = fill(p, x)
    m = ct.memcpy(ct.zeros(4).sync(), rnd(4, seed=14))
    handles = [t, t[:8], ct.zeros(8).sync().partition(4), ct.zeros(8).sync().partition(4).map(1), s,
               ct.borrow_mut(rnd(8, seed=13)), op, m,
               ct.zeros(4), ct.graph_scope()]
    assert {type(h).__name__ for h in handles} >= {"Tensor", "Partition", "MappedPartition", "Shared", "MutBorrow",
                                                   "LaunchOp", "Memcpy", "GraphScope"}
    for h in handles:
        for dunder in (h.__getstate__, h.__reduce__, lambda h=h: h.__reduce_ex__(2)):
            with pytest.raises(ct.OwnershipError, match="cannot be pickled"):
                dunder()
    op.sync()
    m.sync()
    refused([s], lambda: s.__getstate__(), ct.OwnershipError, "cannot be pickled")


def test_a_copied_shared_handle_is_the_handle():
    s = rnd(64, seed=6).shared()
    assert copy.copy(s) is s and copy.deepcopy(s) is s and copy.deepcopy([s])[0] is s
    refused([s], lambda: pickle.dumps(s), ct.OwnershipError, "cannot be pickled")
    u = s.try_unwrap()  # the copies die with the unwrap: they are the handle
    with pytest.raises(ct.OwnershipError, match="unwrapped"):
        copy.copy(s)
    u.partition(16).unpartition()


def test_a_copied_launch_is_the_launch_and_runs_once():
    x = rnd(64, seed=7)
    p = poisoned(64).partition(16)
    op = fill(p, x)
    oc = copy.copy(op)
    assert oc is op and copy.deepcopy(op) is op
    refused([], lambda: pickle.dumps(op), ct.OwnershipError, "cannot be pickled")
    p, x = op.sync()
    with pytest.raises(ct.DeviceOpError, match="runs once"):
        oc.sync()
    p2 = poisoned(64).partition(16)
    op2 = fill(p2, x)
    oc2 = copy.copy(op2)
    op2.cancel()
    s = p2.unpartition().shared()
    with pytest.raises(ct.DeviceOpError, match="cancelled"):
        oc2.sync()
    assert np.isnan(s.to_numpy()).all()


def test_a_copied_graph_is_the_graph_and_closes_with_it():
    x = rnd(64, seed=8)
    p = poisoned(64).partition(16)
    g = fill(p, x).graph()
    gc_ = copy.copy(g)
    assert gc_ is g
    refused([], lambda: pickle.dumps(g), ct.OwnershipError, "cannot be pickled")
    g.close()
    s = p.unpartition().shared()
    before = s.to_numpy()
    with pytest.raises(ct.GraphCaptureError, match="closed"):
        gc_.launch()
    assert np.array_equal(s.to_numpy(), before, equal_nan=True)


# ----------------------------------------------------------------------------- graphs hold what they use (39, 49)

def test_a_live_graph_holds_the_shared_handles_it_reads():
    s = ct.full(64, 1.0).sync().shared()
    g = fill(poisoned(64).partition(16), s).graph()
    e = refused([s], lambda: s.try_unwrap(), ct.OwnershipError, "live graph")
    assert "g.close()" in str(e)
    z, s2 = g.launch()
    assert s2 is s and np.array_equal(z.to_numpy(), np.full(64, 2.0, np.float32))
    g.close()
    s.try_unwrap().partition(16).unpartition()  # the hold ended with the graph


def test_a_collected_graph_releases_its_holds():
    import gc
    s = ct.full(64, 1.0).sync().shared()
    g = fill(poisoned(64).partition(16), s).graph()
    del g
    gc.collect()
    s.try_unwrap()


def test_a_replay_refuses_values_moved_elsewhere_and_leaves_them_untouched():
    x = rnd(64, seed=10)
    g = fill(poisoned(64).partition(16), x).graph()
    z, x2 = g.launch()
    want = z.to_numpy()
    op = fill(z, rnd(64, seed=11))  # z moved into an unrun launch
    e = refused([x2], lambda: g.launch(), ct.UseAfterMoveError, "used by a replay of a graph")
    assert "launch 'fill'" in str(e)
    z, _ = op.cancel()
    assert np.array_equal(z.to_numpy(), want)
    t = z.unpartition()  # the partition is consumed: the graph can never write through it again
    with ct.borrow_mut(t) as b:
        p = b.partition(32)
        refused([p], lambda: g.launch(), ct.UseAfterMoveError, "moved into the tensor returned by .unpartition")
    refused([t], lambda: g.launch(), ct.UseAfterMoveError)
    assert np.array_equal(t.to_numpy(), want)


def test_a_graph_on_a_borrowed_partition_refuses_to_replay_after_the_borrow():
    t = poisoned(64)
    with ct.borrow_mut(t) as b:
        g = fill(b.partition(16), rnd(64, seed=12)).graph()
        g.launch()  # inside the borrow it replays
    after = t.to_numpy()
    p = t.partition(16)
    op = fill(p, rnd(64, seed=13))
    refused([], lambda: g.launch(), ct.OwnershipError, "released")
    op.cancel()
    assert np.array_equal(p.unpartition().to_numpy(), after)


def test_values_consumed_during_the_capture_are_represented_by_what_they_became():
    x = rnd(64, seed=14)
    op = fill(poisoned(64).partition(16), x).then(lambda r: fill(r[0].unpartition().partition(32), r[1]))
    g = op.graph()
    for _ in range(2):
        z, x2 = g.launch()
        assert np.allclose(z.to_numpy(), x.to_numpy() + 1)
    op2 = fill(z, x2)
    refused([], lambda: g.launch(), ct.UseAfterMoveError, "launch 'fill'")
    op2.cancel()
    g.launch()


def test_replays_of_one_graph_from_two_threads_take_turns():
    import threading
    g = fill(poisoned(4096).partition(256), rnd(4096, seed=15)).graph()
    errors = []

    def replay():
        try:
            for _ in range(20):
                g.launch()
        except Exception as e:  # noqa: BLE001 - reported below
            errors.append(e)
    threads = [threading.Thread(target=replay) for _ in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert not errors and g.replays == 60


# ----------------------------------------------------------------------------- asyncio (109)

def test_values_given_back_by_an_await_are_the_awaiting_coroutines_until_it_resumes():
    p = poisoned(1 << 16).partition(4096)
    x = rnd(1 << 16, seed=16)
    op = fill(p, x)
    seen = {}

    async def waiter():
        seen["result"] = await op

    async def thief():
        await asyncio.sleep(0)
        deadline = time.time() + 30
        while op._state != "done" and time.time() < deadline:  # block the loop: the waiter cannot resume
            time.sleep(0.001)
        try:
            fill(p, x)
            seen["stolen"] = True
        except ct.UseAfterMoveError as e:
            seen["refusal"] = str(e)

    async def main():
        await asyncio.gather(waiter(), thief())
    asyncio.run(main())
    assert "stolen" not in seen and "unfinished await" in seen["refusal"]
    z, x2 = seen["result"]
    assert np.allclose(z.to_numpy(), x.to_numpy() + 1)
    fill(z, x2).cancel()  # the waiter's own, and free now


def test_a_failed_await_frees_its_values_once_the_work_has_ended():
    p = poisoned(64).partition(16)

    def boom(_):
        raise RuntimeError("host step failed")

    async def main():
        with pytest.raises(RuntimeError, match="host step failed"):
            await fill(p, rnd(64, seed=17)).then(boom)
    asyncio.run(main())
    fill(p, rnd(64, seed=17)).cancel()


# ----------------------------------------------------------------------------- terminal devices (the graph() pitfall)

def test_a_terminal_never_drives_gpu_work_from_a_stream_it_was_given_for_another_device():
    from safetile.safe.deviceop import ExecContext
    ctx = ExecContext(ct.Stream("cpu"), label="a test terminal", pinned=True)
    with pytest.raises(ct.DeviceOpError, match="runs on cuda:0, but this terminal drives .*the stream given"):
        ctx.switch("cuda:0", "launch 'k'")
    assert ctx.stream.device == "cpu"


def test_a_graph_given_a_stream_of_another_device_is_refused():
    from safetile.safe.graph import _stream_for
    with pytest.raises(ct.GraphCaptureError, match="recorded work runs on cuda:0 but the stream is on cpu"):
        _stream_for("cuda:0", ct.Stream("cpu"), "graph()")
    assert _stream_for(None, None, "graph()").device == ct.default_device()


# ----------------------------------------------------------------------------- preconditions (73)

LIMIT = 1000


@ct.entry(preconditions=[lambda z: z.shape[0] <= LIMIT, "dim(x, 0) >= 1"])
def limited(z: ct.Mut[ct.f32, "B"], x: ct.Ref[ct.f32, -1]):
    z.store(ct.load_tile_like(x, z) + 1.0)


def test_callable_preconditions_run_on_every_launch_of_a_cached_plan():
    global LIMIT
    z, x = poisoned(256).partition(64), rnd(256, seed=18)
    z, x = limited(z, x).sync()
    z, x = limited(z, x).sync()  # the same objects: the whole plan is reused
    LIMIT = 0
    try:
        e = refused([z, x], lambda: limited(z, x), ct.PreconditionError, "does not hold")
        assert "LIMIT" in str(e)
    finally:
        LIMIT = 1000
    z, x = limited(z, x).sync()
    assert np.allclose(z.unpartition().to_numpy(), x.to_numpy() + 1)


@pytest.mark.parametrize("cond", ["9**9**9 > 0", "dim(x, 0) ** 100000 > 1", "(2**4000) * (2**4000) > 1"])
def test_huge_precondition_arithmetic_is_refused_quickly(cond):
    @ct.entry(preconditions=[cond])
    def k(z: ct.Mut[ct.f32, "B"], x: ct.Ref[ct.f32, -1]):
        z.store(z.load())
    z, x = poisoned(64).partition(16), rnd(64, seed=19)
    t0 = time.perf_counter()
    refused([z, x], lambda: k(z, x), ct.PreconditionError, "could not be evaluated: OverflowError")
    assert time.perf_counter() - t0 < 1.0
