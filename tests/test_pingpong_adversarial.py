"""Red-team tests for ``warp_specialize="pingpong"``: online-softmax loops written unusually, to
find kernels the matcher accepts but the Gluon lowering gets wrong. On the CPU: what the matcher
rejects, what it accepts (then the generated source is inspected and built for sm_90a, since a
failed Gluon build silently falls back to the plain kernel); on an H100/H200: each accepted kernel
with and without the hint, on fresh random inputs (outputs poisoned with NaN first)."""
# ruff: noqa: E741
from __future__ import annotations

import re

import pytest
from pingpong_helpers import build_sm90, plan_of

import safetile as ct

torch = pytest.importorskip("torch")
triton = pytest.importorskip("triton")

F32 = ct.float32
ZERO = ct.PaddingMode.ZERO
LOG2E = 1.4426950408889634


def _hinted(kern):
    return kern.replace_hints(warp_specialize="pingpong")


def _scores(q, K, j, scale, D, BN):
    k = ct.load(K, (j, 0), (BN, D), allow_tma=True, padding_mode=ZERO)
    return ct.mma(q, ct.transpose(k), ct.zeros((q.shape[0], BN), F32)) * scale


def _step(s, V, j, m, l, acc, DV, BN):
    """One online-softmax step on the scores of key block j: (max, sum, accumulator)."""
    m_new = ct.maximum(m, ct.max(s, axis=1))
    p = ct.exp(s - m_new[:, None])
    a = ct.exp(m - m_new)
    v = ct.load(V, (j, 0), (BN, DV), allow_tma=True, padding_mode=ZERO)
    return m_new, l * a + ct.sum(p, axis=1), ct.mma(p.astype(v.dtype), v, acc * a[:, None])


def _init(R, DV):
    return ct.full((R,), -1e30, F32), ct.zeros((R,), F32), ct.zeros((R, DV), F32)


# ------------------------------------------------------------------------------ rejected shapes

