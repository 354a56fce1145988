"""Promise (safe.md): 'A store to a Ref (ct.store(x, ...), ct.scatter, atomics,
x.store(...), a store through x.partition(...)) is always refused at compile time.'
Each variant must be a compile-time Tile error and x must be byte-identical."""
from _common import *

SRC = '''
@ct.entry
def s_store(z: ct.Mut[ct.f32, "B"], x: ct.Ref[ct.f32, -1]):
    ct.store(x, index=(0,), tile=ct.full((B,), 9.0, ct.float32))

@ct.entry
def s_method(z: ct.Mut[ct.f32, "B"], x: ct.Ref[ct.f32, -1]):
    x.store(ct.full((B,), 9.0, ct.float32))

@ct.entry
def s_scatter(z: ct.Mut[ct.f32, "B"], x: ct.Ref[ct.f32, -1]):
    ct.scatter(x, ct.arange(B, dtype=ct.int32), ct.full((B,), 9.0, ct.float32))

@ct.entry
def s_part(z: ct.Mut[ct.f32, "B"], x: ct.Ref[ct.f32, -1]):
    x.partition((B,)).store(ct.full((B,), 9.0, ct.float32), (0,))

@ct.entry
def s_adv(z: ct.Mut[ct.f32, "B"], x: ct.Ref[ct.f32, -1]):
    ct.store_advanced_indexing(x, (ct.arange(B, dtype=ct.int32),), ct.full((B,), 9.0, ct.float32))

@ct.entry
def s_slice(z: ct.Mut[ct.f32, "B"], x: ct.Ref[ct.f32, -1]):
    ct.store(x.slice(0, 0, B), index=(0,), tile=ct.full((B,), 9.0, ct.float32))

@ct.entry
def s_tiled(z: ct.Mut[ct.f32, "B"], x: ct.Ref[ct.f32, -1]):
    v = x.tiled_view((B,))
    v.store((0,), ct.full((B,), 9.0, ct.float32))

@ct.entry
def s_tiled2(z: ct.Mut[ct.f32, "B"], x: ct.Ref[ct.f32, -1]):
    ct.store(x.tiled_view((B,)), index=(0,), tile=ct.full((B,), 9.0, ct.float32))
'''
ks = kernel_from_source(SRC, tag="refstore")
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
            fails.append(f"{name}: {type(e).__module__}.{type(e).__name__} (not a compile-time TileError): {str(e)[:120]}")
    if snap(x) != before:
        fails.append(f"{name}: x changed")
if fails:
    broken("; ".join(fails))
held("every direct store to a Ref refused at compile time")
