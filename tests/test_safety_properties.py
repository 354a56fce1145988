"""Property tests (hypothesis): random views, partitions and aliasing patterns.

Each example builds views of one or two buffers (offsets, shapes, positive, negative and
zero strides), partitions some of them and launches an entry kernel. The outcome must be
exactly what an independent oracle says, computed here with Python sets of byte addresses:

* the launch is refused with a safetile error when a mutable view overlaps itself or any
  other argument (or a sub-tensor shape is not a power of two), and then every byte of
  every buffer is unchanged;
* otherwise it runs, and every buffer equals the sequential NumPy reference.
"""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import safetile as ct

from attack_helpers import is_safetile_error

ITEM = 4  # float32


@ct.entry
def plus_one(z: ct.Mut[ct.f32, "B"], x: ct.Ref[ct.f32, -1]):
    z.store(ct.load_tile_like(x, z) + 1.0)


@ct.entry
def two_outputs(z: ct.Mut[ct.f32, "B"], w: ct.Mut[ct.f32, "B"], x: ct.Ref[ct.f32, -1]):
    t = ct.load_tile_like(x, z)
    z.store(t + 1.0)
    w.store(t * 2.0)


@ct.entry
def plus_one_2d(z: ct.Mut[ct.f32, ("A", "B")], x: ct.Ref[ct.f32, (-1, -1)]):
    z.store(ct.load_tile_like(x, z) + 1.0)


@st.composite
def view_1d(draw, size):
    """(offset, n, stride) in elements, inside a buffer of ``size`` elements."""
    stride = draw(st.sampled_from([1, 1, 1, 2, 3, -1, -2, 0]))
    n = draw(st.integers(1, 24))
    span = (n - 1) * abs(stride) + 1
    if span > size:
        n = (size - 1) // max(abs(stride), 1) + 1 if stride else n
        span = (n - 1) * abs(stride) + 1
    start = draw(st.integers(0, size - span))
    offset = start + (n - 1) * abs(stride) if stride < 0 else start
    return offset, n, stride


def make_view(buf, offset, shape, strides):
    return np.lib.stride_tricks.as_strided(buf[offset:], shape=shape, strides=tuple(s * ITEM for s in strides))


def addresses(buf, offset, shape, strides):
    """Byte addresses of every element (with repeats): the oracle's own reading of a layout."""
    base = buf.__array_interface__["data"][0] + offset * ITEM
    idx = np.indices(shape).reshape(len(shape), -1).T
    out = []
    for i in idx:
        e = base + sum(int(k) * s * ITEM for k, s in zip(i, strides))
        out.append(e)
    return out


def byte_set(starts):
    return {a + b for a in starts for b in range(ITEM)}


def distinct(starts):
    return len(byte_set(starts)) == len(starts) * ITEM


def pow2(n):
    return n & (n - 1) == 0


def expect_refusal(muts, refs, psizes):
    """The oracle: the error class a launch must raise, or None (type-level checks come first)."""
    if not all(pow2(p) for p in psizes):
        return ct.LaunchTypeError
    for starts in muts:
        if not distinct(starts):
            return ct.AliasError
    sets = [byte_set(s) for s in muts] + [byte_set(s) for s in refs]
    for i in range(len(muts)):
        for j in range(len(sets)):
            if i != j and sets[i] & sets[j]:
                return ct.AliasError
    return None


def run_and_compare(bufs, action, expected_error, reference):
    before = [b.copy() for b in bufs]
    if expected_error is not None:
        with pytest.raises(Exception) as info:
            action()
        assert is_safetile_error(info.value), repr(info.value)
        assert isinstance(info.value, expected_error), repr(info.value)
        for b, s in zip(bufs, before):
            assert b.tobytes() == s.tobytes(), "a refused launch wrote memory"
        return
    action()
    for b, r in zip(bufs, reference(before)):
        assert np.array_equal(b, r, equal_nan=True)


SETTINGS = settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@SETTINGS
@given(data=st.data(), two_buffers=st.booleans(), p=st.sampled_from([1, 2, 4, 8, 3, 6]))
def test_one_output_one_input(data, two_buffers, p):
    a = np.arange(64, dtype=np.float32)
    b = np.arange(100, 164, dtype=np.float32) if two_buffers else a
    zo, zn, zs = data.draw(view_1d(64), "z")
    xo, xn, xs = data.draw(view_1d(64), "x")
    z_view, x_view = make_view(a, zo, (zn,), (zs,)), make_view(b, xo, (xn,), (xs,))
    err = expect_refusal([addresses(a, zo, (zn,), (zs,))], [addresses(b, xo, (xn,), (xs,))], [p])

    def reference(before):
        ra = before[0].copy()
        xb = (before[1] if two_buffers else before[0])
        xv = make_view(xb, xo, (xn,), (xs,))
        zv = make_view(ra, zo, (zn,), (zs,))
        zv[:] = np.r_[xv, np.zeros(max(zn - xn, 0), np.float32)][:zn] + 1.0
        return [ra] + ([before[1]] if two_buffers else [])

    def action():
        z, x = plus_one(ct.from_dlpack(z_view).partition(p), x_view).sync()
        z.unpartition()
    run_and_compare([a, b] if two_buffers else [a], action, err, reference)