@ct.kernel
def variant(Q, K, V, O, L, lo, hi, scale, D: ct.Constant[int], BN: ct.Constant[int], MODE: ct.Constant[int],
            R: ct.Constant[int]):
    """The online softmax with one unsupported feature chosen by MODE (0: none)."""
    r = ct.bid(0)
    q = ct.load(Q, (r, 0), (R, D), allow_tma=True)
    if MODE == 1:  # the row tile changed before the products read it
        q = (q * 2.0).astype(Q.dtype)
    m, l, acc = _init(R, D)
    bias = ct.zeros((R, D), F32)
    if MODE == 2:  # a second load before the loop
        bias = ct.load(K, (r, 0), (R, D), allow_tma=True).astype(F32)
    for j in range(lo, hi, (hi - lo - 2) if MODE == 3 else 1):  # 3: a run-time step
        if MODE == 4:  # K already transposed in memory: no permute
            s = ct.mma(q, ct.load(K, (0, j), (D, BN), allow_tma=True), ct.zeros((R, BN), F32))
        else:
            k = ct.load(K, (j, 0), (BN, D), allow_tma=True, order="F" if MODE == 29 else "C",  # 29: permuted
                        padding_mode=ct.PaddingMode.NEG_INF if MODE == 5 else ZERO)
            if MODE == 6:  # K changed before its product
                k = (k * 2.0).astype(K.dtype)
            c0 = ct.full((R, BN), 0.5, F32) if MODE == 7 else ct.zeros((R, BN), F32)  # 7: QKᵀ + C
            s = ct.mma(q, ct.transpose(k), c0)
        s = s * scale
        if MODE == 8:  # a reduction across rows (axis 0)
            s = s - ct.max(s, axis=0)[None, :]
        if MODE == 9:  # a scalar reduced over all rows
            s = s - ct.sum(ct.max(s, axis=1))
        if MODE == 10:  # rows mixed with columns (BN == 128)
            s = s + ct.transpose(s)
        if MODE == 11:  # a row vector reshaped into a column vector (BN == 128)
            s = s - ct.reshape(ct.max(s, axis=1), (1, R))
        if MODE == 12:  # a branch on a value of all rows
            if ct.max(ct.max(s, axis=1)) > 3.0:
                s = s * 0.5
        if MODE == 13:  # the accumulator feeds the softmax
            s = s + ct.sum(acc, axis=1)[:, None] * 1e-3
        if MODE == 14:  # a third load in the loop
            s = s + ct.load(O, (r, j), (R, BN), allow_tma=True).astype(F32)
        if MODE == 15:  # a scan across rows
            s = ct.cumsum(s, axis=0)
        if MODE == 16:  # the same arange for query rows and key columns (BN == 128)
            ar = ct.arange(R, dtype=ct.int32)
            s = ct.where(r * R + ar[:, None] >= j * BN + ar[None, :], s, -1e30)
        if MODE == 17:  # a nested loop
            for _i in range(2):
                s = s * 0.5
        m_new = ct.maximum(m, ct.max(s, axis=1))
        p = ct.exp(s - m_new[:, None])
        a = ct.exp(m - m_new)
        l = l * a + ct.sum(p, axis=1)
        if MODE == 18:  # V transposed in the loop
            v = ct.transpose(ct.load(V, (0, j), (D, BN), allow_tma=True))
        else:
            v = ct.load(V, (j, 0), (BN, D), allow_tma=True)
        if MODE == 19:  # V changed before its product
            v = (v * 2.0).astype(V.dtype)
        if MODE == 20:  # a branch in stage C
            if j % 2 == 0:
                c = acc * a[:, None]
            else:
                c = acc / (1.0 / a)[:, None]
        else:
            c = acc * a[:, None]
        if MODE == 21:  # PV with a zero C, the accumulator added afterwards
            acc = c + ct.mma(p.astype(v.dtype), v, ct.zeros((R, D), F32))
        else:
            acc = ct.mma(p.astype(v.dtype), v, c)
        if MODE == 22:  # the product's result changed before it is carried
            acc = acc * 0.5
        if MODE == 23:  # a store in the loop
            ct.store(O, (r, 0), acc.astype(O.dtype), allow_tma=True)
        m = m_new
    out = acc / l[:, None] + bias
    if MODE == 24:  # a reduction across rows after the loop
        out = out - ct.max(out, axis=0)[None, :]
    if MODE == 25:  # the row tile read as a value
        out = out + q.astype(F32)
    if MODE == 26:  # a branch after the loop
        if r == 0:
            out = out * 2.0
    if MODE == 27:  # a transposed store
        ct.store(O, (0, r), ct.transpose(out.astype(O.dtype)), allow_tma=True)
    elif MODE == 30:  # a store with permuted axes
        ct.store(O, (r, 0), out.astype(O.dtype), allow_tma=True, order="F")
    else:
        ct.store(O, (r, 0), out.astype(O.dtype), allow_tma=True)
    if MODE == 28:  # a second store
        ct.store(O, (r + 1, 0), out.astype(O.dtype), allow_tma=True)
    if MODE == 31:  # a vector store of a column vector (D == 128): not one value per row
        cols = ct.arange(D, dtype=ct.int32).astype(F32)
        ct.store(L, (r,), cols + ct.max(acc / l[:, None] + cols[None, :], axis=1) * 0.0)

def _plan(kern, args, narrays=5):
    return plan_of(_hinted(kern), args, narrays)


def _variant_args(mode, rows=128, dtype=torch.bfloat16, out=None):
    x = torch.empty(1024, 128, dtype=dtype)
    return (x, x, x, x if out is None else out, torch.empty(1024), 0, 8, 0.1, 128, 128, mode, rows)


def test_the_plain_variant_matches():
    assert _plan(variant, _variant_args(0)) is not None


