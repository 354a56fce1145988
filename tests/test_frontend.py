"""The Python subset accepted in tile code, checked by running kernels on the CPU backend.

Every test launches a kernel on fresh random data and compares with a NumPy reference
computed the obvious way, block by block.
"""
from __future__ import annotations

import dataclasses
import math
import random
import re

import numpy as np
import pytest

import safetile as ct

TILE = 16
HALF_TILE = TILE // 2
SCALE = 3.0


@pytest.fixture
def rng():
    return np.random.default_rng(1234)


def launch(kernel, grid, *args):
    ct.launch(None, grid, kernel, args)


def rand(rng, n, dtype=np.float32):
    return rng.standard_normal(n).astype(dtype)


def blocks(x, tile=TILE):
    """The tiles of a 1-D array as a list of views."""
    return [x[i:i + tile] for i in range(0, len(x), tile)]


# ------------------------------------------------------------------------------- if / elif / else

@ct.kernel
def branchy(x, y, T: ct.Constant[int]):
    bid = ct.bid(0)
    t = ct.load(x, index=(bid,), shape=(T,))
    if bid == 0:
        r = t * 2.0
    elif bid < 3:
        r = t + 1.0
    elif bid % 2 == 1:
        r = -t
    else:
        r = t * t
    ct.store(y, index=(bid,), tile=r)


def test_if_elif_else_runtime(rng):
    x = rand(rng, 8 * TILE)
    y = np.zeros_like(x)
    launch(branchy, (8,), x, y, TILE)
    ref = np.empty_like(x)
    for b, (xs, rs) in enumerate(zip(blocks(x), blocks(ref))):
        rs[:] = xs * 2 if b == 0 else xs + 1 if b < 3 else -xs if b % 2 == 1 else xs * xs
    np.testing.assert_allclose(y, ref, rtol=1e-6)


@ct.kernel
def compile_time_branch(x, y, MODE: ct.Constant[int], T: ct.Constant[int]):
    bid = ct.bid(0)
    t = ct.load(x, index=(bid,), shape=(T,))
    if MODE == 0:
        r = t + 1.0
    elif MODE == 1:
        r = t * SCALE
    else:
        r = ct.exp(t)
    ct.store(y, index=(bid,), tile=r)


@pytest.mark.parametrize("mode", [0, 1, 2])
def test_if_compile_time_condition_folds(rng, mode):
    x = rand(rng, 4 * TILE)
    y = np.zeros_like(x)
    launch(compile_time_branch, (4,), x, y, mode, TILE)
    ref = [x + 1, x * SCALE, np.exp(x)][mode]
    np.testing.assert_allclose(y, ref, rtol=1e-5)
    ir = compile_time_branch.ir(x, y, mode, TILE)
    assert " if " not in ir and "if(" not in ir.replace(" ", "")  # no run-time branch was emitted


@ct.kernel
def branch_merges_constant(x, y, T: ct.Constant[int]):
    bid = ct.bid(0)
    t = ct.load(x, index=(bid,), shape=(T,))
    scale = 1.0                        # a constant on one path ...
    if bid % 2 == 0:
        scale = ct.sum(t)              # ... a run-time scalar on the other
    ct.store(y, index=(bid,), tile=t * scale)


def test_if_merges_constant_with_tile(rng):
    x = rand(rng, 6 * TILE)
    y = np.zeros_like(x)
    launch(branch_merges_constant, (6,), x, y, TILE)
    ref = np.concatenate([xs * (xs.sum() if b % 2 == 0 else 1.0) for b, xs in enumerate(blocks(x))])
    np.testing.assert_allclose(y, ref, rtol=1e-5)


# ------------------------------------------------------------------------------- for / range

@ct.kernel
def range_forms(x, y, n, T: ct.Constant[int], START: ct.Constant[int], STEP: ct.Constant[int]):
    bid = ct.bid(0)
    acc = ct.zeros((T,), dtype=ct.float32)
    for i in range(4):                       # constant bounds
        acc = acc + ct.load(x, index=(i,), shape=(T,))
    for i in range(START, n, STEP):          # run-time stop, constant start/step
        acc = acc + ct.load(x, index=(i,), shape=(T,)) * 2.0
    for i in range(bid, n):                  # bounds that differ per block
        acc = acc + ct.load(x, index=(i,), shape=(T,)) * 0.5
    ct.store(y, index=(bid,), tile=acc)


