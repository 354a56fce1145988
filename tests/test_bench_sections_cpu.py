"""The GPU benchmark's sections (bench/sections/) run end to end on the CPU: tensors made for
"cuda" are made on the CPU, the kernels run on the NumPy backend, and the timers are fakes that
run each call they are given. Every check inside the sections must pass and every row must come
out. A device call is too scarce to find a section's plumbing error on (session 18 lost one to a
helper that returned two values where three were unpacked)."""
from __future__ import annotations

import os
import sys
import types

import pytest

torch = pytest.importorskip("torch")
sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "bench"))


@pytest.fixture
def cpu_cuda(monkeypatch):
    """"cuda" tensors on the CPU, fake device properties, and timers that run every call once."""
    for name in ("randn", "empty", "full", "zeros", "randint", "ones", "randn_like", "full_like", "empty_like"):
        made = getattr(torch, name)

        def on_cpu(*a, _made=made, **k):
            k.pop("device", None)
            return _made(*a, **k)
        monkeypatch.setattr(torch, name, on_cpu)
    monkeypatch.setattr(torch.cuda, "get_device_properties",
                        lambda *_: types.SimpleNamespace(multi_processor_count=4, L2_cache_size=1 << 20))
    calls_seen = []

    def fake_timer(calls, reps):
        for c in calls:
            c()
        calls_seen.append(len(calls))
        return 1.0
    for module in ("benchlib", "sections.memory", "sections.others", "sections.gemm", "sections.attention"):
        mod = __import__(module, fromlist=["_"])
        for timer in ("time_ms", "time_graph_ms"):
            if hasattr(mod, timer):
                monkeypatch.setattr(mod, timer, fake_timer)
        if hasattr(mod, "copies_for"):
            monkeypatch.setattr(mod, "copies_for", lambda nbytes, budget: 2)
    return calls_seen


def _failed(res):
    return [c["name"] for c in res.get("checks", []) if not c["ok"]]


def test_memory_sections(cpu_cuda):
    import sections.memory as M
    args = types.SimpleNamespace(copy_sizes=[4096], tile=1024, mem_budget=1e9, reps=2, confirm_rounds=2,
                                 add_dtypes=["float32"], add_sizes=[4096], norm_hidden=[256], softmax_widths=[256],
                                 rows=8, softmax_elems=2048, norm_dtype="float32")
    res = {}
    M.bench_copy(args, res)
    M.bench_add(args, res)
    M.bench_rows(args, res)
    assert not _failed(res) and len(res["checks"]) == 5
    assert all(len(res[k]) == 1 for k in ("copy", "add", "softmax", "rmsnorm", "layernorm"))
    assert cpu_cuda.count(2) >= 2 * 2 * 5  # every ratio from alternating rounds over two input copies


def test_others_section(cpu_cuda):
    import sections.others as O
    args = types.SimpleNamespace(others_kernels=None, mem_budget=1e9, reps=2, confirm_rounds=2,
                                 others_norm_shapes=[(4, 2048)], others_rms3d_shapes=[(2, 4, 256)],
                                 others_embedding_shapes=[(64, 256, 40)], others_transpose=[(256, "float32")],
                                 others_bmm=[(2, 256)], others_gemm2d=[256], cutile_samples=None)
    res = {}
    O.bench_others(args, res)
    assert not _failed(res)
    assert [r["kernel"] for r in res["others"]] == ["layernorm_chunked", "softmax_chunked", "rmsnorm_3d",
                                                    "embedding_gather", "transpose_float32", "batched_matmul_3d",
                                                    "gemm_2d"]


def test_gemm_section_confirms_the_chosen_kernel(cpu_cuda):
    import gpu_bench
    import sections.gemm as G
    args = gpu_bench.parse_args(["--only", "gemm", "--gemm-sizes", "256", "--gemm-dtypes", "float16",
                                 "--gemm-configs", "128x128x64x4x3", "--gemm-small-configs", "",
                                 "--gemm-persistent-configs", "", "--gemm-streamk-configs", "", "--reps", "2",
                                 "--confirm-rounds", "2", "--gemm-shapes", "256x128x192", "--gemm-persistent", "0"])
    args.mem_budget = 1e9  # main() reads it from the device
    res = {}
    G.bench_gemm(args, res)
    assert not _failed(res) and len(res["gemm"]) == 2
    for row in res["gemm"]:
        assert row["ok"] and row["ratio"] == row["select_ratio"] == 1.0  # the fake timer: equal times
        assert "graph_ratio" in row and "graph_select_ratio" in row


def test_attention_section_confirms_forward_and_backward(cpu_cuda, monkeypatch):
    import gpu_bench
    import sections.attention as A
    monkeypatch.setattr(A, "sdpa_backend_name", lambda fn: "math")  # no SDPA backends to name on the CPU
    args = gpu_bench.parse_args(["--only", "attention", "--attn-dims", "64", "--attn-seqs", "128",
                                 "--attn-probe-seq", "128", "--attn-tokens", "128", "--attn-heads", "2",
                                 "--attn-configs-64", "64x64x4x2", "--attn-kernels", "1",
                                 "--attn-bwd-dkdv-64", "32x64x4x2", "--attn-bwd-dq-64", "64x32x4x2",
                                 "--attn-bwd-fused-64", "", "--reps", "2", "--confirm-rounds", "2"])
    res = {}
    A.bench_attention(args, res)
    assert not _failed(res)
    assert [(r["pass"], r["causal"]) for r in res["attention"]] == [("fwd", False), ("bwd", False), ("fwd", True),
                                                                     ("bwd", True)]
    assert all(r["ratio"] == r["select_ratio"] == 1.0 for r in res["attention"])
