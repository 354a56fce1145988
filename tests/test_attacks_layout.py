"""Adversarial corpus, host side: grids, memory layouts, changed layouts, foreign errors.

Classes 2, 3, 8 and 9 of issue 9: every mutable partition's sub-tensors map one-to-one
onto the grid's blocks; a mutable argument never overlaps itself or another argument (byte
ranges, reversed views, dtype views); a reused plan never skips a check because the layout
changed underneath; every refusal is a safetile error raised before anything runs.
Refused cases leave every argument byte-identical and usable; accepted ones are checked
against NumPy.
"""
from __future__ import annotations

import numpy as np
import pytest

import safetile as ct

from attack_helpers import poisoned, refused, rnd

torch = pytest.importorskip("torch")


@ct.entry
def inc(z: ct.Mut[ct.f32, "B"]):
    z.store(z.load() + 1.0)


@ct.entry
def inc2(z: ct.Mut[ct.f32, ("A", "B")]):
    z.store(z.load() + 1.0)


@ct.entry
def copy(z: ct.Mut[ct.f32, "B"], x: ct.Ref[ct.f32, -1]):
    z.store(ct.load_tile_like(x, z))


@ct.entry
def prefix_and_full(z: ct.Mut[ct.f32, ("A", "N")], w: ct.Mut[ct.f32, ("C", "D")]):
    z.store(z.load() + 1.0)
    w.store(w.load() + 1.0)


@ct.entry
def mapped_and_mut(c: ct.MappedMut[ct.f32, ("B",)], z: ct.Mut[ct.f32, ("B",)], x: ct.Ref[ct.f32, -1]):
    for idx in c.iter_indices():
        c.store(x.partition((B,)).load(idx), idx)  # noqa: F821
    z.store(ct.load_tile_like(x, z))


@ct.entry
def two_mapped(c: ct.MappedMut[ct.f32, ("B",)], d: ct.MappedMut[ct.f32, ("B",)]):
    for idx in c.iter_indices():
        c.store(ct.full((B,), 1.0, ct.float32), idx)  # noqa: F821
    for idx in d.iter_indices():
        d.store(ct.full((B,), 2.0, ct.float32), idx)  # noqa: F821


# ----------------------------------------------------------------------------- class 2: one block, one sub-tensor

def test_prefix_partition_beside_a_full_partition_is_refused():
    z = poisoned((4, 16)).partition_prefix((1,))  # grid (4, 1, 1)
    w = poisoned((4, 32)).partition((1, 16))  # grid (4, 2, 1): blocks (i, 0) and (i, 1) would share z's row i
    refused([z, w], lambda: prefix_and_full(z, w), ct.GridError, r"axis 1 \(y\)")


def test_explicit_grid_larger_than_a_prefix_partition_is_refused():
    z = poisoned((4, 16)).partition_prefix((1,))
    refused([z], lambda: inc2.grid((4, 3, 1))(z), ct.GridError, r"launch grid \(4, 3, 1\) does not match")


@pytest.mark.parametrize("grid", [(8, 1, 1), (4, 1, 1), (16, 1, 1), (8, 2, 1), (8, 1, 2)])
def test_explicit_grid_must_equal_the_partition_grid(grid):
    z = poisoned(1024).partition(128)  # grid (8, 1, 1)
    if grid == (8, 1, 1):
        z, = inc.grid(grid)(z).sync()
        assert np.all(np.isnan(z.unpartition().to_numpy()))  # NaN + 1: ran once per element, nothing else
        return
    refused([z], lambda: inc.grid(grid)(z), ct.GridError, "does not match")


def test_mapped_and_mut_partitions_must_agree():
    x = rnd(256, seed=1)
    c = poisoned(256).partition(64).map(2)  # grid (2, 1, 1)
    z = poisoned(256).partition(64)  # grid (4, 1, 1)
    refused([c, z, x], lambda: mapped_and_mut(c, z, x), ct.GridError, "grid mismatch on axis 0")
    c2 = poisoned(256).partition(64).map(4)  # grid (4, 1, 1): agrees
    c2, z, x = mapped_and_mut(c2, z, x).sync()
    assert np.array_equal(c2.unpartition().to_numpy(), x.to_numpy())
    assert np.array_equal(z.unpartition().to_numpy(), x.to_numpy())


