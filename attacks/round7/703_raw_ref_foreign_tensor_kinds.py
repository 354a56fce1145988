"""G7 ("Every refusal is a safetile error raised before anything runs; every argument stays
byte-identical and usable"; "foreign torch tensors that are not plain strided memory (sparse,
nested, meta, lazy conjugate/negative views: TensorError)"). Torch tensors of odd kinds passed
straight to a launch as a raw ct.Ref (no ct.from_dlpack), as a ct.memcpy source and to
ct.from_dlpack (control): sparse COO/CSR, nested, mkldnn, quantized, meta. Each must be a safetile
error, and the Mut partition of the refused launch must stay usable. Both paths."""
from _r7 import *
import torch


def kinds():
    N = 64
    base = lambda: torch.arange(N, dtype=torch.float32)  # noqa
    ks = {"sparse_coo": lambda: base().to_sparse(), "sparse_csr": lambda: base().reshape(8, 8).to_sparse_csr(),
          "nested": lambda: torch.nested.nested_tensor([base()[:32], base()[:32]]),
          "mkldnn": lambda: base().to_mkldnn(),
          "quantized": lambda: torch.quantize_per_tensor(base(), 0.1, 0, torch.qint8),
          "meta": lambda: torch.empty(N, device="meta")}
    return ks


def scenario():
    out = {}
    for k, f in kinds().items():
        try:
            x = f()
        except Exception as e:  # noqa
            out[k] = "cannot make: " + err(e, 40)
            continue
        z = ct.zeros(64).sync().partition(16)
        try:
            copyk(z, x).sync()
            out[k + " launch"] = "ran"
        except Exception as e:  # noqa
            out[k + " launch"] = err(e, 70)
        try:
            z.grid()
            out[k + " z usable"] = "yes"
        except Exception as e:  # noqa
            out[k + " z usable"] = err(e, 50)
        try:
            ct.memcpy(ct.zeros(64).sync(), x).sync()
            out[k + " memcpy"] = "ran"
        except Exception as e:  # noqa
            out[k + " memcpy"] = err(e, 70)
        try:
            ct.from_dlpack(x)
            out[k + " from_dlpack"] = "accepted"
        except Exception as e:  # noqa
            out[k + " from_dlpack"] = err(e, 70)
    return out


def judge(c, py):
    bad = [f"{k}: {v}" for k, v in c.items() if "(raw)" in str(v) or v == "ran" or v == "accepted"
           or (k.endswith("usable") and v != "yes")]
    if bad:
        return "BROKEN", "C path: " + " | ".join(bad)
    return "HELD", "every odd torch tensor kind refused with a safetile error"


differential(scenario, judge)
