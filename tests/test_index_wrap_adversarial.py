"""Red team: integer index arithmetic that wraps around, on the NumPy backend and on the Triton
backend (Triton's interpreter on the CPU).

docs/semantics.md: integers wrap around on overflow; out-of-bounds elements of loads and gathers
read the padding value (zero), out-of-bounds elements of stores, scatters and atomics are dropped,
and negative indices are out of bounds. The Triton code generator drops the ``index >= 0`` part of
a mask where a bounds analysis proves an index non-negative. The first version of that analysis
took ``ct.arange(64, dtype=ct.int8, start=100)`` as non-negative (it wraps to -128..-93); the
attacks here look for other index expressions it gets wrong.

Every array the kernel touches is a view in the middle of a larger buffer filled with a sentinel
(``GUARD`` elements either side), so an access outside the array lands in memory the test owns:
a write there shows in the guard, a read returns the sentinel. Every case runs on both backends
and is compared with a reference computed here in Python (explicit two's-complement wraparound),
so the NumPy backend's case guards the reference semantics and the Triton backend's case is the
attack.

FINDINGS (session 14's red team; all fixed by making the analysis an interval analysis that keeps
a bound only where the whole interval fits the dtype, ``Gen.bounds``): 32- and 64-bit ``+``, ``*``
and ``arange(start, step)`` were analysed as if they could not overflow, so an index that wraps
negative through them lost its ``>= 0`` mask. Each test or parameter marked ``# was`` shows one
way this reached memory: gathers/scatters (also inside a loop), tile-space loads/stores, every
atomic, stepped tiled views, 2-D gathers (reading the previous row), a safe-style ``ct.Ref`` read
outside its tensor, the sm_90 bulk atomic reduction taking an unguarded box at a negative row,
and a SIGSEGV of the interpreter (``arange(int32, start=2**31 - 48)``). The other cases held
(regression guards).
"""
from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import safetile as ct
from guarded_buffers import GUARD, XFILL, YFILL, wrap
from guarded_buffers import backend as _backend
from guarded_buffers import guarded as _guarded
from guarded_buffers import host as _host

torch = pytest.importorskip("torch")
pytest.importorskip("triton")

N = 100
BACKENDS = ["numpy", "triton"]
I32 = 2147483647  # 2**31 - 1
I64 = 9223372036854775807  # 2**63 - 1


def _plain(backend, a):
    return torch.from_numpy(a.copy()) if backend == "triton" else a.copy()


def _gather_ref(x, idx):
    idx = np.asarray(idx, np.int64)
    ok = (idx >= 0) & (idx < len(x))
    return np.where(ok, x[np.clip(idx, 0, len(x) - 1)], 0).astype(x.dtype)


def _scatter_ref(n, idx, vals, fill=0.0, dtype=np.float32):
    """The array's guarded buffer after the scatter (later lanes win; out-of-bounds lanes dropped)."""
    y = np.full(n + 2 * GUARD, YFILL, dtype)
    y[GUARD:GUARD + n] = fill
    for i, v in zip(idx, vals):
        if 0 <= i < n:
            y[GUARD + i] = v
    return y


def _where_differs(got, want):
    d = np.nonzero(got != want)[0]
    return f"{len(d)} elements differ, first at buffer offsets {(d[:6] - GUARD).tolist()} " \
           f"(negative: before the array): got {got[d[:6]].tolist()}, want {want[d[:6]].tolist()}"


# --------------------------------------------------------------------------- gather + scatter, 1-D

