"""Red-team attacks on the banded walk of persistent grids (session 17, persistent.py's
``wrap_body``/``walk_order``, docs/architecture.md "Persistent grids").

The promise attacked: a kernel whose top level has a K loop of products over loaded tiles (or any
kernel without atomics hinted ``persistent=True``) is walked by resident workers (3 under Triton's
interpreter) over its logical grid; the walk takes the plane of its two fastest axes in bands of
``WALK_BAND`` (8) indices of the fastest, the third axis slowest, and a batch axis (every load and
store indexed by it) goes last. Whatever the grid, every logical block runs exactly once with its
own ``ct.bid`` and the logical ``ct.num_blocks``, so the results equal NumPy and the NumPy backend.

Every kernel here records, per logical block, (bid(0), bid(1), bid(2), num_blocks(0..2), a
product checksum, its linear id computed from run-time grid sizes) into its own row of a table
poisoned with -1, and counts its visits in a zero-filled array of the grid's shape, so a missed
or repeated block, a wrong bid or a wrong num_blocks shows as a specific value. Products go to
NaN-poisoned outputs and are checked against NumPy and against the NumPy backend. A spy on the
launcher checks that the Triton launch really was walked (otherwise the attack proves nothing).
"""
from __future__ import annotations

import numpy as np
import pytest

import safetile as ct

torch = pytest.importorskip("torch")
pytest.importorskip("triton")

from triton_interp import triton_interpreter  # noqa: E402

ZERO = ct.PaddingMode.ZERO
T = 16  # tile edge (rows, columns, K)


# ----------------------------------------------------------------------------- helpers

@pytest.fixture
def spy(monkeypatch):
    """(persistent?, logical grid) of each Triton launch, and the grid the interpreter ran."""
    from triton.runtime.interpreter import InterpretedFunction

    from safetile.backends.triton import launcher
    seen: list = []
    workers: list = []
    orig = launcher._interp_launch

    def wrapped(v, grid3, flat):
        seen.append((bool(v.persistent), tuple(grid3)))
        return orig(v, grid3, flat)

    run = InterpretedFunction.run

    def run_spy(self, *args, grid, **kwargs):
        workers.append(tuple(grid))
        return run(self, *args, grid=grid, **kwargs)

    monkeypatch.setattr(launcher, "_interp_launch", wrapped)
    monkeypatch.setattr(InterpretedFunction, "run", run_spy)
    return seen, workers


def _order(kern, args):
    from safetile.backends.triton.persistent import walk_order
    from safetile.runtime.args import arg_specs
    return tuple(walk_order(kern.specialize(arg_specs(kern, tuple(_torch(a) for a in args)))))


def _torch(a):
    return torch.from_numpy(a.copy()) if isinstance(a, np.ndarray) else a


def _np(a):
    if isinstance(a, torch.Tensor):
        if a.dtype == torch.bfloat16:
            import ml_dtypes
            return a.view(torch.int16).numpy().view(ml_dtypes.bfloat16).astype(np.float32)
        return a.numpy()
    return a


def run_triton(kern, grid, args):
    targs = tuple(_torch(a) for a in args)
    with triton_interpreter():
        ct.launch(None, grid, kern, targs)
    return [_np(a) for a in targs if isinstance(a, torch.Tensor)]


def run_numpy(kern, grid, args):
    nargs = tuple(a.copy() if isinstance(a, np.ndarray) else a for a in args)
    ct.launch(None, grid, kern, nargs)
    return [a for a in nargs if isinstance(a, np.ndarray)]


def grid3(grid):
    g = (grid,) if isinstance(grid, int) else tuple(grid)
    return g + (1,) * (3 - len(g))


def table_want(grid, checks=None):
    """The table every logical block should have written: its bids, the logical grid, its
    checksum (column 6, or -1 where not checked) and its linear id."""
    gx, gy, gz = grid3(grid)
    rows = []
    for z in range(gz):
        for y in range(gy):
            for x in range(gx):
                lin = x + gx * (y + gy * z)
                rows.append((x, y, z, gx, gy, gz, -1 if checks is None else checks[lin], lin))
    return np.array(rows, np.int32)


def check_table(ids, seen, grid, *, where=""):
    gx, gy, gz = grid3(grid)
    s = seen.reshape(gx, gy, gz)
    missing = np.argwhere(s == 0).tolist()
    dup = np.argwhere(s > 1).tolist()
    assert not missing and not dup, f"{where}: blocks never run {missing[:8]}, run twice {dup[:8]}"
    want = table_want(grid)
    got = ids.copy()
    got[:, 6] = -1  # the checksum column is checked separately
    bad = np.argwhere((got != want).any(axis=1)).ravel().tolist()
    assert not bad, f"{where}: wrong rows {[(r, got[r].tolist(), want[r].tolist()) for r in bad[:4]]}"


