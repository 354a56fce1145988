"""Promise (torch.md 'Ownership across the boundary'): 'The op owns its outputs ... fresh
memory, so an output never aliases an input'; 'Inputs are borrowed ... nothing writes
them'; 'Inputs may alias each other, including overlapping views'. Checked on overlapping,
expanded, transposed and sliced inputs; two live outputs never share memory."""
import torch
from _common import *
from safetile.integrations.torch import Out, torch_op


@torch_op("redteam::add", outputs={"z": Out("x")}, generics={"B": 64})
@ct.entry
def add(z: ct.Mut[ct.f32, "B"], x: ct.Ref[ct.f32, -1], y: ct.Ref[ct.f32, -1]):
    z.store(ct.load_tile_like(x, z) + ct.load_tile_like(y, z))


def span(t):
    if t.numel() == 0:
        return (0, 0)
    lo = t.data_ptr()
    hi = lo + sum((s - 1) * st for s, st in zip(t.shape, t.stride())) * t.element_size() + t.element_size()
    return lo, hi


base = torch.rand(300)
fails = []
cases = [("same tensor", base[:200], base[:200]), ("overlapping", base[:200], base[50:250]),
         ("expand", base[:1].expand(200), base[100:300]), ("strided", base[::3][:100], base[1::3][:100]),
         ("transposed-ish", torch.rand(20, 10).t().reshape(-1) if False else base[:200].view(20, 10).t().contiguous().view(-1), base[:200])]
outs = []
for name, x, y in cases:
    snap_base = base.clone()
    try:
        z = add(x, y)
    except Exception as e:  # noqa: BLE001
        fails.append(f"{name}: refused ({type(e).__name__}: {str(e)[:80]})")
        continue
    if not torch.equal(base, snap_base):
        fails.append(f"{name}: an input was written")
    if not torch.allclose(z, x + y):
        fails.append(f"{name}: wrong result")
    zl, zh = span(z)
    for nm, t in [("x", x), ("y", y)]:
        l, h = span(t)
        if zl < h and l < zh:
            fails.append(f"{name}: output overlaps input {nm}")
    for o in outs:
        l, h = span(o)
        if zl < h and l < zh:
            fails.append(f"{name}: output overlaps an earlier live output")
    outs.append(z)
try:
    r = torch.library.opcheck(add, (base[:200], base[50:250]))
    if any(v != "SUCCESS" for v in r.values()):
        fails.append(f"opcheck: {r}")
except Exception as e:  # noqa: BLE001
    fails.append(f"opcheck raised {type(e).__name__}: {str(e)[:100]}")
if fails:
    broken("; ".join(fails))
held("outputs fresh, inputs untouched, aliasing inputs fine")