@pytest.mark.parametrize("start,step,n", [(0, 1, 6), (1, 2, 7), (2, 3, 3), (5, 1, 2)])
def test_range_loops(rng, start, step, n):
    x = rand(rng, 8 * TILE)
    y = np.zeros(8 * TILE, np.float32)
    launch(range_forms, (8,), x, y, n, TILE, start, step)
    xs = blocks(x)
    for b in range(8):
        acc = sum(xs[i] for i in range(4))
        acc = acc + sum((xs[i] * 2 for i in range(start, n, step)), np.zeros(TILE, np.float32))
        acc = acc + sum((xs[i] * 0.5 for i in range(b, n)), np.zeros(TILE, np.float32))
        np.testing.assert_allclose(y[b * TILE:(b + 1) * TILE], acc, rtol=1e-5, atol=1e-5)


@ct.kernel
def range_runtime_step(x, y, step, T: ct.Constant[int]):
    bid = ct.bid(0)
    acc = ct.zeros((T,), dtype=ct.float32)
    for i in range(0, ct.num_blocks(0), step + bid % 2):
        acc = acc + ct.load(x, index=(i,), shape=(T,))
    ct.store(y, index=(bid,), tile=acc)


def test_range_runtime_step(rng):
    x = rand(rng, 8 * TILE)
    y = np.zeros_like(x)
    launch(range_runtime_step, (8,), x, y, 2, TILE)
    xs = blocks(x)
    for b in range(8):
        ref = sum(xs[i] for i in range(0, 8, 2 + b % 2))
        np.testing.assert_allclose(y[b * TILE:(b + 1) * TILE], ref, rtol=1e-5)


@ct.kernel
def nested_loops(x, y, n, T: ct.Constant[int]):
    bid = ct.bid(0)
    acc = ct.zeros((T,), dtype=ct.float32)
    count = 0
    for i in range(n):
        for j in range(i + 1):
            acc = acc + ct.load(x, index=(j,), shape=(T,)) * (i + 1)
            count += 1
    ct.store(y, index=(bid,), tile=acc / count)


def test_nested_loops_with_dependent_bounds(rng):
    x = rand(rng, 8 * TILE)
    y = np.zeros(2 * TILE, np.float32)
    launch(nested_loops, (2,), x, y, 5, TILE)
    xs = blocks(x)
    acc = sum(xs[j] * (i + 1) for i in range(5) for j in range(i + 1))
    count = sum(i + 1 for i in range(5))
    np.testing.assert_allclose(y[:TILE], acc / count, rtol=1e-5)
    np.testing.assert_allclose(y[TILE:], acc / count, rtol=1e-5)


# ------------------------------------------------------------------------------- while, break, continue

@ct.kernel
def collatz_steps(x, y):
    bid = ct.bid(0)
    v = ct.load(x, index=(bid,), shape=())
    steps = 0
    while v != 1:
        if v % 2 == 0:
            v = v // 2
        else:
            v = 3 * v + 1
        steps += 1
    ct.store(y, index=(bid,), tile=steps)


def test_while_with_block_dependent_trip_count(rng):
    x = rng.integers(1, 60, size=24).astype(np.int32)
    y = np.full(24, -1, np.int32)
    launch(collatz_steps, (24,), x, y)

    def steps(v):
        n = 0
        while v != 1:
            v = v // 2 if v % 2 == 0 else 3 * v + 1
            n += 1
        return n
    np.testing.assert_array_equal(y, [steps(int(v)) for v in x])


@ct.kernel
def first_negative_tile(x, out, n, T: ct.Constant[int]):
    """Index of the first tile (from this block's start) whose sum is negative, else -1."""
    bid = ct.bid(0)
    found = -1
    for i in range(bid, n):
        s = ct.sum(ct.load(x, index=(i,), shape=(T,)))
        if s < 0.0:
            found = i
            break
    ct.store(out, index=(bid,), tile=found)


