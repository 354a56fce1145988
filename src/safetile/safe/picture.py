"""Pictures of partitions: which tile block owns which sub-tensor, the edge sub-tensors, the
launch grid, and for a mapped partition each block's sequence of sub-tensors.

``p.show()`` returns (and prints) a compact text picture; ``p.show("p.png")`` (or ``.svg``,
``.pdf``) draws it with matplotlib, ``p.show("p.txt")`` writes the text. ``figure(p)`` gives
the matplotlib figure itself (for notebooks). Plain partitions: block ``(i, j)`` of the
grid owns sub-tensor ``(i, j)``. Mapped partitions: sub-tensors are numbered row-major and
block ``b`` of ``n`` visits ``b, b + n, b + 2n, ...``; a cell ``b2.1`` is visited by block 2 as
its second sub-tensor (counting from 0).
"""
from __future__ import annotations

import itertools
import math
import os
import textwrap
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..errors import ArgumentError

SHOW = 8  # sub-tensors shown per axis in text before the middle is elided
LABELS = 256  # most cells labelled in a drawing


@dataclass(frozen=True)
class Layout:
    """What a picture shows, independent of how it is drawn."""

    label: str  # the partition's label
    dtype: str
    shape: tuple[int, ...]  # the tensor's shape
    pshape: tuple[int, ...]  # partition sizes of the partitioned (leading) axes
    blocks: int | None  # persistent tile blocks of a mapped partition, else None

    @property
    def grid(self) -> tuple[int, ...]:
        return tuple(-(-n // s) for n, s in zip(self.shape, self.pshape))

    @property
    def count(self) -> int:
        return math.prod(self.grid)

    def launch_grid(self) -> tuple[int, int, int]:
        g = (self.blocks,) if self.blocks is not None else self.grid
        return tuple(g) + (1,) * (3 - len(g))  # type: ignore[return-value]

    def owner(self, index: tuple[int, ...]) -> tuple[Any, int]:
        """(the block that stores sub-tensor ``index``, which of its sub-tensors it is)."""
        if self.blocks is None:
            return index, 0
        linear = 0
        for i, g in zip(index, self.grid):
            linear = linear * g + i
        return linear % self.blocks, linear // self.blocks

    def cell(self, index: tuple[int, ...]) -> str:
        block, step = self.owner(index)
        text = f"b{block}.{step}" if self.blocks is not None else ",".join(map(str, index))
        return text + ("+" if self.partial(index) else "")

    def partial(self, index: tuple[int, ...]) -> bool:
        return any((i + 1) * s > n for i, s, n in zip(index, self.pshape, self.shape))

    def extent(self, axis: int, i: int) -> tuple[int, int]:
        s = self.pshape[axis]
        return i * s, min((i + 1) * s, self.shape[axis])

    def header(self) -> list[str]:
        k = len(self.pshape)
        sub = "x".join(map(str, self.pshape + self.shape[k:]))
        name = self.label.split("[")[0]
        lines = [f"{name}: {self.dtype} {'x'.join(map(str, self.shape))} in {self.count} sub-tensors of {sub}"
                 + (f" (axes {k}.. whole in each)" if k < len(self.shape) else "")]
        g3 = self.launch_grid()
        if self.blocks is None:
            bids = ", ".join(f"ct.bid({a})={'ijk'[a]}" for a in range(k))
            lines.append(f"launch grid {g3}: cell {','.join('ijk'[:k])} is the sub-tensor owned by the tile block "
                         f"with {bids}")
        else:
            lines.append(f"launch grid {g3}: {self.blocks} persistent tile blocks; block b stores sub-tensors b, "
                         f"b+{self.blocks}, b+{2 * self.blocks}, ... (row-major); cell bB.S = block B's S-th")
        return lines

    def footer(self) -> list[str]:
        notes = []
        for axis, (n, s) in enumerate(zip(self.shape, self.pshape)):
            if n % s:
                names = ("rows", "columns", "axis-2 elements")
                notes.append(f"{names[axis] if len(self.pshape) > 1 else 'elements'} {n - n % s}:{n} are {n % s} "
                             f"of {s}")
        if notes:
            notes = ["+ edge sub-tensor (partial; loads are padded, stores past the edge are dropped): "
                     + "; ".join(notes)]
        if self.blocks is not None:
            notes += self.sequences()
        return notes

    def sequences(self) -> list[str]:
        n = self.blocks or 0
        total = self.count
        shown = list(range(n)) if n <= SHOW else list(range(SHOW // 2)) + [None] + list(range(n - 2, n))
        out = []
        for b in shown:
            if b is None:
                out.append("...")
                continue
            visits = list(range(b, total, n))
            idx = [_unravel(v, self.grid) for v in (visits if len(visits) <= 6 else visits[:4] + visits[-1:])]
            parts = ["(" + ",".join(map(str, i)) + ")" for i in idx]
            if len(visits) > 6:
                parts.insert(4, "...")
            out.append(f"block {b}: " + " -> ".join(parts))
        return out


def layout_of(p: Any) -> Layout:
    """The layout of a ``Partition`` or ``MappedPartition``."""
    mapped = getattr(p, "_partition", None)
    part = mapped if mapped is not None else p
    t = part._tensor
    return Layout(p.label, t._dtype.name, tuple(int(n) for n in t._data.shape), tuple(part._pshape),
                  p._n if mapped is not None else None)


def _unravel(linear: int, grid: tuple[int, ...]) -> tuple[int, ...]:
    out = []
    for g in reversed(grid):
        out.append(linear % g)
        linear //= g
    return tuple(reversed(out))


def _shown(n: int) -> list[int | None]:
    return list(range(n)) if n <= SHOW else list(range(SHOW // 2)) + [None] + list(range(n - SHOW // 2 + 1, n))


# ---------------------------------------------------------------------------------- text

def text(lay: Layout) -> str:
    """The compact text picture."""
    k = len(lay.pshape)
    lines = lay.header()
    if k == 1:
        lines += _table(lay, [()], lambda r, c: (c,))
    elif k == 2:
        lines += _table(lay, _shown(lay.grid[0]), lambda r, c: (r, c))
    else:
        for z in _shown(lay.grid[2]):
            if z is None:
                lines.append("...")
                continue
            a, b = lay.extent(2, z)
            lines.append(f"-- axis 2, sub-tensors k={z} (elements {a}:{b})")
            lines += _table(lay, _shown(lay.grid[0]), lambda r, c, z=z: (r, c, z))
    return "\n".join(lines + lay.footer())


def _table(lay: Layout, rows: list, index) -> list[str]:
    cols = _shown(lay.grid[-1] if len(lay.pshape) == 1 else lay.grid[1])
    col_axis = 0 if len(lay.pshape) == 1 else 1
    head = ["" if c is None else "{}:{}".format(*lay.extent(col_axis, c)) for c in cols]
    body = [[("..." if r is None or c is None else lay.cell(index(r, c))) for c in cols] for r in rows]
    left = ["" if r == () else "..." if r is None else "{}:{}".format(*lay.extent(0, r)) for r in rows]
    w = max(len(x) for x in head + [x for row in body for x in row])
    lw = max(len(x) for x in left)
    out = [" " * lw + "  " + " ".join(h.rjust(w) for h in head)]
    for name, row in zip(left, body):
        out.append(name.rjust(lw) + "  " + " ".join(x.rjust(w) for x in row))
    return out


# ---------------------------------------------------------------------------------- drawing

def figure(p: Any):
    """A matplotlib figure of the partition (``p`` or its ``Layout``); needs matplotlib."""
    lay = p if isinstance(p, Layout) else layout_of(p)
    try:
        from matplotlib.figure import Figure
    except ImportError:
        raise ImportError("drawing a partition needs matplotlib (pip install matplotlib, or safetile[plot]); "
                          "p.show() without a path gives a text picture") from None
    k = len(lay.pshape)
    slices = list(range(min(lay.grid[2], 4))) if k == 3 else [None]
    fig = Figure(figsize=(max(4.2 * len(slices) + 1.6, 6.4), 5.0 if k > 1 else 2.4), layout="constrained")
    axes = fig.subplots(1, len(slices), squeeze=False)[0]
    for ax, z in zip(axes, slices):
        _draw(ax, lay, z)
    fig.suptitle("\n".join(textwrap.fill(h, 90) for h in lay.header()), fontsize=8)
    notes = [n for n in lay.footer() if not n.startswith("block ") and n != "..."]
    if notes:
        fig.supxlabel("\n".join(textwrap.fill(n, 100) for n in notes), fontsize=7)
    return fig


def _draw(ax, lay: Layout, z: int | None) -> None:
    import numpy as np
    from matplotlib import colormaps
    from matplotlib.colors import ListedColormap
    from matplotlib.patches import Rectangle
    k = len(lay.pshape)
    rows_n, cols_n = (1, lay.shape[0]) if k == 1 else lay.shape[:2]
    pr, pc = (1, lay.pshape[0]) if k == 1 else lay.pshape[:2]
    gr, gc = (1, lay.grid[0]) if k == 1 else lay.grid[:2]

    def index(r, c):
        return (c,) if k == 1 else (r, c) if k == 2 else (r, c, z)
    palette = colormaps["tab10" if (lay.blocks or 11) <= 10 else "tab20"]
    order = list(range(0, palette.N, 2)) + list(range(1, palette.N, 2)) if palette.N == 20 else range(palette.N)
    colors = ListedColormap([palette(i) for i in order])  # tab20: every hue before its light twin
    ids = np.array([[_color_id(lay, index(r, c)) % palette.N for c in range(gc)] for r in range(gr)])
    xs = np.minimum(np.arange(gc + 1) * pc, cols_n)
    ys = np.minimum(np.arange(gr + 1) * pr, rows_n)
    ax.pcolormesh(xs, ys, ids, cmap=colors, vmin=-0.5, vmax=palette.N - 0.5, alpha=0.75,
                  edgecolors="white" if gr * gc <= 4 * LABELS else "face", linewidth=0.8)
    full_w, full_h = gc * pc, gr * pr
    for x0, y0, w, h in ((cols_n, 0, full_w - cols_n, full_h), (0, rows_n, cols_n, full_h - rows_n)):
        if w > 0 and h > 0:  # the edge tiles' parts past the tensor: padded on load, dropped on store
            ax.add_patch(Rectangle((x0, y0), w, h, fill=False, hatch="///", edgecolor="0.6", linewidth=0))
    for r in range(gr):
        for c in range(gc):
            if lay.partial(index(r, c)):
                ax.add_patch(Rectangle((c * pc, r * pr), pc, pr, fill=False, linestyle="--", edgecolor="0.35",
                                       linewidth=0.7))
    ax.add_patch(Rectangle((0, 0), cols_n, rows_n, fill=False, edgecolor="black", linewidth=1.2))
    if gr * gc <= LABELS:
        size = 8 if gr * gc <= 64 else 5
        for r in range(gr):
            for c in range(gc):
                cx, cy = (xs[c] + xs[c + 1]) / 2, (ys[r] + ys[r + 1]) / 2
                ax.text(cx, cy, lay.cell(index(r, c)).rstrip("+"), ha="center", va="center", fontsize=size)
    if lay.blocks is not None and lay.count <= 64:  # each block's walk over its sub-tensors
        for b in range(lay.blocks):
            pts = [_unravel(v, lay.grid) for v in range(b, lay.count, lay.blocks)]
            pts = [i for i in pts if k < 3 or i[2] == z]
            centre = [((xs[i[-1] if k == 1 else i[1]] + xs[(i[-1] if k == 1 else i[1]) + 1]) / 2,
                       0.5 if k == 1 else (ys[i[0]] + ys[i[0] + 1]) / 2) for i in pts]
            shade = tuple(0.55 * v for v in colors(b % palette.N)[:3])
            for a, e in itertools.pairwise(centre):
                ax.annotate("", xy=e, xytext=a, arrowprops={"arrowstyle": "->", "color": shade, "lw": 1.1,
                                                            "shrinkA": 9, "shrinkB": 9})
    ax.set_xlim(0, max(full_w, cols_n))
    ax.set_ylim(max(full_h, rows_n), 0)
    ax.set_xlabel("axis 1" if k > 1 else "axis 0", fontsize=7)
    if k > 1:
        ax.set_ylabel("axis 0", fontsize=7)
    else:
        ax.set_yticks([])
    ax.tick_params(labelsize=6)
    if z is not None:
        lo, hi = lay.extent(2, z)
        ax.set_title(f"axis 2 sub-tensors k={z} ({lo}:{hi})", fontsize=7)
    ax.set_aspect("equal" if k > 1 and max(rows_n, cols_n) <= 8 * min(rows_n, cols_n) else "auto")


def _color_id(lay: Layout, index: tuple[int, ...]) -> int:
    """Mapped partitions: the owning block. Plain: neighbours in the grid get different colours."""
    block, _ = lay.owner(index)
    if lay.blocks is not None:
        return block
    return sum(i * m for i, m in zip(index, (3, 1, 5)))


# ---------------------------------------------------------------------------------- show

def show(p: Any, path: str | Path | None = None) -> str | Path:
    """The text picture (printed and returned) or, with ``path``, a file: ``.txt`` text, any other
    suffix an image drawn with matplotlib (``.png``, ``.svg``, ``.pdf``)."""
    lay = layout_of(p)
    if path is not None and not isinstance(path, (str, os.PathLike)):
        raise ArgumentError(f"show: a path is a file name (str or os.PathLike), got {type(path).__name__}")
    if lay.count == 0:  # nothing to draw: the text says so, wherever it goes
        picture = "\n".join(lay.header() + ["(no sub-tensors: the tensor is empty; a launch over it is refused)"])
    if path is None:
        picture = picture if lay.count == 0 else text(lay)
        print(picture)
        return picture
    path = Path(path)
    suffix = path.suffix.lower().lstrip(".")
    if suffix == "txt" or lay.count == 0:
        if suffix != "txt":
            raise ArgumentError(f"show: {lay.label} is empty, there is nothing to draw; use a .txt path or no path")
        path.write_text((picture if lay.count == 0 else text(lay)) + "\n")
        return path
    fig = figure(lay)
    formats = fig.canvas.get_supported_filetypes()
    if suffix not in formats:
        raise ArgumentError(f"show: cannot draw to {path.name!r}: the suffix names no image format matplotlib writes; "
                            f"use .txt or one of {', '.join('.' + f for f in sorted(formats))}")
    fig.savefig(path, dpi=150)
    return path
