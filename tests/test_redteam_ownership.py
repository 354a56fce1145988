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
