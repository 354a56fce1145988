"""A relaxed atomic add of a whole tile (index tiles ``base + arange`` along their own axes), its
result unused, into an array the kernel only adds into, is one TMA bulk reduction on sm_90
(``desc.atomic_add``) instead of an atomic per element; anything else keeps the element form. On
the CPU: the generated source; on an H100/H200: sums against torch, blocks overlapping and the
edge tiles clipped."""
from __future__ import annotations

import re

import sys
from pathlib import Path

import numpy as np
import pytest

import safetile as ct

torch = pytest.importorskip("torch")
pytest.importorskip("triton")

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "bench"))
from kernels import attention as A  # noqa: E402

RELAXED = ct.MemoryOrder.RELAXED


@ct.kernel
def add_products(X, W, Acc, STEP: ct.Constant[int], T: ct.Constant[int], MODE: ct.Constant[int]):
    """Acc[rows, :T] += X[block] W, blocks STEP rows apart (STEP < T: they overlap). MODE 0: the
    bulk form; 1: rows strided by 2 (not a box); 2: acquire order; 3: the old values used;
    4: Acc also read."""
    b = ct.bid(0)
    t = ct.mma(ct.load(X, (b, 0), (T, T), allow_tma=True), ct.load(W, (0, 0), (T, T), allow_tma=True),
               ct.zeros((T, T), ct.float32))
    rows = b * STEP + ct.arange(T, dtype=ct.int32)
    if MODE == 1:
        rows = b * STEP + 2 * ct.arange(T, dtype=ct.int32)
    cols = ct.arange(T, dtype=ct.int32)
    order = ct.MemoryOrder.ACQUIRE if MODE == 2 else RELAXED
    old = ct.atomic_add(Acc, (rows[:, None], cols[None, :]), t, memory_order=order)
    if MODE == 3:
        ct.store(X, (b, 0), old.astype(X.dtype))
    if MODE == 4:
        ct.store(X, (b, 0), ct.load(Acc, (b, 0), (T, T)).astype(X.dtype))


def _args(mode, rows=1000, t=64, step=48, device="cpu"):
    x = torch.randn(ct.cdiv(rows, step) * t, t, dtype=torch.bfloat16, device=device)  # a tile per block
    w = torch.randn(t, t, dtype=torch.bfloat16, device=device)
    return x, w, torch.zeros(rows, t, device=device), step, t, mode


def _source(mode):
    from safetile.backends.triton.launcher import kernel_source
    return kernel_source(add_products, _args(mode), target=90)


def test_a_tile_added_at_an_offset_is_one_bulk_reduction():
    """Rows b * STEP + arange: one bulk reduction, behind a run-time check that the box starts at
    or above row 0 (b * STEP wraps in int32 past 2**31 / STEP blocks; the element form then runs)."""
    src = _source(0)
    assert src.count(".atomic_add([") == 1 and src.count("tl.atomic_add(") == 1
    assert re.search(r"if \(\w+ >= 0\):\n\s+desc\w*\.atomic_add\(\[", src)


@pytest.mark.parametrize("mode", [1, 2, 3, 4])
def test_other_atomics_keep_the_element_form(mode):
    src = _source(mode)
    assert "tl.atomic_add(" in src and ".atomic_add([" not in src


def test_before_sm90_and_in_the_interpreter_the_element_form_stays():
    from safetile.backends.triton.launcher import kernel_source
    assert ".atomic_add([" not in kernel_source(add_products, _args(0), target=80)


def test_attentions_fused_dq_keeps_the_element_form_in_its_loop():
    """Its row offset is a run-time value inside the query loop: the guarded reduction (bulk where
    the offset is >= 0, else the element form) broke Triton 3.6's sm_90 pipeliner on this kernel
    (H200, session 14), so only the element form is generated there."""
    from safetile.backends.triton.launcher import kernel_source
    q, lse, acc = torch.empty(512, 64, dtype=torch.bfloat16), torch.empty(512), torch.empty(512, 64)
    args = (q, q, q, q, lse, lse, q, q, acc, 256, 0.1, 0.1, 64, 64, 64, True, False, True)
    src = kernel_source(A.attention_bwd_dkdv, args, target=90)
    assert src.count(".atomic_add([") == 0 and src.count("tl.atomic_add(") == 1


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available() or torch.cuda.get_device_capability()[0] < 9,
                    reason="needs an sm_90+ GPU")
@pytest.mark.parametrize("mode", [0, 1])
def test_bulk_and_element_sums_match_torch_on_the_gpu(mode):
    rng = np.random.default_rng(mode)
    x, w, acc, step, t, _ = _args(mode, device="cuda")
    x.copy_(torch.from_numpy(rng.standard_normal(tuple(x.shape), dtype=np.float32)).to(torch.bfloat16))
    blocks = ct.cdiv(1000, step)
    ct.launch(None, (blocks,), add_products, (x, w, acc, step, t, mode))
    prod = x.float().view(blocks, t, t) @ w.float()  # block b's product
    want = torch.zeros(1000 + 2 * t * 2 + blocks * step, t, device="cuda")
    for b in range(blocks):
        rows = b * step + (2 if mode == 1 else 1) * torch.arange(t, device="cuda")
        want.index_add_(0, rows, prod[b])
    torch.testing.assert_close(acc, want[:1000], rtol=1e-4, atol=1e-3)
