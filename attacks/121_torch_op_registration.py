"""Promise (torch.md): 'Mistakes in the declaration (a constant not given, a mutable
parameter not declared as an output, a generic partition size not given, a callable naming
an unknown input) are refused at registration, naming the parameter.'"""
from _common import *
from safetile.integrations.torch import Out, torch_op

SRC = '''
@ct.entry
def two_out(z: ct.Mut[ct.f32, "B"], w: ct.Mut[ct.f32, "B"], x: ct.Ref[ct.f32, -1], k: ct.Constant[int]):
    z.store(ct.load_tile_like(x, z) * k)
    w.store(ct.load_tile_like(x, w))
'''
k = kernel_from_source(SRC, tag="torchreg")["two_out"]
fails = []
n = [0]


def reg(what, param, **kw):
    n[0] += 1
    try:
        torch_op(f"redteam::reg{n[0]}", k, **kw)
    except Exception as e:  # noqa: BLE001
        if param not in str(e):
            fails.append(f"{what}: error does not name {param!r}: {type(e).__name__}: {str(e)[:100]}")
        return
    fails.append(f"{what}: accepted at registration")


reg("constant not given", "k", outputs={"z": Out("x"), "w": Out("x")}, generics={"B": 64})
reg("mutable param not declared", "w", outputs={"z": Out("x")}, generics={"B": 64}, constants={"k": 2})
reg("generic partition size not given", "B", outputs={"z": Out("x"), "w": Out("x")}, constants={"k": 2})
reg("callable names unknown input", "q", outputs={"z": Out(lambda q: q.shape), "w": Out("x")}, generics={"B": 64}, constants={"k": 2})
reg("output naming an unknown input", "nope", outputs={"z": Out("nope"), "w": Out("x")}, generics={"B": 64}, constants={"k": 2})
reg("output for a Ref parameter", "x", outputs={"z": Out("x"), "w": Out("x"), "x": Out((4,))}, generics={"B": 64}, constants={"k": 2})
if fails:
    broken("; ".join(fails))
held("declaration mistakes refused at registration naming the parameter")
