"""Promise (semantics.md): 'Values are compared by identity, except plain scalars ...,
which compare by type and value (assigning an equal constant does not recompile).' 0.0 and
-0.0 are equal but not the same value for the kernel: x * SCALE changes sign."""
# BACKENDS: cpu triton
from _common import *

SCALE = 0.0


@ct.kernel
def k(z, x):
    ct.store(z, index=(0,), tile=ct.load(x, index=(0,), shape=(64,)) * SCALE)


x = np.ones(64, np.float32)
z = np.full(64, 7.0, np.float32)
ct.launch(None, (1,), k, (z, x))
s1 = bool(np.signbit(z[0]))
SCALE = -0.0
ct.launch(None, (1,), k, (z, x))
s2 = bool(np.signbit(z[0]))
if (s1, s2) != (False, True):
    broken(f"SCALE 0.0 -> -0.0 not recompiled: signbit of 1*SCALE = {s1}, {s2} (want False, True)")
held("-0.0 distinguished")