def _record(IDS, SEEN, gx, gy, chk):
    """Inlined helper: the block counts its visit and writes its row of IDS."""
    x, y, z = ct.bid(0), ct.bid(1), ct.bid(2)
    cell = (x, y, z)
    ct.store(SEEN, cell, ct.load(SEEN, cell, ()) + 1)
    lin = x + gx * (y + gy * z)
    r = ct.arange(8, dtype=ct.int32)
    vals = ct.where(r == 0, x, ct.where(r == 1, y, ct.where(r == 2, z, ct.where(
        r == 3, ct.num_blocks(0), ct.where(r == 4, ct.num_blocks(1), ct.where(
            r == 5, ct.num_blocks(2), ct.where(r == 6, chk, lin)))))))
    ct.store(IDS, (lin, 0), ct.reshape(vals, (1, 8)))


def rnd(*shape, seed=0, dtype=np.float32):
    return np.random.default_rng(seed).standard_normal(shape).astype(dtype)


def book(grid):
    gx, gy, gz = grid3(grid)
    return np.full((gx * gy * gz, 8), -1, np.int32), np.zeros((gx, gy, gz), np.int32)


# ----------------------------------------------------------------------------- kernels

@ct.kernel
def gemm_bz(A, B, C, IDS, SEEN, gx, gy, tk: ct.Constant[int]):
    """Batched GEMM, batch on z: A (Z, M, K) at (z, x, k), B (Z, K, N) at (z, k, y), C at
    (z, x, y). Walk order (0, 1, 2): x fastest (bands of x)."""
    x, y, z = ct.bid(0), ct.bid(1), ct.bid(2)
    acc = ct.zeros((T, T), ct.float32)
    for k in range(ct.cdiv(A.shape[2], tk)):
        a = ct.reshape(ct.load(A, (z, x, k), (1, T, tk), padding_mode=ZERO), (T, tk))
        b = ct.reshape(ct.load(B, (z, k, y), (1, tk, T), padding_mode=ZERO), (tk, T))
        acc = ct.mma(a, b, acc)
    ct.store(C, (z, x, y), ct.reshape(acc.astype(C.dtype), (1, T, T)))
    _record(IDS, SEEN, gx, gy, ct.sum(acc.astype(ct.int32) * 0) + x * 100 + y * 10 + z)


@ct.kernel
def gemm_bx(A, B, C, IDS, SEEN, gx, gy, tk: ct.Constant[int]):
    """Batch on x: A (X, M, K) at (x, y, k), B (X, K, N) at (x, k, z), C at (x, y, z).
    Walk order (1, 2, 0): y fastest (bands of y), x slowest."""
    x, y, z = ct.bid(0), ct.bid(1), ct.bid(2)
    acc = ct.zeros((T, T), ct.float32)
    for k in range(ct.cdiv(A.shape[2], tk)):
        a = ct.reshape(ct.load(A, (x, y, k), (1, T, tk), padding_mode=ZERO), (T, tk))
        b = ct.reshape(ct.load(B, (x, k, z), (1, tk, T), padding_mode=ZERO), (tk, T))
        acc = ct.mma(a, b, acc)
    ct.store(C, (x, y, z), ct.reshape(acc.astype(C.dtype), (1, T, T)))
    _record(IDS, SEEN, gx, gy, x * 100 + y * 10 + z)


@ct.kernel
def gemm_by(A, B, C, IDS, SEEN, gx, gy, tk: ct.Constant[int]):
    """Batch on y: A (Y, M, K) at (y, x, k), B (Y, K, N) at (y, k, z), C at (y, x, z).
    Walk order (0, 2, 1): x fastest, z second, y slowest."""
    x, y, z = ct.bid(0), ct.bid(1), ct.bid(2)
    acc = ct.zeros((T, T), ct.float32)
    for k in range(ct.cdiv(A.shape[2], tk)):
        a = ct.reshape(ct.load(A, (y, x, k), (1, T, tk), padding_mode=ZERO), (T, tk))
        b = ct.reshape(ct.load(B, (y, k, z), (1, tk, T), padding_mode=ZERO), (tk, T))
        acc = ct.mma(a, b, acc)
    ct.store(C, (y, x, z), ct.reshape(acc.astype(C.dtype), (1, T, T)))
    _record(IDS, SEEN, gx, gy, x * 100 + y * 10 + z)


def _bmm_ref(a, b):
    return np.einsum("bmk,bkn->bmn", a.astype(np.float64), b.astype(np.float64))


def bz_args(grid, k=40, dtype=np.float16, out=np.float32, ragged=(3, 5)):
    gx, gy, gz = grid3(grid)
    m, n = T * gx - ragged[0], T * gy - ragged[1]  # partial edge tiles too
    a, b = rnd(gz, m, k, dtype=dtype), rnd(gz, k, n, seed=1, dtype=dtype)
    ids, seen = book(grid)
    return (a, b, np.full((gz, m, n), np.nan, out), ids, seen, gx, gy, T), _bmm_ref(a, b)


def bx_args(grid, k=40, dtype=np.float16, out=np.float32):
    gx, gy, gz = grid3(grid)
    m, n = T * gy - 2, T * gz - 7
    a, b = rnd(gx, m, k, dtype=dtype), rnd(gx, k, n, seed=1, dtype=dtype)
    ids, seen = book(grid)
    return (a, b, np.full((gx, m, n), np.nan, out), ids, seen, gx, gy, T), _bmm_ref(a, b)