def test_break_inside_if_inside_for(rng):
    n = 12
    x = rand(rng, n * TILE)
    out = np.zeros(n, np.int32)
    launch(first_negative_tile, (n,), x, out, n, TILE)
    sums = [xs.sum() for xs in blocks(x)]
    ref = [next((i for i in range(b, n) if sums[i] < 0), -1) for b in range(n)]
    np.testing.assert_array_equal(out, ref)


@ct.kernel
def skip_and_stop(x, y, n, limit, T: ct.Constant[int]):
    bid = ct.bid(0)
    acc = ct.zeros((T,), dtype=ct.float32)
    total = 0.0
    i = 0
    while True:
        if i >= n:
            break
        t = ct.load(x, index=(i,), shape=(T,))
        i += 1
        if ct.sum(t) < 0.0:
            continue                      # skip negative tiles
        acc = acc + t
        total = total + ct.sum(t)
        if total > limit + bid:
            break
    ct.store(y, index=(bid,), tile=acc)


def test_while_true_with_break_and_continue(rng):
    n = 10
    x = rand(rng, n * TILE)
    y = np.zeros(4 * TILE, np.float32)
    launch(skip_and_stop, (4,), x, y, n, 3.0, TILE)
    xs = blocks(x)
    for b in range(4):
        acc, total = np.zeros(TILE, np.float32), 0.0
        for i in range(n):
            if xs[i].sum() < 0:
                continue
            acc, total = acc + xs[i], total + xs[i].sum()
            if total > 3.0 + b:
                break
        np.testing.assert_allclose(y[b * TILE:(b + 1) * TILE], acc, rtol=1e-5)


@ct.kernel
def nested_break(x, y, n, T: ct.Constant[int]):
    bid = ct.bid(0)
    acc = ct.zeros((T,), dtype=ct.float32)
    for i in range(n):
        if i == bid + 3:
            break
        for j in range(n):
            if j > i:
                break                      # only leaves the inner loop
            if (i + j) % 3 == 0:
                continue
            acc = acc + ct.load(x, index=(j,), shape=(T,))
    ct.store(y, index=(bid,), tile=acc)


def test_nested_break_and_continue(rng):
    n = 7
    x = rand(rng, n * TILE)
    y = np.zeros(3 * TILE, np.float32)
    launch(nested_break, (3,), x, y, n, TILE)
    xs = blocks(x)
    for b in range(3):
        acc = np.zeros(TILE, np.float32)
        for i in range(n):
            if i == b + 3:
                break
            for j in range(n):
                if j > i:
                    break
                if (i + j) % 3 == 0:
                    continue
                acc = acc + xs[j]
        np.testing.assert_allclose(y[b * TILE:(b + 1) * TILE], acc, rtol=1e-5)


# ------------------------------------------------------------------------------- early return

@ct.kernel
def guarded_copy(x, y, n, T: ct.Constant[int]):
    bid = ct.bid(0)
    if bid >= n:
        return
    t = ct.load(x, index=(bid,), shape=(T,))
    for i in range(2):
        t = t + 1.0
    ct.store(y, index=(bid,), tile=t)


def test_early_return_in_kernel(rng):
    x = rand(rng, 8 * TILE)
    y = np.full_like(x, 7.0)
    launch(guarded_copy, (8,), x, y, 5, TILE)
    np.testing.assert_allclose(y[:5 * TILE], x[:5 * TILE] + 2.0, rtol=1e-6)
    assert np.all(y[5 * TILE:] == 7.0)


# ------------------------------------------------------------------------------- helper functions

def scale_shift(t, scale, shift=1.0, *, power=1):
    """A module-level helper with a default and a keyword-only argument."""
    r = t * scale + shift
    for _ in ct.static_iter(range(power - 1)):
        r = r * r
    return r


@ct.function
def stats(t):
    return ct.sum(t), ct.max(t)


def signed_sqrt(v):
    if v >= 0.0:
        return ct.sqrt(v)
    else:
        return -ct.sqrt(-v)


def clamp_low(v, low):
    if v < low:
        return low
    return v


def make_adder(k):
    def add(t):
        return t + k
    return add


ADD_TWO = make_adder(2.0)


