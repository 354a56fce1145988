"""A borrow's exit against a launch another thread is still making (its arguments moved in, its
kernel compiling). The exit can neither cancel such a launch (not built yet) nor wait for its run
(not running); the launch, once made, must therefore see that the borrow ended and refuse itself.
The interleaving is forced: the making thread pauses right after moving the partition in."""
from __future__ import annotations

import threading
import warnings

import numpy as np
import pytest

import safetile as ct
from safetile.safe.errors import OwnershipError
from safetile.safe.launch import LaunchOp

WAIT = 30.0  # seconds: a bound on every wait, so a broken exit fails instead of hanging


def _paused_take(monkeypatch, thread_name: str):
    """Make ``LaunchOp._take`` pause, on the thread named ``thread_name`` only, once it has moved
    the arguments in: returns (taken, go), events for 'moved in' and 'carry on'."""
    taken, go = threading.Event(), threading.Event()
    take = LaunchOp._take

    def paused(self, values, kernel):
        take(self, values, kernel)
        if threading.current_thread().name == thread_name:
            taken.set()
            assert go.wait(WAIT)

    monkeypatch.setattr(LaunchOp, "_take", paused)
    return taken, go


def _launch_while_the_borrow_ends(monkeypatch, make):
    """Start ``make(partition)`` on another thread; leave the borrow while that thread has moved the
    partition in but not finished making the launch; then let it finish and run what it made.
    Returns (what the thread raised or None, the tensor's values before, after)."""
    taken, go = _paused_take(monkeypatch, "maker")
    t = ct.from_dlpack(np.zeros(64, np.float32))
    outcome: list = []

    def maker(p):
        try:
            op = make(p)
            op.sync()
            outcome.append(None)
        except Exception as e:  # noqa: BLE001 - asserted by the caller
            outcome.append(e)

    with warnings.catch_warnings():
        warnings.simplefilter("error")  # the exit must not leave a warning either: nothing it could cancel
        with ct.borrow_mut(t) as b:
            th = threading.Thread(target=maker, args=(b.partition(16),), name="maker", daemon=True)
            th.start()
            assert taken.wait(WAIT)
    s = t.shared()
    before = s.to_numpy().copy()
    go.set()
    th.join(WAIT)
    assert not th.is_alive(), "the making thread hung"
    return outcome[0], before, s.to_numpy()


def test_a_launch_being_compiled_when_its_borrow_ends_refuses_itself(monkeypatch):
    @ct.entry
    def inc(z: ct.Mut[ct.f32, "B"]):  # a fresh kernel: the launch compiles (the slow path)
        z.store(z.load() + 1.0)

    err, before, after = _launch_while_the_borrow_ends(monkeypatch, lambda p: inc(p))
    assert isinstance(err, OwnershipError) and "borrow ended" in str(err), err
    np.testing.assert_array_equal(after, before)


def test_a_launch_of_an_unrun_op_s_result_made_when_its_borrow_ends_refuses_itself(monkeypatch):
    """The launch takes a device op as an argument (resolved when it runs): made without a compile,
    still in two steps."""
    @ct.entry
    def inc(z: ct.Mut[ct.f32, "B"]):
        z.store(z.load() + 1.0)

    @ct.entry
    def add(z: ct.Mut[ct.f32, "B"], x: ct.Ref[ct.f32, -1]):
        z.store(z.load() + ct.load_tile_like(x, z))

    x = ct.from_dlpack(np.ones(64, np.float32)).shared()
    unrun = ct.zeros((64,), ct.f32)  # a device op: resolved when the launch runs

    err, before, after = _launch_while_the_borrow_ends(monkeypatch, lambda p: add(p, unrun))
    assert isinstance(err, OwnershipError) and "borrow ended" in str(err), err
    np.testing.assert_array_equal(after, before)


