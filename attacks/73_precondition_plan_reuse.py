"""Promise (safe.md 'The launch boundary'): 'The type-level checks and the compiled kernel
are cached per argument signature, so a repeated launch only re-checks ownership, aliasing
and preconditions.' A callable precondition that reads Python state must be re-checked on
a repeated launch with the same argument objects (a failing precondition rejects it)."""
from _common import *

LIMIT = 1000


@ct.entry(preconditions=[lambda z: z.shape[0] <= LIMIT])
def k(z: ct.Mut[ct.f32, "B"], x: ct.Ref[ct.f32, -1]):
    z.store(ct.load_tile_like(x, z) + 1.0)


x = ct.rand(256, seed=1).sync()
z = ct.zeros(256).sync().partition(64)
z, x = k(z, x).sync()
LIMIT = 0
try:
    k(ct.zeros(256).sync().partition(64), x).sync()
    inconclusive("precondition not re-checked even with new objects")
except ct.PreconditionError:
    pass
before = snap(z)
try:
    z, x = k(z, x).sync()
except ct.PreconditionError:
    held("precondition re-checked for the same argument objects")
broken(f"same argument objects: the failing precondition (LIMIT=0) was skipped and the launch ran "
       f"and returned; with new objects the same launch is rejected")
