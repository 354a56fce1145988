"""G3/G5 across the torch boundary on the CPU (torch.md: "hands them to torch once the launch is
enqueued"; "Inputs are borrowed for the call"). With a deliberately slow kernel (a long loop per
block), a torch_op's output is read by torch right after the call, and its input is a temporary
that torch frees (and whose memory torch reuses) immediately after the call: `add(torch.sin(x), y)`
eagerly inside a loop that allocates, and under torch.compile (aot_eager and inductor-free).
Every output must equal the NumPy reference: if the CPU launch still ran after the op returned,
outputs would be incomplete or computed from reused input memory."""
from _r6 import *
import torch
from safetile.integrations.torch import Out, torch_op


@torch_op("r6slow::add", outputs={"z": Out("x")}, generics={"B": 256})
@ct.entry
def slow_add(z: ct.Mut[ct.f32, "B"], x: ct.Ref[ct.f32, -1], y: ct.Ref[ct.f32, -1]):
    acc = ct.load_tile_like(x, z)
    for i in range(200):
        acc = acc * 1.0 + 0.0
    z.store(acc + ct.load_tile_like(y, z))


def f(x, y):
    out = slow_add(torch.sin(x), y)
    junk = torch.full_like(x, 99.0)      # reuses the freed sin(x) buffer if it is gone
    return out + junk * 0.0


cf = torch.compile(f, backend="aot_eager", fullgraph=True)
bad = []
N = 4096
for trial in range(4):
    x = torch.rand(N, generator=torch.Generator().manual_seed(trial))
    y = torch.rand(N, generator=torch.Generator().manual_seed(100 + trial))
    ref = np.sin(x.numpy()) + y.numpy()
    for name, fn in (("eager", f), ("compiled", cf)):
        got = fn(x, y).numpy()
        err = np.abs(got - ref).max()
        if err > 1e-5:
            bad.append(f"{name} trial {trial}: max error {err}")
if bad:
    broken("; ".join(bad))
held("slow torch_op: outputs complete and inputs alive for the whole launch (eager and compiled, 4 trials)")