@SETTINGS
@given(data=st.data(), p=st.sampled_from([1, 2, 4, 8]))
def test_two_outputs_and_an_input_in_one_buffer(data, p):
    buf = np.arange(96, dtype=np.float32)
    n = data.draw(st.integers(1, 16), "n")
    views = []
    for name in ("z", "w"):
        stride = data.draw(st.sampled_from([1, 2, -1, 3]), name + " stride")
        span = (n - 1) * abs(stride) + 1
        start = data.draw(st.integers(0, 96 - span), name + " start")
        views.append((start + (n - 1) * abs(stride) if stride < 0 else start, stride))
    xo, xn, xs = data.draw(view_1d(96), "x")
    (zo, zs), (wo, ws) = views
    err = expect_refusal([addresses(buf, zo, (n,), (zs,)), addresses(buf, wo, (n,), (ws,))],
                         [addresses(buf, xo, (xn,), (xs,))], [p])

    def reference(before):
        r = before[0].copy()
        xv = make_view(before[0], xo, (xn,), (xs,))
        t = np.r_[xv, np.zeros(max(n - xn, 0), np.float32)][:n]
        make_view(r, zo, (n,), (zs,))[:] = t + 1.0
        make_view(r, wo, (n,), (ws,))[:] = t * 2.0
        return [r]

    def action():
        z = ct.from_dlpack(make_view(buf, zo, (n,), (zs,))).partition(p)
        w = ct.from_dlpack(make_view(buf, wo, (n,), (ws,))).partition(p)
        try:
            two_outputs(z, w, make_view(buf, xo, (xn,), (xs,))).sync()
        except BaseException:
            z.unpartition(), w.unpartition()
            raise
    run_and_compare([buf], action, err, reference)


@SETTINGS
@given(r=st.integers(1, 8), c=st.integers(1, 8), s0=st.sampled_from([8, 4, 1, -8, 0, 3]),
       s1=st.sampled_from([1, 2, -1, 0, 8]), off=st.integers(0, 20), pr=st.sampled_from([1, 2, 4]),
       pc=st.sampled_from([1, 2, 4, 8]), xoff=st.integers(0, 60))
def test_2d_views_of_one_buffer(r, c, s0, s1, off, pr, pc, xoff):
    buf = np.arange(128, dtype=np.float32)
    lo = off + min(0, (r - 1) * s0) + min(0, (c - 1) * s1)
    hi = off + max(0, (r - 1) * s0) + max(0, (c - 1) * s1)
    if lo < 0 or hi >= 128 or xoff + 4 * 4 > 128:
        return
    err = expect_refusal([addresses(buf, off, (r, c), (s0, s1))], [addresses(buf, xoff, (4, 4), (4, 1))], [pr, pc])

    def reference(before):
        out = before[0].copy()
        x = make_view(before[0], xoff, (4, 4), (4, 1))
        t = np.zeros((r, c), np.float32)
        rr, cc = min(r, 4), min(c, 4)
        t[:rr, :cc] = x[:rr, :cc]
        make_view(out, off, (r, c), (s0, s1))[:] = t + 1.0
        return [out]

    def action():
        z = ct.from_dlpack(make_view(buf, off, (r, c), (s0, s1))).partition((pr, pc))
        try:
            plus_one_2d(z, make_view(buf, xoff, (4, 4), (4, 1))).sync()
        except BaseException:
            z.unpartition()
            raise
    run_and_compare([buf], action, err, reference)


@SETTINGS
@given(data=st.data())
def test_ownership_patterns(data):
    """The same tensor, its partition and its views passed in random roles: refused exactly when a
    value is used twice or after its move (UseAfterMoveError / AliasError), else run."""
    t = ct.from_dlpack(np.arange(32, dtype=np.float32))
    z = t.partition(8)
    other = ct.from_dlpack(np.full(32, 5.0, np.float32))
    pool = {"z": z, "t (moved)": t, "other": other, "other shared": None}
    choice = data.draw(st.sampled_from(["z", "t (moved)", "other", "other shared"]), "x")
    if choice == "other shared":
        x = other.shared()
    else:
        x = pool[choice]
    expected = {"z": ct.LaunchTypeError, "t (moved)": ct.UseAfterMoveError, "other": None, "other shared": None}[choice]
    if choice == "z":
        expected = ct.AliasError  # the same partition twice
    before = np.array(z._tensor._data, copy=True)
    if expected is None:
        z2, x2 = plus_one(z, x).sync()
        assert np.array_equal(z2.unpartition().to_numpy(), np.full(32, 6.0, np.float32))
    else:
        with pytest.raises(expected):
            plus_one(z, x)
        assert z._tensor._data.tobytes() == before.tobytes() and not z.is_moved
