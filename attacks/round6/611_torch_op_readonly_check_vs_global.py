"""G2 ("The inputs of a torch_op are read-only for unchecked kernels too: each specialisation is
compiled once with them read-only before it runs"). The read-only compile is keyed per
specialisation; the kernel's compiled code also depends on module globals it reads
(semantics.md: a changed global drops the compiled code and the next launch compiles again).
Here an unchecked kernel writes its input only when the global WRITE is true. First call with
WRITE = False (read-only check passes), then WRITE = True: the recompiled kernel writes the
input. The op must refuse (TileTypeError) rather than write an input torch was told is not
mutated. Also a helper function redefined between calls."""
from _r6 import *
import torch
from safetile.integrations.torch import Out, torch_op

WRITE = False


@ct.kernel
def kern(x, out, TILE: ct.Constant[int]):
    b = ct.bid(0)
    t = ct.load(x, index=(b,), shape=(TILE,))
    ct.store(out, index=(b,), tile=t + 1.0)
    if WRITE:
        ct.store(x, index=(b,), tile=t * 0.0 - 5.0)


op = torch_op("r6ro::k", kern, outputs={"out": Out("x")}, constants={"TILE": 16},
              grid=lambda x: (ct.cdiv(x.shape[0], 16), 1, 1))


def helper(t):
    return t


@ct.kernel
def kern2(x, out, TILE: ct.Constant[int]):
    b = ct.bid(0)
    t = ct.load(x, index=(b,), shape=(TILE,))
    ct.store(out, index=(b,), tile=helper_store(x, b, t))


def helper_store(x, b, t):
    return t + 1.0


op2 = torch_op("r6ro::k2", kern2, outputs={"out": Out("x")}, constants={"TILE": 16},
               grid=lambda x: (ct.cdiv(x.shape[0], 16), 1, 1))

res = {}
x = torch.full((64,), 2.0)
y = op(x)
res["first"] = (float(y[0]), float(x[0]))
WRITE = True
x2 = torch.full((64,), 2.0)
try:
    y2 = op(x2)
    res["after WRITE=True"] = (float(y2[0]), float(x2[0]))
except Exception as e:  # noqa
    res["after WRITE=True"] = f"refused {type(e).__name__}" if is_st(e) else f"RAW {type(e).__name__}"

x3 = torch.full((64,), 2.0)
op2(x3)


def helper_store(x, b, t):  # noqa: F811  (redefined: stores into the input)
    ct.store(x, index=(b,), tile=t * 0.0 - 9.0)
    return t + 1.0


x4 = torch.full((64,), 2.0)
try:
    op2(x4)
    res["helper redefined"] = float(x4[0])
except Exception as e:  # noqa
    res["helper redefined"] = f"refused {type(e).__name__}" if is_st(e) else f"RAW {type(e).__name__}"
# control: a fresh op registered while WRITE is already True is refused before it runs
opc = torch_op("r6ro::kc", kern, outputs={"out": Out("x")}, constants={"TILE": 16},
               grid=lambda x: (ct.cdiv(x.shape[0], 16), 1, 1))
xc = torch.full((64,), 2.0)
try:
    opc(xc)
    res["control (WRITE from the start)"] = f"ran, x[0] = {float(xc[0])}"
except Exception as e:  # noqa
    res["control (WRITE from the start)"] = f"refused {type(e).__name__}"
bad = []
if isinstance(res["after WRITE=True"], tuple) and res["after WRITE=True"][1] != 2.0:
    bad.append(f"input written after the global changed: x[0] = {res['after WRITE=True'][1]}")
if isinstance(res["helper redefined"], float) and res["helper redefined"] != 2.0:
    bad.append(f"input written after a helper was redefined: x[0] = {res['helper redefined']}")
if bad:
    broken("; ".join(bad) + f" || {res}")
held(str(res))
