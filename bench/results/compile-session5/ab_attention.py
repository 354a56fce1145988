"""A/B of session 5's kernel-visible changes on a GPU, one side per process (each with its own
safetile cache): the attention forward's run time (the compile section's 3-D configs and the
2-D kernel's d=64 pick, seq 4096, causal and not, checked against SDPA first) and float32 exp2's
results. ``--before`` runs the kernels file and exp2 lowering from before the session
(``--kernels-file``, Triton's libdevice exp2); without it, this tree's."""
import argparse
import importlib.util
import json
import math
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
sys.path.insert(0, str(ROOT / "src"))
sys.path.insert(0, str(ROOT / "bench"))

import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402

import safetile as ct  # noqa: E402
from benchlib import time_ms  # noqa: E402

p = argparse.ArgumentParser()
p.add_argument("--before", action="store_true")
p.add_argument("--kernels-file", default=str(ROOT / "bench" / "kernels" / "attention.py"))
p.add_argument("--reps", type=int, default=10)
p.add_argument("--out", required=True)
args = p.parse_args()
if args.before:
    from safetile.backends.triton import elementwise
    elementwise._FLOAT_UNARY["exp2"] = "tl.exp2({})"
spec = importlib.util.spec_from_file_location("attn_under_test", args.kernels_file)
A = importlib.util.module_from_spec(spec)
spec.loader.exec_module(A)


@ct.kernel
def exp2_tile(X, Y, TILE: ct.Constant[int]):
    b = ct.bid(0)
    ct.store(Y, (b,), ct.exp2(ct.load(X, (b,), (TILE,))))


torch.manual_seed(0)  # both sides must see the same inputs (the session-5 run lacked this line: see NOTES)
x = torch.cat([torch.linspace(-150, 130, 1 << 20, device="cuda"), torch.randn(1 << 20, device="cuda") * 30])
y = torch.full_like(x, float("nan"))
ct.launch(None, (x.numel() // 1024,), exp2_tile, (x, y, 1024))
out = {"side": "before" if args.before else "after", "exp2": y.cpu(), "rows": []}
b, h, seq = 4, 16, 4096
LOG2E = 1.4426950408889634
for d, cfgs in ((64, [(0, 128, 128, 4), (0, 128, 64, 4), (1, 128, 128, 4)]), (128, [(0, 128, 128, 8)])):
    q, k, v = (torch.randn((b, h, seq, d), device="cuda", dtype=torch.bfloat16) for _ in range(3))
    scale = LOG2E / math.sqrt(d)
    for causal in (False, True):
        ref = F.scaled_dot_product_attention(q, k, v, is_causal=causal)
        for k2d, bm, bn, warps in cfgs:
            o = torch.full_like(q, float("nan"))
            grid = (ct.cdiv(seq, bm), b * h)
            if k2d:
                flat = [t.view(-1, d) for t in (q, k, v, o)]
                kern = A.attention_2d.replace_hints(num_warps=warps, num_stages=3)
                kargs = (*flat, torch.empty(1, device="cuda"), seq, scale, bm, bn, d, causal, False)
            else:
                kern = A.attention.replace_hints(num_warps=warps, num_stages=3)
                kargs = (*[t.view(b * h, seq, d) for t in (q, k, v, o)], scale, bm, bn, d, causal)
            ct.launch(None, grid, kern, kargs)
            err = (o.float() - ref.float()).abs().max().item()
            ms = time_ms([lambda g=grid, f=kern, a=kargs: ct.launch(None, g, f, a)], args.reps)
            row = {"d": d, "causal": causal, "k2d": k2d, "BM": bm, "BN": bn, "warps": warps, "ms": ms,
                   "max_abs_err": err, "ok": bool(torch.allclose(o.float(), ref.float(), atol=2e-2, rtol=2e-2))}
            out["rows"].append(row)
            print(json.dumps(row), flush=True)
torch.save(out, args.out)