def by_args(grid, k=40, dtype=np.float16, out=np.float32):
    gx, gy, gz = grid3(grid)
    m, n = T * gx - 1, T * gz - 9
    a, b = rnd(gy, m, k, dtype=dtype), rnd(gy, k, n, seed=1, dtype=dtype)
    ids, seen = book(grid)
    return (a, b, np.full((gy, m, n), np.nan, out), ids, seen, gx, gy, T), _bmm_ref(a, b)


def attack_batched(spy, kern, make, grid, order, rtol=2e-2, atol=2e-2, **kw):
    args, ref = make(grid, **kw)
    assert _order(kern, args) == order
    tri = run_triton(kern, grid, args)
    cpu = run_numpy(kern, grid, args)
    seen, workers = spy
    assert seen == [(True, grid3(grid))], "the Triton launch must be walked"
    n = int(np.prod(grid3(grid)))
    assert workers == [(min(n, 3), 1, 1)]
    for name, (c, ids, cnt) in (("triton", tri[2:]), ("numpy", cpu[2:])):
        check_table(ids, cnt, grid, where=name)
        gx, gy, gz = grid3(grid)
        want_chk = np.array([x * 100 + y * 10 + z for z in range(gz) for y in range(gy) for x in range(gx)])
        np.testing.assert_array_equal(ids[:, 6], want_chk, err_msg=name)
        assert not np.isnan(c).any(), f"{name}: a tile never stored"
        np.testing.assert_allclose(c.astype(np.float64), ref, rtol=rtol, atol=atol, err_msg=name)
    np.testing.assert_array_equal(tri[3], cpu[3])
    np.testing.assert_allclose(tri[2].astype(np.float64), cpu[2].astype(np.float64), rtol=rtol, atol=atol)


# ----------------------------------------------------------------------------- band edges

BZ_GRIDS = [(7, 2, 2), (8, 3, 1), (9, 2, 2), (16, 1, 2), (17, 2, 1), (17, 1, 1), (1, 20, 2),
            (1, 1, 10), (9, 3, 2), (25, 1, 1), (8, 1, 5), (2,), (1,), (9, 2)]


@pytest.mark.parametrize("grid", BZ_GRIDS, ids=str)
def test_batch_on_z_bands_of_x(spy, grid):
    """x is the fastest walked axis: 7/8/9/16/17/25 rows of tiles straddle the 8-index bands;
    a size-1 x with a long y; only z > 1; 1-D and 2-D grids (implied 1s)."""
    attack_batched(spy, gemm_bz, bz_args, grid, (0, 1, 2))


BX_GRIDS = [(2, 7, 2), (2, 8, 3), (2, 9, 2), (1, 16, 2), (3, 17, 1), (2, 1, 13), (3, 9, 3), (5, 1, 1)]


@pytest.mark.parametrize("grid", BX_GRIDS, ids=str)
def test_batch_on_x_bands_of_y(spy, grid):
    """x is every access's index (a batch axis): it goes last, y is banded, z is second."""
    attack_batched(spy, gemm_bx, bx_args, grid, (1, 2, 0))


BY_GRIDS = [(7, 2, 3), (9, 3, 2), (17, 2, 1), (1, 3, 12), (8, 2, 2), (16, 1, 3)]


@pytest.mark.parametrize("grid", BY_GRIDS, ids=str)
def test_batch_on_y_bands_of_x_then_z(spy, grid):
    """y is the batch axis: x banded, z second, y slowest."""
    attack_batched(spy, gemm_by, by_args, grid, (0, 2, 1))


# ----------------------------------------------------------------------------- dtypes and K

@pytest.mark.parametrize("dtype, out, k", [
    (np.float16, np.float16, 13), (np.float16, np.float32, 33), (np.float32, np.float32, 17),
    (np.float32, np.float16, 1), (np.float16, np.float32, 16)])
def test_dtypes_and_k_not_a_multiple_of_the_tile(spy, dtype, out, k):
    """K of 1, 13, 17, 33 (partial last K tile, zero padded) and 16; fp16/fp32 in and out, on a
    grid with a partial band (9 x 2 x 2)."""
    rtol = 2e-2 if np.float16 in (dtype, out) else 1e-3
    attack_batched(spy, gemm_bz, bz_args, (9, 2, 2), (0, 1, 2), rtol=rtol, atol=rtol, k=k, dtype=dtype, out=out)


def test_bf16_walk_matches_numpy_and_the_grid_of_tiles(spy):
    """bf16 operands and output (the NumPy backend gets ml_dtypes' bfloat16): a partial band of
    17 along x, K = 29."""
    ml_dtypes = pytest.importorskip("ml_dtypes")
    grid = (17, 2, 1)
    args, _ = bz_args(grid, k=29)
    a, b = (torch.from_numpy(v.astype(np.float32)).bfloat16() for v in args[:2])
    c = torch.full(args[2].shape, float("nan"), dtype=torch.bfloat16)
    targs = (a, b, c, *(_torch(v) for v in args[3:]))
    with triton_interpreter():
        ct.launch(None, grid, gemm_bz, targs)
    seen, _ = spy
    assert seen == [(True, grid3(grid))]
    check_table(targs[3].numpy(), targs[4].numpy(), grid, where="triton bf16")
    ref = _bmm_ref(a.float().numpy(), b.float().numpy())
    got = c.float().numpy()
    assert not np.isnan(got).any()
    np.testing.assert_allclose(got, ref, rtol=3e-2, atol=6e-2)
    try:
        nargs = (a.float().numpy().astype(ml_dtypes.bfloat16), b.float().numpy().astype(ml_dtypes.bfloat16),
                 np.full(args[2].shape, np.nan, ml_dtypes.bfloat16), *args[3:])
        ct.launch(None, grid, gemm_bz, nargs)
    except Exception as e:  # noqa: BLE001 - the NumPy backend may not take ml_dtypes
        pytest.skip(f"the NumPy backend does not run bfloat16 arrays: {e}")
    np.testing.assert_array_equal(nargs[2].astype(np.float32), got)


