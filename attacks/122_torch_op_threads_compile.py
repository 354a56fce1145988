"""Promise (torch.md): every call is a validated launch; torch.compile(fullgraph=True)
traces through the op (fake kernel derived, element types and ranks checked while
tracing). 4 threads call the op eagerly at once; a compiled function gives the eager
result; a wrong dtype under torch.compile is reported (not silently computed)."""
import threading

import torch
from _common import *
from safetile.integrations.torch import Out, torch_op


@torch_op("redteam::mul2", outputs={"z": Out("x")}, generics={"B": 64})
@ct.entry
def mul2(z: ct.Mut[ct.f32, "B"], x: ct.Ref[ct.f32, -1]):
    z.store(ct.load_tile_like(x, z) * 2.0)


fails = []
xs = [torch.rand(64 * (i + 1)) for i in range(4)]
res = [None] * 4


def go(i):
    for _ in range(5):
        res[i] = mul2(xs[i])


ths = [threading.Thread(target=go, args=(i,)) for i in range(4)]
[t.start() for t in ths]
[t.join(60) for t in ths]
if any(t.is_alive() for t in ths):
    broken("hang")
for i in range(4):
    if res[i] is None or not torch.equal(res[i], xs[i] * 2):
        fails.append(f"thread {i} wrong result")


@torch.compile(fullgraph=True, backend="aot_eager")
def f(x):
    return mul2(torch.sin(x)) + 1


x = torch.rand(200)
try:
    if not torch.allclose(f(x), torch.sin(x) * 2 + 1):
        fails.append("compiled result differs")
except Exception as e:  # noqa: BLE001
    fails.append(f"torch.compile failed: {type(e).__name__}: {str(e)[:120]}")
try:
    f(x.double())
    fails.append("float64 input accepted under torch.compile")
except Exception as e:  # noqa: BLE001
    pass
if fails:
    broken("; ".join(fails))
held("threads + torch.compile consistent")