@pytest.mark.parametrize("mode", range(1, 32))
def test_unsupported_features_are_rejected(mode):
    assert _plan(variant, _variant_args(mode)) is None


def test_other_rejections():
    assert _plan(variant, _variant_args(0, rows=64)) is None  # 64-row blocks
    assert _plan(variant, _variant_args(0, rows=256)) is None
    assert _plan(variant, _variant_args(0, dtype=torch.float32)) is None  # products of float32
    assert _plan(variant, _variant_args(0, out=torch.empty(1024, 128))) is None  # a float32 store


# ------------------------------------------------------------------------------ accepted kernels

@ct.kernel
def rows_and_columns(Q, K, V, O, lo, hi, scale, D: ct.Constant[int], BN: ct.Constant[int],
                     STEP: ct.Constant[int], R: ct.Constant[int]):
    """Vectors of R or BN elements that are rows and others that are columns: a row bias made
    before the loop from the block's row positions, key positions from an arange made before the
    loop, row positions made again in the loop, (R, 1) and (1, BN) constants, branches in stage B
    (a mask at the last block, exp or exp2), the loop index in the scores, a step > 1, and row-
    and column-dependent terms after the loop from fresh aranges."""
    r = ct.bid(0)
    q = ct.load(Q, (r, 0), (R, D), allow_tma=True)
    m, l, acc = _init(R, D)
    rowb = ((r * R + ct.arange(R, dtype=ct.int32)) % 7).astype(F32)[:, None] * 0.25 + ct.full((R, 1), 0.5, F32)
    cpos = ct.arange(BN, dtype=ct.int32)
    for j in range(lo, hi, STEP):
        s = _scores(q, K, j, scale, D, BN) + rowb + ct.full((1, BN), 0.125, F32) + j * 0.01
        s = s + (cpos % 3).astype(F32)[None, :] * 0.1
        qpos = r * R + ct.arange(R, dtype=ct.int32)
        if j + STEP >= hi:
            s = ct.where((qpos % BN)[:, None] >= ((j * BN + cpos) % BN)[None, :], s, -1e30)
        m_new = ct.maximum(m, ct.max(s, axis=1))
        if j % 2 == 0:
            p = ct.exp(s - m_new[:, None])
        else:
            p = ct.exp2((s - m_new[:, None]) * LOG2E)
        a = ct.exp(m - m_new)
        l = l * a + ct.sum(p, axis=1)
        v = ct.load(V, (j, 0), (BN, D), allow_tma=True, padding_mode=ZERO)
        acc = ct.mma(p.astype(v.dtype), v, acc * a[:, None])
        m = m_new
    rows = ((r * R + ct.arange(R, dtype=ct.int32)) % 3).astype(F32)
    cols = (ct.arange(D, dtype=ct.int32) % 5).astype(F32)
    out = acc / (l[:, None] + 1e-30) + cols[None, :] * 0.01 + rows[:, None] * 0.01  # 0, not 0/0, for no iteration
    ct.store(O, (r, 0), out.astype(O.dtype), allow_tma=True)


@ct.kernel
def carried_and_offsets(Q, K, V, O, L, M, lo, hi, scale, D: ct.Constant[int], BN: ct.Constant[int],
                        R: ct.Constant[int]):
    """Carried values besides m, l and acc (a float and an int scalar, a row counter, a tile
    passed through unchanged); Q read and O written at column tile 1, V's blocks in reverse
    order, the output's row tile from the int counter and the grid's size; two per-row vector
    stores (from the scores' and from the accumulator's layout), one reversed into a strided M."""
    r = ct.bid(0)
    q = ct.load(Q, (r, 1), (R, D), allow_tma=True, padding_mode=ZERO)  # rows past the end reach O and M
    m, l, acc = _init(R, D)
    n = ct.zeros((), F32)
    blk = ct.num_blocks(0) - 1 - r
    cnt = ct.zeros((R,), F32)
    keep = ct.full((R, D), 0.05, F32)
    qpos = r * R + ct.arange(R, dtype=ct.int32)
    for j in range(lo, hi):
        s = _scores(q, K, j, scale, D, BN)
        m, l, acc = _step(s, V, hi - 1 - j + lo, m, l, acc, D, BN)
        n = n + 1.0
        blk = blk + 1
        cnt = cnt + ct.max(s, axis=1) * 0.0 + 2.0
        keep = keep
    out = acc / (l[:, None] + 1e-30) + n * 0.01 + cnt[:, None] * 0.01 + keep
    ct.store(O, (blk - ct.maximum(hi - lo, 0), 1), out.astype(O.dtype), allow_tma=True)
    ct.store(L, (r,), m + ct.log(l))
    ct.store(M, (ct.num_blocks(0) - 1 - r,), ct.sum(out, axis=1) + qpos.astype(F32) * 0.001)


