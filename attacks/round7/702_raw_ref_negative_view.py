"""G7 ("foreign torch tensors that are not plain strided memory (sparse, nested, meta, lazy
conjugate/negative views: TensorError)") and G3 ("the checked memory is the memory that runs") for a
raw torch tensor passed as a ct.Ref. A tensor with torch's lazy negative bit (torch._neg_view(t), or
t.data = torch._neg_view(...) re-pointing a tensor in place, which keeps the bit) shows -t while its
memory holds t. ct.from_dlpack, ct.memcpy and ct.from_numpy refuse it with a TensorError ("its memory
does not hold the values it shows"); a launch taking it as a Ref must refuse it too (or read the
values it shows, as torch_op does) -- not silently read the un-negated memory. Also run inside one
terminal after the alias was made (the C path's per-terminal alias reuse), both paths."""
from _r7 import *
import torch


def scenario():
    out = {}
    N = 64
    t = torch.arange(N, dtype=torch.float32)
    nv = torch._neg_view(t)
    try:
        ct.from_dlpack(nv)
        out["from_dlpack (control)"] = "accepted"
    except Exception as e:  # noqa
        out["from_dlpack (control)"] = err(e, 60)
    z = ct.zeros(N).sync().partition(16)
    try:
        (z, _) = copyk(z, nv).sync()
        out["launch Ref=neg view"] = z.unpartition().to_numpy()[:3].tolist()
    except Exception as e:  # noqa
        out["launch Ref=neg view"] = err(e, 60)
    u = torch.arange(N, dtype=torch.float32)
    z = ct.zeros(N).sync().partition(16)

    def step(r):
        u.data = torch._neg_view(u.detach())   # same pointer, shape, strides, dtype, device
        return copyk(r[0], u)
    try:
        (z, _) = copyk(z, u).then(step).sync()
        out["chain, re-pointed to its neg view"] = z.unpartition().to_numpy()[:3].tolist()
    except Exception as e:  # noqa
        out["chain, re-pointed to its neg view"] = err(e, 60)
    out["u shows"] = u[:3].tolist()
    return out


def judge(c, py):
    for name, o in (("C", c), ("Python", py)):
        for k in ("launch Ref=neg view", "chain, re-pointed to its neg view"):
            v = o[k]
            if isinstance(v, list) and v[1] == 1.0:
                return "BROKEN", (f"{name} path, {k}: the launch read {v} (the memory) while the tensor shows "
                                  f"[-0.0, -1.0, -2.0]; from_dlpack refuses the same tensor: {o['from_dlpack (control)']}")
    return "HELD", "negative views refused or read as shown"


differential(scenario, judge)
