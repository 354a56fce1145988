"""Promise (docs/torch.md): "Inputs are borrowed for the call as read-only ct.Ref arguments:
nothing moves, nothing writes them ... Inputs may alias each other, including overlapping
views"; "Every call is a validated launch ... raising the usual LaunchError subclasses";
"They are fresh memory, so an output never aliases an input".

Attack: a torch_op called with inputs torch users pass every day but the safe launch path may
not expect: an nn.Parameter (a torch.Tensor subclass, which plain safe launches refuse), a
requires_grad leaf, an expanded (zero-stride) input, a transposed/non-contiguous input, an
empty input, an input under torch.inference_mode(), the same tensor twice, a view overlapping
another input. Each call must either give the right output (fresh memory, inputs unchanged)
or raise a safetile error; a raw torch/Python exception from inside safetile is a finding.
"""
from _r4 import *

import torch
from safetile.integrations.torch import Out, torch_op


@torch_op("redteam4::add412", outputs={"z": Out("x")}, generics={"B": 64})
@ct.entry
def add(z: ct.Mut[ct.f32, "B"], x: ct.Ref[ct.f32, -1], y: ct.Ref[ct.f32, -1]):
    z.store(ct.load_tile_like(x, z) + ct.load_tile_like(y, z))


@torch_op("redteam4::add412b", outputs={"z": Out("x")}, generics={"BM": 16, "BN": 16})
@ct.entry
def add2(z: ct.Mut[ct.f32, ("BM", "BN")], x: ct.Ref[ct.f32, (-1, -1)], y: ct.Ref[ct.f32, (-1, -1)]):
    z.store(ct.load_tile_like(x, z) + ct.load_tile_like(y, z))


g = torch.Generator().manual_seed(412)
base = torch.randn(300, generator=g)
base2 = torch.randn(40, 30, generator=g)
CASES = {
    "nn.Parameter": lambda: (add, torch.nn.Parameter(base.clone()), base.clone()),
    "requires_grad leaf": lambda: (add, base.clone().requires_grad_(True), base.clone()),
    "expanded input": lambda: (add, torch.randn(1, generator=g).expand(300), base.clone()),
    "same tensor twice": lambda: (add, base, base),
    "overlapping views": lambda: (add, base[0:200], base[100:300]),
    "empty": lambda: (add, torch.zeros(0), torch.zeros(0)),
    "transposed 2-D": lambda: (add2, base2.t(), base2.t().contiguous()),
    "0-stride 2-D": lambda: (add2, torch.randn(30, 1, generator=g).expand(30, 40), base2.t().contiguous()),
}
fails = []
notes = []
for name, mk in CASES.items():
    for mode in ("eager", "inference_mode", "no_grad"):
        op, a, b = mk()
        ca, cb = a.detach().clone(), b.detach().clone()
        try:
            if mode == "inference_mode":
                with torch.inference_mode():
                    out = op(a, b)
            elif mode == "no_grad":
                with torch.no_grad():
                    out = op(a, b)
            else:
                out = op(a, b)
        except Exception as e:  # noqa: BLE001
            if not is_safetile_error(e):
                fails.append(f"{name} [{mode}]: raw {type(e).__module__}.{type(e).__name__}: {str(e)[:90]}")
            else:
                notes.append(f"{name} [{mode}]: refused {type(e).__name__}")
            continue
        if not (torch.equal(a.detach(), ca) and torch.equal(b.detach(), cb)):
            fails.append(f"{name} [{mode}]: an input changed")
        if out.numel() and (out.untyped_storage().data_ptr() in (a.untyped_storage().data_ptr(),
                                                                 b.untyped_storage().data_ptr())):
            fails.append(f"{name} [{mode}]: output aliases an input")
        if not torch.allclose(out.detach(), (ca + cb)):
            fails.append(f"{name} [{mode}]: wrong output")
print(notes)
if fails:
    broken("; ".join(fails[:5]) + (f" (+{len(fails) - 5} more)" if len(fails) > 5 else ""))
held("torch_op: odd but valid inputs computed right or refused with safetile errors")