@ct.kernel
def wide_values(Q, K, V, O, lo, hi, scale, D: ct.Constant[int], BN: ct.Constant[int], DV: ct.Constant[int]):
    """V (and the output) wider or narrower than Q and K (BN == DV), the output in another type;
    negative axes, ``permute``, ``expand_dims`` and ``broadcast_to`` instead of ``[:, None]``; the
    accumulator rescaled through a ``where`` of a product and a division, times a full tile of P
    and a column vector."""
    r = ct.bid(0)
    q = ct.load(Q, (r, 0), (128, D), allow_tma=True)
    m, l, acc = _init(128, DV)
    w = 1.0 + 0.01 * (ct.arange(DV, dtype=ct.int32) % 5).astype(F32)
    for j in range(lo, hi):
        k = ct.load(K, (j, 0), (BN, D), allow_tma=True, padding_mode=ZERO)
        s = ct.mma(q, ct.permute(k, (1, 0)), ct.zeros((128, BN), F32)) * scale
        m_new = ct.maximum(m, ct.max(s, axis=-1))
        p = ct.exp(s - ct.expand_dims(m_new, -1))
        a = ct.exp(m - m_new)
        l = l * a + ct.sum(p, axis=-1)
        v = ct.load(V, (j, 0), (BN, DV), allow_tma=True, padding_mode=ZERO)
        c = ct.where(a[:, None] < 0.5, acc * a[:, None], acc / (1.0 / a)[:, None]) * (1.0 + 0.01 * p) * w[None, :]
        acc = ct.mma(p.astype(v.dtype), v, c * ct.broadcast_to(ct.expand_dims(a * 0.0 + 1.0, 1), (128, DV)))
        m = m_new
    ct.store(O, (r, 0), (acc / ct.expand_dims(l, 1)).astype(O.dtype), allow_tma=True)


@ct.kernel
def rotated_carries(Q, K, V, O, lo, hi, scale, D: ct.Constant[int], BN: ct.Constant[int], R: ct.Constant[int]):
    """Carried values updated from each other's previous values: x and y swapped every iteration,
    tp taking t's value from before the iteration (after n iterations: x, y = (1, 2) for n even
    and (2, 1) for n odd; t = n + 3; tp = n + 2, or 5 for n = 0)."""
    r = ct.bid(0)
    q = ct.load(Q, (r, 0), (R, D), allow_tma=True)
    m, l, acc = _init(R, D)
    t = ct.full((R,), 3.0, F32)
    tp = ct.full((R,), 5.0, F32)
    x = ct.full((R,), 1.0, F32)
    y = ct.full((R,), 2.0, F32)
    for j in range(lo, hi):
        m, l, acc = _step(_scores(q, K, j, scale, D, BN), V, j, m, l, acc, D, BN)
        x, y = y, x
        tp = t
        t = t + 1.0
    out = acc / (l[:, None] + 1e-30) + x[:, None] * 0.5 + y[:, None] * 0.25 - tp[:, None] * 0.125 + t[:, None] * 0.0625
    ct.store(O, (r, 0), out.astype(O.dtype), allow_tma=True)


