"""The CPU backend's per-launch caches: what is kept per compiled Function (the plan), per
op (constants) or per grid must give exactly the results of a fresh computation, and what
depends on the launch's arguments (aliasing) must be decided again at every launch."""
from __future__ import annotations

import itertools

import numpy as np
import pytest

import safetile as ct
from safetile.backends.cpu.context import BlockSet
from safetile.backends.cpu.executor import plan_of
from safetile.backends.cpu.memory import _tiles


@ct.kernel
def scale_add(z, x, n: ct.Constant[int]):
    a = ct.load(z, index=(0,), shape=(n,))
    b = ct.load(x, index=(0,), shape=(n,))
    ct.store(z, index=(0,), tile=a * 0.5 + b)


@ct.kernel
def load_store_after(a, w, out, T: ct.Constant[int]):
    b = ct.bid(0)
    t = ct.load(a, index=(b,), shape=(T,))
    ct.store(w, index=(b,), tile=t * 0 + 7)
    ct.store(out, index=(b,), tile=t)  # the values loaded before the store to w


@ct.kernel
def branchy(out, T: ct.Constant[int]):
    b = ct.bid(0)
    c = ct.full((T,), 3, dtype=ct.int32)
    if b % 2 == 0:  # divergent: constants run in grid mode and in subset mode
        v = c + 10 + b
    else:
        v = c * 2 - b
    ct.store(out, index=(b,), tile=v)


@ct.kernel
def block_ids(out):
    ct.store(out, index=(ct.bid(2), ct.bid(1), ct.bid(0)),
             tile=ct.bid(0) + 10 * ct.bid(1) + 100 * ct.bid(2))


def _specialised_fns(kernel) -> list:
    return [p.fn for p in kernel.dispatch.values()]


def test_repeated_launches_reuse_one_plan_and_match_numpy():
    x = np.random.default_rng(0).random(2048).astype(np.float32)
    z = np.zeros(2048, np.float32)
    ref = np.zeros(2048, np.float32)
    for _ in range(5):
        ct.launch(None, (1,), scale_add, (z, x, 2048))
        ref = ref * np.float32(0.5) + x
        np.testing.assert_array_equal(z, ref)
    (fn,) = [f for f in _specialised_fns(scale_add) if f.params[2].constant == 2048]
    assert plan_of(fn) is plan_of(fn)


def test_each_specialisation_gets_its_own_plan():
    for n in (16, 32):
        z, x = np.ones(n, np.float32), np.full(n, 2.0, np.float32)
        ct.launch(None, (1,), scale_add, (z, x, n))
        np.testing.assert_array_equal(z, np.full(n, 2.5, np.float32))
    fns = [f for f in _specialised_fns(scale_add) if f.params[2].constant in (16, 32)]
    assert len({id(plan_of(f)) for f in fns}) == 2


def test_aliasing_is_decided_per_launch_not_per_function():
    """One compiled Function, launched with ``w`` distinct from ``a``, then ``w is a``,
    then distinct again: only the aliased launch must copy the loaded tile."""
    t, blocks = 8, 3
    for same in (False, True, False, True):
        a = np.arange(blocks * t, dtype=np.int32)
        orig = a.copy()
        w = a if same else np.zeros_like(a)
        out = np.full_like(a, -1)
        ct.launch(None, (blocks,), load_store_after, (a, w, out, t))
        np.testing.assert_array_equal(out, orig)
        np.testing.assert_array_equal(w, np.full_like(a, 7))


def test_cached_constants_in_grid_and_subset_mode():
    for blocks in (1, 4, 7, 4):
        out = np.zeros(blocks * 4, np.int32)
        ct.launch(None, (blocks,), branchy, (out, 4))
        exp = np.repeat([13 + b if b % 2 == 0 else 6 - b for b in range(blocks)], 4).astype(np.int32)
        np.testing.assert_array_equal(out, exp)


@pytest.mark.parametrize("grid", [(3, 2, 2), (1, 1, 1), (2, 3, 1), (3, 2, 2)])
def test_cached_grid_block_coordinates(grid):
    gx, gy, gz = grid
    out = np.full((gz, gy, gx), -1, np.int32)
    ct.launch(None, grid, block_ids, (out,))
    z, y, x = np.meshgrid(np.arange(gz), np.arange(gy), np.arange(gx), indexing="ij")
    np.testing.assert_array_equal(out, x + 10 * y + 100 * z)
    bs = BlockSet.full_grid(grid)
    assert bs is BlockSet.full_grid(grid)
    assert not any(c.flags.writeable for c in (*bs.coords, bs.ids))


def _reference_tiles(view: np.ndarray, shape: tuple[int, ...], keys: tuple) -> np.ndarray:
    """The tiles picked one at a time: one axis per slice key (its tiles), then the tile."""
    picks = [[k] if isinstance(k, int) else list(range(k.start, k.stop, k.step)) for k in keys]
    sliced = [d for d, k in enumerate(keys) if not isinstance(k, int)]
    out = np.empty(tuple(len(picks[d]) for d in sliced) + shape, view.dtype)
    for pos in itertools.product(*(range(len(p)) for p in picks)):
        tile = [p[i] for p, i in zip(picks, pos)]
        out[tuple(pos[d] for d in sliced)] = view[tuple(slice(i * s, i * s + s) for i, s in zip(tile, shape))]
    return out


@pytest.mark.parametrize("keys", [
    (1, 0), (slice(0, 3, 1), 2), (1, slice(1, 7, 2)), (slice(0, 4, 2), slice(2, 15, 3)), (slice(3, 4, 1), 0),
    (slice(1, 9, 1), slice(0, 17, 1)),
])
@pytest.mark.parametrize("layout", ["C", "F", "reversed"])
def test_tiles_are_writable_views_equal_to_tile_by_tile_selection(keys, layout):
    base = np.arange(9 * 4 * (17 * 3 + 2), dtype=np.int32).reshape(9 * 4, 17 * 3 + 2)  # partial last tile
    view = {"C": base, "F": np.asfortranarray(base), "reversed": base[::-1, ::-1]}[layout]
    shape = (4, 3)
    got = _tiles(view, shape, keys)
    np.testing.assert_array_equal(got, _reference_tiles(view, shape, keys))
    got[...] = -1  # a view: the writes land in the array
    assert (view == -1).sum() == got.size
