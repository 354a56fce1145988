"""Tests written from a mutation run over the Triton backend's bounds analysis
(backends/triton/bounds.py) and the ping-pong matcher (backends/triton/pingpong.py): each test
kills at least one mutant that the existing tests let through (named in its docstring).

Bounds: docs/semantics.md says integers wrap and out-of-bounds (negative included) elements of
gathers read zero and of scatters are dropped. The code generator drops an index's ``>= 0`` mask
where bounds.py proves it non-negative, so an analysis that is too tight lets a negative index
reach memory. The behavioural tests run Triton's interpreter on arrays placed in the middle of a
larger buffer of sentinels (GUARD elements either side), so an access before an array shows as a
write in the guard or a sentinel read; the reference is computed here in Python with explicit
two's-complement wraparound (and checked on the NumPy backend). Cases a CPU cannot launch (a
grid of 2**30 blocks, a loop variable that wraps in compiled Triton) are checked on the sm_90
source instead: the ``>= 0`` mask must be there. A few tests check precision (a looser bound than
the documented one adds masks for nothing).

FINDING (fixed in session 14): a ``for`` loop with a run-time step was analysed as if the step
were positive (``start <= iv < stop``), though only a constant step is checked (frontend
``_range_loop``): with ``range(0, -8, (S % 8) - 4)`` the loop variable counted down from 0 on the
Triton backend (Triton's interpreter runs Python's ``range``; compiled Triton's scf.for with a
negative step is undefined), the ``>= 0`` mask of ``a + j`` was dropped and the scatter wrote
before its array; the NumPy backend runs no iteration for a step <= 0. Now the code generator
runs no iteration for a run-time step <= 0 either, and the bounds of such a loop's variable are
unknown unless its step is provably positive.
"""
from __future__ import annotations

import dataclasses
import itertools

import numpy as np
import pytest

import safetile as ct
from pingpong_helpers import sm90_facts
from guarded_buffers import GUARD, XFILL, YFILL, wrap
from guarded_buffers import backend as _backend
from guarded_buffers import guarded as _guarded
from guarded_buffers import host as _host

torch = pytest.importorskip("torch")
pytest.importorskip("triton")

N = 100
I32 = 2147483647


def _zeros_view(backend, n):
    """A 1-D float32 array of ``n`` elements backed by at most one element (a broadcast view)."""
    if backend == "triton":
        return torch.zeros(1).expand(n) if n else torch.zeros(0)
    return np.broadcast_to(np.zeros(1, np.float32), (n,)) if n else np.zeros(0, np.float32)


def _after_writes(writes):
    """Y's whole guarded buffer after ``writes`` [(index, value), ...] in order (out of bounds dropped)."""
    y = np.full(N + 2 * GUARD, YFILL, np.float32)
    y[GUARD:GUARD + N] = 0.0
    for i, v in writes:
        if 0 <= i < N:
            y[GUARD + i] = v
    return y


def _differs(got, want):
    d = np.nonzero(got != want)[0]
    return f"{len(d)} elements differ, first at offsets {(d[:6] - GUARD).tolist()} (negative: before the array)"


# ------------------------------------------------------------------ gather/scatter at an index

@ct.kernel
def gs(X, Y, Out, Z, S: int, MODE: ct.Constant[int]):
    a = ct.arange(64, dtype=ct.int32)
    i = a
    if MODE == 1:  # wraps above: exact [-2**31 - 99, -2**31 - 36], run time 2**31 - 99 + lane
        i = (a - 2147483647 - 100) // -1073741824  # -2 on every lane
    if MODE == 2:
        i = a + (ct.minimum(ct.bid(0), 7) - 1)  # block 0: lane - 1
    if MODE == 3:
        i = Z.shape[0] * 16 + a  # Z is 2**28 - 4 long: (2**32 - 64) wraps to -64
    if MODE == 4:
        i = (a + Z.shape[0]) - 1  # Z is empty: lane - 1
    if MODE == 5:
        i = ct.arange(64, dtype=ct.int32, start=62, step=-1)  # 62 .. -1
    ct.store(Out, (0,), ct.gather(X, i))
    ct.scatter(Y, i, (a + 1).astype(ct.float32))