@ct.kernel
def delayed_p(Q, K, V, O, lo, hi, scale, D: ct.Constant[int], BN: ct.Constant[int]):
    """PV takes the previous iteration's P, carried in the inputs' type (block j's V meets block
    j-1's probabilities: a software-pipelined online softmax)."""
    r = ct.bid(0)
    q = ct.load(Q, (r, 0), (128, D), allow_tma=True)
    m, l, acc = _init(128, D)
    pp = ct.zeros((128, BN), V.dtype)
    for j in range(lo, hi):
        s = _scores(q, K, j, scale, D, BN)
        m_new = ct.maximum(m, ct.max(s, axis=1))
        a = ct.exp(m - m_new)
        acc = ct.mma(pp, ct.load(V, (j, 0), (BN, D), allow_tma=True, padding_mode=ZERO), acc * a[:, None])
        p = ct.exp(s - m_new[:, None])
        pp = p.astype(V.dtype)
        l = l * a + ct.sum(p, axis=1)
        m = m_new
    ct.store(O, (r, 0), (acc / l[:, None]).astype(O.dtype), allow_tma=True)


@ct.kernel
def previous_sum(Q, K, V, O, lo, hi, scale, D: ct.Constant[int], BN: ct.Constant[int]):
    """The running sum from before the last iteration, carried out of the loop."""
    r = ct.bid(0)
    q = ct.load(Q, (r, 0), (128, D), allow_tma=True)
    m, l, acc = _init(128, D)
    lp = ct.zeros((128,), F32)
    for j in range(lo, hi):
        lp = l
        m, l, acc = _step(_scores(q, K, j, scale, D, BN), V, j, m, l, acc, D, BN)
    ct.store(O, (r, 0), ((acc + (l - lp)[:, None]) / l[:, None]).astype(O.dtype), allow_tma=True)


@ct.kernel
def reshaped_rows(Q, K, V, O, lo, hi, scale, D: ct.Constant[int], BN: ct.Constant[int]):
    """A row vector reshaped from (128, 1) to (128,) in stage B."""
    r = ct.bid(0)
    q = ct.load(Q, (r, 0), (128, D), allow_tma=True)
    m, l, acc = _init(128, D)
    for j in range(lo, hi):
        s = _scores(q, K, j, scale, D, BN)
        m_new = ct.maximum(m, ct.max(s, axis=1))
        p = ct.exp(s - m_new[:, None])
        a = ct.exp(ct.reshape(m[:, None] - m_new[:, None], (128,)))
        l = l * a + ct.sum(p, axis=1)
        v = ct.load(V, (j, 0), (BN, D), allow_tma=True, padding_mode=ZERO)
        acc = ct.mma(p.astype(v.dtype), v, acc * a[:, None])
        m = m_new
    ct.store(O, (r, 0), (acc / l[:, None]).astype(O.dtype), allow_tma=True)


@ct.kernel
def causal_rows_clipped(Q, K, V, O, lo, hi, scale, nrows, D: ct.Constant[int], BN: ct.Constant[int]):
    """The row positions, made once before the loop, in a causal mask and after the loop (rows
    past ``nrows`` zeroed)."""
    r = ct.bid(0)
    q = ct.load(Q, (r, 0), (128, D), allow_tma=True)
    qpos = r * 128 + ct.arange(128, dtype=ct.int32)
    m, l, acc = _init(128, D)
    for j in range(lo, hi):
        s = _scores(q, K, j, scale, D, BN)
        s = ct.where(qpos[:, None] >= j * BN + ct.arange(BN, dtype=ct.int32)[None, :], s, -1e30)
        m, l, acc = _step(s, V, j, m, l, acc, D, BN)
    ct.store(O, (r, 0), ct.where(qpos[:, None] < nrows, acc / l[:, None], 0.0).astype(O.dtype), allow_tma=True)


