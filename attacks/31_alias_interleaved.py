"""Promise (safe.md 4): 'disjoint interleaved views pass and overlapping ones are refused'.
a[::2] (Mut) vs a[1::2] (Ref) must pass and compute correctly; a[::2] vs a[::3] overlap
(every 6th element) must be refused; 2-D column blocks likewise."""
from _common import *

a = np.arange(512, dtype=np.float32)
z = ct.from_dlpack(a[0::2]).partition(64)
x = ct.from_dlpack(a[1::2])
try:
    z, x = fill(z, x).sync()
except Exception as e:  # noqa: BLE001
    broken(f"disjoint interleaved views refused: {type(e).__name__}: {e}")
exp = np.arange(512, dtype=np.float32)
exp[0::2] = exp[1::2] + 1
if not np.array_equal(a, exp):
    broken("interleaved launch computed wrong values / touched the odd elements")
b = np.zeros(768, np.float32)
z = ct.from_dlpack(b[0::2][:256]).partition(64)
x = ct.from_dlpack(b[0::3][:256])
expect_refusal(lambda: fill(z, x).sync(), ct.AliasError, ["'z'", "'x'"], "a[::2] vs a[::3]")
m = np.zeros((64, 128), np.float32)
z = ct.from_dlpack(m[:, 0:64]).partition((16, 16))
x = ct.from_dlpack(m[:, 64:128])
try:
    fill2d(z, x).sync()
except Exception as e:  # noqa: BLE001
    broken(f"disjoint column blocks refused: {e}")
z = ct.from_dlpack(m[:, 0:64]).partition((16, 16))
x = ct.from_dlpack(m[:, 63:127])
expect_refusal(lambda: fill2d(z, x).sync(), ct.AliasError, ["'z'", "'x'"], "column blocks overlapping by one column")
held("interleaved views: disjoint pass, overlapping refused")
