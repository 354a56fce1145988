"""Promise: aliasing is computed from pointer, shape, strides and item size — negative
strides included. Mut = a[::-1] (NumPy, via from_dlpack) and Ref = a must be refused;
a[::-1] as Mut alone must write exactly a (reversed) and nothing outside."""
from _common import *

base = np.zeros(300, np.float32)
a = base[10:266]
try:
    rev = ct.from_dlpack(a[::-1])
except Exception as e:  # noqa: BLE001
    if not is_safetile_error(e):
        broken(f"from_dlpack(neg stride) raised non-safetile {type(e).__name__}: {e}")
    held(f"negative strides refused at the boundary: {type(e).__name__}")
z = rev.partition(64)
x = ct.from_dlpack(a)
expect_refusal(lambda: fill(z, x).sync(), ct.AliasError, ["'z'", "'x'"], "Mut a[::-1] vs Ref a")
x2 = ct.from_dlpack(base[100:101])
expect_refusal(lambda: fill(z, x2).sync(), ct.AliasError, [], "Mut a[::-1] vs Ref one element inside a")
src = np.arange(256, dtype=np.float32)
z, _ = fill(z, ct.from_dlpack(src)).sync()
exp = np.zeros(300, np.float32)
exp[10:266] = (src + 1)[::-1]
if not np.array_equal(base, exp):
    bad = np.nonzero(base != exp)[0]
    broken(f"negative-stride Mut wrote wrong elements: {bad[:10]}")
held("negative strides: alias refused, writes exact")