@ct.kernel
def chained_blocks(Q, K, V, O, lo, hi, scale, D: ct.Constant[int], BN: ct.Constant[int]):
    """The key block of each iteration computed from the previous one's (a carried scalar)."""
    r = ct.bid(0)
    q = ct.load(Q, (r, 0), (128, D), allow_tma=True)
    m, l, acc = _init(128, D)
    kb = lo
    for _j in range(lo, hi):
        m, l, acc = _step(_scores(q, K, kb, scale, D, BN), V, kb, m, l, acc, D, BN)
        kb = (kb * 5 + 3) % 8
    ct.store(O, (r, 0), (acc / l[:, None]).astype(O.dtype), allow_tma=True)


def _array(spec, rows, device):
    """(columns, dtype): a 2-D array; ("vec", step): a float32 vector (a view with that stride)."""
    if spec[0] == "vec":
        step = spec[1] if len(spec) > 1 else 1
        return torch.empty(rows * step, device=device)[::step]
    return torch.empty(rows, spec[0], dtype=spec[1] if len(spec) > 1 else torch.bfloat16, device=device)


B16, F16 = torch.bfloat16, torch.float16
Q64, Q128, VEC, VEC2 = (64,), (128,), ("vec",), ("vec", 2)
# name: (kernel, arrays (Q, K, V, then the outputs), scalars after them (lo, hi first), rows of a block)
CASES = {
    "rows_and_columns_d64_bn128": (rows_and_columns, (Q64,) * 4, (1, 8, 0.1, 64, 128, 2, 128), 128),
    "rows_and_columns_d128_bn64": (rows_and_columns, (Q128,) * 4, (0, 16, 0.1, 128, 64, 1, 128), 128),
    "rows_and_columns_256": (rows_and_columns, (Q64,) * 4, (0, 16, 0.1, 64, 64, 3, 256), 256),
    "carried_and_offsets": (carried_and_offsets, (Q128, Q64, Q64, Q128, VEC, VEC2), (1, 7, 0.1, 64, 128, 128), 128),
    "carried_and_offsets_256": (carried_and_offsets, (Q128, Q64, Q64, Q128, VEC, VEC2), (1, 7, 0.1, 64, 64, 256),
                                256),
    "wide_values_fp16": (wide_values, ((64, F16), (64, F16), (128, F16), (128, B16)), (0, 8, 0.1, 64, 128, 128), 128),
    "rotated_carries": (rotated_carries, (Q64,) * 4, (0, 8, 0.1, 64, 128, 128), 128),
    "rotated_carries_256": (rotated_carries, (Q64,) * 4, (0, 8, 0.1, 64, 64, 256), 256),
    "delayed_p": (delayed_p, (Q64,) * 4, (0, 8, 0.1, 64, 128), 128),
    "previous_sum": (previous_sum, (Q64,) * 4, (0, 16, 0.1, 64, 64), 128),
    "reshaped_rows": (reshaped_rows, (Q64,) * 4, (0, 8, 0.1, 64, 128), 128),
    "causal_rows_clipped": (causal_rows_clipped, (Q64,) * 4, (0, 8, 0.1, 937, 64, 128), 128),
    "chained_blocks": (chained_blocks, (Q64,) * 4, (0, 8, 0.1, 64, 128), 128),
}
def _case_args(name, rows=1024, device="cpu", gen=None, lohi=None):
    """The case's kernel and arguments; with ``gen``, Q, K and V random from it."""
    kern, specs, scalars, _ = CASES[name]
    arrays = [_array(sp, rows, device) for sp in specs]
    if gen is not None:
        arrays[:3] = [torch.randn(t.shape, generator=gen).to(device, t.dtype) for t in arrays[:3]]
    return kern, tuple(arrays) + (lohi or scalars[:2]) + scalars[2:]


def _narrays(args):
    return sum(isinstance(a, torch.Tensor) for a in args)


