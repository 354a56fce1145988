"""Promise (semantics.md): 'a redefined helper function' recompiles. Redefining a helper by
assigning its __code__ (same function object: functools.wraps-style patching, hot reload)
or its __defaults__ changes what the kernel computes."""
# BACKENDS: cpu triton
from _common import *


def helper(t):
    return t * 2.0


def other(t):
    return t * 7.0


def hd(t, s=2.0):
    return t * s


@ct.kernel
def k1(z, x):
    ct.store(z, index=(0,), tile=helper(ct.load(x, index=(0,), shape=(64,))))


@ct.kernel
def k2(z, x):
    ct.store(z, index=(0,), tile=hd(ct.load(x, index=(0,), shape=(64,))))


x = np.ones(64, np.float32)
z = np.zeros(64, np.float32)
out = []
ct.launch(None, (1,), k1, (z, x)); out.append(float(z[0]))
helper.__code__ = other.__code__
ct.launch(None, (1,), k1, (z, x)); out.append(float(z[0]))
ct.launch(None, (1,), k2, (z, x)); out.append(float(z[0]))
hd.__defaults__ = (5.0,)
ct.launch(None, (1,), k2, (z, x)); out.append(float(z[0]))
if out != [2.0, 7.0, 2.0, 5.0]:
    broken(f"helper __code__/__defaults__ patched in place ignored: got {out}, want [2.0, 7.0, 2.0, 5.0]")
held("in-place helper redefinition tracked")
