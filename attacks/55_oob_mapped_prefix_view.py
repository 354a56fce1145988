"""Promise: out-of-bounds through the safe API is impossible. A mapped partition and a
prefix partition over views whose edges sit inside a larger buffer must not write past
the views. Active backend."""
# BACKENDS: cpu triton
from _common import *

SRC = '''
@ct.entry
def mw(c: ct.MappedMut[ct.f32, ("BM", "BN")], v: ct.f32):
    for idx in c.iter_indices():
        c.store(ct.full((BM, BN), 1.0, ct.float32) * v, idx)

@ct.entry
def pw(z: ct.Mut[ct.f32, ("P", "N")], v: ct.f32):
    z.store(ct.full((P, N), 1.0, ct.float32) * v)
'''
ks = kernel_from_source(SRC, tag="oobmp")
fails = []
buf = make_buf((64, 64))
m = ct.from_dlpack(buf)[0:40, 0:20].partition((16, 16)).map(3)
ks["mw"](m, 4.0).sync()
a = as_np(buf)
exp = np.zeros((64, 64), np.float32); exp[0:40, 0:20] = 4.0
if not np.array_equal(a, exp):
    fails.append(f"mapped view: {int((a != exp).sum())} elements wrong outside/inside the view")
buf = make_buf((64, 64))
try:
    p = ct.from_dlpack(buf)[0:40, 0:32].partition_prefix((16,))
    ks["pw"](p, 5.0).sync()
except Exception as e:  # noqa: BLE001
    fails.append(f"prefix partition over a view refused: {type(e).__name__}: {str(e)[:150]}")
else:
    a = as_np(buf)
    exp = np.zeros((64, 64), np.float32); exp[0:40, 0:32] = 5.0
    if not np.array_equal(a, exp):
        bad = np.argwhere(a != exp)
        fails.append(f"prefix view: {len(bad)} elements wrong, e.g. {bad[:3].tolist()}")
if fails:
    broken(f"[{BACKEND}] " + "; ".join(fails))
held(f"[{BACKEND}] mapped / prefix views exact")