# MODE: (index of lane k, length of Z, mutants it kills)
GS = {
    "floordiv_of_a_value_that_wrapped_below": (1, lambda k: wrap(k - I32 - 100) // -1073741824, 0),  # B1
    "block_index_minus_one": (2, lambda k: k - 1, 0),  # B12 (bid's lower bound 1)
    "array_size_times_16": (3, lambda k: wrap((2**28 - 4) * 16 + k), 2**28 - 4),  # B14 (dims below 2**26)
    "empty_array_size_minus_one": (4, lambda k: k - 1, 0),  # B15 (a dim's lower bound 1)
    "arange_counting_down_to_minus_one": (5, lambda k: 62 - k, 0),  # B17 (arange's last lane dropped)
}


@pytest.mark.parametrize("backend", ["numpy", "triton"])
@pytest.mark.parametrize("name", sorted(GS))
def test_index_that_may_be_negative_keeps_its_mask(name, backend):
    mode, ref, zlen = GS[name]
    x0 = np.arange(N, dtype=np.float32) + 1000
    xb, X = _guarded(backend, x0, XFILL)
    yb, Y = _guarded(backend, np.zeros(N, np.float32), YFILL)
    out = np.full(64, -1.0, np.float32)
    out = torch.from_numpy(out) if backend == "triton" else out
    idx = [ref(k) for k in range(64)]
    assert min(idx) < 0  # the attack: some lane's index is before the array
    with _backend(backend):
        ct.launch(None, (1,), gs, (X, Y, out, _zeros_view(backend, zlen), 0, mode))
    want_y = _after_writes(zip(idx, range(1, 65)))
    assert np.array_equal(_host(yb), want_y), "scatter: " + _differs(_host(yb), want_y)
    want_g = np.array([x0[i] if 0 <= i < N else 0.0 for i in idx], np.float32)
    assert np.array_equal(_host(out), want_g), (_host(out)[:8], want_g[:8])


# ------------------------------------------------------------------ loop variables

@ct.kernel
def loops(X, Y, S: int, MODE: ct.Constant[int]):
    a = ct.arange(64, dtype=ct.int32)
    if MODE == 1:
        for j in range((S % 8) - 4, 10):  # start in [-4, 3]: S = 0 starts at -4
            ct.scatter(Y, a + j, (a + 100 * j + 1000).astype(ct.float32))
    if MODE == 2:
        for j in range(0, (S % 8) + 4):  # stop in [4, 11]: S = 7 runs j up to 10
            ct.scatter(Y, (a + 3) - j, (a + 100 * j + 1000).astype(ct.float32))


LOOPS = {  # MODE: (writes for S, S); kills B7 (iv's lower bound = start's upper) and B8 (upper = stop's lower)
    "start_with_a_range": (1, lambda S: [(k + j, k + 100 * j + 1000) for j in range(S % 8 - 4, 10) for k in range(64)], 0),
    "stop_with_a_range": (2, lambda S: [(k + 3 - j, k + 100 * j + 1000) for j in range(0, S % 8 + 4) for k in range(64)], 7),
}


@pytest.mark.parametrize("backend", ["numpy", "triton"])
@pytest.mark.parametrize("name", sorted(LOOPS))
def test_loop_variable_bounds_come_from_both_ends(name, backend):
    mode, writes, S = LOOPS[name]
    yb, Y = _guarded(backend, np.zeros(N, np.float32), YFILL)
    _, X = _guarded(backend, np.zeros(N, np.float32), XFILL)
    assert min(i for i, _ in writes(S)) < 0
    with _backend(backend):
        ct.launch(None, (1,), loops, (X, Y, S, mode))
    want = _after_writes(writes(S))
    assert np.array_equal(_host(yb), want), _differs(_host(yb), want)


@ct.kernel
def neg_step(X, Y, S: int):
    a = ct.arange(64, dtype=ct.int32)
    for j in range(0, -8, (S % 8) - 4):  # a run-time step in [-4, 3]; S = 0: -4
        ct.scatter(Y, a + j, (a + 1).astype(ct.float32))


@pytest.mark.parametrize("backend", ["numpy", "triton"])
def test_loop_with_a_negative_run_time_step_writes_nothing_outside(backend):
    """Was wrong (triton): the iv's bounds took the step as positive, so `a + j` (j = 0, -4 in the
    interpreter) lost its `>= 0` mask and the scatter wrote Y[-4..-1] (the guard)."""
    yb, Y = _guarded(backend, np.zeros(N, np.float32), YFILL)
    _, X = _guarded(backend, np.zeros(N, np.float32), XFILL)
    with _backend(backend):
        ct.launch(None, (1,), neg_step, (X, Y, 0))
    y = _host(yb)
    assert np.array_equal(y[:GUARD], np.full(GUARD, YFILL, np.float32)), _differs(y, _after_writes([]))
    assert np.array_equal(y[GUARD + N:], np.full(GUARD, YFILL, np.float32))


def test_loop_with_a_negative_run_time_step_runs_as_on_the_numpy_backend():
    """Was wrong: the NumPy backend runs no iteration for a step <= 0; the Triton backend emitted
    `range(0, -8, step)` as is and ran j = 0, -4 (interpreter; undefined in compiled Triton)."""
    got = {}
    for backend in ("numpy", "triton"):
        yb, Y = _guarded(backend, np.zeros(N, np.float32), YFILL)
        _, X = _guarded(backend, np.zeros(N, np.float32), XFILL)
        with _backend(backend):
            ct.launch(None, (1,), neg_step, (X, Y, 0))
        got[backend] = _host(yb)[GUARD:GUARD + N].copy()
    assert np.array_equal(got["numpy"], np.zeros(N, np.float32))
    assert np.array_equal(got["triton"], got["numpy"]), np.nonzero(got["triton"])[0][:8]


def test_negative_run_time_step_keeps_the_mask_in_sm90_source():
    """Was wrong: the sm_90 source of the kernel above scattered at `a + j` with no `>= 0`."""
    from safetile.backends.triton.launcher import kernel_source
    src = kernel_source(neg_step, (torch.zeros(N), torch.zeros(N), 0), target=90)
    assert ">= 0)" in src, src


# ------------------------------------------------------------------ sm_90 source (no launch)

def _src(kernel, args, monkeypatch=None, big_grid=False):
    from safetile.backends.triton import launcher
    from safetile.backends.triton.launcher import kernel_source
    if big_grid:
        real = launcher.generate
        monkeypatch.setattr(launcher, "generate", lambda fn, facts: real(fn, dataclasses.replace(facts, big_grid=True)))
    return kernel_source(kernel, args, target=90)


def _masked(src: str) -> bool:
    return ">= 0)" in src


@ct.kernel
def src_cases(X, Y, S: int, MODE: ct.Constant[int]):
    a = ct.arange(64, dtype=ct.int32)
    i = a
    if MODE == 1:  # compiled Triton: the second iteration's j wraps to -2147483596 (i = lane - 4095)
        for j in range(2147483600, 2147483647, 100):
            ct.scatter(Y, a + (j // 1048576 - 2047), (a + 1).astype(ct.float32))
    if MODE == 2:
        i = a + (1073741824 - ct.num_blocks(0))  # a grid of more than 2**30 blocks along x
    if MODE == 3:
        i = a + (40000 - ct.num_blocks(1))  # a grid of 40001..65535 blocks along y
    if MODE == 4:
        i = (ct.bid(1) * 32768 + 40000) + a  # fits int32 for bid(1) <= 65534 (grid y <= 65535)
    if MODE == 5:  # the control of MODE 1: a loop whose iv + step cannot wrap
        for j in range(0, 2147483547, 100):
            ct.scatter(Y, a + (j // 1048576), (a + 1).astype(ct.float32))
    if MODE == 6:
        i = ct.reshape(ct.permute(ct.reshape(a, (8, 8)), (1, 0)), (64,))
    if MODE == 7:
        i = ct.arange(64, dtype=ct.uint32) * 4294967295  # wraps, but unsigned: never negative
    if MODE == 8:
        i = a * 2147483647  # the signed twin of MODE 7: even lanes -lane
    if MODE == 9:
        i = (a % 64) + (2147483647 - 63)  # at most 2**31 - 1
    if MODE < 5 or MODE > 5:
        ct.scatter(Y, i, (a + 1).astype(ct.float32))


def _src_case(mode, monkeypatch=None, big_grid=False):
    return _src(src_cases, (torch.zeros(N), torch.zeros(N), 0, mode), monkeypatch, big_grid)


def test_detector_sees_no_mask_on_a_plain_index():
    assert not _masked(_src_case(0))
    assert not _masked(_src_case(5))
    assert _masked(_src_case(8))


def test_loop_variable_whose_increment_may_wrap_is_unbounded():
    """B6: `stop + step` past 2**31 - 1 (the loop's last iv + step wraps in compiled Triton)."""
    assert _masked(_src_case(1))


@pytest.mark.parametrize("mode", [2, 3], ids=["x", "y"])
def test_grid_size_bounds_are_cudas(mode):
    """B13: num_blocks(x) may be 2**31 - 1, num_blocks(y) 65535."""
    assert _masked(_src_case(mode))


def test_block_index_on_a_big_grid_is_unbounded_along_y(monkeypatch):
    """B9 (big grid ignored: bid(1) taken below 65535 on a grid launched flat along x) and B10
    (grid y's limit 65535 taken as 65536: a mask where none is needed)."""
    assert not _masked(_src_case(4))
    assert _masked(_src_case(4, monkeypatch, big_grid=True))


def test_permuted_and_reshaped_arange_keeps_its_bounds():
    """B19 (permute not followed: a `>= 0` mask for nothing)."""
    assert not _masked(_src_case(6))


def test_unsigned_index_needs_no_lower_mask():
    """B4 (an unknown unsigned value taken as the signed range)."""
    assert not _masked(_src_case(7))


def test_mod_by_a_constant_is_below_the_divisor():
    """B24 (x % 64 taken up to 64: then + 2**31 - 64 may wrap)."""
    assert not _masked(_src_case(9))


@ct.kernel
def deep(X, Y, DEPTH: ct.Constant[int]):
    a = ct.arange(64, dtype=ct.int32)
    c = (a < 1).astype(ct.int32)  # 1 on lane 0
    for _ in ct.static_iter(range(DEPTH)):
        c = c + 0
    ct.scatter(Y, a - c, (a + 1).astype(ct.float32))  # lane 0: -1


def test_bool_beyond_the_depth_limit_is_zero_or_one():
    """B5: a bool whose bounds are cut off by the depth limit must still count as 0..1."""
    for depth in range(0, 32):
        assert _masked(_src(deep, (torch.zeros(N), torch.zeros(N), depth))), depth


def test_a_long_chain_of_index_arithmetic_compiles():
    """B27 (no depth limit: the analysis recurses once per op and overflows Python's stack)."""
    assert _masked(_src(deep, (torch.zeros(N), torch.zeros(N), 400)))


# ------------------------------------------------------------------ the interval arithmetic

def test_division_by_a_constant_is_exact():
    """`//` and `%` by a constant divisor: the interval is the brute-force one once the dividend
    spans a whole period (B24: x % d taken up to d)."""
    from safetile.backends.triton.bounds import interval
    for d in (-7, -3, -1, 1, 2, 5, 64):
        for lo, width in itertools.product(range(-20, 21, 3), (abs(d) - 1, abs(d) + 5, 2 * abs(d))):
            x = (lo, lo + width)
            q = [v // d for v in range(x[0], x[1] + 1)]
            r = [v % d for v in range(x[0], x[1] + 1)]
            assert interval("floordiv", [x, (d, d)]) == (min(q), max(q)), (x, d)
            assert interval("mod", [x, (d, d)]) == (min(r), max(r)), (x, d)


# ------------------------------------------------------------------ pingpong.plan: launch facts

@ct.kernel
def attention(Q, K, V, O, lo, hi, scale, D: ct.Constant[int], BN: ct.Constant[int]):
    """The online-softmax forward the ping-pong schedule is for (128 rows, one loop)."""
    r = ct.bid(0)
    q = ct.load(Q, (r, 0), (128, D), allow_tma=True)
    m = ct.full((128,), -1e30, ct.float32)
    den = ct.zeros((128,), ct.float32)
    acc = ct.zeros((128, D), ct.float32)
    for j in range(lo, hi):
        k = ct.load(K, (j, 0), (BN, D), allow_tma=True, padding_mode=ct.PaddingMode.ZERO)
        s = ct.mma(q, ct.transpose(k), ct.zeros((128, BN), ct.float32)) * scale
        m_new = ct.maximum(m, ct.max(s, axis=1))
        p = ct.exp(s - m_new[:, None])
        keep = ct.exp(m - m_new)
        den = den * keep + ct.sum(p, axis=1)
        v = ct.load(V, (j, 0), (BN, D), allow_tma=True, padding_mode=ct.PaddingMode.ZERO)
        acc = ct.mma(p.astype(v.dtype), v, acc * keep[:, None])
        m = m_new
    ct.store(O, (r, 0), (acc / den[:, None]).astype(O.dtype), allow_tma=True)


def _pp_plan(**change):
    """plan() for ``attention`` under the sm_90 facts the existing tests use, with ``change``
    (``idx64=True``: the first array's offsets need int64)."""
    from safetile.backends.triton.pingpong import plan
    from safetile.runtime.args import arg_specs
    x = torch.empty(1024, 128, dtype=torch.bfloat16)
    args = (x, x, x, x, 0, 8, 0.1, 128, 128)
    kern = attention.replace_hints(warp_specialize="pingpong")
    facts = sm90_facts(args, 4)
    if change.pop("idx64", False):
        first = dataclasses.replace(facts.arrays[0], idx64=True)
        facts = dataclasses.replace(facts, arrays=(first,) + facts.arrays[1:])
    return plan(kern.specialize(arg_specs(kern, args)), dataclasses.replace(facts, **change))


def test_pingpong_plan_needs_sm90_tma_a_plain_grid_and_int32_offsets():
    """P2 (big grid), P3 (int64 offsets), P4 (no TMA): the Gluon schedule loads through TMA
    descriptors, takes the block's rows from program_id(0) and indexes in int32; any of these
    facts must send the kernel to the ordinary code generator."""
    assert _pp_plan() is not None
    assert _pp_plan(target=80) is None
    assert _pp_plan(tma=False) is None
    assert _pp_plan(big_grid=True) is None
    assert _pp_plan(idx64=True) is None


@ct.kernel
def carried_block_index(Q, K, V, O, lo, hi, scale, D: ct.Constant[int], BN: ct.Constant[int]):
    """``attention`` with K's block index carried through the loop (jj = lo, lo + 1, ...)."""
    r = ct.bid(0)
    q = ct.load(Q, (r, 0), (128, D), allow_tma=True)
    m = ct.full((128,), -1e30, ct.float32)
    den = ct.zeros((128,), ct.float32)
    acc = ct.zeros((128, D), ct.float32)
    jj = lo
    for j in range(lo, hi):
        k = ct.load(K, (jj, 0), (BN, D), allow_tma=True, padding_mode=ct.PaddingMode.ZERO)
        s = ct.mma(q, ct.transpose(k), ct.zeros((128, BN), ct.float32)) * scale
        m_new = ct.maximum(m, ct.max(s, axis=1))
        p = ct.exp(s - m_new[:, None])
        keep = ct.exp(m - m_new)
        den = den * keep + ct.sum(p, axis=1)
        v = ct.load(V, (j, 0), (BN, D), allow_tma=True, padding_mode=ct.PaddingMode.ZERO)
        acc = ct.mma(p.astype(v.dtype), v, acc * keep[:, None])
        m = m_new
        jj = jj + 1
    ct.store(O, (r, 0), (acc / den[:, None]).astype(O.dtype), allow_tma=True)


def test_pingpong_declines_a_column_tile_indexed_by_a_carried_value():
    """P19: the producer warp repeats only scalar arithmetic of the induction variable (it has no
    carried values), so a column tile at a carried block index is not this schedule's."""
    from safetile.backends.triton.codegen import Facts
    from safetile.backends.triton.launcher import array_facts, array_parts
    from safetile.backends.triton.pingpong import plan
    from safetile.runtime.args import arg_specs
    x = torch.empty(1024, 128, dtype=torch.bfloat16)
    args = (x, x, x, x, 0, 8, 0.1, 128, 128)
    facts = Facts(tuple(array_facts(*array_parts(a)[:3]) for a in args[:4]), False, 90, True, True, 3, True, True)
    kern = carried_block_index.replace_hints(warp_specialize="pingpong")
    assert plan(kern.specialize(arg_specs(kern, args)), facts) is None
