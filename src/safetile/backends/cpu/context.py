"""Which blocks run a region together, and how values are laid out for them.

The CPU backend runs every block of the grid at once. A tile of shape S is held as an
array of shape ``B + S`` where ``B`` is the batch part: in *grid* mode ``B`` has three
axes ``(z, y, x)`` and each axis is either the grid size or 1 (a value that does not
depend on that block coordinate is not repeated), so ``bid(0)`` is ``arange(gx)`` of
shape ``(1, 1, gx)`` and the load of a tile indexed only by ``bid(0)`` costs one tile per
x position. When control flow diverges, the blocks taking one path continue in *subset*
mode: ``B = (n,)`` over an explicit, ascending list of linear block ids.
"""
from __future__ import annotations

from functools import lru_cache

import numpy as np


class BlockSet:
    """The blocks executing together: their batch shape and coordinates."""

    def __init__(self, batch_shape: tuple[int, ...], coords: tuple[np.ndarray, np.ndarray, np.ndarray],
                 ids: np.ndarray, grid: tuple[int, int, int]):
        self.batch_shape = batch_shape
        self.coords = coords  # (x, y, z), each broadcastable to batch_shape
        self.ids = ids  # linear block ids (x fastest), broadcastable to batch_shape
        self.grid = grid
        self.nb = len(batch_shape)
        self.size = int(np.prod(batch_shape))
        # id(coordinate array) -> ('range', batch axis, 0, 1, n): tile indices equal to a block
        # coordinate (``bid``) need no inspection; the set keeps these arrays alive
        self.ranges: dict[int, tuple] = {}

    @staticmethod
    @lru_cache(maxsize=64)
    def full_grid(grid: tuple[int, int, int]) -> BlockSet:
        """Every block of ``grid`` in grid mode; shared between launches of one grid (read-only)."""
        gx, gy, gz = grid
        x = np.arange(gx, dtype=np.int32).reshape(1, 1, gx)
        y = np.arange(gy, dtype=np.int32).reshape(1, gy, 1)
        z = np.arange(gz, dtype=np.int32).reshape(gz, 1, 1)
        ids = (x.astype(np.int64) + gx * (y + gy * z.astype(np.int64)))
        for a in (x, y, z, ids):
            a.flags.writeable = False  # ``bid`` results are these arrays: values never change
        bs = BlockSet((gz, gy, gx), (x, y, z), ids, grid)
        for coord, axis in ((x, 2), (y, 1), (z, 0)):
            if coord.size > 1:
                bs.ranges[id(coord)] = ("range", axis, 0, 1, coord.size)
        return bs

    @staticmethod
    def box(grid: tuple[int, int, int], lo: tuple[int, int, int], hi: tuple[int, int, int]) -> BlockSet:
        """The blocks ``lo <= (x, y, z) < hi`` of ``grid`` in grid mode (a chunk of a large grid);
        coordinates and ids are those of the whole grid."""
        if lo == (0, 0, 0) and hi == grid:
            return BlockSet.full_grid(grid)
        gx, gy, _ = grid
        x = np.arange(lo[0], hi[0], dtype=np.int32).reshape(1, 1, -1)
        y = np.arange(lo[1], hi[1], dtype=np.int32).reshape(1, -1, 1)
        z = np.arange(lo[2], hi[2], dtype=np.int32).reshape(-1, 1, 1)
        ids = x.astype(np.int64) + gx * (y + gy * z.astype(np.int64))
        bs = BlockSet((z.size, y.size, x.size), (x, y, z), ids, grid)
        for coord, axis, start in ((x, 2, lo[0]), (y, 1, lo[1]), (z, 0, lo[2])):
            if coord.size > 1:
                bs.ranges[id(coord)] = ("range", axis, start, 1, coord.size)
        return bs

    def subset(self, flat_idx: np.ndarray) -> BlockSet:
        """The blocks at positions ``flat_idx`` (ascending) of this set, in subset mode."""
        coords = tuple(self.flatten(c)[flat_idx] for c in self.coords)
        return BlockSet((len(flat_idx),), coords, self.flatten(self.ids)[flat_idx], self.grid)

    def flatten(self, value: np.ndarray, tile_ndim: int = 0) -> np.ndarray:
        """``value`` (batch + tile) broadcast to the full batch and flattened to (size, *tile)."""
        tile_shape = value.shape[value.ndim - tile_ndim:] if tile_ndim else ()
        full = np.broadcast_to(value, self.batch_shape + tile_shape)
        return full.reshape((self.size,) + tile_shape)

    def is_uniform(self, value: np.ndarray, tile_ndim: int = 0) -> bool:
        """Whether the value is the same object for every block (all batch axes are 1)."""
        return all(n == 1 for n in value.shape[: value.ndim - tile_ndim])

    def to_subset(self, value: np.ndarray, flat_idx: np.ndarray, tile_ndim: int) -> np.ndarray:
        """Re-lay a value of this set for ``self.subset(flat_idx)``."""
        if self.is_uniform(value, tile_ndim):
            return value.reshape((1,) + value.shape[value.ndim - tile_ndim:])
        return self.flatten(value, tile_ndim)[flat_idx]

    def merge(self, parts: list[tuple[np.ndarray, np.ndarray]], tile_shape: tuple[int, ...],
              dtype: np.dtype, base: np.ndarray | None = None) -> np.ndarray:
        """Combine per-subset values ``(flat_idx, value)`` into one value of this set.

        Positions no part covers keep ``base`` (broadcast); ``base`` may be omitted when
        the parts cover every block.
        """
        if base is not None:
            out = np.array(self.flatten(base, len(tile_shape)), dtype=dtype, copy=True)
        else:
            out = np.empty((self.size,) + tile_shape, dtype=dtype)
        for idx, val in parts:
            out[idx] = np.broadcast_to(val, (len(idx),) + tile_shape)
        return out.reshape(self.batch_shape + tile_shape)