# ----------------------------------------------------------------------------- the walk order changes

@ct.kernel
def y_only_in_store(A, B, C, IDS, SEEN, gx, gy, tk: ct.Constant[int]):
    """Every load is indexed by x only; y and z appear only in the store of C (and the record).
    x indexes every access: a batch axis, so x goes last and y is banded."""
    x, y, z = ct.bid(0), ct.bid(1), ct.bid(2)
    acc = ct.zeros((T, T), ct.float32)
    for k in range(ct.cdiv(A.shape[1], tk)):
        acc = ct.mma(ct.load(A, (x, k), (T, tk), padding_mode=ZERO),
                     ct.load(B, (k, x), (tk, T), padding_mode=ZERO), acc)
    ct.store(C, (z, x, y), ct.reshape((acc + (y * 1000 + z * 100000).astype(ct.float32)), (1, T, T)))
    _record(IDS, SEEN, gx, gy, y)


@pytest.mark.parametrize("grid", [(3, 17, 1), (2, 9, 2), (1, 8, 3), (4, 7, 1), (2, 1, 9)], ids=str)
def test_bid_read_only_in_a_store(spy, grid):
    gx, gy, gz = grid
    k = 24
    a, b = rnd(T * gx, k), rnd(k, T * gx, seed=2)
    ids, seen = book(grid)
    args = (a, b, np.full((gz, T * gx, T * gy), np.nan, np.float32), ids, seen, gx, gy, T)
    assert _order(y_only_in_store, args) == (1, 2, 0)
    tri = run_triton(y_only_in_store, grid, args)
    cpu = run_numpy(y_only_in_store, grid, args)
    assert spy[0] == [(True, grid)]
    prod = a.astype(np.float64) @ b.astype(np.float64)
    want = np.empty((gz, T * gx, T * gy))
    for x in range(gx):
        blk = prod[T * x:T * x + T, T * x:T * x + T]
        for y in range(gy):
            for z in range(gz):
                want[z, T * x:T * x + T, T * y:T * y + T] = blk + y * 1000 + z * 100000
    for name, (c, i, s) in (("triton", tri[2:]), ("numpy", cpu[2:])):
        check_table(i, s, grid, where=name)
        np.testing.assert_allclose(c, want, rtol=1e-4, atol=1e-2, err_msg=name)


@ct.kernel
def mirrored(A, B, C, IDS, SEEN, gx, gy, tk: ct.Constant[int]):
    """Stores at the mirror image of its block in the logical grid (num_blocks - 1 - bid on every
    axis), reading A and B at its own indices: a wrong num_blocks moves the tile."""
    x, y, z = ct.bid(0), ct.bid(1), ct.bid(2)
    nx, ny, nz = ct.num_blocks(0), ct.num_blocks(1), ct.num_blocks(2)
    acc = ct.zeros((T, T), ct.float32)
    for k in range(ct.cdiv(A.shape[2], tk)):
        a = ct.reshape(ct.load(A, (z, x, k), (1, T, tk), padding_mode=ZERO), (T, tk))
        b = ct.reshape(ct.load(B, (z, k, y), (1, tk, T), padding_mode=ZERO), (tk, T))
        acc = ct.mma(a, b, acc)
    ct.store(C, (nz - 1 - z, nx - 1 - x, ny - 1 - y), ct.reshape(acc, (1, T, T)))
    _record(IDS, SEEN, gx, gy, nx * 10000 + ny * 100 + nz)


@pytest.mark.parametrize("grid", [(9, 2, 2), (17, 1, 1), (1, 11, 2), (8, 3, 1)], ids=str)
def test_num_blocks_in_the_store_index(spy, grid):
    gx, gy, gz = grid
    k = 20
    a, b = rnd(gz, T * gx, k), rnd(gz, k, T * gy, seed=3)
    ids, seen = book(grid)
    args = (a, b, np.full((gz, T * gx, T * gy), np.nan, np.float32), ids, seen, gx, gy, T)
    tri = run_triton(mirrored, grid, args)
    cpu = run_numpy(mirrored, grid, args)
    assert spy[0] == [(True, grid)]
    prod = _bmm_ref(a, b)
    want = np.empty_like(prod)
    for z in range(gz):
        for x in range(gx):
            for y in range(gy):
                want[gz - 1 - z, T * (gx - 1 - x):T * (gx - x), T * (gy - 1 - y):T * (gy - y)] = \
                    prod[z, T * x:T * x + T, T * y:T * y + T]
    for name, (c, i, s) in (("triton", tri[2:]), ("numpy", cpu[2:])):
        check_table(i, s, grid, where=name)
        assert (i[:, 6] == gx * 10000 + gy * 100 + gz).all(), name
        np.testing.assert_allclose(c, want, rtol=1e-4, atol=1e-3, err_msg=name)


