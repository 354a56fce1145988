"""GEMM kernels for the benchmark: C = A @ B with a K loop of ``ct.mma`` (fp32 accumulate).

``matmul``: one output tile per block, blocks walk the output in GROUP-row bands (L2 reuse).
``matmul_persistent``: one block per SM walking the tiles. ``matmul_streamk``: a persistent
grid where full waves of tiles go one tile per block and the rest (the last partial wave,
which would leave SMs idle) is split evenly by K iterations over every block ("stream-K");
a tile shared by several blocks is finished by whichever arrives last, which adds the
others' partial sums from a workspace. ``plan_streamk`` sizes the grid and buffers.
``matmul_splittail``: one tile per block for all but the tiles of the last partial wave, whose K
loops are split into SPLIT slices, one block each, launched last (``plan_splittail``)."""
from __future__ import annotations

import safetile as ct

ZERO = ct.PaddingMode.ZERO


def _band(t, num_m, num_n, GROUP):
    """Tile ``t`` in GROUP-row bands: (tile row, tile column)."""
    width = GROUP * num_n
    first_m = (t // width) * GROUP
    rows = ct.minimum(num_m - first_m, GROUP)
    return first_m + (t % width) % rows, (t % width) // rows


@ct.kernel
def matmul(A, B, C, BM: ct.Constant[int], BN: ct.Constant[int], BK: ct.Constant[int],
           GROUP: ct.Constant[int], TMA: ct.Constant[bool]):
    bm, bn = _band(ct.bid(0), ct.cdiv(A.shape[0], BM), ct.cdiv(B.shape[1], BN), GROUP)
    acc = ct.zeros((BM, BN), ct.float32)
    for k in range(ct.cdiv(A.shape[1], BK)):
        a = ct.load(A, (bm, k), (BM, BK), padding_mode=ZERO, allow_tma=TMA)
        b = ct.load(B, (k, bn), (BK, BN), padding_mode=ZERO, allow_tma=TMA)
        acc = ct.mma(a, b, acc)
    ct.store(C, (bm, bn), acc.astype(C.dtype), allow_tma=TMA)


@ct.kernel
def gemm_2d(A, B, C, BM: ct.Constant[int], BN: ct.Constant[int], BK: ct.Constant[int]):
    """2-D grid, block (i, j) computes C tile (i, j) (the unchecked twin of the safe-style GEMM)."""
    acc = ct.zeros((BM, BN), ct.float32)
    for k in range(ct.cdiv(A.shape[1], BK)):
        acc = ct.mma(ct.load(A, (ct.bid(0), k), (BM, BK), padding_mode=ZERO),
                     ct.load(B, (k, ct.bid(1)), (BK, BN), padding_mode=ZERO), acc)
    ct.store(C, (ct.bid(0), ct.bid(1)), acc.astype(C.dtype))


@ct.kernel
def matmul_persistent(A, B, C, BM: ct.Constant[int], BN: ct.Constant[int], BK: ct.Constant[int],
                      GROUP: ct.Constant[int], NPROG: ct.Constant[int]):
    """Persistent blocks store C tiles without a descriptor: a TMA store stages the tile in shared
    memory, which a persistent loop cannot take from the pipeline's buffers (128×256 tiles then
    fit 4 stages instead of 3)."""
    num_m = ct.cdiv(A.shape[0], BM)
    num_n = ct.cdiv(B.shape[1], BN)
    for t in range(ct.bid(0), num_m * num_n, NPROG):
        bm, bn = _band(t, num_m, num_n, GROUP)
        acc = ct.zeros((BM, BN), ct.float32)
        for k in range(ct.cdiv(A.shape[1], BK)):
            acc = ct.mma(ct.load(A, (bm, k), (BM, BK), padding_mode=ZERO),
                         ct.load(B, (k, bn), (BK, BN), padding_mode=ZERO), acc)
        ct.store(C, (bm, bn), acc.astype(C.dtype), allow_tma=False)


def _first_block(i, total, NPROG):
    """The block whose stream-K range holds iteration ``i`` (block p starts at p * total // NPROG)."""
    return ((i + 1) * NPROG - 1) // total


def _streamk_whole_tiles(A, B, C, pid, num_m, num_n, kt, DP_TILES, BM, BN, BK, GROUP, NPROG, TMA_C):
    """The tiles below DP_TILES, one per block in turn (a persistent loop)."""
    for t in range(pid, DP_TILES, NPROG):
        bm, bn = _band(t, num_m, num_n, GROUP)
        acc = ct.zeros((BM, BN), ct.float32)
        for k in range(kt):
            acc = ct.mma(ct.load(A, (bm, k), (BM, BK), padding_mode=ZERO),
                         ct.load(B, (k, bn), (BK, BN), padding_mode=ZERO), acc)
        ct.store(C, (bm, bn), acc.astype(C.dtype), allow_tma=TMA_C)


def _streamk_split_tiles(A, B, C, Work, Locks, pid, num_m, num_n, kt, DP_TILES, BM, BN, BK, GROUP, NPROG):
    """This block's equal share of the K iterations of the tiles from DP_TILES on."""
    total = (num_m * num_n - DP_TILES) * kt
    start = pid * total // NPROG
    end = (pid + 1) * total // NPROG
    if start < end:
        first_tile = start // kt
        for u in range(first_tile, (end - 1) // kt + 1):
            t = DP_TILES + u
            bm, bn = _band(t, num_m, num_n, GROUP)
            k0 = ct.maximum(start, u * kt) - u * kt
            k1 = ct.minimum(end, (u + 1) * kt) - u * kt
            acc = ct.zeros((BM, BN), ct.float32)
            for k in range(k0, k1):
                acc = ct.mma(ct.load(A, (bm, k), (BM, BK), padding_mode=ZERO),
                             ct.load(B, (k, bn), (BK, BN), padding_mode=ZERO), acc)
            if k0 == 0 and k1 == kt:
                ct.store(C, (bm, bn), acc.astype(C.dtype), allow_tma=False)
            else:
                slot = 0 if u == first_tile else 1
                ct.store(Work, (2 * pid + slot, 0), acc, allow_tma=False)  # no 128 KB staging buffer
                p0 = _first_block(u * kt, total, NPROG)
                p1 = _first_block((u + 1) * kt - 1, total, NPROG)
                arrived = ct.atomic_add(Locks, (u,), 1)  # releases the partial stored above
                if arrived == p1 - p0:  # the last: sum every partial, half a tile at a time
                    for h in range(2):
                        part = ct.zeros((BM // 2, BN), ct.float32)
                        for p in range(p0, p1 + 1):  # block p stored the tile in slot 0 if it is its first
                            slot_p = ct.where((p * total // NPROG) // kt == u, 0, 1)
                            part += ct.load(Work, (2 * (2 * p + slot_p) + h, 0), (BM // 2, BN))
                        ct.store(C, (2 * bm + h, bn), part.astype(C.dtype), allow_tma=False)
                    ct.atomic_xchg(Locks, (u,), 0)


@ct.kernel
def matmul_streamk(A, B, C, Work, Locks, DP_TILES, BM: ct.Constant[int], BN: ct.Constant[int],
                   BK: ct.Constant[int], GROUP: ct.Constant[int], NPROG: ct.Constant[int],
                   SK_FIRST: ct.Constant[bool], TMA_C: ct.Constant[bool]):
    """Tiles below DP_TILES: one per block (persistent). The others' K iterations are split into
    NPROG equal ranges. A block that computes only part of a tile stores its partial sum in
    Work (tile 2 * block + slot: slot 0 for its first stream-K tile, 1 for its last) and counts itself in
    Locks[tile - DP_TILES]; the block that arrives last adds the others' partial sums, stores
    the tile and resets the counter for the next launch. ``Work``: (2 * NPROG * BM, BN) float32.
    SK_FIRST: the split tiles before the whole ones (their sums are then added while other blocks
    still have whole tiles to do, not at the kernel's end). TMA_C: whole tiles stored through a
    descriptor (it stages the tile in shared memory: one pipeline stage fewer may fit); otherwise
    C tiles are stored without descriptors, as in ``matmul_persistent``."""
    pid = ct.bid(0)
    num_m = ct.cdiv(A.shape[0], BM)
    num_n = ct.cdiv(B.shape[1], BN)
    kt = ct.cdiv(A.shape[1], BK)
    if SK_FIRST:
        _streamk_split_tiles(A, B, C, Work, Locks, pid, num_m, num_n, kt, DP_TILES, BM, BN, BK, GROUP, NPROG)
        _streamk_whole_tiles(A, B, C, pid, num_m, num_n, kt, DP_TILES, BM, BN, BK, GROUP, NPROG, TMA_C)
    else:
        _streamk_whole_tiles(A, B, C, pid, num_m, num_n, kt, DP_TILES, BM, BN, BK, GROUP, NPROG, TMA_C)
        _streamk_split_tiles(A, B, C, Work, Locks, pid, num_m, num_n, kt, DP_TILES, BM, BN, BK, GROUP, NPROG)


def plan_streamk(m: int, n: int, k: int, bm: int, bn: int, bk: int, sms: int) -> tuple[int, int]:
    """(data-parallel tiles, stream-K tiles): whole waves run one tile per block; the tiles of the
    partial last wave are split by K iterations over every block (no split when the tiles fill
    whole waves). Splitting a full wave too balanced no better on an H100 and doubled the
    partial sums written and read (3000×5000×4096: 15 % slower than one tile per block).
    Every block must get at least one K iteration (a tile's last block counts the others'
    arrivals, and a block with no iterations never arrives): where the partial wave has fewer
    iterations than there are blocks, whole waves join it; (tiles, 0) where even all the tiles
    have too few (8192×8192×1000 with 128×128 tiles: 4 tiles × 16 iterations for 132 blocks)."""
    tiles = -(-m // bm) * -(-n // bn)
    kt = -(-k // bk)
    dp = tiles // sms * sms
    if dp == tiles:
        return dp, 0
    while dp > 0 and (tiles - dp) * kt < sms:
        dp -= sms
    return (dp, tiles - dp) if (tiles - dp) * kt >= sms else (tiles, 0)


@ct.kernel
def matmul_splittail(A, B, C, Work, Locks, DP_TILES, BM: ct.Constant[int], BN: ct.Constant[int],
                     BK: ct.Constant[int], GROUP: ct.Constant[int], SPLIT: ct.Constant[int]):
    """Blocks below DP_TILES compute one C tile each, as ``matmul``. The tiles after them (those of
    the partial last wave, which would leave SMs idle) get SPLIT blocks each, one K slice per
    block; these blocks come last, so they fill the SMs that whole tiles free. A slice block
    stores its partial sum in Work (row block pid - DP_TILES) and counts itself in
    Locks[tile - DP_TILES]; the last to arrive adds the SPLIT partials (half a tile at a time: the
    registers hold no more), stores the C tile and resets the counter for the next launch.
    ``Work``: ((tiles - DP_TILES) * SPLIT * BM, BN) float32. Unlike stream-K, a block never
    crosses a tile boundary: one pipeline fill and one partial per block."""
    pid = ct.bid(0)
    num_m = ct.cdiv(A.shape[0], BM)
    num_n = ct.cdiv(B.shape[1], BN)
    kt = ct.cdiv(A.shape[1], BK)
    if pid < DP_TILES:
        bm, bn = _band(pid, num_m, num_n, GROUP)
        acc = ct.zeros((BM, BN), ct.float32)
        for k in range(kt):
            acc = ct.mma(ct.load(A, (bm, k), (BM, BK), padding_mode=ZERO),
                         ct.load(B, (k, bn), (BK, BN), padding_mode=ZERO), acc)
        ct.store(C, (bm, bn), acc.astype(C.dtype))
    else:
        j = pid - DP_TILES
        u = j // SPLIT
        s = j % SPLIT
        bm, bn = _band(DP_TILES + u, num_m, num_n, GROUP)
        acc = ct.zeros((BM, BN), ct.float32)
        for k in range(s * kt // SPLIT, (s + 1) * kt // SPLIT):
            acc = ct.mma(ct.load(A, (bm, k), (BM, BK), padding_mode=ZERO),
                         ct.load(B, (k, bn), (BK, BN), padding_mode=ZERO), acc)
        ct.store(Work, (j, 0), acc, allow_tma=False)
        arrived = ct.atomic_add(Locks, (u,), 1)  # releases the partial stored above
        if arrived == SPLIT - 1:
            for h in range(2):
                part = ct.zeros((BM // 2, BN), ct.float32)
                for p in range(SPLIT):
                    part += ct.load(Work, (2 * (u * SPLIT + p) + h, 0), (BM // 2, BN))
                ct.store(C, (2 * bm + h, bn), part.astype(C.dtype), allow_tma=False)
            ct.atomic_xchg(Locks, (u,), 0)


def plan_splittail(m: int, n: int, k: int, bm: int, bn: int, bk: int, slots: int,
                   max_split: int = 8, min_slice: int = 4) -> tuple[int, int]:
    """(whole tiles, SPLIT) for ``matmul_splittail`` on ``slots`` concurrent blocks: the tiles past
    the last whole wave are split into the number of K slices (2..max_split, each at least
    ``min_slice`` iterations) whose waves of slices take the least time, counted in tiles
    (ceil(tail * SPLIT / slots) / SPLIT); (tiles, 1) where no split beats one tile per block.
    3000x5000 with 128x256 tiles on 132 SMs: 84 tail tiles, SPLIT 3: 252 slices in two waves,
    2/3 of a tile's time instead of one."""
    tiles = -(-m // bm) * -(-n // bn)
    tail = tiles % slots
    kt = -(-k // bk)
    best, best_cost = 1, 1.0
    for split in range(2, max_split + 1):
        if kt // split < min_slice:
            break
        cost = -(-tail * split // slots) / split
        if cost < best_cost - 1e-9:
            best, best_cost = split, cost
    return (tiles, 1) if best == 1 or not tail else (tiles - tail, best)
