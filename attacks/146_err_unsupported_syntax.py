"""Promise (semantics.md 'Errors'): 'A mistake in a kernel is a located Tile…Error of the
matching class. An exception that starts inside safetile's own code is a TileInternalError
(a bug in safetile)'. Unsupported or odd Python in kernel bodies must give a located
TileError (not TileInternalError, not a raw Python exception, not silent acceptance with
wrong meaning)."""
from _common import *

BODIES = {
    "with": "with open('x') as f:\n        pass",
    "try": "try:\n        t = t + 1.0\n    except Exception:\n        pass",
    "raise": "raise ValueError('x')",
    "yield": "yield t",
    "global": "global G\n    G = 1",
    "match": "match 3:\n        case 3:\n            t = t + 1.0",
    "list comp over tile": "u = [v for v in t]",
    "del": "del t",
    "bool(tile)": "if t:\n        pass",
    "tile in dict key": "d = {t: 1}",
    "tile index by tile": "u = t[t]",
    "float(tile)": "u = float(t)",
    "iter tile": "for v in t:\n        pass",
    "while tile": "while t:\n        pass",
    "recursion": "u = rec(t)",
    "class def": "class C:\n        pass",
    "import": "import os",
    "async": "async def f():\n        pass",
    "await": "await t",
    "setattr on tile": "t.foo = 1",
    "augassign subscript": "t[0] += 1.0",
    "slice assign": "t[0:2] = 1.0",
    "huge range": "for i in range(2**70):\n        t = t + 1.0",
    "range float": "for i in range(1.5):\n        t = t + 1.0",
    "divmod tile": "u = divmod(t, 0.0)",
    "ct.static_eval raise": "u = ct.static_eval(1 / 0)",
    "ct.static_assert non-bool": "ct.static_assert(t)",
    "ct.static_iter tile": "for v in ct.static_iter(t):\n        pass",
    "print tile to file": "print(t, file=None)",
    "ct.full negative shape": "u = ct.full((-4,), 1.0, ct.float32)",
    "ct.arange nonpow2": "u = ct.arange(3, dtype=ct.int32)",
    "reshape bad": "u = t.reshape((7,))",
    "astype bogus": "u = t.astype('bogus')",
    "mma rank1": "u = ct.mma(t, t, t)",
}
fails = []
for i, (name, body) in enumerate(BODIES.items()):
    src = f'''
def rec(a):
    return rec(a)

@ct.entry
def k(z: ct.Mut[ct.f32, "B"], x: ct.Ref[ct.f32, -1]):
    t = ct.load_tile_like(x, z)
    {body}
    z.store(ct.load_tile_like(x, z))
'''
    try:
        k = kernel_from_source(src, tag=f"syn{i}")["k"]
    except SyntaxError:
        continue   # not valid Python at all
    try:
        k(ct.zeros(64).sync().partition(64), ct.zeros(64).sync()).sync()
        fails.append(f"{name}: accepted")
    except ct.TileInternalError as e:
        fails.append(f"{name}: TileInternalError ({str(e)[:60]})")
    except ct.TileError as e:
        if "line" not in str(e):
            fails.append(f"{name}: {type(e).__name__} without a source location")
    except Exception as e:  # noqa: BLE001
        fails.append(f"{name}: {type(e).__module__}.{type(e).__name__}: {str(e)[:60]}")
if fails:
    broken(f"{len(fails)}/{len(BODIES)} bodies: " + " | ".join(fails))
held(f"all {len(BODIES)} odd bodies refused with located TileErrors")