@ct.kernel
def gemm2d_z_in_store(A, B, C, IDS, SEEN, gx, gy, tk: ct.Constant[int]):
    """A plain 2-D GEMM whose z axis only chooses the copy of C it writes (loads read x and y):
    no batch axis, x fastest."""
    x, y, z = ct.bid(0), ct.bid(1), ct.bid(2)
    acc = ct.zeros((T, T), ct.float32)
    for k in range(ct.cdiv(A.shape[1], tk)):
        acc = ct.mma(ct.load(A, (x, k), (T, tk), padding_mode=ZERO),
                     ct.load(B, (k, y), (tk, T), padding_mode=ZERO), acc)
    ct.store(C, (z, x, y), ct.reshape(acc.astype(C.dtype), (1, T, T)))
    _record(IDS, SEEN, gx, gy, z)


def test_one_kernel_many_band_shapes_in_a_row(spy):
    """One compiled variant launched on grids whose band structure differs each time (partial
    band, exact band, one band, none): nothing about the previous grid may stick."""
    grids = [(9, 2, 2), (8, 3, 1), (17, 1, 1), (1, 19, 1), (7, 2, 3), (16, 2, 1), (3, 1, 1)]
    k = 19
    a, b = rnd(T * 17, k), rnd(k, T * 19, seed=4)
    prod = a.astype(np.float64) @ b.astype(np.float64)
    for grid in grids:
        gx, gy, gz = grid
        ids, seen = book(grid)
        c = np.full((gz, T * 17, T * 19), np.nan, np.float16)
        args = (a, b, c, ids, seen, gx, gy, T)
        assert _order(gemm2d_z_in_store, args) == (0, 1, 2)
        tri = run_triton(gemm2d_z_in_store, grid, args)
        check_table(tri[3], tri[4], grid, where=str(grid))
        got = tri[2].astype(np.float64)
        for z in range(gz):
            np.testing.assert_allclose(got[z, :T * gx, :T * gy], prod[:T * gx, :T * gy], rtol=2e-2, atol=2e-2)
            assert np.isnan(got[z, T * gx:, :]).all() and np.isnan(got[z, :, T * gy:]).all(), grid
    assert spy[0] == [(True, g) for g in grids]


@ct.kernel
def skip_band_edges(A, B, C, IDS, SEEN, gx, gy, tk: ct.Constant[int]):
    """Blocks on the edges of a band of x (x % 8 in {0, 7}) and every block with y == 1 return
    early, before the product loop; the others must still all run once."""
    x, y, z = ct.bid(0), ct.bid(1), ct.bid(2)
    if (x % 8 == 7) | (x % 8 == 0) | (y == 1):
        return
    acc = ct.zeros((T, T), ct.float32)
    for k in range(ct.cdiv(A.shape[1], tk)):
        acc = ct.mma(ct.load(A, (x, k), (T, tk), padding_mode=ZERO),
                     ct.load(B, (k, y), (tk, T), padding_mode=ZERO), acc)
    ct.store(C, (z, x, y), ct.reshape(acc, (1, T, T)))
    _record(IDS, SEEN, gx, gy, z)


def test_early_return_on_band_edges(spy):
    grid = (17, 3, 2)
    gx, gy, gz = grid
    k = 21
    a, b = rnd(T * gx, k), rnd(k, T * gy, seed=5)
    ids, seen = book(grid)
    args = (a, b, np.full((gz, T * gx, T * gy), np.nan, np.float32), ids, seen, gx, gy, T)
    tri = run_triton(skip_band_edges.replace_hints(persistent=True), grid, args)
    cpu = run_numpy(skip_band_edges, grid, args)
    assert spy[0] == [(True, grid)]
    prod = a.astype(np.float64) @ b.astype(np.float64)
    want_ids = table_want(grid)
    want_seen = np.zeros(grid, np.int32)
    want_c = np.full((gz, T * gx, T * gy), np.nan)
    for z in range(gz):
        for y in range(gy):
            for x in range(gx):
                lin = x + gx * (y + gy * z)
                if x % 8 in (0, 7) or y == 1:
                    want_ids[lin] = -1
                    continue
                want_seen[x, y, z] = 1
                want_ids[lin, 6] = z
                want_c[z, T * x:T * x + T, T * y:T * y + T] = prod[T * x:T * x + T, T * y:T * y + T]
    for name, (c, i, s) in (("triton", tri[2:]), ("numpy", cpu[2:])):
        np.testing.assert_array_equal(s, want_seen, err_msg=name)
        np.testing.assert_array_equal(i, want_ids, err_msg=name)
        np.testing.assert_allclose(c, want_c, rtol=1e-4, atol=1e-3, equal_nan=True, err_msg=name)


# ----------------------------------------------------------------------------- hints and the switch

