"""Promise (semantics.md 'Errors'): 'A mistake in a kernel is a located Tile…Error of the
matching class. An exception that starts inside safetile's own code is a TileInternalError
(a bug in safetile) ... it is never reported as the user's mistake.' Conversely, a user
mistake must not surface as TileInternalError or a raw exception. Wrong argument types and
values for the public ct.* tile API."""
from _common import *

CALLS = [
    "ct.Array(None)", "ct.full('a', 1.0, ct.float32)", "ct.full((4,), 'x', ct.float32)", "ct.full((4,), 1.0, 'f')",
    "ct.load(x, index='a', shape=(4,))", "ct.load(x, index=(0,), shape='b')", "ct.load(x, index=(0, 0), shape=(4,))",
    "ct.reshape(t, 'x')", "ct.permute(t, (5,))", "ct.cat((t,), axis=9)", "ct.extract(t, 'x')", "ct.bid(7)",
    "ct.num_blocks(-1)", "ct.arange(-4, dtype=ct.int32)", "ct.astype(t, None)", "ct.where(t, t)", "ct.sum(t, axis=5)",
    "ct.mma(t, t, t)", "ct.gather(x, t)", "ct.printf(1)", "ct.assert_(t, 5)", "ct.static_iter(5)",
    "ct.load_tile_like(x, t)", "ct.broadcast_to(t, (3,))", "ct.expand_dims(t, 7)", "ct.transpose(t, 0, 9)",
    "ct.atomic_add(x, 'i', t)", "ct.scan(t, 0, None)", "ct.reduce(t, 0, None)", "ct.argmax(t, 3)",
    "ct.num_tiles(x, 4, shape=(4,))", "ct.bitcast(t, ct.int8)", "ct.item(t)", "ct.insert(t, t, 0)",
    "x.tiled_view('a')", "x.slice('a', 0, 1)", "x.partition('q')", "x.partition((3,)).load((0,))",
    "z.partition((3,)).store(t, (0,))", "z.store(t, 5)", "z.load(1)", "ct.Slice('x')", "ct.ensure_constant(t)",
    "ct.cdiv(t, 0)", "ct.static_assert(1 == 1, t)",
]
fails = []
for i, call in enumerate(CALLS):
    src = f'''
@ct.entry
def k(z: ct.Mut[ct.f32, "B"], x: ct.Ref[ct.f32, -1]):
    t = ct.load_tile_like(x, z)
    u = {call}
    z.store(t)
'''
    k = kernel_from_source(src, tag=f"misuse{i}")["k"]
    try:
        k(ct.zeros(64).sync().partition(64), ct.zeros(64).sync()).sync()
    except ct.TileInternalError as e:
        fails.append(f"{call}: TileInternalError ({str(e).splitlines()[0][22:90]})")
    except ct.TileError as e:
        if "line" not in str(e):
            fails.append(f"{call}: {type(e).__name__} without location")
    except Exception as e:  # noqa: BLE001
        fails.append(f"{call}: raw {type(e).__module__}.{type(e).__name__}: {str(e)[:60]}")
if fails:
    broken(f"{len(fails)}/{len(CALLS)} misuses not reported as located user errors: " + " | ".join(fails))
held(f"all {len(CALLS)} misuses are located Tile errors")