def test_two_mapped_partitions_with_different_block_counts_are_refused():
    c = poisoned(256).partition(64).map(2)
    d = poisoned(256).partition(64).map(3)
    refused([c, d], lambda: two_mapped(c, d), ct.GridError, "grid mismatch")


def test_grid_beyond_the_hardware_limit_is_a_grid_error():
    z = ct.from_dlpack(np.zeros(2**24 + 1, np.int8)).partition(1)

    @ct.entry
    def one(z: ct.Mut[ct.i8, 1]):
        z.store(z.load())
    refused([z], lambda: one(z), ct.GridError, r"between 1 and 16777215")


# ----------------------------------------------------------------------------- class 3: self overlap

def test_zero_stride_output_is_refused():
    a = np.zeros(8, np.float32)
    z = ct.from_dlpack(np.lib.stride_tricks.as_strided(a, shape=(64,), strides=(0,))).partition(16)
    refused([z, a], lambda: inc(z), ct.AliasError, r"'z' overlaps itself")


def test_overlapping_as_strided_output_is_refused():
    # the view reaches byte 31*8 + 15*4 + 4 = 312: the buffer holds 80 floats (a 64-float buffer made the
    # snapshot read heap bytes past it, which other allocations changed: a flaky "was written")
    a = np.zeros(80, np.float32)
    z = ct.from_dlpack(np.lib.stride_tricks.as_strided(a, shape=(32, 16), strides=(8, 4))).partition((4, 16))
    refused([z, a], lambda: inc2(z), ct.AliasError, "overlaps itself")


def test_torch_expand_output_is_refused():
    base = torch.zeros(1, 64)
    z = ct.from_dlpack(base.expand(4, 64)).partition((1, 64))
    refused([z, base], lambda: inc2(z), ct.AliasError, "overlaps itself")


def test_partially_overlapping_elements_are_refused():
    # strides of 2 bytes for 4-byte elements: neighbours share half their bytes
    a = np.zeros(80, np.uint8)
    z = ct.from_dlpack(np.lib.stride_tricks.as_strided(a.view(np.float32), shape=(16,), strides=(2,))).partition(16)
    refused([z, a], lambda: inc(z), ct.AliasError, "overlaps itself")


def test_interleaved_distinct_strides_are_accepted():
    # strides (12, 8) bytes over (2, 3) float32 elements: no sorted-stride proof, but distinct bytes
    a = np.zeros(8, np.float32)
    v = np.lib.stride_tricks.as_strided(a, shape=(2, 4), strides=(4, 8))  # rows interleave
    z = ct.from_dlpack(v).partition((2, 4))
    z, = inc2(z).sync()
    assert np.array_equal(a, np.ones(8, np.float32))


def test_broadcast_input_is_fine_for_a_ref():
    x = np.broadcast_to(np.float32(3.0), (256,))  # zero strides, read-only: fine to read
    z = poisoned(256).partition(64)
    z, x = copy(z, x).sync()
    assert np.array_equal(z.unpartition().to_numpy(), np.full(256, 3.0, np.float32))


def test_read_only_numpy_memory_cannot_be_an_output():
    a = np.zeros(64, np.float32)
    a.flags.writeable = False
    z = ct.from_dlpack(a).partition(16)
    refused([z, a], lambda: inc(z), ct.LaunchTypeError, "read-only")


def test_memcpy_into_an_expanded_tensor_is_refused():
    base = torch.zeros(1, 8)
    dst = ct.from_dlpack(base.expand(4, 8))
    src = rnd((4, 8), seed=2)
    refused([dst, src, base], lambda: ct.memcpy(dst, src), ct.AliasError, "overlaps itself")


# ----------------------------------------------------------------------------- class 3: extents

def test_reversed_output_overlapping_the_input_is_refused():
    a = np.arange(64, dtype=np.float32)
    z = ct.from_dlpack(a[::-1]).partition(16)  # extent: the whole buffer, starting at its last element
    x = a[:8]  # the first 8 elements: the *end* of the reversed view
    refused([z, x, a], lambda: copy(z, x), ct.AliasError, "'z' overlaps argument 'x'")


def test_reversed_output_beside_its_input_is_accepted():
    a = np.arange(64, dtype=np.float32)
    z = ct.from_dlpack(a[32:][::-1]).partition(16)  # elements 63..32
    x = a[:32]
    z, x = copy(z, x).sync()
    assert np.array_equal(a[32:], np.arange(32, dtype=np.float32)[::-1])