@ct.kernel
def gs(X, Y, Out, Z, S: int, MODE: ct.Constant[int]):
    """Out = gather(X, i); scatter(Y, i, lane + 1) for the index tile i that MODE picks."""
    a = ct.arange(64, dtype=ct.int32)
    b = ct.bid(0)
    # --- findings: 32/64-bit add, mul and arange steps taken as if they could not overflow
    if MODE == 1:
        i = a * 2147483647  # even lanes: -lane
    if MODE == 2:
        i = ct.arange(64, dtype=ct.int64) * 9223372036854775807  # even lanes: -lane
    if MODE == 3:
        i = (a + 2147483647) + 2147483647  # lane - 2
    if MODE == 4:
        i = (ct.arange(64, dtype=ct.int64) + 9223372036854775807) + 9223372036854775807  # lane - 2
    if MODE == 5:
        i = ct.arange(64, dtype=ct.int32, start=2147483646, step=2147483647)  # odd lanes: small negatives
    if MODE == 6:
        i = ct.arange(64, dtype=ct.int64, step=9223372036854775807)  # even lanes: -lane
    if MODE == 7:
        i = (b + 1) * 2147483647 * 2 + a  # block 0: lane - 2
    if MODE == 8:
        i = Z.shape[0] * 64 + a  # the `n * TILE + arange` idiom; Z is 2**26 - 1 long: lane - 64
    if MODE == 9:
        i = (a * 2147483647) % 1000  # the wrapped value is negative: Python's % gives 0..999
    if MODE == 10:
        i = (a * 2147483647) // 2
    if MODE == 11:
        i = ct.maximum(a * 2147483647, -3)
    if MODE == 12:
        i = ct.where(a > 100, a, a * 2147483647)
    if MODE == 13:
        i = (a * 2147483647).astype(ct.int64)
    # --- attacks that hold
    if MODE == 20:
        i = ct.arange(64, dtype=ct.int8, start=100)  # the first finding: -128..-93 past lane 27
    if MODE == 21:
        i = ct.arange(64, dtype=ct.int8) * 127
    if MODE == 22:
        i = ct.arange(64, dtype=ct.int16) * 32767
    if MODE == 23:
        i = (a << 30) >> 30
    if MODE == 24:
        i = ct.abs(ct.arange(64, dtype=ct.int8, start=-128))
    if MODE == 25:
        i = -ct.arange(64, dtype=ct.int8, start=-128)
    if MODE == 26:
        i = (a + 100).astype(ct.int8)
    if MODE == 27:
        i = (ct.arange(64, dtype=ct.uint32) + 4294967260).astype(ct.int32)
    if MODE == 28:
        i = ct.arange(64, dtype=ct.uint8, start=200).astype(ct.int8)
    if MODE == 29:
        i = (ct.arange(64, dtype=ct.uint16) + 65500).astype(ct.int16)
    if MODE == 30:
        i = (a.astype(ct.int64) + 4294967294).astype(ct.int32)
    if MODE == 31:
        i = a % S
    if MODE == 32:
        i = a // S
    if MODE == 33:
        i = ct.minimum(a, S)
    if MODE == 34:
        i = a + S
    if MODE == 35:
        i = a % -64
    if MODE == 36:
        i = a % 0
    if MODE == 37:
        i = (a - 10) // 64
    if MODE == 38:
        i = (a - 10) << 33
    if MODE == 39:
        i = (a - 10) >> 40
    if MODE == 40:
        i = (a + 65535) ** 2
    if MODE == 41:
        i = ~a
    if MODE == 42:
        i = ct.arange(64, dtype=ct.int32, start=10, step=-1)
    if MODE == 43:
        i = (a.astype(ct.float32) - 10.0).astype(ct.int32)
    if MODE == 44:
        i = a
        for j in range(S, S + 1):
            i = a + j
    if MODE == 45:
        j = 1
        while j > -3:
            j = j - 1
        i = a + j
    if MODE == 46:
        i = (a - 2147483647) - 2147483647  # wraps to lane + 2 (the analysis keeps the lower bound)
    if MODE == 47:
        i = (a.astype(ct.uint32) * 4294967295).astype(ct.int32)  # -lane
    if MODE == 48:
        i = ct.arange(64, dtype=ct.uint8) + 250  # 250..255, then 0..57
    if MODE == 49:
        i = ct.arange(64, dtype=ct.int16, start=32760)  # 32760..32767, then -32768..
    if MODE == 50:
        i = ct.arange(64, dtype=ct.uint32, start=4294967290)  # ..2**32 - 1, then 0..57
    ct.store(Out, (b,), ct.gather(X, i))
    ct.scatter(Y, i, (a + 1).astype(ct.float32))


def _floordiv0(x, d):
    return 0 if d == 0 else x // d


