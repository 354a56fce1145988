"""Red-team attacks on persistent grids (backends/triton/persistent.py).

The promise: a kernel compiled persistent computes what the same kernel computes as a grid of
tiles (the NumPy backend runs the grid as written); every logical block runs once, with its own
``bid`` and the logical ``num_blocks``; prints come out as on the CPU; kernels for which the walk
is not legal (atomics, bid-dependent loop bounds, warp specialisation, clusters) stay grids of
tiles. Under Triton's interpreter the walk uses 3 resident workers, so any grid of more than
3 blocks is walked. Each test runs a kernel on both backends (outputs poisoned first) and
compares; a spy on the launcher records whether the Triton launch was compiled persistent."""
from __future__ import annotations

import numpy as np
import pytest

import safetile as ct

torch = pytest.importorskip("torch")
pytest.importorskip("triton")

from triton_interp import triton_interpreter  # noqa: E402

ZERO = ct.PaddingMode.ZERO
ISENT = -77777


# ----------------------------------------------------------------------------- helpers

@pytest.fixture
def spy(monkeypatch):
    """Records (persistent?, logical grid) of every Triton launch made under the interpreter."""
    from safetile.backends.triton import launcher
    seen: list[tuple[bool, tuple]] = []
    orig = launcher._interp_launch

    def wrapped(v, grid3, flat):
        seen.append((bool(v.persistent), tuple(grid3)))
        return orig(v, grid3, flat)

    monkeypatch.setattr(launcher, "_interp_launch", wrapped)
    return seen


def _copy_np(a):
    return a.copy() if isinstance(a, np.ndarray) else a


def _to_torch(a):
    return torch.from_numpy(a.copy()) if isinstance(a, np.ndarray) else a


def both(kern, grid, args, capfd=None):
    """Runs ``kern`` on the NumPy backend and in Triton's interpreter on copies of ``args``;
    returns (numpy results, triton results as numpy, cpu stdout, triton stdout)."""
    cpu_args = tuple(_copy_np(a) for a in args)
    if capfd is not None:
        capfd.readouterr()
    ct.launch(None, grid, kern, cpu_args)
    cpu_out = capfd.readouterr().out if capfd is not None else None
    tri_args = tuple(_to_torch(a) for a in args)
    with triton_interpreter():
        ct.launch(None, grid, kern, tri_args)
    tri_out = capfd.readouterr().out if capfd is not None else None
    cpu = [a for a in cpu_args if isinstance(a, np.ndarray)]
    tri = [a.numpy() for a in tri_args if isinstance(a, torch.Tensor)]
    return cpu, tri, cpu_out, tri_out


def same(cpu, tri, rtol=1e-5, atol=1e-5):
    for c, t in zip(cpu, tri):
        if c.dtype.kind == "f":
            np.testing.assert_allclose(t, c, rtol=rtol, atol=atol, equal_nan=True)
        else:
            np.testing.assert_array_equal(t, c)


def rnd(*shape, seed=0, dtype=np.float32):
    return np.random.default_rng(seed).standard_normal(shape).astype(dtype)


def nan(*shape, dtype=np.float32):
    return np.full(shape, np.nan, dtype)


def spec(kern, args):
    from safetile.runtime.args import arg_specs
    return kern.specialize(arg_specs(kern, tuple(_to_torch(a) for a in args)))


def auto_wanted(kern, args, hint=None):
    from safetile.backends.triton.persistent import walkable, wanted
    return wanted(walkable(spec(kern, args)), hint, 90, True, False)


# ----------------------------------------------------------------------------- kernels

@ct.kernel
def gemm(A, B, C, tm: ct.Constant[int], tn: ct.Constant[int], tk: ct.Constant[int]):
    bx, by = ct.bid(0), ct.bid(1)
    acc = ct.full((tm, tn), 0, dtype=ct.float32)
    for k in range(ct.num_tiles(A, axis=1, shape=(tm, tk))):
        a = ct.load(A, index=(bx, k), shape=(tm, tk), padding_mode=ZERO)
        b = ct.load(B, index=(k, by), shape=(tk, tn), padding_mode=ZERO)
        acc = ct.mma(a, b, acc)
    ct.store(C, index=(bx, by), tile=acc.astype(C.dtype))


def gemm_args(m=20, n=24, k=13, tm=4, tn=8, tk=4, seed=0, dtype=np.float32):
    return (rnd(m, k, seed=seed), rnd(k, n, seed=seed + 1), nan(m, n, dtype=dtype), tm, tn, tk)


@ct.kernel
def gemm_ids(A, B, C, IDS, tm: ct.Constant[int], tn: ct.Constant[int], tk: ct.Constant[int]):
    """A GEMM that also records, per logical block, its bid, num_blocks and a visit count."""
    bx, by = ct.bid(0), ct.bid(1)
    lin = bx + by * ct.num_blocks(0)
    acc = ct.zeros((tm, tn), ct.float32)
    for k in range(ct.num_tiles(A, axis=1, shape=(tm, tk))):
        acc = ct.mma(ct.load(A, (bx, k), (tm, tk), padding_mode=ZERO),
                     ct.load(B, (k, by), (tk, tn), padding_mode=ZERO), acc)
    ct.store(C, (bx, by), acc)
    row = ct.load(IDS, (lin, 0), (1, 8))
    cnt = ct.extract(row, (0, 7), (1, 1)) + 1  # read-modify-write of the block's own row
    r = ct.arange(8, dtype=ct.int32)
    vals = ct.where(r == 0, bx, ct.where(r == 1, by, ct.where(r == 2, ct.num_blocks(0), ct.where(
        r == 3, ct.num_blocks(1), ct.where(r == 4, ct.num_blocks(2), ct.where(r == 5, ct.bid(2), ct.where(
            r == 6, lin, 0)))))))
    vals = ct.where(r == 7, ct.reshape(cnt, (1,)), vals)
    ct.store(IDS, (lin, 0), ct.reshape(vals, (1, 8)).astype(IDS.dtype))


# ----------------------------------------------------------------------------- attacks