@ct.kernel
def ew_record(X, Y, IDS, SEEN, gx, gy):
    """No product loop: element-wise, with the record. Walked only when hinted."""
    x, y, z = ct.bid(0), ct.bid(1), ct.bid(2)
    v = ct.load(X, (z, x, y), (1, 4, 4), padding_mode=ZERO)
    ct.store(Y, (z, x, y), v * 2.0 + (x * 10000 + y * 100 + z).astype(ct.float32))
    _record(IDS, SEEN, gx, gy, x + y + z)


@pytest.mark.parametrize("grid", [(9, 2, 2), (1, 17, 1), (17, 1, 2), (8, 8, 1)], ids=str)
def test_persistent_hint_on_an_elementwise_kernel(spy, grid):
    gx, gy, gz = grid
    x = rnd(gz, 4 * gx - 1, 4 * gy - 3)
    ids, seen = book(grid)
    args = (x, np.full(x.shape, np.nan, np.float32), ids, seen, gx, gy)
    kern = ew_record.replace_hints(persistent=True)
    tri = run_triton(kern, grid, args)
    assert spy[0] == [(True, grid)]
    cpu = run_numpy(ew_record, grid, args)
    want = x * 2.0
    for z in range(gz):
        for i in range(gx):
            for j in range(gy):
                want[z, 4 * i:4 * i + 4, 4 * j:4 * j + 4] += i * 10000 + j * 100 + z
    for name, (_, y, i, s) in (("triton", tri), ("numpy", cpu)):
        check_table(i, s, grid, where=name)
        np.testing.assert_array_equal(i[:, 6], i[:, 0] + i[:, 1] + i[:, 2])
        np.testing.assert_allclose(y, want, rtol=1e-6, err_msg=name)


def test_without_the_hint_the_elementwise_kernel_is_a_grid(spy):
    grid = (9, 2, 1)
    x = rnd(1, 36, 8)
    ids, seen = book(grid)
    args = (x, np.full(x.shape, np.nan, np.float32), ids, seen, 9, 2)
    tri = run_triton(ew_record.replace_hints(num_warps=2), grid, args)
    assert spy[0] == [(False, grid)]
    assert spy[1] == [grid]
    check_table(tri[2], tri[3], grid)


@ct.kernel
def one_product(A, B, C, IDS, SEEN, gx, gy):
    """A single product, no loop: not walked automatically, walked with persistent=True."""
    x, y = ct.bid(0), ct.bid(1)
    acc = ct.mma(ct.load(A, (x, 0), (T, T), padding_mode=ZERO), ct.load(B, (0, y), (T, T), padding_mode=ZERO),
                 ct.zeros((T, T), ct.float32))
    ct.store(C, (x, y), acc)
    _record(IDS, SEEN, gx, gy, 0)