@pytest.mark.parametrize("name", [n for n in CASES if n != "chained_blocks"])
def test_adversarial_kernels_are_accepted(name):
    kern, args = _case_args(name)
    p = _plan(kern, args, _narrays(args))
    assert p is not None and p.groups == CASES[name][3] // 64


def _loop_tail_hazards(src: str) -> list[str]:
    """Reads of a carried value (``_st_cN``) after it was reassigned in the same run of carried
    assignments at the end of the consumer's steady-state loop: the loop's yield must be a
    parallel copy."""
    body = src.split("for _st_t in range(1, _st_n):", 1)[1].split("\n        mbarrier.wait(_st_vf", 1)[0]
    done, bad = set(), []
    for ln in body.splitlines():
        mt = re.match(r"\s+(_st_(?:c\d+|p|a)) = (.*)$", ln)
        if mt is None:
            done.clear()
            continue
        bad += [f"{ln.strip()} (reads {n} after it was reassigned)" for n in re.findall(r"_st_c\d+", mt.group(2))
                if n in done and n != mt.group(1)]
        done.add(mt.group(1))
    return bad


@pytest.mark.parametrize("name", ["carried_and_offsets", "rotated_carries", "rotated_carries_256",
                                  "delayed_p", "previous_sum"])
def test_carried_values_are_updated_as_a_parallel_copy(name):
    from safetile.backends.triton.launcher import kernel_source
    kern, args = _case_args(name)
    src = kernel_source(_hinted(kern), args, target=90)
    assert "gl.warp_specialize(" in src
    assert _loop_tail_hazards(src) == []


def test_a_carried_block_index_is_generated_or_declined():
    from safetile.backends.triton.launcher import kernel_source
    kern, args = _case_args("chained_blocks")
    src = kernel_source(_hinted(kern), args, target=90)
    assert "@triton.jit" in src or "gl.warp_specialize(" in src


def _build(kern, args):
    return build_sm90(_hinted(kern), args, _narrays(args))


@pytest.mark.parametrize("name", [
    "rows_and_columns_d64_bn128", "rows_and_columns_d128_bn64", "rows_and_columns_256", "carried_and_offsets",
    "carried_and_offsets_256", "wide_values_fp16", "rotated_carries", "rotated_carries_256",
    "causal_rows_clipped", "delayed_p", "previous_sum", "reshaped_rows"])
def test_accepted_kernels_build_for_sm90(name, tmp_path, monkeypatch):
    monkeypatch.setenv("TRITON_CACHE_DIR", str(tmp_path / "triton"))
    monkeypatch.setenv("SAFETILE_CACHE_DIR", str(tmp_path / "st"))
    kern, args = _case_args(name)
    assert "ttg.warp_specialize(" in _build(kern, args).asm["ttgir"]


# ------------------------------------------------------------------------------ on the GPU

def _hopper() -> bool:
    return torch.cuda.is_available() and torch.cuda.get_device_capability() == (9, 0)


def _poisoned(t):
    if t.dim() == 1 and t.stride(0) != 1:
        return torch.full((t.shape[0] * t.stride(0),), float("nan"), device=t.device, dtype=t.dtype)[::t.stride(0)]
    return torch.full_like(t, float("nan"))


def _both(name, args):
    """The outputs of the case's kernel without and with the hint (poisoned with NaN first)."""
    kern, n, rows = CASES[name][0], _narrays(args), CASES[name][3]
    res = []
    for k in (kern, _hinted(kern)):
        outs = [_poisoned(t) for t in args[3:n]]
        ct.launch(None, (ct.cdiv(args[0].shape[0], rows),), k, (*args[:3], *outs, *args[n:]))
        torch.cuda.synchronize()
        res.append([o.float().cpu() for o in outs])
    return res


