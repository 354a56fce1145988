"""The Qwen3 engine's kernels on the Triton backend: in Triton's interpreter on the CPU (a
one-layer model, tiny tiles so every path runs: padded query rows on the matrix units, several
attention splits, edge tiles), and compiled on a GPU when there is one (bfloat16 and float32)."""
from __future__ import annotations

import numpy as np
import pytest
import qwen3_reference as R
from triton_interp import triton_interpreter

from safetile.models import qwen3

torch = pytest.importorskip("torch")

CFG = dict(R.TINY, num_hidden_layers=1, vocab_size=128, hidden_size=64, intermediate_size=96)
SMALL_TILES = qwen3.tuning.GPU.with_(gemv_bn=8, gemv_bk=32, head_bn=16, attn_bn=8, attn_splits=4, fa_bm=16,
                                     fa_bn=16, gemm_bm=16, gemm_bn=16, gemm_bk=16, fill_bt=16, topk_bv=64, decode_chunk=1,
                                     topk_k=8)
PROMPT = [3, 17, 42, 5, 99, 7, 21, 60, 2, 8, 13, 77, 101, 4, 9, 31, 16, 28]  # two attention splits


def rel(a, b):
    return float(np.linalg.norm(a - b) / np.linalg.norm(b))


def test_triton_interpreter_matches_reference():
    tensors = R.random_tensors(CFG, seed=21)
    with triton_interpreter():
        m = qwen3.from_weights(qwen3.Qwen3Config(**CFG), tensors, max_seq_len=32, tuning=SMALL_TILES)
        assert rel(m.logits(PROMPT), R.forward(CFG, tensors, PROMPT)[-1]) < 1e-5
        assert m.generate(PROMPT, 3) == R.greedy(CFG, tensors, PROMPT, 3)


gpu = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")


@pytest.mark.gpu
@gpu
@pytest.mark.parametrize("dtype, tol", [("float32", 1e-4), ("bfloat16", 3e-2)])
def test_gpu_matches_reference(dtype, tol, monkeypatch):
    monkeypatch.delenv("TRITON_INTERPRET", raising=False)
    monkeypatch.delenv("SAFETILE_BACKEND", raising=False)
    cfg = dict(R.TINY, hidden_size=256, intermediate_size=512, num_attention_heads=8, num_key_value_heads=2,
               head_dim=64, vocab_size=1000)
    tensors = R.random_tensors(cfg, seed=22)
    m = qwen3.from_weights(qwen3.Qwen3Config(**cfg), tensors, device="cuda", dtype=dtype, max_seq_len=512)
    assert m.decode_graph(1).stream.is_cuda  # captured as a CUDA graph, not replayed from Python
    rounded = {k: torch.from_numpy(v).to(getattr(torch, dtype)).float().numpy() for k, v in tensors.items()}
    prompt = list(np.random.default_rng(0).integers(0, 1000, 300))  # several splits, partial tiles
    assert rel(m.logits(prompt), R.forward(cfg, rounded, prompt)[-1]) < tol
    if dtype == "float32":
        assert m.generate(prompt, 64) == R.greedy(cfg, rounded, prompt, 64)
    else:  # bfloat16 rounding may flip a near-tie, after which the sequences part ways: check each
        # token the engine chose against the reference's logits for the engine's own prefix
        got = m.generate(prompt, 16)
        for i, tok in enumerate(got):
            ref = R.forward(cfg, rounded, prompt + got[:i])[-1]
            assert ref[tok] >= ref.max() - 0.02 * (ref.max() - ref.min()), (i, tok, int(ref.argmax()))