def test_baseline_gemm_is_walked_and_matches(spy):
    """Baseline: a ragged GEMM (sizes not multiples of the tiles) on a 5x3 grid is walked by 3
    workers and stores what the NumPy backend stores."""
    args = gemm_args()
    cpu, tri, _, _ = both(gemm, (5, 3), args)
    assert spy == [(True, (5, 3, 1))]
    same(cpu, tri)
    np.testing.assert_allclose(cpu[2], args[0] @ args[1], rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("grid", [(1,), (2,), (3,), (4,), (7,), (2, 1), (1, 5), (3, 3), (5, 1, 1), (7, 3), (2, 3, 1)])
def test_every_logical_block_runs_once_with_its_own_bid(spy, grid):
    """Each logical block writes its bid, the logical num_blocks and bumps a visit counter in its
    own row: a block run twice, skipped, or seeing the workers' grid shows up. Grid sizes 1,
    primes, fewer blocks than workers, exactly the workers."""
    g3 = tuple(grid) + (1,) * (3 - len(grid))
    m, n = 4 * g3[0], 8 * g3[1]
    blocks = g3[0] * g3[1] * g3[2]
    ids = np.zeros((blocks, 8), np.int32)
    args = (rnd(m, 9), rnd(9, n, seed=1), nan(m, n), ids, 4, 8, 4)
    cpu, tri, _, _ = both(gemm_ids, grid, args)
    assert spy and spy[0][0] is True and spy[0][1] == g3
    same(cpu, tri)
    assert (tri[3][:, 7] == 1).all()
    assert (tri[3][:, 2:5] == np.array(g3)).all()


@ct.kernel
def bmm3(A, B, C, tm: ct.Constant[int], tn: ct.Constant[int], tk: ct.Constant[int], BAX: ct.Constant[int]):
    """Batched GEMM with 3-D tiles; the batch index comes from grid axis BAX."""
    if BAX == 0:
        b, i, j = ct.bid(0), ct.bid(1), ct.bid(2)
    elif BAX == 1:
        i, b, j = ct.bid(0), ct.bid(1), ct.bid(2)
    else:
        i, j, b = ct.bid(0), ct.bid(1), ct.bid(2)
    acc = ct.zeros((tm, tn), ct.float32)
    for k in range(ct.cdiv(A.shape[2], tk)):
        a = ct.reshape(ct.load(A, (b, i, k), (1, tm, tk), padding_mode=ZERO), (tm, tk))
        w = ct.reshape(ct.load(B, (b, k, j), (1, tk, tn), padding_mode=ZERO), (tk, tn))
        acc = ct.mma(a, w, acc)
    ct.store(C, (b, i, j), ct.reshape(acc.astype(C.dtype), (1, tm, tn)))


@pytest.mark.parametrize("bax", [0, 1, 2])
def test_batch_axis_anywhere(spy, bax):
    """3-D tiles with the batch on grid axis 0, 1 or 2 (the walk moves a batch axis last): same
    stores as the NumPy backend, and walk_order is a permutation with the batch axis last."""
    from safetile.backends.triton.persistent import walk_order
    nb, m, n, k = 3, 12, 8, 10
    A, B = rnd(nb, m, k), rnd(nb, k, n, seed=1)
    args = (A, B, nan(nb, m, n), 4, 4, 4, bax)
    ax = [(nb, 3, 2), (3, nb, 2), (3, 2, nb)][bax]
    cpu, tri, _, _ = both(bmm3, ax, args)
    assert spy[0][0] is True
    same(cpu, tri)
    np.testing.assert_allclose(cpu[2], A @ B, rtol=1e-4, atol=1e-4)
    order = walk_order(spec(bmm3, args))
    assert sorted(order) == [0, 1, 2]
    assert order[-1] == bax


@ct.kernel
def gemm_reversed(A, B, C, tm: ct.Constant[int], tn: ct.Constant[int], tk: ct.Constant[int]):
    """Stores block (x, y)'s product at the mirrored tile: num_blocks used in index math."""
    bx = ct.num_blocks(0) - 1 - ct.bid(0)
    by = ct.num_blocks(1) - 1 - ct.bid(1)
    acc = ct.zeros((tm, tn), ct.float32)
    for k in range(ct.num_tiles(A, axis=1, shape=(tm, tk))):
        acc = ct.mma(ct.load(A, (ct.bid(0), k), (tm, tk), padding_mode=ZERO),
                     ct.load(B, (k, ct.bid(1)), (tk, tn), padding_mode=ZERO), acc)
    ct.store(C, (bx, by), acc)


def test_num_blocks_in_index_math(spy):
    """num_blocks(0) - 1 - bid(0): with the workers' grid instead of the logical one the mirrored
    tiles land in the wrong place or nowhere."""
    args = (rnd(20, 8), rnd(8, 24, seed=1), nan(20, 24), 4, 8, 4)
    cpu, tri, _, _ = both(gemm_reversed, (5, 3), args)
    assert spy[0][0] is True
    same(cpu, tri)
    assert not np.isnan(tri[2]).any()


@ct.kernel
def gemm_early_return(A, B, C, tm: ct.Constant[int], tn: ct.Constant[int], tk: ct.Constant[int],
                      SKIP: ct.Constant[int]):
    """Blocks with bid(0) == SKIP return before the product loop (and leave C as it was)."""
    bx, by = ct.bid(0), ct.bid(1)
    if bx == SKIP:
        return
    acc = ct.zeros((tm, tn), ct.float32)
    for k in range(ct.num_tiles(A, axis=1, shape=(tm, tk))):
        acc = ct.mma(ct.load(A, (bx, k), (tm, tk), padding_mode=ZERO),
                     ct.load(B, (k, by), (tk, tn), padding_mode=ZERO), acc)
    ct.store(C, (bx, by), acc)


@pytest.mark.parametrize("skip", [0, 1, 4])
def test_early_return_before_loop_does_not_end_the_worker(spy, skip):
    """An early `return` of one logical block must only skip that block: a walk that turns it
    into the worker's return drops every later block that worker would have walked."""
    args = (rnd(20, 8), rnd(8, 16, seed=1), nan(20, 16), 4, 8, 4, skip)
    cpu, tri, _, _ = both(gemm_early_return.replace_hints(persistent=True), (5, 2), args)
    assert spy[0][0] is True
    same(cpu, tri)


@ct.kernel
def gemm_return_after(A, B, C, D, tm: ct.Constant[int], tn: ct.Constant[int], tk: ct.Constant[int]):
    """Return after the product loop for odd blocks, before a second store."""
    bx, by = ct.bid(0), ct.bid(1)
    acc = ct.zeros((tm, tn), ct.float32)
    for k in range(ct.num_tiles(A, axis=1, shape=(tm, tk))):
        acc = ct.mma(ct.load(A, (bx, k), (tm, tk), padding_mode=ZERO),
                     ct.load(B, (k, by), (tk, tn), padding_mode=ZERO), acc)
    ct.store(C, (bx, by), acc)
    if (bx + by) % 2 == 1:
        return
    ct.store(D, (bx, by), acc * 2.0)


def test_early_return_after_loop(spy):
    """A return after the loop (before a second store) in some logical blocks."""
    args = (rnd(20, 8), rnd(8, 24, seed=1), nan(20, 24), nan(20, 24), 4, 8, 4)
    cpu, tri, _, _ = both(gemm_return_after.replace_hints(persistent=True), (5, 3), args)
    assert spy[0][0] is True
    same(cpu, tri)


@ct.kernel
def gemm_return_in_loop(A, B, C, tm: ct.Constant[int], tn: ct.Constant[int], tk: ct.Constant[int]):
    """Block 1 stores a partial product from inside the loop, breaks, and returns after it
    (tile code cannot return from a loop)."""
    bx, by = ct.bid(0), ct.bid(1)
    acc = ct.zeros((tm, tn), ct.float32)
    done = False
    for k in range(ct.num_tiles(A, axis=1, shape=(tm, tk))):
        acc = ct.mma(ct.load(A, (bx, k), (tm, tk), padding_mode=ZERO),
                     ct.load(B, (k, by), (tk, tn), padding_mode=ZERO), acc)
        if bx == 1:
            ct.store(C, (bx, by), acc)
            done = True
            break
    if done:
        return
    ct.store(C, (bx, by), acc)


def test_return_after_a_break_out_of_the_product_loop(spy):
    """A store and break inside the product loop of one logical block, then a return after it."""
    args = (rnd(20, 12), rnd(12, 16, seed=1), nan(20, 16), 4, 8, 4)
    cpu, tri, _, _ = both(gemm_return_in_loop.replace_hints(persistent=True), (5, 2), args)
    assert spy[0][0] is True
    same(cpu, tri)


@ct.kernel
def gemm_break(A, B, C, tm: ct.Constant[int], tn: ct.Constant[int], tk: ct.Constant[int], STOP: ct.Constant[int]):
    """Breaks out of the product loop at k == STOP, and continues over odd k on odd blocks."""
    bx, by = ct.bid(0), ct.bid(1)
    acc = ct.zeros((tm, tn), ct.float32)
    for k in range(ct.num_tiles(A, axis=1, shape=(tm, tk))):
        if k == STOP:
            break
        if (bx % 2 == 1) & (k % 2 == 1):
            continue
        acc = ct.mma(ct.load(A, (bx, k), (tm, tk), padding_mode=ZERO),
                     ct.load(B, (k, by), (tk, tn), padding_mode=ZERO), acc)
    ct.store(C, (bx, by), acc)


def test_break_and_continue_in_the_product_loop(spy):
    """break/continue inside the product loop must not leave or skip the walk."""
    args = (rnd(20, 20), rnd(20, 16, seed=1), nan(20, 16), 4, 8, 4, 3)
    cpu, tri, _, _ = both(gemm_break, (5, 2), args)
    same(cpu, tri)


@ct.kernel
def gemm_bid_break(A, B, C, tm: ct.Constant[int], tn: ct.Constant[int], tk: ct.Constant[int]):
    """Breaks out of the product loop at k == bid(0): unequal work written as a break."""
    bx, by = ct.bid(0), ct.bid(1)
    acc = ct.zeros((tm, tn), ct.float32)
    for k in range(ct.num_tiles(A, axis=1, shape=(tm, tk))):
        if k == bx:
            break
        acc = ct.mma(ct.load(A, (bx, k), (tm, tk), padding_mode=ZERO),
                     ct.load(B, (k, by), (tk, tn), padding_mode=ZERO), acc)
    ct.store(C, (bx, by), acc)


def test_bid_dependent_break(spy):
    """A break on a bid-dependent condition (bounds themselves are bid-free)."""
    args = (rnd(20, 20), rnd(20, 16, seed=1), nan(20, 16), 4, 8, 4)
    cpu, tri, _, _ = both(gemm_bid_break, (5, 2), args)
    same(cpu, tri)


@ct.kernel
def two_loops(A, B, C, D, tm: ct.Constant[int], tn: ct.Constant[int], tk: ct.Constant[int]):
    """Two product loops in a row, the second seeded from the first's result and a value
    computed from bid before the first loop, used after both."""
    bx, by = ct.bid(0), ct.bid(1)
    scale = (bx * 10 + by + 1).astype(ct.float32)
    acc = ct.zeros((tm, tn), ct.float32)
    for k in range(ct.num_tiles(A, axis=1, shape=(tm, tk))):
        acc = ct.mma(ct.load(A, (bx, k), (tm, tk), padding_mode=ZERO),
                     ct.load(B, (k, by), (tk, tn), padding_mode=ZERO), acc)
    acc2 = acc * 0.5
    for k in range(ct.num_tiles(A, axis=1, shape=(tm, tk))):
        acc2 = ct.mma(ct.load(A, (bx, k), (tm, tk), padding_mode=ZERO),
                      ct.load(B, (k, by), (tk, tn), padding_mode=ZERO), acc2)
    ct.store(C, (bx, by), acc * scale)
    ct.store(D, (bx, by), acc2)


def test_several_product_loops_and_bid_values_across_loops(spy):
    """Two top-level product loops; a bid-derived scalar computed before and used after."""
    args = (rnd(20, 10), rnd(10, 16, seed=1), nan(20, 16), nan(20, 16), 4, 8, 4)
    cpu, tri, _, _ = both(two_loops.replace_hints(persistent=True), (5, 2), args)
    assert spy[0][0] is True
    same(cpu, tri)


@ct.kernel
def loop_in_if(A, B, C, tm: ct.Constant[int], tn: ct.Constant[int], tk: ct.Constant[int]):
    """The product loop runs only on even blocks; odd blocks store a constant."""
    bx, by = ct.bid(0), ct.bid(1)
    if bx % 2 == 0:
        acc = ct.zeros((tm, tn), ct.float32)
        for k in range(ct.num_tiles(A, axis=1, shape=(tm, tk))):
            acc = ct.mma(ct.load(A, (bx, k), (tm, tk), padding_mode=ZERO),
                         ct.load(B, (k, by), (tk, tn), padding_mode=ZERO), acc)
        ct.store(C, (bx, by), acc)
    else:
        ct.store(C, (bx, by), ct.full((tm, tn), -1.0, ct.float32) * by.astype(ct.float32))


@pytest.mark.parametrize("hint", [None, True])
def test_product_loop_inside_if_on_bid(spy, hint):
    """A product loop under an `if` on bid (not top level): with the walk or without, same
    stores as the grid."""
    kern = loop_in_if if hint is None else loop_in_if.replace_hints(persistent=True)
    args = (rnd(20, 10), rnd(10, 16, seed=1), nan(20, 16), 4, 8, 4)
    cpu, tri, _, _ = both(kern, (5, 2), args)
    if hint:
        assert spy[0][0] is True
    same(cpu, tri)


@ct.kernel
def own_store_reread(A, B, C, tm: ct.Constant[int], tn: ct.Constant[int], tk: ct.Constant[int]):
    """Stores its product, reads it back and stores product + reread + 1 (the block's own tile)."""
    bx, by = ct.bid(0), ct.bid(1)
    acc = ct.zeros((tm, tn), ct.float32)
    for k in range(ct.num_tiles(A, axis=1, shape=(tm, tk))):
        acc = ct.mma(ct.load(A, (bx, k), (tm, tk), padding_mode=ZERO),
                     ct.load(B, (k, by), (tk, tn), padding_mode=ZERO), acc)
    ct.store(C, (bx, by), acc)
    back = ct.load(C, (bx, by), (tm, tn), padding_mode=ZERO)
    ct.store(C, (bx, by), back + acc + 1.0)


def test_block_reads_its_own_previous_store(spy):
    """Reading the block's own earlier store in the same block must see it (ragged edges too)."""
    args = (rnd(18, 10), rnd(10, 21, seed=1), nan(18, 21), 4, 8, 4)
    cpu, tri, _, _ = both(own_store_reread, (5, 3), args)
    assert spy[0][0] is True
    same(cpu, tri)
    np.testing.assert_allclose(cpu[2], 2 * (args[0] @ args[1]) + 1, rtol=1e-4, atol=1e-4)


@ct.kernel
def acc_from_load(A, B, C, tm: ct.Constant[int], tn: ct.Constant[int], tk: ct.Constant[int]):
    """C += A @ B with the accumulator loaded from C (the block's own tile)."""
    bx, by = ct.bid(0), ct.bid(1)
    acc = ct.load(C, (bx, by), (tm, tn), padding_mode=ZERO)
    for k in range(ct.num_tiles(A, axis=1, shape=(tm, tk))):
        acc = ct.mma(ct.load(A, (bx, k), (tm, tk), padding_mode=ZERO),
                     ct.load(B, (k, by), (tk, tn), padding_mode=ZERO), acc)
    ct.store(C, (bx, by), acc)


def test_accumulator_initialised_from_load(spy):
    """An accumulator loaded from the output: a block run twice would add its product twice."""
    C0 = rnd(20, 24, seed=5)
    args = (rnd(20, 10), rnd(10, 24, seed=1), C0, 4, 8, 4)
    cpu, tri, _, _ = both(acc_from_load.replace_hints(persistent=True), (5, 3), args)
    assert spy[0][0] is True
    same(cpu, tri)
    np.testing.assert_allclose(tri[2], C0 + args[0] @ args[1], rtol=1e-4, atol=1e-4)


@ct.kernel
def int_gemm(A, B, C, tm: ct.Constant[int], tn: ct.Constant[int], tk: ct.Constant[int]):
    bx, by = ct.bid(0), ct.bid(1)
    acc = ct.zeros((tm, tn), ct.int32)
    for k in range(ct.num_tiles(A, axis=1, shape=(tm, tk))):
        acc = ct.mma(ct.load(A, (bx, k), (tm, tk), padding_mode=ZERO),
                     ct.load(B, (k, by), (tk, tn), padding_mode=ZERO), acc)
    ct.store(C, (bx, by), acc + ct.bid(0) * 1000 + ct.bid(1) * 100000)


def test_int8_gemm_int_output(spy):
    """Integer products and an int32 output poisoned with a sentinel."""
    rng = np.random.default_rng(3)
    A = rng.integers(-5, 5, (20, 19)).astype(np.int8)
    B = rng.integers(-5, 5, (19, 24)).astype(np.int8)
    C = np.full((20, 24), ISENT, np.int32)
    cpu, tri, _, _ = both(int_gemm, (5, 3), (A, B, C, 4, 8, 4))
    assert spy[0][0] is True
    same(cpu, tri)


@ct.kernel
def bid_free_load(A, B, W, C, tm: ct.Constant[int], tn: ct.Constant[int], tk: ct.Constant[int]):
    """A load whose index ignores bid entirely (a shared bias tile), plus the usual GEMM."""
    bx, by = ct.bid(0), ct.bid(1)
    bias = ct.load(W, (0, 0), (tm, tn), padding_mode=ZERO)
    acc = bias
    for k in range(ct.num_tiles(A, axis=1, shape=(tm, tk))):
        acc = ct.mma(ct.load(A, (bx, k), (tm, tk), padding_mode=ZERO),
                     ct.load(B, (k, 0), (tk, tn), padding_mode=ZERO), acc)
    ct.store(C, (bx, by), acc + bias)


def test_load_index_ignoring_bid(spy):
    """Loads indexed without bid (W always, B along axis 1): walk order and hoisting must not
    mistake them for per-block or batch loads."""
    from safetile.backends.triton.persistent import walk_order
    args = (rnd(20, 10), rnd(10, 8, seed=1), rnd(4, 8, seed=2), nan(20, 24), 4, 8, 4)
    cpu, tri, _, _ = both(bid_free_load, (5, 3), args)
    assert spy[0][0] is True
    same(cpu, tri)
    assert sorted(walk_order(spec(bid_free_load, args))) == [0, 1, 2]


@ct.kernel
def vadd(X, Y, Z, t: ct.Constant[int]):
    i = ct.bid(0)
    ct.store(Z, (i,), ct.load(X, (i,), (t,)) + ct.load(Y, (i,), (t,)) + i.astype(ct.float32))


@ct.kernel
def rowsum(X, S, tr: ct.Constant[int], tc: ct.Constant[int]):
    i = ct.bid(0)
    acc = ct.zeros((tr,), ct.float32)
    for j in range(ct.num_tiles(X, axis=1, shape=(tr, tc))):
        acc = acc + ct.sum(ct.load(X, (i, j), (tr, tc), padding_mode=ZERO), axis=1)
    ct.store(S, (i,), acc)


def test_persistent_hint_elementwise_and_reduction(spy):
    """persistent=True on an element-wise kernel (ragged length) and on a reduction loop
    without products: walked, same stores."""
    kv = vadd.replace_hints(persistent=True)
    args = (rnd(37), rnd(37, seed=1), nan(37), 4)
    cpu, tri, _, _ = both(kv, (10,), args)
    same(cpu, tri)
    kr = rowsum.replace_hints(persistent=True)
    args = (rnd(21, 13), nan(21), 4, 4)
    cpu2, tri2, _, _ = both(kr, (6,), args)
    same(cpu2, tri2)
    assert [s[0] for s in spy] == [True, True]


def test_elementwise_not_walked_without_hint(spy):
    """An element-wise kernel (no product loop) is a grid of tiles without the hint."""
    args = (rnd(37), rnd(37, seed=1), nan(37), 4)
    cpu, tri, _, _ = both(vadd, (10,), args)
    same(cpu, tri)
    assert spy[0][0] is False


def test_persistent_false_hint(spy):
    """persistent=False keeps a GEMM a grid of tiles, with the same results."""
    args = gemm_args()
    cpu, tri, _, _ = both(gemm.replace_hints(persistent=False), (5, 3), args)
    assert spy == [(False, (5, 3, 1))]
    same(cpu, tri)


@pytest.mark.parametrize("value, warps", [("0", 4), ("off", 8), ("false", 16)])
def test_env_switch_off_fresh_kernel(spy, monkeypatch, value, warps):
    """SAFETILE_PERSISTENT=0/off/false turns the walk off (a kernel not launched before)."""
    monkeypatch.setenv("SAFETILE_PERSISTENT", value)
    args = gemm_args(seed=9)
    cpu, tri, _, _ = both(gemm.replace_hints(num_warps=warps), (5, 3), args)
    assert spy[0][0] is False
    same(cpu, tri)


@pytest.mark.parametrize("first", ["1", "0"])
def test_env_switch_applies_to_variants_compiled_after_it(spy, monkeypatch, first):
    """docs/architecture.md: a code-shaping setting is needed when a variant is compiled; a variant
    already compiled keeps its code, and a kernel launched after the switch follows it. (The red
    team's first reading of the docs expected the switch to apply to the compiled variant too; the
    docs now say which.)"""
    kern = gemm.replace_hints(num_warps=2 if first == "1" else 1)
    args = gemm_args(seed=9)
    monkeypatch.setenv("SAFETILE_PERSISTENT", first)
    both(kern, (5, 3), args)
    monkeypatch.setenv("SAFETILE_PERSISTENT", "0" if first == "1" else "1")
    both(kern, (5, 3), args)  # the same specialisation: its variant as compiled
    fresh = kern.replace_hints(num_warps=4)
    both(fresh, (5, 3), args)  # compiled after the switch
    assert [s[0] for s in spy] == [first == "1", first == "1", first == "0"]


def test_same_kernel_different_grids_in_a_row(spy):
    """One kernel object launched on several grids in turn (same specialisation): a cached
    variant must not remember the previous grid."""
    seen = []
    for grid in [(5, 3), (2, 3), (7, 1), (1, 1), (5, 3), (3, 2)]:
        A, B, C = rnd(28, 8), rnd(8, 24, seed=1), nan(28, 24)
        args = (A, B, C, 4, 8, 4)
        cpu, tri, _, _ = both(gemm, grid, args)
        same(cpu, tri)
        # the stores reach exactly the grid's tiles
        assert np.isnan(tri[2][4 * grid[0]:, :]).all() and np.isnan(tri[2][:, 8 * grid[1]:]).all()
        seen.append(spy[-1])
    assert [s[1][:2] for s in seen] == [(5, 3), (2, 3), (7, 1), (1, 1), (5, 3), (3, 2)]
    assert all(s[0] for s in seen)


@pytest.mark.parametrize("grid", [7, (7,), (7, 1), (7, 1, 1)])
def test_grid_as_int_or_tuple(spy, grid):
    """The grid given as an int or as tuples of 1, 2 or 3 axes."""
    args = (rnd(37), rnd(37, seed=1), nan(37), 4)
    cpu, tri, _, _ = both(vadd.replace_hints(persistent=True), grid, args)
    same(cpu, tri)
    assert spy[0] == (True, (7, 1, 1))


def _error_of(f):
    try:
        f()
    except BaseException as e:  # noqa: BLE001
        return e
    return None


@pytest.mark.parametrize("grid", [(0, 3), (5, 0), (-1, 2), (3, -2), 0, -4, (2, 2, 0)])
def test_empty_or_negative_grid_rejected_as_on_cpu(spy, grid):
    """A grid with a 0 or negative axis: the persistent kernel must behave like the NumPy backend
    (same error type, or the same no-op), writing nothing."""
    args = gemm_args()
    cpu_args = tuple(_copy_np(a) for a in args)
    ecpu = _error_of(lambda: ct.launch(None, grid, gemm, cpu_args))
    tri_args = tuple(_to_torch(a) for a in args)

    def go():
        with triton_interpreter():
            ct.launch(None, grid, gemm, tri_args)
    etri = _error_of(go)
    assert ecpu is not None and type(etri) is type(ecpu), (ecpu, etri)
    assert str(etri) == str(ecpu)
    assert spy == []
    assert np.isnan(tri_args[2].numpy()).all()
    assert np.isnan(cpu_args[2]).all()


@ct.kernel
def gemm_prints(A, B, C, tm: ct.Constant[int], tn: ct.Constant[int], tk: ct.Constant[int]):
    bx, by = ct.bid(0), ct.bid(1)
    ct.printf("start %d %d of %d %d\n", bx, by, ct.num_blocks(0), ct.num_blocks(1))
    acc = ct.zeros((tm, tn), ct.float32)
    for k in range(ct.num_tiles(A, axis=1, shape=(tm, tk))):
        acc = ct.mma(ct.load(A, (bx, k), (tm, tk), padding_mode=ZERO),
                     ct.load(B, (k, by), (tk, tn), padding_mode=ZERO), acc)
        if bx == 1:
            ct.printf("  k=%d blk %d %d\n", k, bx, by)
    ct.print("end", bx, by)
    ct.store(C, (bx, by), acc)


def test_prints_inside_and_outside_the_loop(spy, capfd):
    """Prints before, inside and after the product loop come out as on the CPU (logical blocks
    in order, logical bid and num_blocks)."""
    args = (rnd(20, 12), rnd(12, 16, seed=1), nan(20, 16), 4, 8, 4)
    cpu, tri, out_cpu, out_tri = both(gemm_prints, (5, 2), args, capfd)
    assert spy[0][0] is True
    same(cpu, tri)
    assert out_tri == out_cpu
    assert "start 4 1 of 5 2" in out_cpu


@ct.kernel
def gemm_assert(A, B, C, tm: ct.Constant[int], tn: ct.Constant[int], tk: ct.Constant[int], BAD: ct.Constant[int]):
    bx, by = ct.bid(0), ct.bid(1)
    acc = ct.zeros((tm, tn), ct.float32)
    for k in range(ct.num_tiles(A, axis=1, shape=(tm, tk))):
        acc = ct.mma(ct.load(A, (bx, k), (tm, tk), padding_mode=ZERO),
                     ct.load(B, (k, by), (tk, tn), padding_mode=ZERO), acc)
        ct.assert_(bx * 100 + by + k * 0 != BAD, "bad block in loop")
    ct.store(C, (bx, by), acc)
    ct.printf("done %d %d\n", bx, by)


def tri_run(kern, grid, args, capfd=None):
    """A Triton (interpreter) launch: (error or None, arrays as numpy, stdout)."""
    tri_args = tuple(_to_torch(a) for a in args)
    if capfd is not None:
        capfd.readouterr()

    def go():
        with triton_interpreter():
            ct.launch(None, grid, kern, tri_args)
    err = _error_of(go)
    out = capfd.readouterr().out if capfd is not None else None
    return err, [a.numpy() for a in tri_args if isinstance(a, torch.Tensor)], out


def test_assert_in_one_logical_block_does_not_stop_the_others(spy, capfd):
    """An assert failing in one logical block fails the launch with the grid's error, but the
    other blocks' stores (including later blocks of the same worker) land, and their prints come
    out, as for the same kernel launched as a grid of tiles (the CPU backend runs blocks in
    lockstep, so its stores stop with the assert: not the reference here)."""
    args = (rnd(20, 8), rnd(8, 16, seed=1), nan(20, 16), 4, 8, 4, 100)  # block (1, 0)
    cpu_args = tuple(_copy_np(a) for a in args)
    ecpu = _error_of(lambda: ct.launch(None, (5, 2), gemm_assert, cpu_args))
    eg, grid_arrays, out_grid = tri_run(gemm_assert.replace_hints(persistent=False), (5, 2), args, capfd)
    ep, pers_arrays, out_pers = tri_run(gemm_assert, (5, 2), args, capfd)
    assert [s[0] for s in spy] == [False, True]
    assert ecpu is not None and type(ep) is type(ecpu) is type(eg)
    assert str(ep) == str(eg) == str(ecpu)
    same(grid_arrays, pers_arrays)
    assert out_pers == out_grid


@ct.kernel
def gemm_bid_bounds(A, B, C, tm: ct.Constant[int], tn: ct.Constant[int], tk: ct.Constant[int]):
    """Loop bounds read the block index: unequal work."""
    bx, by = ct.bid(0), ct.bid(1)
    acc = ct.zeros((tm, tn), ct.float32)
    for k in range(bx + 1):
        acc = ct.mma(ct.load(A, (bx, k), (tm, tk), padding_mode=ZERO),
                     ct.load(B, (k, by), (tk, tn), padding_mode=ZERO), acc)
    ct.store(C, (bx, by), acc)


@ct.kernel
def gemm_bid_bounds_indirect(A, B, C, tm: ct.Constant[int], tn: ct.Constant[int], tk: ct.Constant[int]):
    """Loop bounds read the block index through a helper value and num_blocks."""
    bx, by = ct.bid(0), ct.bid(1)
    n = ct.num_blocks(0) - bx
    lo = ct.minimum(by, 1)
    acc = ct.zeros((tm, tn), ct.float32)
    for k in range(lo, n):
        acc = ct.mma(ct.load(A, (bx, k), (tm, tk), padding_mode=ZERO),
                     ct.load(B, (k, by), (tk, tn), padding_mode=ZERO), acc)
    ct.store(C, (bx, by), acc)


@pytest.mark.parametrize("kern", [gemm_bid_bounds, gemm_bid_bounds_indirect])
def test_bid_dependent_loop_bounds_stay_a_grid(spy, kern):
    """Loop bounds that read bid (directly, or through arithmetic) are not walked automatically;
    results match either way, and with persistent=True too."""
    args = (rnd(20, 20), rnd(20, 16, seed=1), nan(20, 16), 4, 8, 4)
    cpu, tri, _, _ = both(kern, (5, 2), args)
    assert spy[0][0] is False
    same(cpu, tri)
    cpu, tri, _, _ = both(kern.replace_hints(persistent=True), (5, 2), args)
    same(cpu, tri)


@ct.kernel
def gemm_atomic(A, B, C, CNT, tm: ct.Constant[int], tn: ct.Constant[int], tk: ct.Constant[int], FLAG: ct.Constant[int]):
    bx, by = ct.bid(0), ct.bid(1)
    acc = ct.zeros((tm, tn), ct.float32)
    for k in range(ct.num_tiles(A, axis=1, shape=(tm, tk))):
        acc = ct.mma(ct.load(A, (bx, k), (tm, tk), padding_mode=ZERO),
                     ct.load(B, (k, by), (tk, tn), padding_mode=ZERO), acc)
    ct.store(C, (bx, by), acc)
    if FLAG == 1:
        ct.atomic_add(CNT, (0,), 1)
    elif FLAG == 2:
        if bx > 100:  # never true: an atomic in a run-time branch that never runs
            ct.atomic_add(CNT, (0,), 1)


@pytest.mark.parametrize("flag", [1, 2])
@pytest.mark.parametrize("hint", [None, True])
def test_atomics_stay_a_grid(spy, flag, hint):
    """A kernel with an atomic (also one in a branch that never runs) is a grid of tiles even
    with persistent=True; results and the counter match."""
    kern = gemm_atomic if hint is None else gemm_atomic.replace_hints(persistent=True)
    args = (rnd(20, 8), rnd(8, 16, seed=1), nan(20, 16), np.zeros(1, np.int32), 4, 8, 4, flag)
    cpu, tri, _, _ = both(kern, (5, 2), args)
    assert spy[0][0] is False
    same(cpu, tri)


@pytest.mark.parametrize("hints", [{"num_ctas": 2}, {"warp_specialize": True}, {"warp_specialize": "pingpong"}])
def test_cluster_and_warp_specialize_hints(spy, hints):
    """num_ctas / warp_specialize hints: no walk on an sm_90 GPU, and none in the interpreter
    either (where both hints are inert), so that tests there run the GPU's choice; the stores
    match the NumPy backend."""
    args = gemm_args(seed=4)
    kern = gemm.replace_hints(**hints)
    assert _gpu_facts(kern, args, 90).persistent is False
    cpu, tri, _, _ = both(kern, (5, 3), args)
    assert spy and spy[-1][0] is False
    same(cpu, tri)


@ct.kernel
def gemm_numblocks_loop(A, B, C, tm: ct.Constant[int], tn: ct.Constant[int], tk: ct.Constant[int]):
    """The product loop's bound is num_blocks(1): bid-free, but must be the logical count."""
    bx, by = ct.bid(0), ct.bid(1)
    acc = ct.zeros((tm, tn), ct.float32)
    for k in range(ct.num_blocks(1)):
        acc = ct.mma(ct.load(A, (bx, k), (tm, tk), padding_mode=ZERO),
                     ct.load(B, (k, by), (tk, tn), padding_mode=ZERO), acc)
    ct.store(C, (bx, by), acc)


def test_num_blocks_as_loop_bound(spy):
    """A loop bounded by num_blocks(1) (equal work) on a walked grid."""
    args = (rnd(20, 12), rnd(12, 24, seed=1), nan(20, 24), 4, 8, 4)
    cpu, tri, _, _ = both(gemm_numblocks_loop, (5, 3), args)
    assert spy[0][0] is True
    same(cpu, tri)


@ct.kernel
def gemm_3d_grid(A, B, C, tm: ct.Constant[int], tn: ct.Constant[int], tk: ct.Constant[int]):
    """2-D GEMM on a 3-D grid whose axis 2 splits N in two halves."""
    bx, by, bz = ct.bid(0), ct.bid(1), ct.bid(2)
    col = by + bz * ct.num_blocks(1)
    acc = ct.zeros((tm, tn), ct.float32)
    for k in range(ct.num_tiles(A, axis=1, shape=(tm, tk))):
        acc = ct.mma(ct.load(A, (bx, k), (tm, tk), padding_mode=ZERO),
                     ct.load(B, (k, col), (tk, tn), padding_mode=ZERO), acc)
    ct.store(C, (bx, col), acc + bz.astype(ct.float32))


@pytest.mark.parametrize("grid", [(3, 2, 2), (1, 1, 5), (2, 3, 3), (1, 2, 1)])
def test_three_d_grids(spy, grid):
    """3-D grids (axis 2 > 1, including x = y = 1 and fewer blocks than workers)."""
    m, n = 4 * grid[0], 8 * grid[1] * grid[2]
    args = (rnd(m, 9), rnd(9, n, seed=1), nan(m, n), 4, 8, 4)
    cpu, tri, _, _ = both(gemm_3d_grid, grid, args)
    assert spy[0] == (True, grid)
    same(cpu, tri)


@ct.kernel
def while_product(A, B, C, tm: ct.Constant[int], tn: ct.Constant[int], tk: ct.Constant[int]):
    """A product loop written as a while loop, a nested for inside a for, and a second store."""
    bx, by = ct.bid(0), ct.bid(1)
    acc = ct.zeros((tm, tn), ct.float32)
    k = 0
    while k < ct.num_tiles(A, axis=1, shape=(tm, tk)):
        acc = ct.mma(ct.load(A, (bx, k), (tm, tk), padding_mode=ZERO),
                     ct.load(B, (k, by), (tk, tn), padding_mode=ZERO), acc)
        k = k + 1
    for _ in range(2):
        for k2 in range(ct.num_tiles(A, axis=1, shape=(tm, tk))):
            acc = ct.mma(ct.load(A, (bx, k2), (tm, tk), padding_mode=ZERO),
                         ct.load(B, (k2, by), (tk, tn), padding_mode=ZERO), acc)
    ct.store(C, (bx, by), acc)


def test_while_and_nested_product_loops_with_hint(spy):
    """persistent=True on a kernel whose products sit in a while loop and a nested for."""
    args = (rnd(20, 12), rnd(12, 16, seed=1), nan(20, 16), 4, 8, 4)
    cpu, tri, _, _ = both(while_product.replace_hints(persistent=True), (5, 2), args)
    assert spy[0][0] is True
    same(cpu, tri, rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(cpu[2], 3 * (args[0] @ args[1]), rtol=1e-4, atol=1e-4)


@ct.kernel
def gemm_scalar_args(A, B, C, alpha, off, tm: ct.Constant[int], tn: ct.Constant[int], tk: ct.Constant[int]):
    """Run-time scalar arguments (appended before the walk's grid arguments) and prints."""
    bx, by = ct.bid(0), ct.bid(1)
    acc = ct.zeros((tm, tn), ct.float32)
    for k in range(ct.num_tiles(A, axis=1, shape=(tm, tk))):
        acc = ct.mma(ct.load(A, (bx, k), (tm, tk), padding_mode=ZERO),
                     ct.load(B, (k, by), (tk, tn), padding_mode=ZERO), acc)
    ct.printf("%d %d %d\n", bx, by, off)
    ct.store(C, (bx, by), acc * alpha + off)


def test_runtime_scalars_with_prints(spy, capfd):
    """Run-time scalars and the print buffer together with the walk's extra arguments."""
    args = (rnd(20, 8), rnd(8, 16, seed=1), nan(20, 16), 2.5, 7, 4, 8, 4)
    cpu, tri, oc, ot = both(gemm_scalar_args, (5, 2), args, capfd)
    assert spy[0][0] is True
    same(cpu, tri)
    assert ot == oc


@ct.kernel
def gemm_gather_bid(A, B, C, IDX, tm: ct.Constant[int], tn: ct.Constant[int], tk: ct.Constant[int]):
    """Rows picked through an index array read at bid (gather), scattered by a permutation."""
    bx, by = ct.bid(0), ct.bid(1)
    row = ct.gather(IDX, bx)
    acc = ct.zeros((tm, tn), ct.float32)
    for k in range(ct.num_tiles(A, axis=1, shape=(tm, tk))):
        acc = ct.mma(ct.load(A, (row, k), (tm, tk), padding_mode=ZERO),
                     ct.load(B, (k, by), (tk, tn), padding_mode=ZERO), acc)
    ct.store(C, (bx, by), acc)


def test_bid_dependent_gather_before_loop(spy):
    """A scalar gathered at bid before the product loop (a value that must be recomputed per
    logical block, not hoisted out of the walk)."""
    args = (rnd(20, 8), rnd(8, 16, seed=1), nan(20, 16), np.array([4, 2, 0, 3, 1], np.int32), 4, 8, 4)
    cpu, tri, _, _ = both(gemm_gather_bid, (5, 2), args)
    assert spy[0][0] is True
    same(cpu, tri)


@ct.kernel
def gemm_zero_k(A, B, C, tm: ct.Constant[int], tn: ct.Constant[int], tk: ct.Constant[int]):
    bx, by = ct.bid(0), ct.bid(1)
    acc = ct.full((tm, tn), 3.0, ct.float32)
    for k in range(ct.num_tiles(A, axis=1, shape=(tm, tk))):
        acc = ct.mma(ct.load(A, (bx, k), (tm, tk), padding_mode=ZERO),
                     ct.load(B, (k, by), (tk, tn), padding_mode=ZERO), acc)
    ct.store(C, (bx, by), acc + bx.astype(ct.float32))


def test_zero_trip_product_loop(spy):
    """K = 0: the product loop runs no step; the walk must still visit every block."""
    args = (np.zeros((20, 0), np.float32), np.zeros((0, 16), np.float32), nan(20, 16), 4, 8, 4)
    cpu, tri, _, _ = both(gemm_zero_k, (5, 2), args)
    same(cpu, tri)
    assert not np.isnan(tri[2]).any()


def test_walk_order_is_a_permutation_for_various_kernels():
    """walk_order returns a permutation of the three axes for every kernel here."""
    from safetile.backends.triton.persistent import walk_order
    cases = [(gemm, gemm_args()), (vadd, (rnd(37), rnd(37), nan(37), 4)),
             (bmm3, (rnd(2, 4, 4), rnd(2, 4, 4), nan(2, 4, 4), 4, 4, 4, 0)),
             (gemm_3d_grid, (rnd(8, 9), rnd(9, 32), nan(8, 32), 4, 8, 4)),
             (bid_free_load, (rnd(20, 10), rnd(10, 8), rnd(4, 8), nan(20, 24), 4, 8, 4))]
    for k, a in cases:
        assert sorted(walk_order(spec(k, a))) == [0, 1, 2], k


def test_automatic_choice_matches_the_rules():
    """`wanted` (hint None, sm_90): a GEMM yes; bid-dependent bounds, atomics, element-wise no;
    excluded always no; persistent=False no; persistent=True on element-wise yes, on atomics no."""
    from safetile.backends.triton.persistent import walkable, wanted
    g = walkable(spec(gemm, gemm_args()))
    assert wanted(g, None, 90, False, False) is True
    assert wanted(g, None, 90, True, True) is False
    assert wanted(g, False, 90, True, False) is False
    assert wanted(g, None, 80, False, False) is False  # sm_80 and no interpreter
    v = walkable(spec(vadd, (rnd(37), rnd(37), nan(37), 4)))
    assert wanted(v, None, 90, True, False) is False
    assert wanted(v, True, 90, True, False) is True
    a = walkable(spec(gemm_atomic, (rnd(20, 8), rnd(8, 16), nan(20, 16), np.zeros(1, np.int32), 4, 8, 4, 1)))
    assert wanted(a, None, 90, True, False) is False
    assert wanted(a, True, 90, True, False) is False
    b = walkable(spec(gemm_bid_bounds, (rnd(20, 20), rnd(20, 16), nan(20, 16), 4, 8, 4)))
    assert wanted(b, None, 90, True, False) is False


@ct.kernel
def bmm_print_assert(A, B, C, tm: ct.Constant[int], tn: ct.Constant[int], tk: ct.Constant[int], BAD: ct.Constant[int]):
    """Batched GEMM (batch on grid axis 0, so the walk reorders blocks) that prints per block and
    fails an assert in the blocks whose linear id is in BAD's bits."""
    b, i, j = ct.bid(0), ct.bid(1), ct.bid(2)
    lin = b + ct.num_blocks(0) * (i + ct.num_blocks(1) * j)
    ct.printf("blk %d %d %d lin %d\n", b, i, j, lin)
    acc = ct.zeros((tm, tn), ct.float32)
    for k in range(ct.cdiv(A.shape[2], tk)):
        a = ct.reshape(ct.load(A, (b, i, k), (1, tm, tk), padding_mode=ZERO), (tm, tk))
        w = ct.reshape(ct.load(B, (b, k, j), (1, tk, tn), padding_mode=ZERO), (tk, tn))
        acc = ct.mma(a, w, acc)
    ct.assert_(((BAD >> lin) & 1) == 0, "bad block")
    ct.print("after", lin)
    ct.store(C, (b, i, j), ct.reshape(acc, (1, tm, tn)))


def test_prints_in_logical_order_when_the_walk_reorders(spy, capfd):
    """With a batch axis on grid axis 0 the walk takes blocks out of linear order; prints must
    still come out in logical block order, as on the CPU."""
    from safetile.backends.triton.persistent import walk_order
    args = (rnd(3, 8, 8), rnd(3, 8, 8, seed=1), nan(3, 8, 8), 4, 4, 4, 0)
    assert walk_order(spec(bmm_print_assert, args))[-1] == 0
    cpu, tri, oc, ot = both(bmm_print_assert, (3, 2, 2), args, capfd)
    assert spy[0][0] is True
    same(cpu, tri)
    assert ot == oc


def test_first_failing_blocks_named_as_on_the_grid(spy, capfd):
    """Asserts failing in several blocks (linear ids 2 and 4, visited in a different order by the
    reordered walk): the error names the same blocks as the grid of tiles and the CPU, and the
    prints are the grid of tiles' in the interpreter (the CPU backend runs blocks in lockstep, so
    its prints after a failure differ on both Triton paths)."""
    bad = (1 << 2) | (1 << 4) | (1 << 9)
    args = (rnd(3, 8, 8), rnd(3, 8, 8, seed=1), nan(3, 8, 8), 4, 4, 4, bad)
    cpu_args = tuple(_copy_np(a) for a in args)
    capfd.readouterr()
    ecpu = _error_of(lambda: ct.launch(None, (3, 2, 2), bmm_print_assert, cpu_args))
    out_cpu = capfd.readouterr().out
    eg, g_arrays, out_g = tri_run(bmm_print_assert.replace_hints(persistent=False), (3, 2, 2), args, capfd)
    ep, p_arrays, out_p = tri_run(bmm_print_assert, (3, 2, 2), args, capfd)
    assert [s[0] for s in spy] == [False, True]
    assert ecpu is not None and type(ep) is type(eg) is type(ecpu)
    assert str(ep) == str(eg) == str(ecpu)
    assert out_p == out_g
    assert out_cpu.startswith("blk 0 0 0 lin 0")
    same(g_arrays, p_arrays)


def test_safe_entry_gemm_is_walked(spy):
    """A safe-style @ct.entry GEMM (stores through c's partition, ragged edge tiles) is walked
    and stores what the NumPy backend stores."""
    import sys
    import os
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "examples", "safe"))
    try:
        import gemm as safe_gemm
    finally:
        sys.path.pop(0)
    got_cpu, ref = safe_gemm.run(m=38, n=21, k=19, bm=8, bn=8, bk=8)
    with triton_interpreter():
        got_tri, ref2 = safe_gemm.run(m=38, n=21, k=19, bm=8, bn=8, bk=8)
    assert spy and spy[0] == (True, (5, 3, 1))
    np.testing.assert_allclose(got_tri, got_cpu, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(got_cpu, ref, rtol=1e-4, atol=1e-4)


@ct.kernel
def carried_consts(A, B, C, D, tm: ct.Constant[int], tn: ct.Constant[int], tk: ct.Constant[int]):
    """Loop-carried values that start as constants (hoistable out of the walk), updated only on
    odd blocks, and a while loop whose trip count is bid: a value leaking from one logical block
    into the next of the same worker shows up."""
    bx, by = ct.bid(0), ct.bid(1)
    acc = ct.zeros((tm, tn), ct.float32)
    cnt = ct.zeros((tm, tn), ct.int32)
    s = 0
    if bx % 2 == 1:
        for k in range(ct.num_tiles(A, axis=1, shape=(tm, tk))):
            acc = ct.mma(ct.load(A, (bx, k), (tm, tk), padding_mode=ZERO),
                         ct.load(B, (k, by), (tk, tn), padding_mode=ZERO), acc)
            cnt = cnt + 1
            s = s + 1
    j = 0
    while j < bx:
        cnt = cnt + 10
        j = j + 1
    ct.store(C, (bx, by), acc + s)
    ct.store(D, (bx, by), cnt)


def test_carried_constants_do_not_leak_between_logical_blocks(spy):
    """See carried_consts: persistent=True on a 7x2 grid."""
    D = np.full((28, 16), ISENT, np.int32)
    args = (rnd(28, 12), rnd(12, 16, seed=1), nan(28, 16), D, 4, 8, 4)
    cpu, tri, _, _ = both(carried_consts.replace_hints(persistent=True), (7, 2), args)
    assert spy[0][0] is True
    same(cpu, tri)


@ct.kernel
def print_only(X):
    ct.print("b", ct.bid(0), ct.bid(1), ct.bid(2), ct.num_blocks(0), ct.num_blocks(1), ct.num_blocks(2))


def test_print_only_kernel_walked_3d(spy, capfd):
    """A kernel with no loads or stores (every axis vacuously a 'batch' axis), persistent=True, on
    a 3-D grid: prints as on the CPU; walk_order still a permutation."""
    from safetile.backends.triton.persistent import walk_order
    kern = print_only.replace_hints(persistent=True)
    args = (np.zeros(4, np.float32),)
    assert sorted(walk_order(spec(kern, args))) == [0, 1, 2]
    _, _, oc, ot = both(kern, (2, 3, 2), args, capfd)
    assert spy[0] == (True, (2, 3, 2))
    assert ot == oc and oc.count("\n") == 12


@ct.kernel
def add2d(X, Y, Z, tr: ct.Constant[int], tc: ct.Constant[int]):
    i, j = ct.bid(0), ct.bid(1)
    ct.store(Z, (i, j), ct.load(X, (i, j), (tr, tc)) * 2.0 + ct.load(Y, (i, j), (tr, tc)))


def test_two_axes_index_every_access(spy):
    """Every load and store is indexed by both grid axes (two 'batch' axes): walk_order must stay
    a permutation and the walk one-to-one (ragged 2-D element-wise, persistent=True)."""
    from safetile.backends.triton.persistent import walk_order
    kern = add2d.replace_hints(persistent=True)
    args = (rnd(11, 19), rnd(11, 19, seed=1), nan(11, 19), 4, 4)
    assert sorted(walk_order(spec(kern, args))) == [0, 1, 2]
    cpu, tri, _, _ = both(kern, (3, 5), args)
    assert spy[0][0] is True
    same(cpu, tri)


@ct.kernel
def gemm_views(A, B, C, tm: ct.Constant[int], tn: ct.Constant[int], tk: ct.Constant[int]):
    """A sliced per block (bid-dependent slice made before the loop) and C stored through a
    tiled view."""
    bx, by = ct.bid(0), ct.bid(1)
    As = A.slice(0, bx * tm, bx * tm + tm)
    acc = ct.zeros((tm, tn), ct.float32)
    for k in range(ct.num_tiles(A, axis=1, shape=(tm, tk))):
        acc = ct.mma(ct.load(As, (0, k), (tm, tk), padding_mode=ZERO),
                     ct.load(B, (k, by), (tk, tn), padding_mode=ZERO), acc)
    C.tiled_view((tm, tn)).store((bx, by), acc)


def test_bid_dependent_slice_and_tiled_view(spy):
    """A bid-dependent Array.slice before the product loop and a tiled-view store."""
    args = (rnd(20, 10), rnd(10, 24, seed=1), nan(20, 24), 4, 8, 4)
    cpu, tri, _, _ = both(gemm_views.replace_hints(persistent=True), (5, 3), args)
    assert spy[0][0] is True
    same(cpu, tri)
    np.testing.assert_allclose(cpu[2], args[0] @ args[1], rtol=1e-4, atol=1e-4)


def test_by_target_hints(spy):
    """persistent given through ct.ByTarget: default=False keeps the GEMM a grid, default=True
    walks an element-wise kernel."""
    args = gemm_args(seed=11)
    cpu, tri, _, _ = both(gemm.replace_hints(persistent=ct.ByTarget(default=False)), (5, 3), args)
    same(cpu, tri)
    args2 = (rnd(37), rnd(37, seed=1), nan(37), 4)
    cpu2, tri2, _, _ = both(vadd.replace_hints(persistent=ct.ByTarget(default=True)), (10,), args2)
    same(cpu2, tri2)
    assert [s[0] for s in spy] == [False, True]


@pytest.mark.parametrize("grid", [(np.int64(5), 3), (np.int32(5), np.uint8(3)), [5, 3], (True, 3), (5.0, 3),
                                  (5, 3, 1, 1), (), (5, None)])
def test_odd_grid_values_behave_as_on_cpu(spy, grid):
    """Grids of NumPy integers, lists, bools, floats, too many or no axes: the walked kernel
    accepts or rejects them as the NumPy backend does, and a rejected launch writes nothing."""
    args = gemm_args(seed=12)
    cpu_args = tuple(_copy_np(a) for a in args)
    ecpu = _error_of(lambda: ct.launch(None, grid, gemm, cpu_args))
    etri, arrays, _ = tri_run(gemm, grid, args)
    assert type(etri) is type(ecpu)
    assert str(etri) == str(ecpu)
    if ecpu is None:
        assert spy[-1] == (True, (5, 3, 1))
        same([cpu_args[2]], [arrays[2]])
    else:
        assert np.isnan(arrays[2]).all()


@ct.kernel
def bmm_wide(A, B, C, tm: ct.Constant[int], tn: ct.Constant[int], tk: ct.Constant[int]):
    b, i, j = ct.bid(0), ct.bid(1), ct.bid(2)
    acc = ct.full((tm, tn), 0.0, dtype=ct.float32)
    for k in range(ct.cdiv(A.shape[2], tk)):
        a = ct.reshape(ct.load(A, (b, i, k), (1, tm, tk), padding_mode=ZERO), (tm, tk))
        w = ct.reshape(ct.load(B, (b, k, j), (1, tk, tn), padding_mode=ZERO), (tk, tn))
        acc = ct.mma(a, w, acc=acc)
    ct.store(C, (b, i, j), ct.reshape(acc.astype(C.dtype), (1, tm, tn)))


def test_wide_k_split_and_walk_together(spy):
    """A float16 batched GEMM whose K tile (128) is split into pipeline steps (ksplit.py), walked
    over 5 batches with K = 200 (ragged)."""
    rng = np.random.default_rng(7)
    A = rng.standard_normal((5, 16, 200)).astype(np.float16)
    B = rng.standard_normal((5, 200, 16)).astype(np.float16)
    args = (A, B, nan(5, 16, 16, dtype=np.float16), 16, 16, 128)
    cpu, tri, _, _ = both(bmm_wide, (5, 1, 1), args)
    assert spy[0] == (True, (5, 1, 1))
    same(cpu, tri, rtol=2e-2, atol=5e-2)


def _gpu_facts(kern, args, target=90, big_grid=False):
    """The launcher's decision for a (non-interpreted) launch on a GPU of ``target``."""
    from safetile.backends.triton import launcher
    fn = spec(kern, args)
    sp = launcher.Specialization(kern, fn)
    parts = [(4096 * (i + 1), tuple(a.shape), tuple(s // a.itemsize for s in a.strides))
             for i, a in enumerate(x for x in args if isinstance(x, np.ndarray))]
    return sp.facts_for(parts, big_grid, target, False)


@pytest.mark.parametrize("hints, target, big, expect", [
    ({}, 90, False, True), ({}, 100, False, True), ({}, 80, False, False), ({}, 90, True, False),
    ({"warp_specialize": True}, 90, False, False), ({"warp_specialize": "pingpong"}, 90, False, False),
    ({"warp_specialize": True, "num_warps": 8}, 90, False, False),
    ({"warp_specialize": ct.ByTarget(sm_90=True)}, 90, False, False),
    ({"num_ctas": 2}, 90, False, False), ({"num_ctas": ct.ByTarget(sm_90=2, default=1)}, 90, False, False),
    ({"persistent": False}, 90, False, False), ({"persistent": True, "num_ctas": 4}, 100, False, False),
    ({"persistent": ct.ByTarget(sm_90=False, default=True)}, 90, False, False),
    ({"persistent": ct.ByTarget(sm_90=False, default=True)}, 100, False, True),
    ({"persistent": True}, 80, False, False), ({}, 120, False, True),
])
def test_gpu_decision_follows_the_rules(hints, target, big, expect):
    """On a GPU (facts for sm_80/90/100, not interpreted): the walk is taken for a GEMM on sm_90+
    only, never with a warp-specialisation hint, clusters (num_ctas), a grid beyond CUDA's y/z
    limits or persistent=False (also through ct.ByTarget)."""
    kern = gemm.replace_hints(**hints) if hints else gemm
    assert _gpu_facts(kern, gemm_args(), target, big).persistent is expect


def test_persistent_call_launches_min_blocks_workers():
    """PersistentCall (black box): launches min(blocks, workers) blocks on axis x and appends the
    logical grid after the other arguments."""
    from safetile.backends.triton.persistent import PersistentCall
    calls = []

    def inner(*a):
        calls.append(a)
    PersistentCall(inner, 4)(10, 1, 1, "S", "x", 1.5)
    PersistentCall(inner, 4)(1, 2, 1, "S", "x")
    PersistentCall(inner, 132)(5, 3, 2, "S")
    PersistentCall(inner, 2 ** 31 - 1)(70000, 70000, 1, "S")
    assert calls == [(4, 1, 1, "S", "x", 1.5, 10, 1, 1), (2, 1, 1, "S", "x", 1, 2, 1),
                     (30, 1, 1, "S", 5, 3, 2), (2 ** 31 - 1, 1, 1, "S", 70000, 70000, 1)]


@ct.kernel
def ids3(A, B, C, IDS, tk: ct.Constant[int], BAX: ct.Constant[int]):
    """Every load and store is indexed by grid axis BAX (a batch axis the walk moves last); each
    logical block records its coordinates, the logical grid and a visit count in its own row."""
    bx, by, bz = ct.bid(0), ct.bid(1), ct.bid(2)
    n0, n1, n2 = ct.num_blocks(0), ct.num_blocks(1), ct.num_blocks(2)
    lin = bx + n0 * (by + n1 * bz)
    if BAX == 0:
        b = bx
    elif BAX == 1:
        b = by
    else:
        b = bz
    acc = ct.zeros((1, 8), ct.float32)
    for k in range(ct.cdiv(A.shape[2], tk)):
        a = ct.reshape(ct.load(A, (b, 0, k), (1, 1, tk), padding_mode=ZERO), (1, tk))
        w = ct.reshape(ct.load(B, (b, k, 0), (1, tk, 8), padding_mode=ZERO), (tk, 8))
        acc = ct.mma(a, w, acc)
    ct.store(C, (b, lin, 0), ct.reshape(acc, (1, 1, 8)))
    row = ct.load(IDS, (b, lin, 0), (1, 1, 8))
    cnt = ct.reshape(ct.extract(row, (0, 0, 7), (1, 1, 1)), (1,)) + 1
    r = ct.arange(8, dtype=ct.int32)
    vals = ct.where(r == 0, bx, ct.where(r == 1, by, ct.where(r == 2, bz, ct.where(r == 3, n0, ct.where(
        r == 4, n1, ct.where(r == 5, n2, ct.where(r == 6, lin, 0)))))))
    vals = ct.where(r == 7, cnt, vals)
    ct.store(IDS, (b, lin, 0), ct.reshape(vals, (1, 1, 8)).astype(IDS.dtype))


@pytest.mark.parametrize("bax", [0, 1, 2])
@pytest.mark.parametrize("grid", [(2, 3, 5), (5, 1, 3), (1, 7, 2), (3, 2, 1), (1, 1, 4)])
def test_walk_is_one_to_one_with_a_batch_axis(spy, grid, bax):
    """The walk, with a batch axis moved last, visits every logical block of 3-D grids exactly
    once with its own coordinates (primes, unit axes, fewer blocks than workers)."""
    nb = grid[bax]
    blocks = grid[0] * grid[1] * grid[2]
    args = (rnd(nb, 1, 5), rnd(nb, 5, 8, seed=1), nan(nb, blocks, 8),
            np.zeros((nb, blocks, 8), np.int32), 4, bax)
    from safetile.backends.triton.persistent import walk_order
    kern = ids3.replace_hints(persistent=True)
    assert walk_order(spec(kern, args))[-1] == bax
    cpu, tri, _, _ = both(kern, grid, args)
    assert spy[0] == (True, grid)
    same(cpu, tri)
    ids = tri[3].reshape(-1, 8)
    ids = ids[ids[:, 7] != 0]
    assert len(ids) == blocks and (ids[:, 7] == 1).all()
    assert sorted(map(tuple, ids[:, :3].tolist())) == sorted(
        (x, y, z) for x in range(grid[0]) for y in range(grid[1]) for z in range(grid[2]))
    assert (ids[:, 3:6] == np.array(grid)).all()


@ct.kernel
def gemm_atomic_kinds(A, B, C, CNT, tm: ct.Constant[int], tn: ct.Constant[int], tk: ct.Constant[int],
                      KIND: ct.Constant[int]):
    """A GEMM with one atomic of kind KIND after (or, for 4, inside) its product loop."""
    bx, by = ct.bid(0), ct.bid(1)
    acc = ct.zeros((tm, tn), ct.float32)
    for k in range(ct.num_tiles(A, axis=1, shape=(tm, tk))):
        acc = ct.mma(ct.load(A, (bx, k), (tm, tk), padding_mode=ZERO),
                     ct.load(B, (k, by), (tk, tn), padding_mode=ZERO), acc)
        if KIND == 4:
            ct.atomic_max(CNT, (1,), k)
    ct.store(C, (bx, by), acc)
    if KIND == 0:
        ct.atomic_xchg(CNT, (2,), bx)
    elif KIND == 1:
        ct.atomic_cas(CNT, (0,), 0, 0)
    elif KIND == 2:
        CNT.tiled_view((4,)).atomic_store_add((0,), ct.full((4,), 1, ct.int32))
    elif KIND == 3:
        ct.atomic_or(CNT, (3,), 1)


@pytest.mark.parametrize("kind", [0, 1, 2, 3, 4])
def test_every_atomic_kind_keeps_a_grid(spy, kind):
    """Exchange, compare-and-swap, a tiled view's atomic add, atomic or, and an atomic max inside
    the product loop: never walked, not even with persistent=True."""
    from safetile.backends.triton.persistent import walkable, wanted
    kern = gemm_atomic_kinds.replace_hints(persistent=True)
    args = (rnd(20, 8), rnd(8, 16, seed=1), nan(20, 16), np.zeros(4, np.int32), 4, 8, 4, kind)
    assert wanted(walkable(spec(kern, args)), True, 90, False, False) is False
    assert wanted(walkable(spec(gemm_atomic_kinds, args)), None, 90, False, False) is False
    cpu, tri, _, _ = both(kern, (5, 2), args)
    assert spy[0][0] is False
    same(cpu[:3], tri[:3]) if kind == 0 else same(cpu, tri)  # exchange: the last writer wins


def test_one_specialisation_over_grids_of_changing_rank(spy):
    """ids3 (same array shapes each time) launched on grids (4,1,1), (4,1,3), (2,3,1), (4,), (1,1,1):
    the cached variant must read each launch's logical grid (blocks, bid and num_blocks)."""
    kern = ids3.replace_hints(persistent=True)
    for grid in [(4, 1, 1), (4, 1, 3), (2, 3, 1), (4,), (1, 1, 1)]:
        g3 = tuple(grid) + (1,) * (3 - len(grid))
        blocks = g3[0] * g3[1] * g3[2]
        args = (rnd(4, 1, 5), rnd(4, 5, 8, seed=1), nan(4, 12, 8), np.zeros((4, 12, 8), np.int32), 4, 0)
        cpu, tri, _, _ = both(kern, grid, args)
        assert spy[-1] == (True, g3)
        same(cpu, tri)
        ids = tri[3].reshape(-1, 8)
        ids = ids[ids[:, 7] != 0]
        assert len(ids) == blocks and (ids[:, 7] == 1).all() and (ids[:, 3:6] == np.array(g3)).all()


@ct.kernel
def clashing_names(_st_t, _st_nblocks, _st_gx, _st_bx, tm: ct.Constant[int], tk: ct.Constant[int]):
    """Parameters named like the walk's own variables (_st_t, _st_nblocks, _st_gx, _st_bx)."""
    _st_r0 = ct.bid(0)
    acc = ct.zeros((tm, 8), ct.float32)
    for k in range(ct.num_tiles(_st_t, axis=1, shape=(tm, tk))):
        acc = ct.mma(ct.load(_st_t, (_st_r0, k), (tm, tk), padding_mode=ZERO),
                     ct.load(_st_nblocks, (k, 0), (tk, 8), padding_mode=ZERO), acc)
    ct.store(_st_bx, (_st_r0, 0), acc * _st_gx)


def test_names_like_the_walks_variables(spy):
    """Kernel names that look like the generated walk's variables must not capture them."""
    args = (rnd(20, 9), rnd(9, 8, seed=1), 3.0, nan(20, 8), 4, 4)
    cpu, tri, _, _ = both(clashing_names, (5,), args)
    assert spy[0][0] is True
    same(cpu, tri)
