"""Class 1. A raw torch Ref whose storage is shrunk in place (x.untyped_storage().resize_(16)) while x
still shows 4096 elements: x now names 16 KiB of which 16 bytes are allocated (torch's own set_ refuses such
a view: 'out of bounds for storage'). G3/G8: a launch runs on the memory its arguments name and that memory
is the tensor's; reading 16 KiB of the heap past a 16-byte allocation is not. Promise: refused with a
safetile error (or read only x's bytes); never a silent out-of-bounds read. Both between launches (fresh
plan) and inside a chain after the C twin cached x's alias.
# BACKENDS: cpu triton"""
from _r8 import *

ensure_native()
N = 4096
res = {}
# (a) shrunk before the launch
x = torch.full((N,), 1.0)
run_copy(torch.full((N,), 1.0), n=N, tile=256)
x.untyped_storage().resize_(16)
try:
    out = run_copy(x, n=N, tile=256)
    res["a"] = f"ran; storage {x.untyped_storage().nbytes()} B; {len(set(out.tolist()))} distinct values, out[4:8]={out[4:8].tolist()}"
except Exception as e:  # noqa
    res["a"] = err(e, 90)
# (b) shrunk inside a chain
y = torch.full((N,), 1.0)


def step(v):
    y.untyped_storage().resize_(16)
    return copyk(v[0], y)


z = poisoned(N).partition(256)
try:
    (z, _) = copyk(z, y).then(lambda v: copyk(v[0], y)).then(step).sync()
    out = z.unpartition().to_numpy()
    res["b"] = f"ran; {len(set(out.tolist()))} distinct values, out[4:8]={out[4:8].tolist()}"
except Exception as e:  # noqa
    res["b"] = err(e, 90)
for k, v in res.items():
    print(k, v)
bad = [f"{k}: {v}" for k, v in res.items() if v.startswith("ran") or "(RAW)" in v]
if bad:
    broke("a Ref extending past its torch storage (storage resized to 16 B, tensor shows 4096 f32) was launched: "
          + " | ".join(bad))
held("refused: " + " | ".join(res.values()))