def test_byte_overlap_through_a_dtype_view_is_refused():
    buf = np.zeros(128 + 64, np.uint8)
    z = ct.from_dlpack(buf[:128].view(np.float32)).partition(16)  # bytes [0, 128)
    x = buf[127:127 + 64].view(np.uint8)  # bytes [127, 191): shares z's last byte only

    @ct.entry
    def mix(z: ct.Mut[ct.f32, "B"], x: ct.Ref[ct.u8, -1]):
        z.store(z.load())
    refused([z, x, buf], lambda: mix(z, x), ct.AliasError, "overlaps")


def test_interleaved_dtype_views_sharing_no_byte_are_accepted():
    buf = np.zeros(256, np.uint8)
    z = ct.from_dlpack(buf.view(np.float32)[::2]).partition(16)  # bytes 0-3, 8-11, ...
    x = buf.reshape(-1, 8)[:, 4:8]  # bytes 4-7, 12-15, ...: between z's elements

    @ct.entry
    def mix(z: ct.Mut[ct.f32, "B"], x: ct.Ref[ct.u8, (-1, -1)]):
        z.store(ct.full((B,), 2.0, ct.float32))  # noqa: F821
    z, x = mix(z, x).sync()
    assert np.array_equal(buf.view(np.float32)[::2], np.full(32, 2.0, np.float32))
    assert not buf.reshape(-1, 8)[:, 4:8].any()


# ----------------------------------------------------------------------------- class 8: layout changed underneath

def test_wrapped_numpy_array_reshaped_by_its_owner_keeps_the_tensors_layout():
    a = np.arange(64, dtype=np.float32)
    t = ct.from_dlpack(a)
    x = np.zeros(32, np.float32)
    z = t[:32].partition(16)
    z, _ = copy(z, x).sync()
    a.shape = (8, 8)  # the owner resets its array's layout; the tensor holds its own view
    z2, _ = copy(z, x).sync()
    assert np.array_equal(z2.unpartition().to_numpy(), np.zeros(32, np.float32))


def test_raw_numpy_ref_whose_layout_changes_is_checked_again():
    buf = np.zeros(128, np.float32)
    z = ct.from_dlpack(buf[:64]).partition(16)
    x = np.zeros(128, np.float32)[64:]
    z, x = copy(z, x).sync()  # disjoint: fine, and the plan is cached
    x = buf[32:96]  # the same kind of argument, now overlapping the output
    refused([z, x, buf], lambda: copy(z, x), ct.AliasError, "overlaps")


def test_raw_torch_ref_set_to_alias_the_output_is_checked_again():
    out = torch.zeros(64)
    z = ct.from_dlpack(out).partition(16)
    x = torch.ones(64)
    z, x = copy(z, x).sync()
    x.set_(out.untyped_storage(), 0, (64,), (1,))  # the same object, now over the output's memory
    refused([z, x], lambda: copy(z, x), ct.AliasError, "overlaps")


# ----------------------------------------------------------------------------- class 9: refusals are safetile errors, early

def test_huge_partition_is_refused_when_made():
    t = poisoned(16)
    refused([t], lambda: t.partition(2**62), ct.PartitionError, "at most 16777216")
    refused([t], lambda: poisoned((4, 2**25 + 1), np.int8).partition_prefix((1,)), ct.PartitionError, "elements")


@pytest.mark.parametrize("shape", [2.5, (0,), (-1,), (True,), "8", (), None])
def test_bad_partition_shapes(shape):
    t = poisoned(16)
    refused([t], lambda: t.partition(shape), ct.PartitionError)


def test_precondition_giving_an_array_is_a_precondition_error():
    @ct.entry(preconditions=[lambda x: np.array([True, False])])
    def k(z: ct.Mut[ct.f32, "B"], x: ct.Ref[ct.f32, -1]):
        z.store(ct.load_tile_like(x, z))
    z, x = poisoned(64).partition(16), rnd(64, seed=4)
    refused([z, x], lambda: k(z, x), ct.PreconditionError, "not a truth value")


