"""G2 / (g) wrong results silently, for torch_op under torch.compile (aot_eager) and eager: inputs
that are transposed, sliced with a step, expanded (stride 0), with a storage offset, and an input
passed twice. Every output must equal the NumPy reference and the eager result, and every input
must be unchanged (compared with a clone taken before)."""
from _r6 import *
import torch
from safetile.integrations.torch import Out, torch_op


@torch_op("r6lay::add2", outputs={"z": Out("x")}, generics={"BM": 4, "BN": 8})
@ct.entry
def add2(z: ct.Mut[ct.f32, ("BM", "BN")], x: ct.Ref[ct.f32, (-1, -1)], y: ct.Ref[ct.f32, (-1, -1)]):
    z.store(ct.load_tile_like(x, z) * 2.0 + ct.load_tile_like(y, z))


def f(x, y):
    return add2(x, y) + 0.0


cf = torch.compile(f, backend="aot_eager", fullgraph=True)
base = torch.arange(12 * 20, dtype=torch.float32).reshape(12, 20)
CASES = {
    "contiguous": (base[:6, :10].contiguous(), base[:6, :10].contiguous() + 1),
    "transposed": (base[:10, :6].t(), base[:6, :10]),
    "stepped": (base[::2, ::2], base[:6, :10]),
    "expanded": (torch.arange(10.0).expand(6, 10), base[:6, :10]),
    "offset": (base[3:9, 5:15], base[1:7, 2:12]),
    "same tensor twice": (base[:6, :10], base[:6, :10]),
}
bad, notes = [], []
for name, (x, y) in CASES.items():
    xs, ys = x.clone(), y.clone()
    ref = (x.numpy() * 2.0 + y.numpy())
    try:
        e = add2(x, y)
        c = cf(x, y)
    except Exception as ex:  # noqa
        (notes if is_st(ex) else bad).append(f"{name}: {type(ex).__name__}: {str(ex)[:80]}")
        continue
    if not np.array_equal(e.numpy(), ref):
        bad.append(f"{name}: eager wrong (max err {np.abs(e.numpy() - ref).max()})")
    if not np.array_equal(c.numpy(), ref):
        bad.append(f"{name}: compiled wrong (max err {np.abs(c.numpy() - ref).max()})")
    if not (torch.equal(x, xs) and torch.equal(y, ys)):
        bad.append(f"{name}: an input changed")
    notes.append(f"{name} ok")
if bad:
    broken("; ".join(bad))
held("; ".join(notes))