def _assert_close(got, want):
    """NaNs and infinities where the reference has them; a relative error < 1e-2 elsewhere."""
    fin, inf = torch.isfinite(want), want.isinf()
    assert torch.equal(got.isnan(), want.isnan()) and torch.equal(torch.isfinite(got), fin)
    assert torch.equal(got[inf], want[inf])
    if fin.any():
        err = ((got[fin] - want[fin]).norm() / want[fin].norm()).item()
        assert err < 1e-2, err


def _attention(arrays, blocks, bn, scale):
    """softmax(Q Kᵀ scale) V over the key blocks ``blocks`` (rows past K's end are zeros)."""
    q, k, v = (t.double().cpu() for t in arrays[:3])
    nb = max(blocks) + 1
    k, v = (torch.cat([t, t.new_zeros(max(nb * bn - t.shape[0], 0), t.shape[1])]) for t in (k, v))
    idx = torch.cat([torch.arange(b * bn, (b + 1) * bn) for b in blocks])
    return torch.softmax(q @ k[idx].T * scale, dim=1) @ v[idx]


HOPPER = pytest.mark.skipif(not _hopper(), reason="needs an sm_90 GPU (H100/H200)")


@pytest.mark.gpu
@HOPPER
@pytest.mark.parametrize("name,lo,hi,same_kv", [
    ("rows_and_columns_d64_bn128", 1, 8, False), ("rows_and_columns_d64_bn128", 5, 5, False),
    ("rows_and_columns_d64_bn128", 6, 2, False), ("rows_and_columns_d64_bn128", 0, 8, True),
    ("rows_and_columns_d128_bn64", 0, 16, False), ("rows_and_columns_d128_bn64", 3, 4, False),
    ("rows_and_columns_256", 0, 16, False), ("rows_and_columns_256", 2, 3, False),
    ("carried_and_offsets", 1, 7, False), ("carried_and_offsets", 4, 4, False),
    ("carried_and_offsets_256", 1, 7, False), ("wide_values_fp16", 0, 8, False),
    ("rotated_carries", 0, 8, False), ("rotated_carries", 3, 4, False), ("rotated_carries", 2, 2, False),
    ("rotated_carries_256", 0, 8, False), ("rotated_carries_256", 3, 4, False),
    ("delayed_p", 0, 8, False), ("previous_sum", 0, 16, False), ("causal_rows_clipped", 0, 8, False),
    ("reshaped_rows", 0, 8, False),
    ("chained_blocks", 0, 8, False),
])
@pytest.mark.parametrize("seed", [0, 1])
def test_pingpong_matches_the_plain_kernel_on_the_gpu(name, lo, hi, same_kv, seed):
    """Fresh random inputs of 1000 rows (the last block is clipped), K and V the same array or not."""
    _, args = _case_args(name, 1000, "cuda", torch.Generator().manual_seed(seed), (lo, hi))
    if same_kv:
        args = (*args[:2], args[1], *args[3:])
    plain, pp = _both(name, args)
    for a, b in zip(pp, plain):
        _assert_close(a, b)


@pytest.mark.gpu
@HOPPER
@pytest.mark.parametrize("name,lo,hi", [("rotated_carries", 3, 4), ("rotated_carries", 0, 8),
                                        ("rotated_carries_256", 3, 4), ("rotated_carries_256", 1, 8)])
def test_rotated_carries_against_torch_on_the_gpu(name, lo, hi):
    """Both kernels against the reference: carried values that swap or lag (x, y = y, x; tp = t) were
    updated one after another in the generated loop, wrong from the second iteration on (fixed)."""
    _, args = _case_args(name, 1000, "cuda", torch.Generator().manual_seed(7), (lo, hi))
    n, x = hi - lo, 1.0 if (hi - lo) % 2 == 0 else 2.0
    want = (_attention(args, range(lo, hi), args[8], 0.1) + 0.5 * x + 0.25 * (3.0 - x) - 0.125 * (n + 2)
            + 0.0625 * (n + 3)).float()
    (plain,), (pp,) = _both(name, args)
    _assert_close(plain, want)
    _assert_close(pp, want)