def test_precondition_raising_is_a_precondition_error():
    @ct.entry(preconditions=[lambda x: x.shape[7]])
    def k(z: ct.Mut[ct.f32, "B"], x: ct.Ref[ct.f32, -1]):
        z.store(ct.load_tile_like(x, z))
    z, x = poisoned(64).partition(16), rnd(64, seed=5)
    refused([z, x], lambda: k(z, x), ct.PreconditionError, "could not be evaluated: IndexError")


@pytest.mark.parametrize("bad, exc, pattern", [
    ("scalar as a string", ct.LaunchTypeError, "is a scalar"),
    ("unhashable constant", ct.LaunchTypeError, "hashable"),
    ("complex input", ct.LaunchTypeError, "complex"),
    ("too few arguments", ct.LaunchTypeError, "takes 3 argument"),
])
def test_wrong_arguments_are_launch_type_errors(bad, exc, pattern):
    @ct.entry
    def k(z: ct.Mut[ct.f32, "B"], x: ct.Ref[ct.f32, -1], n: ct.Constant[int]):
        z.store(ct.load_tile_like(x, z) * n)

    @ct.entry
    def s(z: ct.Mut[ct.f32, "B"], x: ct.Ref[ct.f32, -1], a: ct.f32):
        z.store(ct.load_tile_like(x, z) * a)
    z, x = poisoned(64).partition(16), rnd(64, seed=6)
    action = {"scalar as a string": lambda: s(z, x, "2"), "unhashable constant": lambda: k(z, x, [2]),
              "complex input": lambda: k(z, np.zeros(64, np.complex64), 2),
              "too few arguments": lambda: k(z, x)}[bad]
    refused([z, x], action, exc, pattern)


@pytest.mark.parametrize("view", ["out of range", "negative step", "float index", "bad axis", "bad reshape"])
def test_bad_views_are_tensor_errors(view):
    t = poisoned((8, 8))
    action = {"out of range": lambda: t[9], "negative step": lambda: t[::-1],
              "float index": lambda: t[1.5], "bad axis": lambda: t.slice(3, 0, 2),
              "bad reshape": lambda: t.reshape(7, 9)}[view]
    refused([t], action, ct.TensorError)


@pytest.mark.parametrize("make", [lambda: ct.zeros(-1), lambda: ct.zeros((2, "a")), lambda: ct.ones(4, device="tpu"),
                                  lambda: ct.rand(4, dtype=ct.i32)])
def test_bad_factory_arguments_are_tensor_errors(make):
    refused([], make, ct.TensorError)


class _LyingInterface(np.ndarray):
    """An ndarray subclass reporting another data address (round-2 attack 209)."""

    @property
    def __array_interface__(self):
        d = dict(np.ndarray.__array_interface__.__get__(self))
        d["data"] = (0x7F0000000000, False)
        return d

    @property
    def shape(self):  # a lying shape too
        return (1,)


def test_ndarray_subclass_cannot_lie_about_its_memory():
    nb = np.zeros(4096, np.float32)
    p = ct.from_dlpack(nb).partition(1024)
    liar = nb[1024:].view(_LyingInterface)
    refused([p, nb], lambda: copy(p, liar), ct.AliasError)
    t = ct.from_dlpack(nb[:1024].view(_LyingInterface))  # wrapped: the tensor keeps a plain view
    assert t.shape == (1024,) and t.data_ptr == nb.__array_interface__["data"][0]


def test_graph_replay_refuses_raw_arguments_changed_since_the_capture():
    """Round-2 attack 214: a raw Ref re-pointed (torch set_) onto the memory the graph writes, or
    reshaped in place (NumPy), must not be replayed with the capture's stale checks."""
    import torch
    t = ct.zeros(8192).sync()
    whole = torch.from_dlpack(t[:])
    z = t[0:4096].partition(1024)
    xt = torch.full((4096,), 3.0)
    g = copy(z, xt).graph()
    g.launch()
    xt.set_(whole[1024:5120])  # now overlaps what z covers
    refused([whole], g.launch, ct.GraphCaptureError, "'x'.*changed since the capture")
    g.close()
    a = np.full(4096, 5.0, np.float32)
    g2 = copy(ct.zeros(4096).sync().partition(1024), a).graph()
    a.shape = (64, 64)
    refused([a], g2.launch, ct.GraphCaptureError, "'x'")
    a.shape = (4096,)
    z2, _ = g2.launch()  # unchanged again: replays
    assert np.all(z2.unpartition().to_numpy() == 5.0)
