"""Promise (safe.md): loads of a Ref are zero padded past its edge ('z.load() ... zero past
the tensor's edge'; load_tile_like; x.partition(...).load zero padded). A Ref that is a
view base[10:20] of a buffer full of 7s must read zeros past element 10 of the view, not
the buffer's neighbouring 7s. Active backend."""
# BACKENDS: cpu triton
from _common import *


@ct.entry
def copy_like(z: ct.Mut[ct.f32, "B"], x: ct.Ref[ct.f32, -1]):
    z.store(ct.load_tile_like(x, z))


@ct.entry
def copy_part(z: ct.Mut[ct.f32, "B"], x: ct.Ref[ct.f32, -1], i: int):
    z.store(x.partition((B,)).load((i,)))


@ct.entry
def copy_mutload(z: ct.Mut[ct.f32, "B"], x: ct.Ref[ct.f32, -1]):
    z.store(z.load() + 1.0)


buf = make_buf(256, fill_value=7.0)
x = ct.from_dlpack(buf)[10:20]
fails = []
z, _ = copy_like(ct.from_dlpack(make_buf(64)).partition(64), x).sync()
a = z.unpartition().to_numpy()
if np.any(a[10:] != 0) or np.any(a[:10] != 7):
    fails.append(f"load_tile_like read past the view: {a[8:14]}")
for i in [0, 1, -1, 2**31 - 1, 2**28, -(2**31), 2**26 + 1]:
    z, _, _ = copy_part(ct.from_dlpack(make_buf(16)).partition(16), x, i).sync()
    a = z.unpartition().to_numpy()
    exp = np.zeros(16, np.float32)
    if i == 0:
        exp[:10] = 7
    if not np.array_equal(a, exp):
        fails.append(f"x.partition((16,)).load(({i},)) read {a[:12]}")
# Mut load past the edge: z is base2[0:10] of a buffer of 5s; z.load() must pad, and the
# edge must not be written
buf2 = make_buf(64, fill_value=5.0)
z, _ = copy_mutload(ct.from_dlpack(buf2)[0:10].partition(16), x).sync()
b2 = as_np(buf2)
if np.any(b2[:10] != 6) or np.any(b2[10:] != 5):
    fails.append(f"Mut load/store past edge: {b2[:14]}")
if fails:
    broken(f"[{BACKEND}] " + "; ".join(fails))
held(f"[{BACKEND}] Ref/Mut loads padded at the view's edge")