@ct.kernel
def helpers(x, y, out, T: ct.Constant[int]):
    bid = ct.bid(0)
    t = ct.load(x, index=(bid,), shape=(T,))
    offset = ct.load(y, index=(bid,), shape=())

    def shifted(v, by=offset):               # nested def: default captured at definition
        return v + by + bias                  # `bias` is read when called (late binding)

    bias = 10.0
    square = lambda v: v * v                  # noqa: E731
    a = scale_shift(t, 2.0)                   # default used
    b = scale_shift(t, scale=0.5, shift=-1.0, power=2)
    s, m = stats(t)
    c = shifted(t)
    d = square(t)
    e = ADD_TWO(t)                            # a closure made outside the kernel
    f = signed_sqrt(s)                        # return inside if/else, run-time condition
    g = clamp_low(m, 0.25)                    # early return, then more code
    r = a + b + c + d + e + f + g
    ct.store(out, index=(bid,), tile=r)


def test_helper_functions(rng):
    x = rand(rng, 6 * TILE)
    y = rand(rng, 6)
    out = np.zeros_like(x)
    launch(helpers, (6,), x, y, out, TILE)
    for b, t in enumerate(blocks(x)):
        a = t * 2.0 + 1.0
        bb = (t * 0.5 - 1.0) ** 2
        s, m = t.sum(), t.max()
        c = t + y[b] + 10.0
        f = np.sqrt(s) if s >= 0 else -np.sqrt(-s)
        g = max(m, 0.25)
        ref = a + bb + c + t * t + (t + 2.0) + f + g
        np.testing.assert_allclose(out[b * TILE:(b + 1) * TILE], ref, rtol=1e-5, atol=1e-5)


def total_and_first(t, *rest):
    acc = t
    for r in rest:                            # a loop over a tuple of tiles is unrolled
        acc = acc + r
    return acc, rest[0] if rest else t


@ct.kernel
def tuples(x, y, T: ct.Constant[int]):
    bid = ct.bid(0)
    tiles = tuple(ct.load(x, index=(bid * 4 + k,), shape=(T,)) for k in range(4))
    first, *middle, last = tiles
    a, b = middle
    total, head = total_and_first(*tiles)
    pair = (first, last)
    (p, q), r = pair, a - b
    swapped = (*pair[::-1], r)
    res = total + head * 10.0 + swapped[0] - q + swapped[2] * len(middle)
    ct.store(y, index=(bid,), tile=res)


def test_tuples_and_unpacking(rng):
    x = rand(rng, 8 * TILE)
    y = np.zeros(2 * TILE, np.float32)
    launch(tuples, (2,), x, y, TILE)
    xs = blocks(x)
    for b in range(2):
        t0, t1, t2, t3 = xs[4 * b:4 * b + 4]
        ref = (t0 + t1 + t2 + t3) + t1 * 10.0 + t3 - t3 + (t1 - t2) * 2
        np.testing.assert_allclose(y[b * TILE:(b + 1) * TILE], ref, rtol=1e-5)


# ------------------------------------------------------------------------------- constants

