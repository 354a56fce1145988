"""Promise (safe.md Preconditions): callables receive read-only ArgInfo (shape, ndim,
dtype); a failing precondition is a PreconditionError naming the condition. A callable
that raises, returns a non-bool, or tries to reach the tensor through ArgInfo must not
write or move anything, and the error must be a safetile error."""
from _common import *

SRC = '''
def pc_raise(x):
    raise ValueError("user bug")

def pc_poke(x):
    for name in ("_tensor", "_data", "tensor", "data", "array", "_array", "__dict__"):
        v = getattr(x, name, None)
        if v is not None and hasattr(v, "fill"):
            v.fill(99.0)
    try:
        x.shape = (1,)
    except Exception:
        pass
    return True

def pc_none(x):
    return None

@ct.entry(preconditions=[pc_raise])
def k_raise(z: ct.Mut[ct.f32, "B"], x: ct.Ref[ct.f32, -1]):
    z.store(ct.load_tile_like(x, z))

@ct.entry(preconditions=[pc_poke])
def k_poke(z: ct.Mut[ct.f32, "B"], x: ct.Ref[ct.f32, -1]):
    z.store(ct.load_tile_like(x, z))

@ct.entry(preconditions=[pc_none])
def k_none(z: ct.Mut[ct.f32, "B"], x: ct.Ref[ct.f32, -1]):
    z.store(ct.load_tile_like(x, z))
'''
ks = kernel_from_source(SRC, tag="precond")
fails = []
for name in ["k_raise", "k_poke", "k_none"]:
    x = ct.rand(256, seed=1).sync()
    z = ct.zeros(256).sync().partition(64)
    bx = snap(x)
    try:
        ks[name](z, x).sync()
        if name == "k_none":
            fails.append("precondition returning None accepted as true")
    except Exception as e:  # noqa: BLE001
        if not is_safetile_error(e):
            fails.append(f"{name}: {type(e).__module__}.{type(e).__name__} escaped instead of a safetile error: {str(e)[:80]}")
    if snap(x) != bx:
        fails.append(f"{name}: precondition changed x through ArgInfo")
    try:
        z.to_numpy(); x.to_numpy()
    except Exception as e:  # noqa: BLE001
        fails.append(f"{name}: args unusable after: {type(e).__name__}")
if fails:
    broken("; ".join(fails))
held("precondition callables cannot write; failures are safetile errors")
