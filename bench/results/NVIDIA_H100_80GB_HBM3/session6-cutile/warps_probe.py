"""Probe: NVIDIA's attention sample through safetile with num_warps forced (4 / 8 / default)."""
import sys, types
import torch, torch.nn.functional as F
sys.path.insert(0, "bench")
import safetile as ct
from benchlib import time_ms
pkg = types.ModuleType("cuda"); pkg.tile = ct
sys.modules.update({"cuda": pkg, "cuda.tile": ct, "cuda.tile.tune": ct.tune})
sys.path.insert(0, sys.argv[1] if len(sys.argv) > 1 else "samples")
import AttentionFMHA as A
f16 = torch.float16
for d, causal in ((64, False), (128, True)):
    s = tuple(torch.randn(4, 16, 4096, d, device="cuda", dtype=f16) for _ in range(3))
    t_ref = time_ms([lambda: F.scaled_dot_product_attention(*s, is_causal=causal)], 9)
    for hints in ({}, {"num_warps": 4}, {"num_warps": 8}, {"num_warps": 4, "occupancy": 1}, {"num_warps": 8, "occupancy": 1}):
        k = A.fmha_kernel.replace_hints(**hints) if hints else A.fmha_kernel
        try:
            out = A.cutile_fmha(*s, causal=causal, kernel=k)
            ok = torch.allclose(out.float(), F.scaled_dot_product_attention(*s, is_causal=causal).float(), atol=2e-2, rtol=2e-2)
            t = time_ms([lambda: A.cutile_fmha(*s, causal=causal, kernel=k)], 9)
            print(f"d{d}{'c' if causal else ''} {hints}: ratio {t_ref / t:.3f} ok={ok}", flush=True)
        except Exception as e:
            print(f"d{d} {hints}: {type(e).__name__}: {str(e)[:200]}", flush=True)
