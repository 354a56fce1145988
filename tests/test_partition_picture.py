"""Pictures of partitions (``p.show()``): the text picture's cells are checked against what a
kernel launched on the same partition actually does (which block stores which sub-tensor, in
which order for a mapped partition); images are written with matplotlib."""
from __future__ import annotations

import builtins
import re

import pytest

import safetile as ct
from safetile.safe import picture


@ct.entry
def stamp_owner(z: ct.Mut[ct.i32, ("BM", "BN")]):
    z.store(ct.full((BM, BN), ct.bid(0) * 1000 + ct.bid(1), dtype=ct.int32))  # noqa: F821


@ct.entry
def stamp_walk(c: ct.MappedMut[ct.i32, ("BM", "BN")]):
    step = 0
    for idx in c.iter_indices():
        c.store(ct.full((BM, BN), ct.bid(0) * 1000 + step, dtype=ct.int32), idx)  # noqa: F821
        step = step + 1


def _cells(text: str) -> dict[tuple[int, int], str]:
    """(row start, column start) -> cell text, read from a 2-D text picture's table."""
    lines = text.splitlines()
    head = next(i for i, line in enumerate(lines) if re.match(r"^\s+0:\d+", line))
    cols = [int(c.split(":")[0]) for c in lines[head].split()]
    out = {}
    for line in lines[head + 1:]:
        m = re.match(r"^\s*(\d+):\d+\s+(.*)$", line)
        if not m:
            break
        for c, cell in zip(cols, m.group(2).split()):
            out[(int(m.group(1)), c)] = cell
    return out


def test_plain_partition_cells_are_the_blocks_that_store_there(capsys):
    shape, tile = (300, 200), (128, 64)
    p = ct.zeros(shape, dtype=ct.int32).sync().partition(tile)
    text = p.show()
    assert capsys.readouterr().out.strip() == text.strip()
    assert f"launch grid {tuple(p.grid()) + (1,)}" in text and "12 sub-tensors of 128x64" in text
    (p,) = stamp_owner(p).sync()
    owner = p.to_numpy()
    cells = _cells(text)
    assert len(cells) == 12
    for (r, c), cell in cells.items():
        i, j = (int(v) for v in cell.rstrip("+").split(","))
        assert owner[r, c] == i * 1000 + j  # the block with bid (i, j) stored this sub-tensor
        partial = r + tile[0] > shape[0] or c + tile[1] > shape[1]
        assert cell.endswith("+") == partial
    assert "rows 256:300 are 44 of 128; columns 192:200 are 8 of 64" in text


def test_mapped_partition_cells_and_sequences_follow_the_kernel():
    shape, tile, n = (100, 96), (32, 32), 5
    m = ct.zeros(shape, dtype=ct.int32).sync().partition(tile).map(n)
    text = picture.text(picture.layout_of(m))
    (m,) = stamp_walk(m).sync()
    stored = m.to_numpy()
    cells = _cells(text)
    assert len(cells) == 12
    for (r, c), cell in cells.items():
        block, step = (int(v) for v in re.fullmatch(r"b(\d+)\.(\d+)\+?", cell).groups())
        assert stored[r, c] == block * 1000 + step
    for b in range(n):  # each block's listed walk: the sub-tensors holding its id, in step order
        line = next(line for line in text.splitlines() if line.startswith(f"block {b}:"))
        walk = [tuple(int(v) for v in t.split(",")) for t in re.findall(r"\(([\d,]+)\)", line)]
        visited = sorted((stored[i * 32, j * 32] % 1000, (i, j)) for i in range(4) for j in range(3)
                         if stored[i * 32, j * 32] // 1000 == b)
        assert walk == [ij for _, ij in visited]


def test_large_grids_are_elided_rank3_and_prefix_partitions():
    big = ct.zeros((5000, 3000)).sync().partition((64, 64))
    text = picture.text(picture.layout_of(big))
    assert "launch grid (79, 47, 1)" in text and "..." in text and len(text.splitlines()) < 16
    assert "78,46+" in text and "0,0" in text
    p3 = ct.zeros((8, 8, 10)).sync().partition((4, 4, 4))
    t3 = picture.text(picture.layout_of(p3))
    assert t3.count("-- axis 2") == 3 and "1,1,2+" in t3 and "axis-2 elements 8:10 are 2 of 4" in t3
    pp = ct.zeros((8, 6, 32)).sync().partition_prefix((4, 2))
    tp = picture.text(picture.layout_of(pp))
    assert "sub-tensors of 4x2x32 (axes 2.. whole in each)" in tp and "+" not in tp
    many = ct.zeros((64, 64)).sync().partition((16, 16)).map(13)
    tm = picture.text(picture.layout_of(many))
    assert "block 12: (3,0)" in tm and "..." in tm


def test_show_writes_text_and_images(tmp_path):
    pytest.importorskip("matplotlib")
    p = ct.zeros((300, 200)).sync().partition((128, 64))
    assert p.show(tmp_path / "p.txt").read_text().startswith("partition#")
    png = p.show(tmp_path / "p.png")
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    m = ct.zeros((100, 96)).sync().partition((32, 32)).map(5)
    svg = m.show(tmp_path / "m.svg").read_text()
    assert "<svg" in svg
    fig = picture.figure(m)
    texts = {t.get_text() for ax in fig.axes for t in ax.texts}
    assert {"b0.0", "b4.1", "b1.2"} <= texts


def test_without_matplotlib_images_are_refused_with_the_way_out(monkeypatch, tmp_path):
    real_import = builtins.__import__

    def no_matplotlib(name, *args, **kwargs):
        if name.startswith("matplotlib"):
            raise ImportError("No module named 'matplotlib'")
        return real_import(name, *args, **kwargs)
    monkeypatch.setattr(builtins, "__import__", no_matplotlib)
    p = ct.zeros(1000).sync().partition(128)
    with pytest.raises(ImportError, match=r"needs matplotlib.*show\(\) without a path gives a text picture"):
        p.show(tmp_path / "p.png")
    assert "896:1000" in p.show()  # the text picture needs nothing


def test_show_refuses_a_moved_partition():
    p = ct.zeros(256, dtype=ct.int32).sync().partition(64)
    p2 = p.map(2)
    with pytest.raises(ct.UseAfterMoveError, match="cannot be shown"):
        p.show()
    assert "block 1: (1) -> (3)" in p2.show()


def test_the_example_prints_both_pictures(capsys):
    import importlib.util
    from pathlib import Path
    path = Path(__file__).resolve().parent.parent / "examples" / "safe" / "show_partition.py"
    spec = importlib.util.spec_from_file_location("safetile_show_partition_example", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    mod.main()
    out = capsys.readouterr().out
    assert "in 12 sub-tensors of 128x64" in out and "block 4: (1,1) -> (3,0)" in out
