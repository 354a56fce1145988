"""Promise: a prefix partition may have fewer blocks than the grid, never more; but an
extra grid axis the prefix partition does not cover would give two blocks the same
sub-tensor. Blocks (i,1) must write nothing / the launch must be refused."""
from _common import *


@ct.entry
def pfill(z: ct.Mut[ct.f32, ("P", 16)], v: ct.f32):
    # block writes (bid0 + 1) + 10 * bid1 over its whole prefix sub-tensor [P, 16]
    z.store(ct.full((P, 16), 1.0, ct.float32) * (ct.bid(0) + 1 + 10 * ct.bid(1)))


t = ct.zeros((4, 16)).sync()
p = t.partition_prefix((1,))
r = None
try:
    r = pfill(p, 1.0).grid((4, 2, 1)).sync()
except Exception as e:  # noqa: BLE001
    if not is_safetile_error(e):
        broken(f"non-safetile error {type(e).__name__}: {e}")
    held(f"refused: {type(e).__name__}: {str(e)[:120]}")
a = r[0].unpartition().to_numpy()
vals = np.unique(a)
if any(v >= 10 for v in vals):
    broken(f"blocks with bid(1)=1 wrote the same rows as bid(1)=0: values {vals}")
held(f"extra-axis blocks wrote nothing: {vals}")
