"""Promise (DESIGN): 'Any rejected launch leaves every argument untouched: nothing is
written, nothing lost'. A chain whose second launch is rejected (alias / grid /
precondition) or whose closure raises must leave the values usable afterwards."""
from _common import *


@ct.entry(preconditions=["dim(z, 0) == 999"])
def picky(z: ct.Mut[ct.f32, "B"], x: ct.Ref[ct.f32, -1]):
    z.store(ct.load_tile_like(x, z))


fails = []
for name, step2 in [
    ("alias", lambda v: fill(v[0], v[0].unpartition() if False else v[1]).grid((4, 1, 1)) if False else fill(v[0], v[1].reshape(256)).then(lambda w: fill(w[0], w[0]))),
    ("grid", lambda v: fill(v[0], v[1]).grid((8, 1, 1))),
    ("precondition", lambda v: picky(v[0], v[1])),
    ("closure raises", lambda v: (_ for _ in ()).throw(RuntimeError("boom"))),
]:
    x = ct.rand(256, seed=1).sync()
    z = ct.zeros(256).sync().partition(64)
    try:
        fill(z, x).then(step2).sync()
    except Exception as e:  # noqa: BLE001
        pass
    else:
        fails.append(f"{name}: chain did not fail")
    for nm, v in [("z", z), ("x", x)]:
        try:
            a = v.to_numpy()
        except Exception as e:  # noqa: BLE001
            fails.append(f"{name}: {nm} lost after the failed chain: {type(e).__name__}: {str(e)[:100]}")
            continue
    try:
        fill(z, x).sync()
    except Exception as e:  # noqa: BLE001
        fails.append(f"{name}: z/x not reusable: {type(e).__name__}: {str(e)[:100]}")
if fails:
    broken("; ".join(fails))
held("failed chains give the values back")
