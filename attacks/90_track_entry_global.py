"""Promise (semantics.md 'Python values read at compile time'): 'If one changed (SCALE =
3.0 after a launch ...) the kernel's compiled code is dropped and the next launch compiles
again.' Entry kernel reading a module global, fresh argument objects every launch."""
# BACKENDS: cpu triton
from _common import *

SCALE = 2.0


@ct.entry
def scaled(z: ct.Mut[ct.f32, "B"], x: ct.Ref[ct.f32, -1]):
    z.store(ct.load_tile_like(x, z) * SCALE)


def run():
    z, x = scaled(ct.zeros(64).sync().partition(64), ct.ones(64).sync()).sync()
    return float(z.to_numpy()[0])


r1 = run()
SCALE = 3.0
r2 = run()
if (r1, r2) != (2.0, 3.0):
    broken(f"@ct.entry kernel ignored SCALE = 3.0: launches gave {r1}, {r2} (want 2.0, 3.0)")
held("entry kernel recompiled after a global changed")
