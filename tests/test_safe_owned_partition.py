"""In-block partitions of a ct.Mut sub-tensor (``z.partition(shape)``): stores at run-time indices
land inside the block's own sub-tensor and nowhere else, on both backends; the race detector
agrees."""
from __future__ import annotations

import numpy as np
import pytest
from triton_interp import triton_interpreter

import safetile as ct


@ct.entry
def append_row(cache: ct.Mut[ct.f32, (1, "T", "D")], rows: ct.Ref[ct.f32, (-1, "D")], pos: ct.Ref[ct.i32, (1,)],
               shift: int):
    p = ct.load(pos, (0,), ()) + shift
    t = rows.partition((1, D)).load((ct.bid(0), 0)).reshape((1, 1, D))
    cache.partition((1, 1, D)).store(t, (0, p, 0))


@ct.entry
def tile_square(z: ct.Mut[ct.f32, (4, 8)], k: int):
    """Each block writes the 2x2 tile at (1, k) of its own (4, 8) sub-tensor (k past the end: nothing)."""
    z.partition((2, 2)).store(ct.full((2, 2), 1.0, ct.float32) + ct.bid(0).astype(ct.float32), (1, k))


def run_append(shift):
    cache = ct.full((3, 8, 4), -1.0).sync()
    rows = np.arange(12, dtype=np.float32).reshape(3, 4)
    pos = ct.from_numpy(np.array([2], np.int32)).sync()
    p = cache.partition_prefix((1,))
    assert ct.detect_races(append_row, None, (p, rows, pos, shift), raise_on_race=False).racy_elements == 0
    p, _, pos, _ = append_row(p, rows, pos, shift).sync()
    return p.unpartition().to_numpy(), rows


@pytest.mark.parametrize("backend", ["cpu", "triton"])
@pytest.mark.parametrize("shift", [0, 5, -2, -3, -9, 6, 100])
def test_run_time_row_stays_inside_the_blocks_sub_tensor(backend, shift):
    if backend == "triton":
        with triton_interpreter():
            out, rows = run_append(shift)
    else:
        out, rows = run_append(shift)
    want = np.full((3, 8, 4), -1.0, np.float32)
    if 0 <= 2 + shift < 8:
        want[:, 2 + shift] = rows
    assert np.array_equal(out, want)  # an index past the sub-tensor writes nothing anywhere


def test_tiles_of_a_sub_tensor_never_reach_the_neighbour():
    z = ct.full((8, 8), np.nan).sync()
    for k in range(-1, 6):
        p = z.partition((4, 8))
        assert ct.detect_races(tile_square, None, (p, k), raise_on_race=False).racy_elements == 0
        z, _ = tile_square(p, k).sync()
        z = z.unpartition()
    out = z.to_numpy()
    for b in range(2):  # columns 0..7 of rows 4b+2, 4b+3 written by block b only (k = 0..3)
        assert np.all(out[4 * b + 2: 4 * b + 4] == 1.0 + b)
        assert np.all(np.isnan(out[4 * b: 4 * b + 2]))


def test_wrong_tile_shape_is_a_compile_error():
    @ct.entry
    def bad(z: ct.Mut[ct.f32, (4, 8)]):
        z.partition((2, 2)).store(ct.zeros((2, 4), ct.float32), (0, 0))
    with pytest.raises(ct.TileSafetyError, match="must have that shape"):
        bad(ct.zeros((8, 8)).sync().partition((4, 8))).sync()


# ------------------------------------------------------------------ the compiled-IR check

def _compiled(monkeypatch):
    """append_row's IR and parameter keys, compiled with the ownership check switched off (to forge
    them below)."""
    import sys
    seen = []
    monkeypatch.setattr(sys.modules["safetile.safe.entry"], "verify_entry", lambda fn, keys: seen.append(keys))
    kernel = ct.entry(append_row.__wrapped__)  # its own compile cache
    cache = ct.full((3, 8, 4), -1.0).sync().partition_prefix((1,))
    fn = kernel.compile(cache, np.zeros((3, 4), np.float32), np.array([2], np.int32), 0)
    return fn, seen[0]


def _ops(fn, name):
    from safetile.ir.core import walk
    return [op for op in walk(fn.body) if op.name == name]


def _forge_constant(fn, op_name, old, new):
    """Change the constant operand equal to ``old`` of every ``op_name`` op to ``new``."""
    from safetile.safe.verify import _constant, _strip
    for op in _ops(fn, op_name):
        for v in op.operands:
            c = _strip(v).owner
            if c is not None and c.name == "constant" and _constant(_strip(v)) == old:
                c.attrs["value"] = new


@pytest.mark.parametrize("forge, message", [
    (lambda fn: _forge_constant(fn, "less", 1, 2), "0 <= r < 1"),  # the mask lets r reach the next block
    (lambda fn: _forge_constant(fn, "greater_equal", 0, -1), "0 <= r < 1"),
    (lambda fn: _forge_constant(fn, "mul", 1, 2), "bid\\(0\\) \\* 1"),  # another block's origin
    (lambda fn: [op.attrs.update(axis=1) for op in _ops(fn, "bid")], "bid\\(0\\)"),
    (lambda fn: [op.attrs.update(has_mask=False) for op in _ops(fn, "scatter")], "only possible through"),
    (lambda fn: [op.operands.__setitem__(-1, _ops(fn, "greater_equal")[0].result) for op in _ops(fn, "scatter")],
     "0 <= r < 1"),  # the upper bound dropped from the mask
])
def test_forged_owned_scatters_are_refused(monkeypatch, forge, message):
    from safetile.safe.verify import verify_entry
    fn, keys = _compiled(monkeypatch)
    verify_entry(fn, keys)  # the genuine kernel passes
    forge(fn)
    with pytest.raises(ct.TileSafetyError, match=message):
        verify_entry(fn, keys)