def test_a_borrow_s_exit_waits_for_a_graph_replay_that_took_its_partition(monkeypatch):
    """A graph captured inside a borrow, replayed by another thread while the block is left: the
    replay took the partition, so the exit waits for it to end (after the exit nothing writes the
    tensor); later replays are refused (the partition was released)."""
    from safetile.safe import graph

    @ct.entry
    def inc(z: ct.Mut[ct.f32, "B"]):
        z.store(z.load() + 1.0)

    started, go = threading.Event(), threading.Event()
    replay = graph.Graph._replay

    def paused(self, owned, label):
        if threading.current_thread().name == "replayer":
            started.set()
            assert go.wait(WAIT)
        return replay(self, owned, label)

    monkeypatch.setattr(graph.Graph, "_replay", paused)
    t = ct.from_dlpack(np.zeros(64, np.float32))
    outcome: list = []
    exited = threading.Event()

    def leave(b):
        b.__exit__(None, None, None)
        exited.set()

    b = ct.borrow_mut(t).__enter__()
    g = inc(b.partition(16)).graph()
    th = threading.Thread(target=lambda: outcome.append(g.launch()), name="replayer", daemon=True)
    th.start()
    assert started.wait(WAIT)
    leaver = threading.Thread(target=leave, args=(b,), daemon=True)
    leaver.start()
    assert not exited.wait(0.2), "the borrow ended while a replay that took its partition was running"
    go.set()
    assert exited.wait(WAIT)
    th.join(WAIT)
    leaver.join(WAIT)
    assert len(outcome) == 1
    np.testing.assert_array_equal(t.to_numpy(), np.ones(64, np.float32))  # the replay ran, before the exit returned
    with pytest.raises(OwnershipError, match="released .its borrow ended"):
        g.launch()
    np.testing.assert_array_equal(t.to_numpy(), np.ones(64, np.float32))
    g.close()


@ct.entry
def inc_mapped(c: ct.MappedMut[ct.f32, ("B",)]):
    for idx in c.iter_indices():
        c.store(c.load(idx) + 1.0, idx)


@pytest.mark.parametrize("how", ["graph", "graph_scope", "mapped", "unpartitioned"])
def test_a_graph_captured_in_a_borrow_lets_the_tensor_be_shared_after_it(how):
    """Red team round 10 (1003): a graph captured with a partition of a borrow kept its writable
    claim on the tensor after the block (``t.shared()`` refused, saying the memory "can still be
    written") although no replay could ever run again. The exit closes such graphs; a replay
    afterwards is refused, naming the borrow."""
    @ct.entry
    def inc(z: ct.Mut[ct.f32, "B"]):
        z.store(z.load() + 1.0)

    t = ct.from_dlpack(np.zeros(64, np.float32))
    with ct.borrow_mut(t) as b:
        p = b.partition(16)
        if how == "graph_scope":
            with ct.graph_scope() as scope:
                (q,) = scope.record(inc(p))
                scope.record(inc(q))
            g = scope.graph
        elif how == "mapped":
            g = inc_mapped(p.map(2)).graph()
        else:
            g = inc(p).graph()
        g.launch()
        if how == "unpartitioned":
            p.unpartition()  # released inside the block already; the graph ends with the borrow
    s = t.shared()  # the graph's claim ended with the borrow
    want = 2.0 if how == "graph_scope" else 1.0
    np.testing.assert_array_equal(s.to_numpy(), np.full(64, want, np.float32))
    with pytest.raises(OwnershipError, match="released .its borrow ended"):
        g.launch()
    np.testing.assert_array_equal(s.to_numpy(), np.full(64, want, np.float32))


def test_a_chain_running_when_its_borrow_ends_keeps_the_partition_to_its_end(monkeypatch):
    """Red team rounds 9 (908) and 10 (1018): the docs say a terminal already running with a
    partition keeps it until that terminal ends; when the exit came while the chain's first launch
    was running (the partition moved into it, not yet lent to the chain), the partition was
    released at once and the chain's second launch refused, after the first had written ``t``. The
    exit now waits for such a launch, then for the terminal it gave the partition back to."""
    @ct.entry
    def inc(z: ct.Mut[ct.f32, "B"]):
        z.store(z.load() + 1.0)

    started, go = threading.Event(), threading.Event()
    execute = LaunchOp._execute

    def paused(self, ctx):
        if threading.current_thread().name == "chain" and not started.is_set():
            started.set()
            assert go.wait(WAIT)
        return execute(self, ctx)

    monkeypatch.setattr(LaunchOp, "_execute", paused)
    t = ct.from_dlpack(np.zeros(64, np.float32))
    outcome: list = []
    exited = threading.Event()

    def chain(p):
        try:
            (p,) = inc(p).then(lambda r: inc(r[0])).then(lambda r: inc(r[0])).sync()
            outcome.append(p)
        except Exception as e:  # noqa: BLE001 - asserted below
            outcome.append(e)

    b = ct.borrow_mut(t).__enter__()
    th = threading.Thread(target=chain, args=(b.partition(16),), name="chain", daemon=True)
    th.start()
    assert started.wait(WAIT)
    leaver = threading.Thread(target=lambda: (b.__exit__(None, None, None), exited.set()), daemon=True)
    leaver.start()
    assert not exited.wait(0.2), "the borrow ended while a chain was running with its partition"
    go.set()
    assert exited.wait(WAIT)
    th.join(WAIT)
    assert len(outcome) == 1 and not isinstance(outcome[0], Exception), outcome
    np.testing.assert_array_equal(t.to_numpy(), np.full(64, 3.0, np.float32))  # the whole chain, before the exit
