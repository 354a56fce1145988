"""Red team for the sm_90 bulk atomic add (docs/architecture.md: "A relaxed atomic add of a whole
tile at an offset ..."): ``ct.atomic_add`` of an ``ct.mma`` product whose index tiles are
``base + arange`` along their own axes, result unused, into an array the kernel only adds into,
becomes one ``desc.atomic_add([r, c], tile)``; anything else keeps ``tl.atomic_add(``.

Each attack is a MODE of one kernel (written by a helper that read only the docs; session 13). On
the CPU: which form the generated source takes (BULK: one reduction; GUARDED: the reduction where
run-time coordinates are in range, else the element form; ELEMENT and FOUND: the element form), and
the NumPy backend against a torch reference (``index_put_`` with accumulate, out-of-bounds elements
dropped, integer index arithmetic wrapping in the index dtype). On an sm_90+ GPU, each in a child
process (the first version's bulk form stopped the GPU on negative or misaligned coordinates, which
poisons the CUDA context): every mode against the same reference. FOUND lists what the first
version got wrong."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import safetile as ct

torch = pytest.importorskip("torch")
pytest.importorskip("triton")

R, MO, MS = ct.MemoryOrder.RELAXED, ct.MemoryOrder, ct.MemoryScope
gpu = pytest.mark.skipif(not torch.cuda.is_available() or torch.cuda.get_device_capability()[0] < 9,
                         reason="needs an sm_90+ GPU")


@ct.kernel
def k2(X, W, Acc, Other, Out, B: ct.Constant[int], T: ct.Constant[int], MODE: ct.Constant[int], S: int):
    """Block b adds X[b] @ W (as Acc's dtype) at rows/cols chosen by MODE."""
    b = ct.bid(0)
    t = ct.mma(ct.load(X, (b, 0), (T, T), allow_tma=True), ct.load(W, (0, 0), (T, T), allow_tma=True),
               ct.zeros((T, T), ct.float32)).astype(Acc.dtype)
    a = ct.arange(T, dtype=ct.int32)
    rows, cols = b * B + a, a
    if MODE == 1:  # negative offsets (runtime)
        rows = b * B - S + a
    if MODE == 2:  # arange with a start, columns offset past the right edge
        rows, cols = ct.arange(T, dtype=ct.int32, start=5) + b * B, a + 3
    if MODE == 3:  # base from a runtime scalar
        rows = b * S + a
    if MODE == 5:  # a product plus arithmetic
        t = t * 0.5 + 1.0
    if MODE == 10:  # step 2
        rows = ct.arange(T, dtype=ct.int32, step=2) + b * B
    if MODE == 11:  # reversed
        rows = b * B - a
    if MODE == 13:  # wraps around
        rows = (b * B + a) % S
    if MODE == 14:  # duplicates
        rows = b * B + a // 2
    if MODE == 15:  # every element to row b
        rows = b + ct.zeros((T,), ct.int32)
    if MODE == 30:  # int8 index wraps inside the tile: rows 100..127, then -128..-93 (dropped)
        rows = ct.arange(T, dtype=ct.int8, start=100)
    if MODE == 31:  # uint8 index wraps inside the tile: rows 240..255, then 0..47
        rows = ct.arange(T, dtype=ct.uint8) + (b * B).astype(ct.uint8)
    if MODE == 32:  # int64 index far past the array (S = 2**32): nothing is in bounds
        rows = ct.arange(T, dtype=ct.int64) + S
    if MODE == 35:  # int16 index, no wraparound: the same box as MODE 0
        rows = ct.arange(T, dtype=ct.int16) + (b * B).astype(ct.int16)
    if MODE == 36:  # int64 index, small: the same box as MODE 0
        rows = ct.arange(T, dtype=ct.int64) + b * B
    if MODE == 7:  # columns at a runtime offset
        cols = a + S
    idx = (rows[:, None], cols[None, :])
    if MODE in (0, 1, 2, 3, 5, 7, 10, 11, 13, 14, 15, 30, 31, 32, 35, 36):
        ct.atomic_add(Acc, idx, t, memory_order=R)
    if MODE == 4:  # base from a loop variable, two adds
        for i in range(2):
            ct.atomic_add(Acc, ((b * B + i * S + a)[:, None], a[None, :]), t, memory_order=R)
    if MODE == 6:
        ct.atomic_add(Acc, idx, t, memory_order=R, memory_scope=MS.DEVICE)
    if MODE == 12:  # transposed: element (i, j) to Acc[rows[j], cols[i]]
        ct.atomic_add(Acc, (rows[None, :], cols[:, None]), t, memory_order=R)
    if MODE == 16:  # rows vary along axis 1 too (a Hankel pattern)
        ct.atomic_add(Acc, (rows[:, None] + a[None, :], cols[None, :]), t, memory_order=R)
    if MODE == 20:
        ct.atomic_add(Acc, idx, t, memory_order=MO.RELEASE)
    if MODE == 21:
        ct.atomic_add(Acc, idx, t)  # default: acq_rel
    if MODE == 22:
        ct.atomic_add(Acc, idx, t, memory_order=R, memory_scope=MS.SYS)
    if MODE == 23:  # the old values used
        ct.store(Out, (b, 0), ct.atomic_add(Acc, idx, t, memory_order=R))
    if MODE == 24:  # Acc read before the add
        ct.store(Out, (b, 0), ct.load(Acc, (b, 0), (T, T)))
        ct.atomic_add(Acc, idx, t, memory_order=R)
    if MODE == 25:  # Acc stored before the add
        ct.store(Acc, (b, 0), ct.ones((T, T), Acc.dtype))
        ct.atomic_add(Acc, idx, t, memory_order=R)
    if MODE == 26:  # a slice: rows past its end are out of bounds, not the parent's rows
        ct.atomic_add(Acc.slice(0, 100, 300), idx, t, memory_order=R)
    if MODE == 27:  # a compare-and-swap on Acc too
        ct.atomic_add(Acc, idx, t, memory_order=R)
        ct.atomic_cas(Acc, (0, 0), 0.0, 1.0, memory_order=R)
    if MODE == 33:  # an exchange into the same elements after the add: Acc is not add-only
        ct.atomic_add(Acc, idx, t, memory_order=R)
        ct.atomic_xchg(Acc, idx, t, memory_order=R)
    if MODE == 34:  # Other is Acc (the same tensor twice): the block reads back its own sums
        ct.atomic_add(Acc, idx, t, memory_order=R)
        ct.store(Out, (b, 0), ct.load(Other, (b, 0), (T, T)))


@ct.kernel
def k3(X, W, Acc, B: ct.Constant[int], T: ct.Constant[int], MODE: ct.Constant[int]):
    """3-D: MODE 0 a (2, T/2, T) tile at (0, b*B, 0); MODE 1 a (1, T, T) tile at (b % 3, b*B, 0)."""
    b = ct.bid(0)
    t = ct.mma(ct.load(X, (b, 0), (T, T), allow_tma=True), ct.load(W, (0, 0), (T, T), allow_tma=True),
               ct.zeros((T, T), ct.float32))
    a = ct.arange(T, dtype=ct.int32)
    if MODE == 0:
        h = ct.arange(T // 2, dtype=ct.int32)
        ct.atomic_add(Acc, (ct.arange(2, dtype=ct.int32)[:, None, None], (b * B + h)[None, :, None],
                            a[None, None, :]), ct.reshape(t, (2, T // 2, T)), memory_order=R)
    if MODE == 1:
        ct.atomic_add(Acc, ((b % 3 + ct.arange(1, dtype=ct.int32))[:, None, None], (b * B + a)[None, :, None],
                            a[None, None, :]), ct.reshape(t, (1, T, T)), memory_order=R)


BULK = [0, 5, 6]  # b * B + arange: one bulk reduction where b * B has not wrapped (a run-time check)
GUARDED = [1, 3, 7]  # run-time coordinates: the bulk reduction where they are >= 0 (innermost: a
# multiple of 16 bytes), else the element form (both below zero and off 16 bytes stopped an H200)
ELEMENT = [4, 2, 10, 11, 12, 13, 14, 15, 16, 20, 21, 22, 23, 24, 25, 26, 27]
# The red team's findings, now the element form (the reasons are what the bulk form did):
FOUND = {
    30: "int8 index tile wraps inside the box (rows 100..127, then -128..-93, dropped); the bulk form "
        "wrote rows 128..163 on an H200, and then the element form's mask had no lower-bound check (the "
        "bounds analysis took arange(start=100, int8) as >= 0): NaNs on an H200 in session 14",
    31: "uint8 index tile: the box does not wrap to rows 0..47; Triton rejected the 8-bit coordinate",
    32: "int64 index tile (2**32 + arange: all out of bounds): Triton rejected the 64-bit coordinate",
    33: "Acc is also exchanged (not add-only): the async bulk reduction was not ordered before the exchange",
    35: "int16 index tile: Triton rejected the 16-bit descriptor coordinate",
    36: "int64 index tile, small: Triton rejected the 64-bit coordinate where the element form works",
}
ALIASED = 34  # the same tensor as Acc and as Other: outside the unchecked style's ordering (see test)
T, B, S = 64, 48, 40


def _modes_s(mode):
    return 2 ** 32 if mode == 32 else (B if mode in (3, 4) else S)


def _step(mode):
    return T if mode in (33, 34) else B  # 33, 34: blocks own disjoint rows


def _args(mode, lib, n0=1000, n1=64, dtype="float32", seed=0, device="cpu"):
    """(X, W, Acc, Other, Out, ...) on `lib` (np or torch); Acc starts random."""
    rng = np.random.default_rng(seed)
    b = _step(mode)
    blocks = ct.cdiv(n0, b) + 1
    x = rng.standard_normal((blocks * T, T)).astype(np.float16)
    w = rng.standard_normal((T, T)).astype(np.float16)
    acc = rng.standard_normal((n0, n1)).astype(np.float32)
    out = np.zeros((blocks * T, T), np.float32)
    if lib is torch:
        x, w, acc, out = (torch.from_numpy(v).to(device) for v in (x, w, acc, out))
        acc = acc.to(getattr(torch, dtype))
    else:
        acc = acc.astype(dtype)
    out = out.astype(acc.dtype) if lib is np else out.to(acc.dtype)
    other = acc if mode == 34 else out
    return blocks, (x, w, acc, other, out, b, T, mode, _modes_s(mode))


def _index(mode, blk):
    """Element semantics: the (rows, cols) tiles of each add (int64, before the bounds check)."""
    a, s, b = torch.arange(T), _modes_s(mode), _step(mode)
    r = {1: lambda: blk * b - s + a, 2: lambda: blk * b + 5 + a, 3: lambda: blk * s + a,
         10: lambda: blk * b + 2 * a, 11: lambda: blk * b - a, 13: lambda: (blk * b + a) % s,
         14: lambda: blk * b + a // 2, 15: lambda: blk + 0 * a, 30: lambda: (a + 100).to(torch.int8).long(),
         31: lambda: (a + blk * b) % 256, 32: lambda: a + s}.get(mode, lambda: blk * b + a)()
    c = a + 3 if mode == 2 else a + s if mode == 7 else a
    if mode == 4:
        return [(r[:, None], c[None, :]), (r[:, None] + s, c[None, :])]
    if mode == 12:
        return [(r[None, :], c[:, None])]
    if mode == 16:
        return [(r[:, None] + a[None, :], c[None, :])]
    return [(r[:, None], c[None, :])]


def _reference(mode, x, w, acc0, blocks):
    """The final Acc (float32, CPU) under the element semantics."""
    prod = x.float().cpu().view(blocks, T, T) @ w.float().cpu()
    prod = prod.to(acc0.dtype).float()  # the kernel adds the product as Acc's dtype
    want = acc0.float().cpu().clone()
    n0, n1 = want.shape
    for blk in range(blocks):
        val = prod[blk] * 0.5 + 1.0 if mode == 5 else prod[blk]
        for r, c in _index(mode, blk):
            r, c = torch.broadcast_tensors(r, c)
            ok = (r >= 0) & (r < n0) & (c >= 0) & (c < n1)
            want.index_put_((r[ok], c[ok]), val[ok], accumulate=True)
            if mode == 33:
                want[r[ok], c[ok]] = val[ok]
    return want


def _form(mode, **kw):
    from safetile.backends.triton.launcher import kernel_source
    src = kernel_source(k2, _args(mode, torch, **kw)[1], target=90)
    return ("bulk" if ".atomic_add([" in src else "") + ("element" if "tl.atomic_add(" in src else "")


@pytest.mark.parametrize("mode", BULK)
def test_whole_tiles_at_offsets_are_bulk(mode):
    """Rows b * B + arange are in range unless b * B wraps in int32 (past 2**31 / B blocks): the
    bulk form behind that run-time check (tests/test_index_wrap_adversarial.py)."""
    assert _form(mode) == "bulkelement"


@pytest.mark.parametrize("mode", GUARDED)
def test_run_time_offsets_are_bulk_where_in_range(mode):
    assert _form(mode) == "bulkelement"


@pytest.mark.parametrize("mode", [30, 35, 1])
def test_element_masks_check_the_lower_bound_of_indices_that_may_wrap_or_go_negative(mode):
    """int8 arange(start=100) wraps to -128; an int16 cast of b*B may wrap; b*B - S may be < 0."""
    from safetile.backends.triton.launcher import kernel_source
    src = kernel_source(k2, _args(mode, torch)[1], target=90)
    masks = [ln for ln in src.splitlines() if "< Acc_n0)" in ln]
    assert masks and all(">= 0)" in ln for ln in masks), masks


@pytest.mark.parametrize("mode", ELEMENT + sorted(FOUND))
def test_non_boxes_orders_scopes_narrow_indices_and_non_add_only_arrays_keep_the_element_form(mode):
    assert _form(mode) == "element"


def test_an_array_passed_twice_is_the_callers_to_order():
    """Acc also passed as Other and loaded: the bulk form is taken (the kernel cannot see that two
    parameters share memory), and the load is not ordered after the asynchronous reduction, as it
    is not after a TMA store (docs/architecture.md); the safe style rejects such a launch."""
    assert _form(ALIASED).startswith("bulk")


@pytest.mark.parametrize("kw", [dict(n1=33), dict(n1=128)], ids=["row-stride-not-16B", "col-stride-2"])
def test_arrays_tma_cannot_describe_keep_the_element_form(kw):
    from safetile.backends.triton.launcher import kernel_source
    _, args = _args(0, torch, **kw)
    acc = args[2][:, ::2] if kw.get("n1") == 128 else args[2]
    assert ".atomic_add([" not in kernel_source(k2, (*args[:2], acc, *args[3:]), target=90)


def test_3d_boxes_are_bulk():
    from safetile.backends.triton.launcher import kernel_source
    _, args = _args(0, torch)
    for mode in (0, 1):
        src = kernel_source(k3, (args[0], args[1], torch.zeros(3, 1000, 64), B, T, mode), target=90)
        assert src.count(".atomic_add([") == 1  # behind a run-time check: b * B may wrap in int32


@pytest.mark.parametrize("mode", BULK + GUARDED + ELEMENT[:9] + sorted(FOUND) + [ALIASED])
def test_cpu_backend_matches_the_reference(mode):
    blocks, args = _args(mode, np, dtype="float16" if mode == 5 else "float32")
    acc0 = torch.from_numpy(args[2].copy())
    ct.launch(None, (blocks,), k2, args)
    want = _reference(mode, torch.from_numpy(args[0]), torch.from_numpy(args[1]), acc0, blocks)
    tol = dict(rtol=1e-2, atol=0.25) if mode == 5 else dict(rtol=1e-4, atol=1e-3)
    torch.testing.assert_close(torch.from_numpy(args[2]).float(), want, **tol)
    if mode == 34:  # each block read back its own rows after its add
        torch.testing.assert_close(torch.from_numpy(args[4][:1000]), want, **tol)


def _gpu_run(mode, dtype="float32", **kw):
    blocks, args = _args(mode, torch, dtype=dtype, device="cuda", seed=mode, **kw)
    acc0 = args[2].clone()
    ct.launch(None, (blocks,), k2, args)
    torch.cuda.synchronize()
    return args, _reference(mode, args[0], args[1], acc0, blocks)


TOL = {"float32": dict(rtol=1e-4, atol=1e-3), "float16": dict(rtol=1e-2, atol=0.25),
       "bfloat16": dict(rtol=3e-2, atol=1.0)}


def _check_gpu(mode, dtype="float32", **kw):
    args, want = _gpu_run(mode, dtype, **kw)
    torch.testing.assert_close(args[2].float().cpu(), want, **TOL[dtype])


def _check_gpu_in_a_child(mode, dtype="float32", s=S, **kw):
    """_check_gpu in a fresh process (with S = s): an illegal instruction poisons the CUDA context."""
    code = (f"import sys; sys.path.insert(0, {str(Path(__file__).parent)!r}); "
            f"import test_bulk_atomics_adversarial as m; m.S = {s}; m._check_gpu({mode}, {dtype!r}, **{kw!r})")
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr[-2000:]


@pytest.mark.gpu
@gpu
@pytest.mark.parametrize("dtype", ["float32", "float16", "bfloat16"])
@pytest.mark.parametrize("mode", BULK + GUARDED + [2, 4])
def test_bulk_sums_match_torch_on_the_gpu(mode, dtype):
    """Guarded modes in a child process: before the guard, modes 1 and 2 stopped the GPU (an
    illegal instruction poisons the CUDA context for every later test)."""
    (_check_gpu if mode in BULK else _check_gpu_in_a_child)(mode, dtype)


@pytest.mark.gpu
@gpu
@pytest.mark.parametrize("mode,kw", [(0, dict(n1=40)), (7, dict(n1=40))])
def test_bulk_clips_columns_of_a_narrow_array_on_the_gpu(mode, kw):
    _check_gpu_in_a_child(mode, **kw)


@pytest.mark.gpu
@gpu
@pytest.mark.parametrize("s", [0, 4, 40, 3, -4])
def test_bulk_column_offsets_on_the_gpu(s):
    """3 (12 bytes) and -4 stopped the GPU before the guard; now the element form runs there."""
    _check_gpu_in_a_child(7, s=s)


@pytest.mark.gpu
@gpu
@pytest.mark.parametrize("mode", [0, 1])
def test_3d_bulk_sums_match_torch_on_the_gpu(mode):
    _, args = _args(0, torch, device="cuda", seed=7)
    blocks = ct.cdiv(1000, B) + 1
    acc = torch.randn(3, 1000, 64, device="cuda")
    want = acc.cpu()
    ct.launch(None, (blocks,), k3, (args[0], args[1], acc, B, T, mode))
    prod = args[0].float().cpu().view(blocks, T, T) @ args[1].float().cpu()
    for blk in range(blocks):
        rows = blk * B + torch.arange(T // 2 if mode == 0 else T)
        ok = rows < 1000
        for p in range(2 if mode == 0 else 1):
            part = prod[blk][p * (T // 2):(p + 1) * (T // 2)] if mode == 0 else prod[blk]
            want[p if mode == 0 else blk % 3].index_add_(0, rows[ok], part[ok])
    torch.testing.assert_close(acc.cpu(), want, **TOL["float32"])


@pytest.mark.gpu
@gpu
@pytest.mark.parametrize("mode", sorted(FOUND))
def test_found_cases_match_torch_on_the_gpu(mode):
    _check_gpu(mode)
