"""G4 (f: nothing moved forever) and G7 (c). A launch whose arguments are DeviceOps is validated
when it runs, after its inner launches have run. When the outer launch is refused (precondition,
grid mismatch, aliasing, a kernel the IR check refuses), in sync, await and graph capture, every
value involved — the inner launch's outputs and inputs, the outer launch's own arguments — must
be usable afterwards, and the outer launch's own arguments byte-identical."""
from _r6 import *
import asyncio


@ct.entry(preconditions=["dim(x, 0) == 999"])
def pre_bad(z: ct.Mut[ct.f32, "B"], x: ct.Ref[ct.f32, -1]):
    z.store(ct.load_tile_like(x, z))


@ct.entry
def two(z: ct.Mut[ct.f32, "B"], w: ct.Mut[ct.f32, "B"]):
    z.store(w.load())
    w.store(z.load())


@ct.entry
def sneaky(z: ct.Mut[ct.f32, "B"], x: ct.Ref[ct.f32, -1]):
    z.store(ct.load_tile_like(x, z))
    t = ct.full((B,), 1.0, ct.float32)
    ct.store(z, index=(0,), tile=t)   # another block's index: refused by the IR check


problems, notes = [], []


def check_usable(name, **vals):
    for k, v in vals.items():
        try:
            if isinstance(v, ct.Partition):
                v.unpartition()
            else:
                v.to_numpy()
        except Exception as e:  # noqa
            problems.append(f"{name}: {k} unusable after the refusal: {type(e).__name__}: {str(e)[:90]}")


def make(kind):
    z = ct.from_dlpack(arr(64)).partition(16)
    x = ct.from_dlpack(arr(64, 2.0))
    xb = arr(64, 5.0)
    x2 = ct.from_dlpack(xb)
    if kind == "precondition":
        op = pre_bad(fill1(z, x).first(), x2)
        return op, dict(z=z, x=x, x2=x2), xb
    if kind == "grid":
        w = ct.from_dlpack(xb).partition(32)
        op = two(fill1(z, x).first(), w)
        return op, dict(z=z, x=x, w=w), xb
    if kind == "alias":
        w = ct.from_dlpack(xb).partition(16)
        op = two(fill1(z, x).first(), ct.value(w))
        op2 = None
        return op, dict(z=z, x=x, w=w), xb
    if kind == "ir-check":
        op = sneaky(fill1(z, x).first(), x2)
        return op, dict(z=z, x=x, x2=x2), xb


for kind in ("precondition", "grid", "ir-check"):
    for term in ("sync", "await", "graph"):
        op, vals, xb = make(kind)
        before = xb.copy()
        try:
            if term == "sync":
                op.sync()
            elif term == "await":
                async def go():
                    return await op
                asyncio.run(go())
            else:
                op.graph()
            problems.append(f"{kind}/{term}: not refused")
        except Exception as e:  # noqa
            if not is_st(e):
                problems.append(f"{kind}/{term}: RAW {type(e).__name__}: {e}")
            else:
                notes.append(f"{kind}/{term}:{type(e).__name__}")
        if not np.array_equal(xb, before):
            problems.append(f"{kind}/{term}: outer argument's bytes changed")
        check_usable(f"{kind}/{term}", **vals)
if problems:
    broken("; ".join(problems[:8]))
held("refused outer launches leave every value usable: " + ", ".join(notes))
