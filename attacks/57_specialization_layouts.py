"""Promise (DESIGN 'Execution'): kernels are specialised on 'divisibility/contiguity facts';
dynamic sizes never recompile. Compiled code made for contiguous, aligned arguments must
not be reused for strided, transposed or offset views of the same shape: the Ref must be
read at its real strides and the Mut written only at its own elements (anything else is an
out-of-bounds write). Active backend."""
# BACKENDS: cpu triton
from _common import *


@ct.entry
def cp2(z: ct.Mut[ct.f32, ("BM", "BN")], x: ct.Ref[ct.f32, (-1, -1)]):
    z.store(ct.load_tile_like(x, z) + 1.0)


fails = []
rng = np.random.default_rng(0)
for rnd, (zlay, xlay) in enumerate([("c", "c"), ("c", "t"), ("c", "s"), ("s", "c"), ("t", "c"), ("o", "o"), ("c", "c")]):
    zbuf = make_buf((64, 128))
    xbuf = make_buf((64, 128))
    xb = as_np(xbuf)
    xb[...] = rng.random((64, 128), dtype=np.float32)

    def lay(buf, kind):
        t = ct.from_dlpack(buf)
        if kind == "c":
            return t[:, 0:32][0:32].reshape(32, 32) if False else t[0:32, 0:32]
        if kind == "t":
            return ct.from_dlpack(buf.T if isinstance(buf, np.ndarray) else buf.t())[0:32, 0:32]
        if kind == "s":
            return t[0:64:2, 0:64:2]
        if kind == "o":
            return t[1:33, 3:35]
    zv = lay(zbuf, zlay)
    xv = lay(xbuf, xlay)
    xexp = np.asarray(xv.to_numpy())
    z, _ = cp2(zv.partition((16, 16)), xv).sync()
    got = z.unpartition().to_numpy()
    if not np.array_equal(got, xexp + 1):
        fails.append(f"launch {rnd} (z {zlay}, x {xlay}): wrong values read")
    # every element of zbuf outside the view must still be zero
    zb = as_np(zbuf).copy()
    mask = np.zeros_like(zb, bool)
    if zlay == "c":
        mask[0:32, 0:32] = True
    elif zlay == "t":
        mask.T[0:32, 0:32] = True
    elif zlay == "s":
        mask[0:64:2, 0:64:2] = True
    elif zlay == "o":
        mask[1:33, 3:35] = True
    if np.any(zb[~mask] != 0):
        fails.append(f"launch {rnd} (z {zlay}): {(zb[~mask] != 0).sum()} elements written outside the Mut view")
if fails:
    broken(f"[{BACKEND}] " + "; ".join(fails))
held(f"[{BACKEND}] compiled code respects each launch's layout")