# MODE: (reference index of lane l, S). Findings first; each fails today on the Triton backend.
GS_FINDINGS = {
    "int32_mul": (1, lambda k, S: wrap(k * I32), 0),  # was: writes Y[-62], Y[-60], ..., reads X[-2], ...
    "int64_mul": (2, lambda k, S: wrap(k * I64, 64), 0),  # was: the same in int64
    "int32_add_of_constants": (3, lambda k, S: k - 2, 0),  # was: writes Y[-2], Y[-1]
    "int64_add_of_constants": (4, lambda k, S: k - 2, 0),  # was: writes Y[-2], Y[-1]
    "int32_arange_start_step": (5, lambda k, S: wrap(2147483646 + k * I32), 0),  # was: writes Y[-65]...
    "int64_arange_step": (6, lambda k, S: wrap(k * I64, 64), 0),  # was wrong
    "bid_times_constant": (7, lambda k, S: wrap(wrap(I32) * 2) + k, 0),  # was: writes Y[-2], Y[-1]
    "array_size_times_tile": (8, lambda k, S: wrap((2 ** 26 - 1) * 64) + k, 0),  # was: writes Y[-64..-1]
    "mod_of_wrapped": (9, lambda k, S: wrap(k * I32) % 1000, 0),  # was: a C remainder (negative) used
    "floordiv_of_wrapped": (10, lambda k, S: wrap(k * I32) // 2, 0),  # was wrong
    "maximum_of_wrapped": (11, lambda k, S: max(wrap(k * I32), -3), 0),  # was: writes Y[-2]
    "where_of_wrapped": (12, lambda k, S: wrap(k * I32), 0),  # was wrong
    "widened_after_wrap": (13, lambda k, S: wrap(k * I32), 0),  # was wrong
}
GS_HOLDS = {
    "int8_arange_start_100": (20, lambda k, S: wrap(100 + k, 8), 0),
    "int8_mul": (21, lambda k, S: wrap(k * 127, 8), 0),
    "int16_mul": (22, lambda k, S: wrap(k * 32767, 16), 0),
    "int32_shift_sign_bits": (23, lambda k, S: wrap(wrap(k << 30) >> 30), 0),
    "int8_abs_of_min": (24, lambda k, S: wrap(abs(k - 128), 8), 0),
    "int8_neg_of_min": (25, lambda k, S: wrap(128 - k, 8), 0),
    "narrowing_to_int8": (26, lambda k, S: wrap(k + 100, 8), 0),
    "uint32_to_int32": (27, lambda k, S: wrap(k + 4294967260), 0),
    "uint8_to_int8": (28, lambda k, S: wrap(k + 200, 8), 0),
    "uint16_to_int16": (29, lambda k, S: wrap(k + 65500, 16), 0),
    "int64_to_int32": (30, lambda k, S: k - 2, 0),
    "mod_negative_runtime_divisor": (31, lambda k, S: k % S, -7),
    "mod_zero_runtime_divisor": (31, lambda k, S: 0, 0),
    "floordiv_negative_runtime_divisor": (32, lambda k, S: _floordiv0(k, S), -7),
    "floordiv_zero_runtime_divisor": (32, lambda k, S: 0, 0),
    "minimum_negative_scalar": (33, lambda k, S: min(k, S), -5),
    "add_negative_scalar": (34, lambda k, S: k + S, -5),
    "add_large_scalar": (34, lambda k, S: wrap(k + S), 2147483600),
    "mod_negative_constant": (35, lambda k, S: k % -64, 0),
    "mod_zero_constant": (36, lambda k, S: 0, 0),
    "floordiv_negative_dividend": (37, lambda k, S: (k - 10) // 64, 0),
    "shift_left_past_width": (38, lambda k, S: 0, 0),
    "shift_right_past_width": (39, lambda k, S: -1 if k < 10 else 0, 0),
    "power_wraps": (40, lambda k, S: wrap((k + 65535) ** 2), 0),
    "bitwise_not": (41, lambda k, S: ~k, 0),
    "arange_negative_step": (42, lambda k, S: 10 - k, 0),
    "float_to_int": (43, lambda k, S: k - 10, 0),
    "loop_negative_runtime_start": (44, lambda k, S: k + S, -2),
    "while_loop_counting_down": (45, lambda k, S: k - 3, 0),
    "sub_of_constants": (46, lambda k, S: wrap(k - 2 * I32), 0),
    "uint32_mul_to_int32": (47, lambda k, S: -k, 0),
    "uint8_arange_add_wraps_to_zero": (48, lambda k, S: (250 + k) % 256, 0),
    "int16_arange_start_wraps": (49, lambda k, S: wrap(32760 + k, 16), 0),
    "uint32_arange_start_wraps_to_zero": (50, lambda k, S: (4294967290 + k) % 2 ** 32, 0),
}


def _gs_case(backend, mode, ref, S):
    rng = np.random.default_rng(mode)
    x0 = rng.standard_normal(N).astype(np.float32)
    idx = [ref(lane, S) for lane in range(64)]
    xb, X = _guarded(backend, x0, XFILL)
    yb, Y = _guarded(backend, np.zeros(N, np.float32), YFILL)
    out = _plain(backend, np.full(64, -1.0, np.float32))
    zshape = 2 ** 26 - 1  # only MODE 8 reads its size; a broadcast view, one element of memory
    z = np.broadcast_to(np.zeros(1, np.float32), (zshape,)) if backend == "numpy" else torch.zeros(1).expand(zshape)
    with _backend(backend):
        ct.launch(None, (1,), gs, (X, Y, out, z, S, mode))
    got_y, want_y = _host(yb), _scatter_ref(N, idx, range(1, 65))
    assert np.array_equal(got_y, want_y), "scatter: " + _where_differs(got_y, want_y)
    assert np.array_equal(_host(xb)[:GUARD], np.full(GUARD, XFILL, np.float32))
    got_g, want_g = _host(out), _gather_ref(x0, idx)
    bad = np.nonzero(got_g != want_g)[0]
    assert not len(bad), f"gather lanes {bad[:6].tolist()} (indices {[idx[i] for i in bad[:6]]}): " \
                         f"got {got_g[bad[:6]].tolist()}, want {want_g[bad[:6]].tolist()}"


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("name", sorted(GS_FINDINGS))
def test_gather_scatter_index_that_wraps_through_wide_arithmetic(name, backend):
    """Before the interval analysis (session 14), wrong on the Triton backend (every name): the mask lacks `>= 0` and the access lands before
    the array (Y's guard written, X's guard read)."""
    _gs_case(backend, *GS_FINDINGS[name])


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("name", sorted(GS_HOLDS))
def test_gather_scatter_index_attacks_that_hold(name, backend):
    _gs_case(backend, *GS_HOLDS[name])


@ct.kernel
def loop_idx(X, Y, Out, CARRIED: ct.Constant[int]):
    a = ct.arange(64, dtype=ct.int32)
    if CARRIED == 0:
        for j in range(1, 2):
            i = a + j * 2147483647 * 2  # lane - 2
            ct.store(Out, (0,), ct.gather(X, i))
            ct.scatter(Y, i, (a + 1).astype(ct.float32))
    else:
        i = a
        for j in range(1, 2):
            i = a + j * 2147483647 * 2  # the same index, carried out of the loop
        ct.store(Out, (0,), ct.gather(X, i))
        ct.scatter(Y, i, (a + 1).astype(ct.float32))


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("carried", [0, 1], ids=["in_loop", "carried_out_holds"])
def test_loop_variable_times_constant(carried, backend):
    """Before the interval analysis (session 14), wrong on the Triton backend where the index is used inside the loop (writes Y[-2], Y[-1]):
    the loop variable's range [1, 1] times 2 * (2**31 - 1) is taken as non-negative. Carried out of
    the loop, the index's range is unknown and the mask keeps `>= 0` (holds)."""
    x0 = np.arange(N, dtype=np.float32) + 1000
    xb, X = _guarded(backend, x0, XFILL)
    yb, Y = _guarded(backend, np.zeros(N, np.float32), YFILL)
    out = _plain(backend, np.full(64, -1.0, np.float32))
    with _backend(backend):
        ct.launch(None, (1,), loop_idx, (X, Y, out, carried))
    idx = [lane - 2 for lane in range(64)]
    want = _scatter_ref(N, idx, range(1, 65))
    assert np.array_equal(_host(yb), want), _where_differs(_host(yb), want)
    assert np.array_equal(_host(out), _gather_ref(x0, idx)), _host(out)[:8].tolist()


# --------------------------------------------------------------------------- atomics

@ct.kernel
def atom(Y, Old, OP: ct.Constant[int]):
    a = ct.arange(64, dtype=ct.int32)
    i = a * 2147483647  # lane 0 -> 0; even lanes -> -lane; odd lanes -> 2**31 - lane (past the end)
    v = a + 1
    if OP == 0:
        old = ct.atomic_add(Y, i, v)
    if OP == 1:
        old = ct.atomic_max(Y, i, v)
    if OP == 2:
        old = ct.atomic_xchg(Y, i, v)
    if OP == 3:
        old = ct.atomic_cas(Y, i, ct.zeros((64,), ct.int32), v)
    if OP == 4:
        old = ct.atomic_min(Y, i, v)
    if OP == 5:
        old = ct.atomic_or(Y, i, v)
    ct.store(Old, (0,), old)


ATOMICS = {"add": (0, 1), "max": (1, 1), "xchg": (2, 1), "cas": (3, 1), "min": (4, 0), "or": (5, 1)}


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("op", sorted(ATOMICS))
def test_atomics_at_an_index_that_wraps_negative(op, backend):
    """Before the interval analysis (session 14), wrong on the Triton backend (every op): add/max/xchg/or write up to 31 int32s before the
    array (Y[-62], Y[-60], ...); every op returns values read from before the array (the guard's -9)
    as the old values of the dropped lanes."""
    code, y0 = ATOMICS[op]
    yb, Y = _guarded(backend, np.zeros(N, np.int32), -9)
    old = _plain(backend, np.full(64, 12345, np.int32))
    with _backend(backend):
        ct.launch(None, (1,), atom, (Y, old, code))
    want = np.full(N + 2 * GUARD, -9, np.int32)
    want[GUARD:GUARD + N] = 0
    want[GUARD] = y0  # only lane 0 (index 0) is in bounds
    assert np.array_equal(_host(yb), want), _where_differs(_host(yb), want)
    got_old = _host(old)
    assert got_old[0] == 0
    # lanes out of bounds: the backends must agree (both implement docs/semantics.md), and a
    # value read from outside the array (the guard's -9) is never an answer
    assert not (got_old == -9).any(), got_old[:8].tolist()
    if backend == "triton":
        ref_old = np.full(64, 12345, np.int32)
        ct.launch(None, (1,), atom, (np.zeros(N, np.int32), ref_old, code))
        assert np.array_equal(got_old, ref_old)


# --------------------------------------------------------------------------- tile space

@ct.kernel
def tiles(X, Y, Out, MODE: ct.Constant[int]):
    a = ct.arange(64, dtype=ct.int32)
    b = ct.bid(0)
    if MODE == 0:
        t = (b + 1) * 2147483647 * 2  # tile index -2: elements -128..-65
    if MODE == 1:
        t = (b + 2147483647) + 2147483647
    if MODE == 2:
        t = b.astype(ct.int64) + 1 * 9223372036854775807 + 9223372036854775807  # -2 in int64
    if MODE == 10:
        t = (b.astype(ct.int8) + 127) + 127  # holds: -2 in int8
    if MODE == 11:
        t = (b.astype(ct.int16) + 32767) + 32767
    if MODE == 12:
        t = b.astype(ct.uint32) + 4294967294  # holds: 2**32 - 2, far past the end
    ct.store(Out, (b,), ct.load(X, (t,), (64,)))
    ct.store(Y, (t,), (a + 1).astype(ct.float32))


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("mode", [0, 1, 2, 10, 11, 12],
                         ids=["bid_mul", "int32_add", "int64_add", "int8", "int16", "uint32"])
def test_tile_space_load_store_at_a_tile_index_that_wraps(mode, backend):
    """Before the interval analysis (session 14), wrong on the Triton backend for modes 0-2: tile -2 is entirely outside the array (docs:
    reads padding, stores dropped); Triton stores Y[-128..-65] and loads X[-128..-65]."""
    xb, X = _guarded(backend, np.arange(N, dtype=np.float32) + 1000, XFILL)
    yb, Y = _guarded(backend, np.zeros(N, np.float32), YFILL)
    out = _plain(backend, np.full(64, -1.0, np.float32))
    with _backend(backend):
        ct.launch(None, (1,), tiles, (X, Y, out, mode))
    want = _scatter_ref(N, [], [])
    assert np.array_equal(_host(yb), want), _where_differs(_host(yb), want)
    assert np.array_equal(_host(out), np.zeros(64, np.float32)), _host(out)[:8].tolist()


@ct.kernel
def tiles2d(X, Y, Out):
    a = ct.arange(64, dtype=ct.int32)
    b = ct.bid(0)
    t = (b + 1) * 2147483647 * 2 + 1  # column tile -1 of row 1: columns -64..-1
    ct.store(Out, (0,), ct.load(X, (1, t), (1, 64)).reshape((64,)))
    ct.store(Y, (1, t), (a + 1).astype(ct.float32).reshape((1, 64)))


@pytest.mark.parametrize("backend", BACKENDS)
def test_tile_space_2d_column_tile_that_wraps_to_minus_one(backend):
    """Before the interval analysis (session 14), wrong on the Triton backend: the store lands in row 0 (columns 36..99) and the load reads
    them, instead of dropping / padding the whole tile (columns -64..-1 of row 1)."""
    x0 = np.arange(8 * N, dtype=np.float32).reshape(8, N)
    xb, X = _guarded(backend, x0, XFILL)
    yb, Y = _guarded(backend, np.zeros((8, N), np.float32), YFILL)
    out = _plain(backend, np.full(64, -1.0, np.float32))
    with _backend(backend):
        ct.launch(None, (1,), tiles2d, (X, Y, out))
    want = _scatter_ref(8 * N, [], [])
    assert np.array_equal(_host(yb), want), _where_differs(_host(yb), want)
    assert np.array_equal(_host(out), np.zeros(64, np.float32)), _host(out)[:8].tolist()


@ct.kernel
def stepped(X, Y, Out):
    a = ct.arange(64, dtype=ct.int32)
    v = X.tiled_view((64,), traversal_steps=(2147483647,))
    w = Y.tiled_view((64,), traversal_steps=(2147483647,))
    ct.store(Out, (0,), v.load((ct.bid(0) + 2,)))  # tile 2 starts at 2 * (2**31 - 1) = -2 (wraps)
    w.store((ct.bid(0) + 2,), (a + 1).astype(ct.float32))


@pytest.mark.parametrize("backend", BACKENDS)
def test_stepped_tiled_view_origin_that_wraps(backend):
    """Before the interval analysis (session 14), wrong on the Triton backend: elements -2 and -1 are written before Y and read from before X."""
    x0 = np.arange(N, dtype=np.float32) + 1000
    xb, X = _guarded(backend, x0, XFILL)
    yb, Y = _guarded(backend, np.zeros(N, np.float32), YFILL)
    out = _plain(backend, np.full(64, -1.0, np.float32))
    with _backend(backend):
        ct.launch(None, (1,), stepped, (X, Y, out))
    idx = [lane - 2 for lane in range(64)]
    want = _scatter_ref(N, idx, range(1, 65))
    assert np.array_equal(_host(yb), want), _where_differs(_host(yb), want)
    assert np.array_equal(_host(out), _gather_ref(x0, idx)), _host(out)[:8].tolist()


# --------------------------------------------------------------------------- 2-D gather/scatter

@ct.kernel
def gs2d(X, Y, Out, AXIS: ct.Constant[int]):
    a = ct.arange(64, dtype=ct.int32)
    w = a * 2147483647  # even lanes: -lane
    if AXIS == 1:
        r, c = ct.full((64,), 1, ct.int32), w
    else:
        r, c = w, ct.full((64,), 5, ct.int32)
    ct.store(Out, (0,), ct.gather(X, (r, c)))
    ct.scatter(Y, (r, c), (a + 1).astype(ct.float32))


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("axis", [0, 1], ids=["row", "column"])
def test_2d_gather_scatter_with_a_wrapped_coordinate(axis, backend):
    """Before the interval analysis (session 14), wrong on the Triton backend: a negative column is not masked, so (1, -lane) reaches row 0's
    elements (read and written inside the array, wrong ones) and, past lane 16, memory before the
    array; a negative row reaches before the array (rows -2..-62)."""
    n0, n1 = 8, 16  # a wrapped row (-62 at most) stays inside the guard: -62 * 16 + 5 > -GUARD
    x0 = np.arange(n0 * n1, dtype=np.float32).reshape(n0, n1)
    xb, X = _guarded(backend, x0, XFILL)
    yb, Y = _guarded(backend, np.zeros((n0, n1), np.float32), YFILL)
    out = _plain(backend, np.full(64, -1.0, np.float32))
    with _backend(backend):
        ct.launch(None, (1,), gs2d, (X, Y, out, axis))
    w = [wrap(lane * I32) for lane in range(64)]
    coords = [(1, c) for c in w] if axis == 1 else [(r, 5) for r in w]
    flat = [r * n1 + c if 0 <= r < n0 and 0 <= c < n1 else -1 for r, c in coords]
    want = _scatter_ref(n0 * n1, flat, range(1, 65))
    assert np.array_equal(_host(yb), want), _where_differs(_host(yb), want)
    assert np.array_equal(_host(out), _gather_ref(x0.ravel(), flat)), _host(out)[:8].tolist()


# --------------------------------------------------------------------------- the safe style

@ct.entry
def safe_read(z: ct.Mut[ct.f32, "B"], x: ct.Ref[ct.f32, -1], MODE: ct.Constant[int]):  # noqa: F821, UP037
    b = ct.bid(0)
    a = ct.arange(64, dtype=ct.int32)
    if MODE == 0:
        t = x.partition((64,)).load(((b + 1) * 2147483647 * 2,))  # tile -2
    if MODE == 1:
        t = ct.gather(x, a * 2147483647)
    if MODE == 2:
        t = ct.load(x, ((b + 1) * 2147483647 * 2,), (64,))
    z.store(t)


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("mode", [0, 1, 2], ids=["ref_partition_load", "ref_gather", "ref_load"])
def test_safe_entry_reads_outside_its_ref_through_a_wrapped_index(mode, backend):
    """Before the interval analysis (session 14), wrong on the Triton backend: a `ct.Ref` read at a wrapped (negative) index returns the
    memory before the tensor (the guard's 5.0) instead of zero padding: the safe style's read-only
    input leaks its neighbours."""
    x0 = np.arange(256, dtype=np.float32) + 1000
    with _backend(backend):
        xb, x = _guarded(backend, x0, XFILL)
        z = ct.full(256, -1.0).sync().partition(64)
        z = safe_read(z, x, mode).sync()[0]
        got = z.unpartition().to_numpy().reshape(4, 64)
    if mode == 1:
        want = _gather_ref(x0, [wrap(lane * I32) for lane in range(64)])
    else:
        want = np.zeros(64, np.float32)
    for blk in range(4):
        assert np.array_equal(got[blk], want), (blk, got[blk][:8].tolist())


@ct.entry
def safe_kv(z: ct.Mut[ct.f32, (1, -1, -1)], MODE: ct.Constant[int]):
    b = ct.bid(0)
    if MODE == 0:
        pos = b * 2147483647 * 2  # block 1: -2, block 3: -6 (their neighbours' rows)
    if MODE == 1:
        pos = (b + 2147483647) + 2147483647  # b - 2
    t = ct.full((1, 1, 16), 1.0, ct.float32) * (b + 1).astype(ct.float32)
    z.partition((1, 1, 16)).store(t, (0, pos, 0))


@ct.entry
def safe_part(z: ct.Mut[ct.f32, "B"], MODE: ct.Constant[int]):  # noqa: F821, UP037
    b = ct.bid(0)
    if MODE == 0:
        pos = b * 2147483647 * 2
    if MODE == 1:
        pos = (b + 2147483647) + 2147483647
    z.partition((16,)).store(ct.full((16,), 1.0, ct.float32) * (b + 1).astype(ct.float32), (pos,))


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("mode", [0, 1], ids=["bid_mul", "int32_add"])
def test_safe_in_block_partition_store_stays_in_its_sub_tensor(mode, backend):
    """Holds: the in-block partition store's own `0 <= r < P` mask survives the analysis, so a
    position that wraps negative writes nothing (it never reaches the previous block's rows)."""
    with _backend(backend):
        z = ct.zeros((4, 8, 16)).sync().partition_prefix((1,))
        got = safe_kv(z, mode).sync()[0].unpartition().to_numpy()
        z1 = ct.zeros(256).sync().partition(64)
        got1 = safe_part(z1, mode).sync()[0].unpartition().to_numpy()
    want = np.zeros((4, 8, 16), np.float32)
    want1 = np.zeros(256, np.float32)
    for b in range(4):
        pos = wrap(b * I32 * 2) if mode == 0 else wrap(b + 2 * I32)
        if 0 <= pos < 8:
            want[b, pos, :] = b + 1
        if 0 <= pos < 4:
            want1[64 * b + 16 * pos:64 * b + 16 * pos + 16] = b + 1
    assert np.array_equal(got, want)
    assert np.array_equal(got1, want1)


# --------------------------------------------------------------------------- the sm_90 bulk atomic add

@ct.kernel
def bulk(X, W, Acc, MODE: ct.Constant[int]):
    b = ct.bid(0)
    t = ct.mma(ct.load(X, (b, 0), (64, 64), allow_tma=True), ct.load(W, (0, 0), (64, 64), allow_tma=True),
               ct.zeros((64, 64), ct.float32))
    a = ct.arange(64, dtype=ct.int32)
    rows = (b % 4) * 48 + a  # rows 0..207 whatever the grid: provably in range
    if MODE == 3:
        rows = b * 48 + a  # wraps in int32 past 2**25 blocks
    if MODE == 1:
        rows = b * 2147483647 * 2 + a  # block 1: rows -2..61
    if MODE == 2:
        rows = ct.arange(64, dtype=ct.int32, start=2147483647) + 2147483647  # rows -2..61
    ct.atomic_add(Acc, (rows[:, None], a[None, :]), t, memory_order=ct.MemoryOrder.RELAXED)


@pytest.mark.parametrize("mode", [1, 2, 3], ids=["bid_mul", "arange_start", "bid_times_48"])
def test_bulk_atomic_box_at_a_wrapped_row_keeps_a_run_time_guard(mode):
    """Source for sm_90 (the GPU itself is not used here): docs/architecture.md says a box that
    starts below zero stops the GPU in the TMA unit, so where that is not ruled out at compile time
    a run-time branch takes the element form. These rows wrap to -2 (or may: b * 48 past 2**25
    blocks); before the interval analysis the source was one unguarded `desc.atomic_add([v, 0], ...)`.
    Rows (b % 4) * 48 + arange are the bulk form alone: the test's detector works."""
    from safetile.backends.triton.launcher import kernel_source
    args = (torch.randn(128, 64).half(), torch.randn(64, 64).half(), torch.zeros(300, 64))

    def form(m):
        src = kernel_source(bulk, (*args, m), target=90)
        return ("bulk" if ".atomic_add([" in src else "") + ("element" if "tl.atomic_add(" in src else "")

    assert form(0) == "bulk"
    assert form(mode) in ("bulkelement", "element"), form(mode)


# --------------------------------------------------------------------------- a crash (child process)

CHILD = textwrap.dedent("""
    import os, sys
    os.environ["TRITON_INTERPRET"] = "1"
    os.environ["SAFETILE_BACKEND"] = "triton"
    import numpy as np, torch
    import safetile as ct

    @ct.kernel
    def k(X, Y, Out):
        a = ct.arange(64, dtype=ct.int32)
        i = ct.arange(64, dtype=ct.int32, start=2147483600)  # lanes 48..63 wrap to -2**31 + ...
        ct.store(Out, (0,), ct.gather(X, i))
        ct.scatter(Y, i, (a + 1).astype(ct.float32))

    X = torch.arange(100, dtype=torch.float32) + 1000
    Y = torch.zeros(100)
    out = torch.full((64,), -1.0)
    ct.launch(None, (1,), k, (X, Y, out))
    print("RESULT", int((Y != 0).sum()), int((out != 0).sum()))
""")


def test_int32_arange_start_near_the_top_in_a_child_process():
    """Before the interval analysis (session 14): `ct.arange(64, dtype=ct.int32, start=2**31 - 48)` is the first finding's int32 twin
    (lanes 48..63 wrap to about -2**31): the mask keeps only `< n`, and the interpreter dies with
    SIGSEGV writing 8 GiB before Y. Every lane is out of bounds: nothing written, zeros read."""
    src = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "src")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([src, os.environ.get("PYTHONPATH", "")])}
    r = subprocess.run([sys.executable, "-c", CHILD], env=env, capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, (r.returncode, r.stderr[-2000:])
    assert "RESULT 0 0" in r.stdout, r.stdout[-500:]
