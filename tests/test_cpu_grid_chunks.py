"""The CPU backend on grids too large to hold every block's values at once: it runs them in
chunks of whole blocks (same results, prints in block order, failures naming global block
coordinates), and refuses a grid it cannot run with a safetile error naming the grid."""
from __future__ import annotations

import numpy as np
import pytest

import safetile as ct
from safetile.backends.cpu import context, executor


@ct.kernel
def scale_2d(x, y, s, T: ct.Constant[int]):
    bx, by = ct.bid(0), ct.bid(1)
    t = ct.load(x, index=(bx, by), shape=(T, T), padding_mode=ct.PaddingMode.ZERO)
    ct.store(y, index=(bx, by), tile=t * s + ct.num_blocks(0) * 1000 + ct.num_blocks(1))


@ct.kernel
def gemm(A, B, C, tm: ct.Constant[int], tn: ct.Constant[int], tk: ct.Constant[int]):
    bx, by = ct.bid(0), ct.bid(1)
    acc = ct.full((tm, tn), 0, dtype=ct.float32)
    for k in range(ct.num_tiles(A, axis=1, shape=(tm, tk))):
        a = ct.load(A, index=(bx, k), shape=(tm, tk), padding_mode=ct.PaddingMode.ZERO)
        b = ct.load(B, index=(k, by), shape=(tk, tn), padding_mode=ct.PaddingMode.ZERO)
        acc = ct.mma(a, b, acc)
    ct.store(C, index=(bx, by), tile=acc)


@ct.kernel
def ids_3d(out):
    x, y, z = ct.bid(0), ct.bid(1), ct.bid(2)
    flat = x + ct.num_blocks(0) * (y + ct.num_blocks(1) * z)
    if x % 3 == 1:  # divergent control flow inside a chunk
        flat = flat * -1
    ct.store(out, index=(z, y, x), tile=ct.full((1, 1, 1), flat, dtype=ct.int32))


@ct.kernel
def prints(x):
    ct.print("block", ct.bid(0), ct.bid(1))


@ct.kernel
def fails_at(x, bad_x: ct.Constant[int]):
    ct.assert_(ct.bid(0) != bad_x, "bad block")
    ct.store(x, index=(ct.bid(0),), tile=ct.full((1,), 1.0, dtype=ct.float32))


@pytest.fixture
def tiny_chunks(monkeypatch):
    """Chunks of a handful of blocks, and a record of every chunk that ran."""
    boxes = []
    real = context.BlockSet.box

    def spy(grid, lo, hi):
        boxes.append((lo, hi))
        return real(grid, lo, hi)
    monkeypatch.setattr(executor, "CHUNK_BYTES", 8 * 64 * 5)  # 5 blocks of 8x8 tiles
    monkeypatch.setattr(context.BlockSet, "box", staticmethod(spy))
    return boxes


def _blocks_covered(boxes, grid):
    seen = np.zeros(grid[::-1], dtype=int)
    for lo, hi in boxes:
        seen[lo[2]:hi[2], lo[1]:hi[1], lo[0]:hi[0]] += 1
    return seen


def test_chunks_cover_the_grid_once_in_block_order():
    for grid, per in [((7, 5, 3), 4), ((7, 5, 3), 40), ((7, 5, 3), 6), ((3, 1, 1), 1), ((1, 1, 9), 2)]:
        boxes = list(executor.chunks(grid, per))
        assert (_blocks_covered(boxes, grid) == 1).all()
        assert all(np.prod(np.subtract(hi, lo)) <= per for lo, hi in boxes)
        firsts = [lo[0] + grid[0] * (lo[1] + grid[1] * lo[2]) for lo, _ in boxes]
        assert firsts == sorted(firsts)


def test_chunked_launches_compute_the_same(tiny_chunks, monkeypatch):
    rng = np.random.default_rng(3)
    x = rng.standard_normal((45, 37)).astype(np.float32)
    y = np.full_like(x, np.nan)
    ct.launch(None, (6, 5), scale_2d, (x, y, 1.5, 8))
    assert len(tiny_chunks) >= 6 and (_blocks_covered(tiny_chunks, (6, 5, 1)) == 1).all()
    np.testing.assert_allclose(y, x * 1.5 + 6 * 1000 + 5, rtol=1e-6)

    tiny_chunks.clear()
    A = rng.standard_normal((40, 24)).astype(np.float32)
    B = rng.standard_normal((24, 33)).astype(np.float32)
    C = np.full((40, 33), np.nan, np.float32)
    ct.launch(None, (5, 5), gemm, (A, B, C, 8, 8, 8))  # the K loop raised to one product per chunk
    assert len(tiny_chunks) >= 5
    np.testing.assert_allclose(C, A @ B, rtol=1e-4, atol=1e-4)

    tiny_chunks.clear()
    monkeypatch.setattr(executor, "CHUNK_BYTES", 8 * 10)  # 10 blocks of one-element tiles
    out = np.zeros((3, 4, 7), np.int32)
    ct.launch(None, (7, 4, 3), ids_3d, (out,))
    assert len(tiny_chunks) > 1
    ref = np.arange(84, dtype=np.int32).reshape(3, 4, 7)
    ref[:, :, 1::3] *= -1
    assert np.array_equal(out, ref)


def test_chunked_prints_keep_block_order(tiny_chunks, monkeypatch, capsys):
    monkeypatch.setattr(executor, "CHUNK_BYTES", 8 * 3)
    ct.launch(None, (4, 3), prints, (np.zeros(1, np.float32),))
    assert len(tiny_chunks) > 1
    lines = capsys.readouterr().out.splitlines()
    assert lines == [f"block {x} {y}" for y in range(3) for x in range(4)]


def test_a_failing_block_in_a_later_chunk_names_its_grid_coordinates(tiny_chunks, monkeypatch):
    monkeypatch.setattr(executor, "CHUNK_BYTES", 8 * 4)
    x = np.zeros(20, np.float32)
    with pytest.raises(ct.TileRuntimeError, match=r"assertion failed: bad block \(block \(13, 0, 0\)\)"):
        ct.launch(None, (20,), fails_at, (x, 13))
    assert len(tiny_chunks) > 3
    assert x[:12].all()  # the blocks of earlier chunks have stored (see "when ct.assert_ fails")


def test_a_grid_too_large_for_the_cpu_is_refused_naming_it():
    x = np.zeros((4, 4), np.float32)
    y = np.full_like(x, 7.0)
    grid = (2**24 - 1, 2**24 - 1, 1)
    with pytest.raises(ct.GridError, match=r"grid \(16777215, 16777215, 1\) has 281474943156225 blocks; the CPU "
                                           r"backend runs at most"):
        ct.launch(None, grid, scale_2d, (x, y, 2.0, 4))
    assert (y == 7.0).all()


def test_running_out_of_memory_is_a_safetile_error(monkeypatch):
    def exhausted(self):
        raise MemoryError("Unable to allocate 2.00 PiB")
    monkeypatch.setattr(executor.Run, "execute", exhausted)
    x = np.zeros((4, 4), np.float32)
    with pytest.raises(ct.TileRuntimeError, match=r"ran out of memory running grid \(1, 1, 1\)"):
        ct.launch(None, (1, 1), scale_2d, (x, x.copy(), 2.0, 4))
