"""Adversarial corpus: a refused or failed terminal gives every argument back (red team round 4: 409).

``op.shared()`` turns the values of ``op`` into ``Shared`` handles and ``op.partition(shape)``
moves a tensor into a partition while a terminal runs. When the terminal then fails, or the
graph capture is refused at any step (also when the graph itself is refused, after the capture
ran), nobody ever gets those handles: the arguments must come back usable (G4, G7), and the
half-run operation must refuse to run again with a safetile error rather than hand out stale
handles.
"""
from __future__ import annotations

import asyncio
import gc

import numpy as np
import pytest

import safetile as ct

from attack_helpers import is_safetile_error


@ct.entry
def fill(z: ct.Mut[ct.f32, "B"], x: ct.Ref[ct.f32, -1]):
    z.store(ct.load_tile_like(x, z) + 1.0)


def _args():
    x = ct.rand(64, seed=1).sync()
    return x, x[:], ct.zeros(64).sync().partition(64)


def _usable(x, xview, z):
    """Every argument is usable again: read, unpartitioned, a view of x partitioned (no frozen claim left)."""
    gc.collect()
    x.to_numpy()
    xview.partition(64).unpartition()
    t = z.unpartition()
    t.partition(64).unpartition()


def _refused(action):
    with pytest.raises(Exception) as info:
        action()
    assert is_safetile_error(info.value), repr(info.value)
    return info.value


def test_refused_capture_of_a_shared_op_gives_the_arguments_back():
    x, xview, z = _args()
    op = fill(z, x).shared()
    _refused(op.graph)  # the graph would write z, which op.shared() makes Shared
    e = _refused(op.sync)  # the half-run op does not hand out stale handles
    assert "given back" in str(e)
    del op
    _usable(x, xview, z)


def test_refused_graph_scope_gives_the_arguments_back():
    x, xview, z = _args()
    with pytest.raises(ct.AliasError):
        with ct.graph_scope() as sc:
            sc.record(fill(z, x).shared())
    del sc
    _usable(x, xview, z)


def test_graph_scope_left_by_an_exception_gives_the_arguments_back():
    x, xview, z = _args()
    with pytest.raises(KeyError):
        with ct.graph_scope() as sc:
            s = sc.record(fill(z, x).shared())
            raise KeyError("the user's own error")
    assert sc.graph is None
    with pytest.raises(ct.OwnershipError):  # the handles the scope returned were given back
        s[1].to_numpy()
    _usable(x, xview, z)


def test_refused_graph_update_gives_the_new_arguments_back():
    x, xview, z = _args()
    g = fill(ct.zeros(64).sync().partition(64), ct.rand(64).sync()).graph()
    _refused(lambda: g.update(fill(z, x).shared()))
    _usable(x, xview, z)
    g.launch()  # the old capture is kept
    g.close()


def test_failed_sync_after_shared_gives_the_arguments_back():
    """A then-step refused (a Shared handle passed as a mutable argument) after op.shared() ran."""
    x, xview, z = _args()
    _refused(lambda: fill(z, x).shared().then(lambda v: fill(v[0], v[1])).sync())
    _usable(x, xview, z)


def test_failed_await_after_shared_gives_the_arguments_back():
    x, xview, z = _args()

    async def main():
        await fill(z, x).shared().then(lambda v: fill(v[0], v[1]))
    _refused(lambda: asyncio.run(main()))
    _usable(x, xview, z)


def test_shared_refused_midway_gives_back_what_it_had_shared():
    x, xview, _ = _args()
    t = ct.zeros(64).sync()
    with ct.borrow_mut(t) as b:
        p = b.partition(64)
        _refused(lambda: ct.zip(ct.value(x), ct.value(p)).shared().sync())  # x shared, then p refused
        x.to_numpy()
        assert not x.is_moved
        p.release()
    t.to_numpy()
    xview.partition(64).unpartition()


def test_failed_terminal_gives_back_what_op_partition_moved():
    x, xview, _ = _args()
    _refused(lambda: ct.value(x).partition(64).then(lambda p: fill(p, p)).sync())  # refused: p twice
    gc.collect()
    assert not x.is_moved
    x.partition(64).unpartition()


def test_successful_terminals_and_captures_keep_their_shared_values():
    x, _, z = _args()
    zs, xs = fill(z, x).shared().sync()
    assert isinstance(xs, ct.Shared) and np.allclose(zs.to_numpy(), xs.to_numpy() + 1.0)
    zt = zs.try_unwrap()
    y = ct.rand(64, seed=2).sync()
    g = ct.value(y).shared().then(lambda s: fill(zt.partition(64), s)).graph()
    g.launch()
    zp, ys = g.value
    assert isinstance(ys, ct.Shared) and np.allclose(zp.to_numpy(), ys.to_numpy() + 1.0)
    g.close()


def test_failed_terminal_gives_the_tensor_back_when_the_caller_holds_the_tensor():
    """The caller holds the tensor, not the (temporary) partition op.shared() unpartitioned."""
    x, xview, _ = _args()
    t = ct.zeros(64).sync()
    _refused(lambda: fill(t.partition(64), x).shared().then(lambda v: fill(v[0], v[1])).sync())
    gc.collect()
    assert np.allclose(t.to_numpy(), x.to_numpy() + 1.0)  # the launch ran before the refused step
    t.partition(64).unpartition()
    xview.partition(64).unpartition()
