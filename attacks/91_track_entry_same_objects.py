"""Promise (semantics.md + safe.md 'What a repeated launch costs'): validation results are
reused, but compiled code is dropped when a global read at compile time changes. With the
*same argument objects* (the whole validated plan reused) the change must still be seen."""
# BACKENDS: cpu triton
from _common import *

SCALE = 2.0


@ct.entry
def scaled(z: ct.Mut[ct.f32, "B"], x: ct.Ref[ct.f32, -1]):
    z.store(ct.load_tile_like(x, z) * SCALE)


z = ct.zeros(64).sync().partition(64)
x = ct.ones(64).sync()
z, x = scaled(z, x).sync()
r1 = float(z.to_numpy()[0])
SCALE = 5.0
z, x = scaled(z, x).sync()
r2 = float(z.to_numpy()[0])
if (r1, r2) != (2.0, 5.0):
    broken(f"same argument objects: launches gave {r1}, {r2} after SCALE 2.0 -> 5.0 (want 2.0, 5.0)")
held("plan reuse still sees the changed global")
