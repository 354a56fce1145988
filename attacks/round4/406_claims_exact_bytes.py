"""Promise (safety.md G6): "While a Shared handle lives, nothing writes its memory." Mechanism:
"Memory is claimed by extent: frozen by every live Shared; writable by every live partition
... A new claim overlapping a live claim of the other kind is refused"; safe.md: "partitioning a
view of it (taken before, or another wrapper of the same array) ... is an AliasError".

Attack: claims compared across *reinterpreting* wrappers of one NumPy buffer — other element
sizes (u8/u16/f32/f64), misaligned byte offsets (np.ndarray(buffer=, offset=odd)), negative
strides, interleaved strides, 2-D transposes — randomly generated pairs (A, B). A is shared, B
is partitioned and written whole by a launch (element type generic). Oracle: the bytes of A must
be unchanged afterwards, whatever was refused. Also the reverse order (B partitioned first, A
shared while the partition lives: must be refused when their bytes intersect, else B's launch
would write a live Shared). 300 random pairs, seeded.
"""
from _r4 import *

K = kernel_from_source('''
@ct.entry
def w1(z: ct.Mut["E", "B"]):
    z.store(ct.full((B,), 1, E))

@ct.entry
def w2(z: ct.Mut["E", ("BM", "BN")]):
    z.store(ct.full((BM, BN), 1, E))
''', tag="r4_406")
rng = np.random.default_rng(406)
DT = [np.uint8, np.uint16, np.float32, np.float64]
NBYTES = 512


def rand_view(base):
    dt = np.dtype(DT[rng.integers(len(DT))])
    it = dt.itemsize
    off = int(rng.integers(0, 400))
    if rng.random() < 0.3:
        # 2-D, maybe transposed
        r, c = int(rng.integers(1, 9)), int(rng.integers(1, 9))
        s0 = int(rng.integers(1, 4)) * it * c
        s1 = it * int(rng.integers(1, 3))
        strides = (s0, s1)
        shape = (r, c)
        span = (r - 1) * s0 + (c - 1) * s1 + it
        if off + span > NBYTES:
            return None
        v = np.ndarray(shape, dt, buffer=base, offset=off, strides=strides)
        if rng.random() < 0.5:
            v = v.T
        if v.strides[0] == v.strides[1] or any(s < it for s in map(abs, v.strides)):
            return None
        return v
    n = int(rng.integers(1, 24))
    st = int(rng.integers(1, 4)) * it
    if rng.random() < 0.3:
        st = -st
        start = off + (n - 1) * abs(st)
    else:
        start = off
    if max(start, off) + (n - 1) * abs(st) + it > NBYTES + (0 if st > 0 else 0) or start + it > NBYTES:
        return None
    try:
        return np.ndarray((n,), dt, buffer=base, offset=start, strides=(st,))
    except ValueError:
        return None


def byteset(v):
    out = set()
    base_addr = v.__array_interface__["data"][0]
    it = v.dtype.itemsize
    for idx in np.ndindex(*v.shape):
        a = base_addr + sum(i * s for i, s in zip(idx, v.strides))
        out.update(range(a, a + it))
    return out


def writer(v):
    return K["w1"] if v.ndim == 1 else K["w2"]


def part(t, v):
    return t.partition(16) if v.ndim == 1 else t.partition((4, 4))


fails = []
reasons = {}
stats = {"refused": 0, "ran": 0, "overlap": 0}
tries = 0
while tries < 300 and len(fails) < 5:
    base = bytearray(rng.integers(2, 250, NBYTES, dtype=np.uint8).tobytes())
    A = rand_view(base)
    B = rand_view(base)
    if A is None or B is None:
        continue
    tries += 1
    ov = bool(byteset(A) & byteset(B))
    stats["overlap"] += ov
    order = tries % 2
    ta, tb = ct.from_dlpack(A), ct.from_dlpack(B)
    one = np.ones((), B.dtype) * 1
    val = float(one) if B.dtype.kind == "f" else int(one)
    try:
        if order == 0:
            s = ta.shared()
            snapA = bytes(np.ascontiguousarray(A).view(np.uint8).ravel())
            p = part(tb, B)
            writer(B)(p).sync()
        else:
            p = part(tb, B)
            s = ta.shared()
            snapA = bytes(np.ascontiguousarray(A).view(np.uint8).ravel())
            writer(B)(p).sync()
        stats["ran"] += 1
    except Exception as e:  # noqa: BLE001
        if not is_safetile_error(e):
            fails.append(f"non-safetile {type(e).__name__}: {str(e)[:100]} (A {A.dtype}{A.shape}{A.strides}, "
                         f"B {B.dtype}{B.shape}{B.strides})")
        stats["refused"] += 1
        reasons[type(e).__name__ + ":" + str(e)[:50]] = reasons.get(type(e).__name__ + ":" + str(e)[:50], 0) + 1
        continue
    after = bytes(np.ascontiguousarray(A).view(np.uint8).ravel())
    if after != snapA:
        fails.append(f"order {order}: live Shared A {A.dtype}{A.shape} strides {A.strides} at +"
                     f"{A.__array_interface__['data'][0] % 4096} written through partition of B {B.dtype}{B.shape} "
                     f"strides {B.strides} at +{B.__array_interface__['data'][0] % 4096}")
print(stats)
for k, v in sorted(reasons.items(), key=lambda kv: -kv[1])[:6]:
    print(v, k)
if fails:
    broken("; ".join(fails[:3]))
held(f"claims exact across reinterpreting wrappers ({tries} pairs, {stats})")