@pytest.mark.parametrize("hint", [None, True])
def test_a_single_product_with_and_without_the_hint(spy, hint):
    grid = (17, 2, 1)
    a, b = rnd(T * 17 - 5, 11), rnd(11, T * 2 - 1, seed=6)
    ids, seen = book(grid)
    args = (a, b, np.full((a.shape[0], b.shape[1]), np.nan, np.float32), ids, seen, 17, 2)
    kern = one_product.replace_hints(persistent=True, num_warps=8) if hint else one_product
    tri = run_triton(kern, grid, args)
    assert spy[0] == [(bool(hint), grid)]
    check_table(tri[3], tri[4], grid)
    np.testing.assert_allclose(tri[2], a.astype(np.float64) @ b, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("first", ["0", "1"])
def test_the_switch_applies_to_variants_compiled_after_it(spy, monkeypatch, first):
    """SAFETILE_PERSISTENT=0 turns the walk off for variants compiled after it; a variant already
    compiled keeps its form. Results are the same either way, on a banded grid."""
    grid = (9, 3, 2)
    other = "1" if first == "0" else "0"
    kern = gemm_bz.replace_hints(num_warps=2 if first == "0" else 1)
    outs = []
    monkeypatch.setenv("SAFETILE_PERSISTENT", first)
    for variant in (kern, kern, None):
        if variant is None:
            monkeypatch.setenv("SAFETILE_PERSISTENT", other)
            variant = kern.replace_hints(num_warps=16 if first == "0" else 8)
        elif outs:
            monkeypatch.setenv("SAFETILE_PERSISTENT", other)  # too late for the compiled variant
        args, ref = bz_args(grid, k=23)
        out = run_triton(variant, grid, args)
        check_table(out[3], out[4], grid)
        np.testing.assert_allclose(out[2], ref, rtol=2e-2, atol=2e-2)
        outs.append(out[2])
    walked = first != "0"
    assert [s[0] for s in spy[0]] == [walked, walked, not walked]
    assert spy[1] == [(3, 1, 1) if w else grid for w in (walked, walked, not walked)]
    np.testing.assert_array_equal(outs[0], outs[2])


# ----------------------------------------------------------------------------- more walk orders and shapes

@ct.kernel
def batch_xz(A, B, C, IDS, SEEN, gx, gy, tk: ct.Constant[int]):
    """x and z index every load and store (two batch axes), y only the store: C[z, x, y] =
    A[z, x] @ B[z, :, x] + y."""
    x, y, z = ct.bid(0), ct.bid(1), ct.bid(2)
    acc = ct.zeros((T, T), ct.float32)
    for k in range(ct.cdiv(A.shape[2], tk)):
        a = ct.reshape(ct.load(A, (z, x, k), (1, T, tk), padding_mode=ZERO), (T, tk))
        b = ct.reshape(ct.load(B, (z, k, x), (1, tk, T), padding_mode=ZERO), (tk, T))
        acc = ct.mma(a, b, acc)
    ct.store(C, (z, x, y), ct.reshape(acc + y.astype(ct.float32) * 1000.0, (1, T, T)))
    _record(IDS, SEEN, gx, gy, y)


@pytest.mark.parametrize("grid", [(9, 3, 2), (2, 17, 1), (1, 9, 3), (17, 1, 2)], ids=str)
def test_two_batch_axes(spy, grid):
    gx, gy, gz = grid
    k = 18
    a, b = rnd(gz, T * gx, k), rnd(gz, k, T * gx, seed=7)
    ids, seen = book(grid)
    args = (a, b, np.full((gz, T * gx, T * gy), np.nan, np.float32), ids, seen, gx, gy, T)
    assert sorted(_order(batch_xz, args)) == [0, 1, 2]
    tri = run_triton(batch_xz, grid, args)
    cpu = run_numpy(batch_xz, grid, args)
    assert spy[0] == [(True, grid)]
    prod = _bmm_ref(a, b)
    want = np.empty((gz, T * gx, T * gy))
    for z in range(gz):
        for x in range(gx):
            for y in range(gy):
                want[z, T * x:T * x + T, T * y:T * y + T] = prod[z, T * x:T * x + T, T * x:T * x + T] + 1000.0 * y
    for name, (c, i, s) in (("triton", tri[2:]), ("numpy", cpu[2:])):
        check_table(i, s, grid, where=name)
        np.testing.assert_allclose(c, want, rtol=1e-4, atol=1e-3, err_msg=name)


@ct.kernel
def ragged_k(A, B, C, IDS, SEEN, gx, gy, tk: ct.Constant[int]):
    """A K loop of x % 8 + 1 tiles (unequal work, so only walked when hinted): block x sums the
    first x % 8 + 1 K tiles."""
    x, y = ct.bid(0), ct.bid(1)
    acc = ct.zeros((T, T), ct.float32)
    for k in range(x % 8 + 1):
        acc = ct.mma(ct.load(A, (x, k), (T, tk), padding_mode=ZERO),
                     ct.load(B, (k, y), (tk, T), padding_mode=ZERO), acc)
    ct.store(C, (x, y), acc)
    _record(IDS, SEEN, gx, gy, x % 8 + 1)


@pytest.mark.parametrize("hint", [None, True])
def test_unequal_work_per_block_hinted_or_not(spy, hint):
    grid = (17, 2, 1)
    gx, gy, _ = grid
    a, b = rnd(T * gx, T * 8 - 3), rnd(T * 8 - 3, T * gy, seed=8)
    ids, seen = book(grid)
    args = (a, b, np.full((T * gx, T * gy), np.nan, np.float32), ids, seen, gx, gy, T)
    kern = ragged_k.replace_hints(persistent=True) if hint else ragged_k
    tri = run_triton(kern, grid, args)
    assert spy[0] == [(bool(hint), grid)]
    check_table(tri[3], tri[4], grid)
    want = np.empty((T * gx, T * gy))
    for x in range(gx):
        kk = min(T * (x % 8 + 1), a.shape[1])
        want[T * x:T * x + T] = a[T * x:T * x + T, :kk].astype(np.float64) @ b[:kk]
    np.testing.assert_allclose(tri[2], want, rtol=1e-4, atol=1e-3)
    np.testing.assert_array_equal(tri[3][:, 6], table_want(grid)[:, 0] % 8 + 1)


@ct.kernel
def break_then_return(A, B, C, IDS, SEEN, gx, gy, tk: ct.Constant[int]):
    """Blocks at the end of a band of x (x % 8 == 7) and the last row of y break out of the K loop
    at its second turn and return (a return inside a loop is a TileSyntaxError): the worker must
    go on with its next logical block."""
    x, y = ct.bid(0), ct.bid(1)
    _record(IDS, SEEN, gx, gy, 0)
    acc = ct.zeros((T, T), ct.float32)
    quit = 0
    for k in range(ct.cdiv(A.shape[1], tk)):
        if (k == 1) & ((x % 8 == 7) | (y == gy - 1)):
            quit = 1
            break
        acc = ct.mma(ct.load(A, (x, k), (T, tk), padding_mode=ZERO),
                     ct.load(B, (k, y), (tk, T), padding_mode=ZERO), acc)
    if quit == 1:
        return
    ct.store(C, (x, y), acc)


def test_break_out_of_the_k_loop_then_return(spy):
    grid = (17, 3, 1)
    gx, gy, _ = grid
    a, b = rnd(T * gx, 40), rnd(40, T * gy, seed=9)
    ids, seen = book(grid)
    args = (a, b, np.full((T * gx, T * gy), np.nan, np.float32), ids, seen, gx, gy, T)
    tri = run_triton(break_then_return.replace_hints(persistent=True), grid, args)
    cpu = run_numpy(break_then_return, grid, args)
    assert spy[0] == [(True, grid)]
    prod = a.astype(np.float64) @ b
    want = np.full(prod.shape, np.nan)
    for x in range(gx):
        for y in range(gy):
            if not (x % 8 == 7 or y == gy - 1):
                want[T * x:T * x + T, T * y:T * y + T] = prod[T * x:T * x + T, T * y:T * y + T]
    for name, (c, i, s) in (("triton", tri[2:]), ("numpy", cpu[2:])):
        check_table(i, s, grid, where=name)
        np.testing.assert_allclose(c, want, rtol=1e-4, atol=1e-3, equal_nan=True, err_msg=name)


@ct.kernel
def views_and_slices(A, B, C, IDS, SEEN, gx, gy, tk: ct.Constant[int]):
    """Block-dependent views made before the K loop (a slice of A's rows whose bounds read
    num_blocks, a tiled view of C) and bids read only inside the loop."""
    nx = ct.num_blocks(0)
    rows = A.slice(0, (nx - 1 - ct.bid(0)) * T, (nx - ct.bid(0)) * T)
    cv = C.tiled_view((T, T))
    acc = ct.zeros((T, T), ct.float32)
    for k in range(ct.num_tiles(A, axis=1, shape=(T, tk))):
        acc = ct.mma(ct.load(rows, (0, k), (T, tk), padding_mode=ZERO),
                     ct.load(B, (k, ct.bid(1)), (tk, T), padding_mode=ZERO), acc)
    cv.store((ct.bid(0), ct.bid(1)), acc)
    _record(IDS, SEEN, gx, gy, nx)


@pytest.mark.parametrize("grid", [(9, 2), (8, 3), (17, 1), (1, 10)], ids=str)
def test_views_slices_and_bids_inside_the_loop(spy, grid):
    gx, gy, _ = grid3(grid)
    a, b = rnd(T * gx, 37), rnd(37, T * gy, seed=10)
    ids, seen = book(grid)
    args = (a, b, np.full((T * gx, T * gy), np.nan, np.float32), ids, seen, gx, gy, T)
    tri = run_triton(views_and_slices.replace_hints(persistent=True), grid, args)
    cpu = run_numpy(views_and_slices, grid, args)
    assert spy[0] == [(True, grid3(grid))]
    prod = a.astype(np.float64) @ b
    want = np.empty_like(prod)
    for x in range(gx):
        want[T * x:T * x + T] = prod[T * (gx - 1 - x):T * (gx - x)]
    for name, (c, i, s) in (("triton", tri[2:]), ("numpy", cpu[2:])):
        check_table(i, s, grid, where=name)
        assert (i[:, 6] == gx).all(), name
        np.testing.assert_allclose(c, want, rtol=1e-4, atol=1e-3, err_msg=name)


@ct.kernel
def carried_and_nb_bound(A, B, C, IDS, SEEN, gx, gy, tk: ct.Constant[int]):
    """Automatic walk (no hint). The K loop runs num_blocks(1) tiles (the logical grid, not the
    resident one); the accumulator and a counter start from constants that blocks on band edges
    (x % 8 == 0) change before the loop, which must not leak into the worker's next block."""
    x, y = ct.bid(0), ct.bid(1)
    acc = ct.zeros((T, T), ct.float32)
    bonus = 0
    if x % 8 == 0:
        acc = acc + 1000.0
        bonus = bonus + 7
    for k in range(ct.num_blocks(1)):
        acc = ct.mma(ct.load(A, (x, k), (T, tk), padding_mode=ZERO),
                     ct.load(B, (k, y), (tk, T), padding_mode=ZERO), acc)
        bonus = bonus + 1
    ct.store(C, (x, y), acc)
    _record(IDS, SEEN, gx, gy, bonus)


@pytest.mark.parametrize("grid", [(9, 3), (17, 2), (8, 1), (1, 12)], ids=str)
def test_carried_values_and_num_blocks_as_the_k_bound(spy, grid):
    gx, gy, _ = grid3(grid)
    a, b = rnd(T * gx, T * 12), rnd(T * 12, T * gy, seed=11)
    ids, seen = book(grid)
    args = (a, b, np.full((T * gx, T * gy), np.nan, np.float32), ids, seen, gx, gy, T)
    tri = run_triton(carried_and_nb_bound, grid, args)
    cpu = run_numpy(carried_and_nb_bound, grid, args)
    assert spy[0] == [(True, grid3(grid))]
    kk = T * gy
    want = a[:, :kk].astype(np.float64) @ b[:kk]
    want += np.repeat((np.arange(gx) % 8 == 0) * 1000.0, T)[:, None]
    want_bonus = np.array([gy + (7 if x % 8 == 0 else 0) for y in range(gy) for x in range(gx)])
    for name, (c, i, s) in (("triton", tri[2:]), ("numpy", cpu[2:])):
        check_table(i, s, grid, where=name)
        np.testing.assert_array_equal(i[:, 6], want_bonus, err_msg=name)
        np.testing.assert_allclose(c, want, rtol=1e-4, atol=1e-2, err_msg=name)
