"""Promise: stores to a Ref are refused at compile time however the Ref reaches the store:
a renamed variable, a helper function, a tuple element, a lambda, a conditional, a loop
variable, ct.static_eval, a default argument."""
from _common import *

SRC = '''
def helper(a, t):
    ct.store(a, index=(0,), tile=t)

def helper2(pair, t):
    pair[1].store(t)

@ct.entry
def s_alias(z: ct.Mut[ct.f32, "B"], x: ct.Ref[ct.f32, -1]):
    w = x
    ct.store(w, index=(0,), tile=ct.full((B,), 9.0, ct.float32))

@ct.entry
def s_helper(z: ct.Mut[ct.f32, "B"], x: ct.Ref[ct.f32, -1]):
    helper(x, ct.full((B,), 9.0, ct.float32))

@ct.entry
def s_tuple(z: ct.Mut[ct.f32, "B"], x: ct.Ref[ct.f32, -1]):
    pair = (z, x)
    helper2(pair, ct.full((B,), 9.0, ct.float32))

@ct.entry
def s_lambda(z: ct.Mut[ct.f32, "B"], x: ct.Ref[ct.f32, -1]):
    f = lambda a: ct.store(a, index=(0,), tile=ct.full((B,), 9.0, ct.float32))
    f(x)

@ct.entry
def s_cond(z: ct.Mut[ct.f32, "B"], x: ct.Ref[ct.f32, -1]):
    w = x if B > 0 else x
    ct.store(w, index=(ct.bid(0),), tile=ct.full((B,), 9.0, ct.float32))

@ct.entry
def s_swap(z: ct.Mut[ct.f32, "B"], x: ct.Ref[ct.f32, -1]):
    a, b = x, z
    a.store(ct.full((B,), 9.0, ct.float32))

@ct.entry
def s_static(z: ct.Mut[ct.f32, "B"], x: ct.Ref[ct.f32, -1]):
    ct.store(ct.static_eval(x), index=(0,), tile=ct.full((B,), 9.0, ct.float32))

@ct.entry
def s_loop(z: ct.Mut[ct.f32, "B"], x: ct.Ref[ct.f32, -1]):
    for a in ct.static_iter((x,)):
        ct.store(a, index=(0,), tile=ct.full((B,), 9.0, ct.float32))

@ct.entry
def s_atomic(z: ct.Mut[ct.f32, "B"], x: ct.Ref[ct.f32, -1]):
    ct.atomic_add(x, ct.arange(B, dtype=ct.int32), ct.full((B,), 9.0, ct.float32))

@ct.entry
def s_xchg(z: ct.Mut[ct.f32, "B"], x: ct.Ref[ct.f32, -1]):
    ct.atomic_xchg(x, ct.arange(B, dtype=ct.int32), ct.full((B,), 9.0, ct.float32))

@ct.entry
def s_cas(z: ct.Mut[ct.f32, "B"], x: ct.Ref[ct.f32, -1]):
    ct.atomic_cas(x, ct.arange(B, dtype=ct.int32), ct.load_tile_like(x, z), ct.full((B,), 9.0, ct.float32))
'''
ks = kernel_from_source(SRC, tag="refstore2")
fails = []
for name, k in ks.items():
    if not name.startswith("s_"):
        continue
    x = ct.rand(256, seed=3).sync()
    z = ct.zeros(256).sync().partition(64)
    before = snap(x)
    try:
        k(z, x).sync()
        fails.append(f"{name}: ran")
    except Exception as e:  # noqa: BLE001
        if not isinstance(e, ct.TileError):
            fails.append(f"{name}: {type(e).__module__}.{type(e).__name__} (not a Tile error): {str(e)[:120]}")
    if snap(x) != before:
        fails.append(f"{name}: x changed")
if fails:
    broken("; ".join(fails))
held("indirect stores to a Ref refused")