@ct.kernel
def constants(x, y, T: ct.Constant[int]):
    bid = ct.bid(0)
    H = T // 2
    LOG = int(math.log2(T))
    ct.static_assert(H * 2 == T, "T must be even")
    ct.static_assert(HALF_TILE == TILE // 2)
    width = ct.static_eval(H + LOG)
    t = ct.load(x, index=(bid * 2,), shape=(H,))
    u = ct.load(x, index=(bid * 2 + 1,), shape=(H,))
    acc = t * width
    for k in ct.static_iter(range(LOG)):      # unrolled: k is a Python int in each copy
        acc = acc + u * (2 ** k)
    ct.store(y, index=(bid,), tile=acc + SCALE)


def test_constants_folding_and_static_helpers(rng):
    x = rand(rng, 8 * TILE)
    y = np.zeros(4 * (TILE // 2), np.float32)
    launch(constants, (4,), x, y, TILE)
    h, log = TILE // 2, int(math.log2(TILE))
    for b in range(4):
        t, u = x[2 * b * h:(2 * b + 1) * h], x[(2 * b + 1) * h:(2 * b + 2) * h]
        ref = t * (h + log) + u * sum(2 ** k for k in range(log)) + SCALE
        np.testing.assert_allclose(y[b * h:(b + 1) * h], ref, rtol=1e-5)
    ir = constants.ir(x, y, TILE)
    assert "for" not in ir.split()  # the static loop was unrolled


@ct.kernel
def static_loop_control(x, y, T: ct.Constant[int]):
    bid = ct.bid(0)
    acc = ct.zeros((T,), dtype=ct.float32)
    for k in (0, 1, 2, 3, 4, 5):              # a tuple loop is unrolled (static_iter loops, as in
        if k == 1:                             # cuTile, take no break/continue)
            continue                           # compile-time continue
        t = ct.load(x, index=(k,), shape=(T,))
        if ct.sum(t) > bid:
            break                              # run-time break out of an unrolled loop
        acc = acc + t
    ct.store(y, index=(bid,), tile=acc)


def test_break_continue_in_static_loop(rng):
    x = rand(rng, 6 * TILE)
    y = np.zeros(3 * TILE, np.float32)
    launch(static_loop_control, (3,), x, y, TILE)
    xs = blocks(x)
    for b in range(3):
        acc = np.zeros(TILE, np.float32)
        for k in range(6):
            if k == 1:
                continue
            if xs[k].sum() > b:
                break
            acc = acc + xs[k]
        np.testing.assert_allclose(y[b * TILE:(b + 1) * TILE], acc, rtol=1e-5)


# ------------------------------------------------------------------------------- expressions

@ct.kernel
def expressions(x, y, z, T: ct.Constant[int]):
    bid = ct.bid(0)
    t = ct.load(x, index=(bid,), shape=(T,))
    s = ct.sum(t)
    lo, hi = -1.0, 1.0
    inside = lo < s < hi                           # chained comparison on a scalar tile
    between = (t > -0.5) & (t < 0.5)
    within = -0.5 < t < 0.5                        # chained comparison on a tile: element-wise
    flag = (s > 0.0 and bid % 2 == 0) or not (s > -0.5)
    sign = 1.0 if s > 0.0 else -1.0                # ternary on a run-time scalar
    mode = "square" if T > 8 else "plain"          # ternary on a constant
    base = t * t if mode == "square" else t
    r = base * sign + ct.where(within, 1.0, 0.0) + ct.where(between, 10.0, 0.0)
    r += ct.where(inside, 100.0, 0.0)
    r -= ct.where(flag, 1000.0, 0.0)
    r *= 0.5
    ct.store(y, index=(bid,), tile=r)
    ct.store(z, index=(bid,), tile=ct.astype(flag, ct.int32))


def test_expressions(rng):
    x = rand(rng, 8 * TILE) * 0.3
    y = np.zeros_like(x)
    z = np.zeros(8, np.int32)
    launch(expressions, (8,), x, y, z, TILE)
    for b, t in enumerate(blocks(x)):
        s = t.sum()
        flag = (s > 0 and b % 2 == 0) or not (s > -0.5)
        within = ((t > -0.5) & (t < 0.5)).astype(np.float32)
        r = t * t * (1.0 if s > 0 else -1.0) + within + 10.0 * within
        r = (r + (100.0 if -1 < s < 1 else 0.0) - (1000.0 if flag else 0.0)) * 0.5
        np.testing.assert_allclose(y[b * TILE:(b + 1) * TILE], r, rtol=1e-5)
        assert z[b] == int(flag)


@ct.kernel
def printer(x, T: ct.Constant[int]):
    bid = ct.bid(0)
    s = ct.sum(ct.load(x, index=(bid,), shape=(T,)))
    print(f"block {bid} of T={T}: {s:.3f}")
    ct.print("again", bid)


def test_fstring_print(rng, capsys):
    x = rand(rng, 3 * TILE)
    launch(printer, (3,), x, TILE)
    out = capsys.readouterr().out.splitlines()
    sums = [xs.sum() for xs in blocks(x)]
    expected = []
    for b in range(3):
        expected += [f"block {b} of T={TILE}: {sums[b]:.3f}", f"again {b}"]
    assert out == expected


# ------------------------------------------------------------------------------- loop-carried types

@ct.kernel
def constant_accumulators(x, y, n, T: ct.Constant[int]):
    bid = ct.bid(0)
    acc = 0.0                       # a Python float that becomes a float16 tile
    best = -math.inf                # ... a float16 scalar
    count = 0                       # ... an int32 scalar
    unused = 5                      # never changes: stays a compile-time constant
    for i in range(n):
        t = ct.load(x, index=(i,), shape=(T,))
        acc = acc + t
        best = max(best, ct.max(t))
        count += 1
        unused = unused * 1
    ct.static_assert(unused == 5)
    ct.store(y, index=(bid,), tile=acc + best + count)


def test_loop_carried_constants_take_the_tile_type(rng):
    x = rand(rng, 4 * TILE, np.float16)
    y = np.zeros(TILE, np.float16)
    launch(constant_accumulators, (1,), x, y, 4, TILE)
    xs = blocks(x)
    acc = np.zeros(TILE, np.float16)
    for t in xs:
        acc = acc + t
    ref = acc + max(t.max() for t in xs) + np.float16(4)
    np.testing.assert_allclose(y.astype(np.float32), ref.astype(np.float32), rtol=2e-3, atol=2e-3)
    ir = constant_accumulators.ir(x, y, 4, TILE)
    assert "float32" not in ir  # nothing was silently widened


@ct.kernel
def comprehension_kernel(x, y, T: ct.Constant[int]):
    bid = ct.bid(0)
    parts = [ct.load(x, index=(bid * 4 + k,), shape=(T,)) * (k + 1) for k in range(4) if k != 2]
    weights = tuple(2 ** k for k in range(3))
    total = sum(p * w for p, w in zip(parts, weights))
    ct.store(y, index=(bid,), tile=total)


def test_comprehensions_over_constants(rng):
    x = rand(rng, 8 * TILE)
    y = np.zeros(2 * TILE, np.float32)
    launch(comprehension_kernel, (2,), x, y, TILE)
    xs = blocks(x)
    for b in range(2):
        parts = [xs[4 * b + k] * (k + 1) for k in range(4) if k != 2]
        ref = sum(p * w for p, w in zip(parts, (1, 2, 4)))
        np.testing.assert_allclose(y[b * TILE:(b + 1) * TILE], ref, rtol=1e-5)


@ct.kernel
def walrus_and_globals(x, y, T: ct.Constant[int]):
    bid = ct.bid(0)
    if (s := ct.sum(t := ct.load(x, index=(bid,), shape=(T,)))) > 0.0:
        t = t * SCALE
    ct.store(y, index=(bid,), tile=t + s)


def test_walrus(rng):
    x = rand(rng, 4 * TILE)
    y = np.zeros_like(x)
    launch(walrus_and_globals, (4,), x, y, TILE)
    for b, t in enumerate(blocks(x)):
        s = t.sum()
        np.testing.assert_allclose(y[b * TILE:(b + 1) * TILE], (t * SCALE if s > 0 else t) + s, rtol=1e-5)


# ------------------------------------------------------------------------------- more helpers

INC, TRIPLE = (lambda v: v + 1.0), (lambda v: v * 3.0)   # two lambdas on one line


def first_above(t, limit):
    """Returns from inside an unrolled loop; the run-time condition guards later iterations."""
    for k in ct.static_iter(range(4)):
        if ct.sum(t) > limit * k:
            return k
    return -1


@ct.kernel
def misc_helpers(x, y, z, T: ct.Constant[int]):
    bid = ct.bid(0)
    t = ct.load(x, index=(bid,), shape=(T,))
    r = ct.reduce(t, 0, lambda a, b: ct.maximum(a, b), -math.inf)   # a lambda as the combiner
    code = first_above(t, 0.5)
    member = bid in (1, 3)
    ct.store(y, index=(bid,), tile=TRIPLE(t) + INC(r))
    ct.store(z, index=(bid,), tile=code * 10 + ct.astype(member, ct.int32))


def test_lambdas_reduce_combiner_return_in_static_loop_membership(rng):
    x = rand(rng, 6 * TILE) + 0.3
    y = np.zeros_like(x)
    z = np.zeros(6, np.int32)
    launch(misc_helpers, (6,), x, y, z, TILE)
    for b, t in enumerate(blocks(x)):
        np.testing.assert_allclose(y[b * TILE:(b + 1) * TILE], t * 3.0 + t.max() + 1.0, rtol=1e-5)
        code = next((k for k in range(4) if t.sum() > 0.5 * k), -1)
        assert z[b] == code * 10 + (b in (1, 3))


@ct.kernel
def repeat_add(x, y, S: ct.Constant, T: ct.Constant[int]):
    bid = ct.bid(0)
    t = ct.load(x, index=(bid,), shape=(T,))
    for _ in range(S):
        t = t + 1.0
    ct.store(y, index=(bid,), tile=t)


def test_constants_equal_in_python_compile_separately(rng):
    x = rand(rng, 2 * TILE)
    y = np.zeros_like(x)
    launch(repeat_add, (2,), x, y, 1, TILE)
    np.testing.assert_allclose(y, x + 1.0, rtol=1e-6)
    with pytest.raises(ct.TileTypeError, match="range"):  # 1.0 == 1, but it is not an int
        launch(repeat_add, (2,), x, y, 1.0, TILE)
    launch(repeat_add, (2,), x, y, 3, TILE)
    np.testing.assert_allclose(y, x + 3.0, rtol=1e-6)


# ------------------------------------------------------------------------------- random programs

class ProgramGenerator:
    """Random structured programs over integer variables, valid both as tile code and as Python.

    Values stay small (every assignment is reduced modulo 2001) so int32 never overflows;
    divisors are positive constants, so Python and tile semantics agree exactly. ``STATIC(n)``
    marks an unrolled loop: the tuple ``(0, ..., n-1)`` in the kernel, ``range(n)`` in Python.
    """

    VARS = ("a", "b", "c")
    HELPERS = """
def pick(p, q):
    if p > q:
        return p - q
    elif p == q:
        return 7
    return q % 5


def clip(p, lo=-20, *, hi=20):
    if p < lo:
        return lo
    if p > hi:
        return hi
    return p
"""

    def __init__(self, seed: int):
        self.r = random.Random(seed)
        self.lines: list[str] = []
        self.counter = 0

    def expr(self, names, depth=2):
        r = self.r
        if depth == 0 or r.random() < 0.35:
            return r.choice(list(names) + [str(r.randint(-5, 9))])
        if r.random() < 0.1:
            return r.choice([f"pick({self.expr(names, depth - 1)}, {self.expr(names, depth - 1)})",
                             f"clip({self.expr(names, depth - 1)}, hi={r.randint(0, 30)})"])
        op = r.choice(["+", "-", "*", "//", "%"])
        lhs = self.expr(names, depth - 1)
        rhs = str(r.randint(-3, 3)) if op == "*" else str(r.randint(1, 7)) if op in ("//", "%") \
            else self.expr(names, depth - 1)
        return f"({lhs} {op} {rhs})"

    def cond(self, names):
        ops = ["<", "<=", ">", ">=", "==", "!="]
        c = f"{self.expr(names, 1)} {self.r.choice(ops)} {self.expr(names, 1)}"
        if self.r.random() < 0.2:
            c = f"{c} {self.r.choice(['and', 'or'])} {self.expr(names, 1)} {self.r.choice(ops)} {self.expr(names, 0)}"
        return c

    def block(self, indent, depth, names, in_loop, in_runtime_loop):
        r = self.r
        pad = "    " * indent
        for _ in range(r.randint(1, 3)):
            kinds = ["assign"] * 5 + (["if"] * 2 if depth < 3 else [])
            if depth < 2:
                kinds += ["for", "while", "static"]
            if in_loop:
                kinds += ["break", "continue"]
            if not in_runtime_loop and depth < 3:
                kinds += ["return"]
            kind = r.choice(kinds)
            if kind == "assign":
                v = r.choice(self.VARS)
                op = r.choice(["=", "+="])
                self.lines.append(f"{pad}{v} {op} {self.expr(names)}")
                self.lines.append(f"{pad}{v} = ({v} % 2001) - 1000")
            elif kind == "if":
                self.lines.append(f"{pad}if {self.cond(names)}:")
                self.block(indent + 1, depth + 1, names, in_loop, in_runtime_loop)
                if r.random() < 0.5:
                    self.lines.append(f"{pad}elif {self.cond(names)}:")
                    self.block(indent + 1, depth + 1, names, in_loop, in_runtime_loop)
                if r.random() < 0.5:
                    self.lines.append(f"{pad}else:")
                    self.block(indent + 1, depth + 1, names, in_loop, in_runtime_loop)
            elif kind in ("for", "static"):
                i = f"i{self.counter}"
                self.counter += 1
                if kind == "static":
                    self.lines.append(f"{pad}for {i} in STATIC({r.randint(0, 3)}):")
                else:
                    bounds = r.choice([str(r.randint(0, 4)), f"{r.choice(self.VARS)} % 4",
                                       f"{r.randint(0, 2)}, {r.randint(1, 5)}", f"b % 3, 5, {r.randint(1, 2)}"])
                    self.lines.append(f"{pad}for {i} in range({bounds}):")
                self.block(indent + 1, depth + 1, names + (i,), True, in_runtime_loop or kind == "for")
            elif kind == "while":
                w = f"w{self.counter}"
                self.counter += 1
                self.lines.append(f"{pad}{w} = 0")
                self.lines.append(f"{pad}while {w} < {r.randint(1, 4)} and ({self.cond(names)}):")
                self.lines.append(f"{pad}    {w} += 1")
                self.block(indent + 1, depth + 1, names + (w,), True, True)
            elif kind in ("break", "continue"):
                self.lines.append(f"{pad}if {self.cond(names)}:")
                self.lines.append(f"{pad}    {kind}")
            else:
                self.lines.append(f"{pad}if {self.cond(names)}:")
                self.lines.append(f"{pad}    return")

    def source(self, name):
        self.lines = []
        self.block(1, 0, self.VARS, False, False)
        body = "\n".join(self.lines)
        # an unrolled loop over a tuple (break/continue are allowed there, not in ct.static_iter loops)
        kernel_body = re.sub(r"STATIC\((\d+)\)", lambda m: repr(tuple(range(int(m.group(1))))), body)
        python_body = body.replace("STATIC(", "range(")
        return (f"@ct.kernel\ndef {name}(x, ya, yb, yc):\n    bid = ct.bid(0)\n"
                f"    a = ct.load(x, index=(bid,), shape=())\n    b = bid\n    c = 0\n{kernel_body}\n"
                f"    ct.store(ya, index=(bid,), tile=a)\n    ct.store(yb, index=(bid,), tile=b)\n"
                f"    ct.store(yc, index=(bid,), tile=c)\n\n\n"
                f"def ref_{name}(xv, bid):\n    a = xv\n    b = bid\n    c = 0\n{python_body}\n    return a, b, c\n")


def test_random_programs_match_python(tmp_path, rng):
    import importlib.util
    gen = ProgramGenerator(seed=20240611)
    sources = [gen.source(f"prog{k}") for k in range(100)]
    path = tmp_path / "random_programs.py"
    path.write_text("import safetile as ct\n\n" + gen.HELPERS + "\n\n" + "\n\n".join(sources))
    spec = importlib.util.spec_from_file_location("random_programs", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    n = 8
    x = rng.integers(-50, 50, size=n).astype(np.int32)
    for k, src in enumerate(sources):
        kernel, ref = getattr(module, f"prog{k}"), getattr(module, f"ref_prog{k}")
        outs = [np.full(n, -7777, np.int32) for _ in range(3)]
        launch(kernel, (n,), x, *outs)
        for bid in range(n):
            expected = ref(int(x[bid]), bid)
            got = tuple(int(o[bid]) for o in outs)
            assert got == (expected or (-7777,) * 3), f"block {bid} of program {k}:\n{src}"


@dataclasses.dataclass(frozen=True)
class Affine:
    """A compile-time configuration object with a helper method, passed as a Constant."""

    scale: float
    shift: float

    def apply(self, t):
        return t * self.scale + self.shift


@ct.kernel
def config_object(x, y, cfg: ct.Constant, T: ct.Constant[int]):
    bid = ct.bid(0)
    ct.store(y, index=(bid,), tile=cfg.apply(ct.load(x, index=(bid,), shape=(T,))))


def test_constant_object_with_method(rng):
    x = rand(rng, 3 * TILE)
    y = np.zeros_like(x)
    launch(config_object, (3,), x, y, Affine(2.5, -1.0), TILE)
    np.testing.assert_allclose(y, x * 2.5 - 1.0, rtol=1e-6)
