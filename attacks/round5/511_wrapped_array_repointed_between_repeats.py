"""Promise (safety.md G8): "A safetile tensor holds a private view of its memory, so whoever handed
the array in cannot reset its shape or strides"; G3: the memory checked is the memory that runs;
safe.md "What a repeated launch costs": a safetile tensor's facts are read once. (Repeated
launches reuse the latest plan: in the C twin by the identity of the tensor's cached facts.)

Attack, with the C twin on and off: wrap NumPy arrays and CPU torch tensors with `ct.from_dlpack`
(output partition and input), launch repeatedly, then re-point the *original* objects in place
between two repeats — NumPy `a.shape = ...`/`a.strides = ...`, torch `t.set_(other storage)`,
`t.as_strided_(...)`, `t.data = other`, `t.resize_(smaller)` — and launch again. Every later launch
must read and write exactly the memory wrapped at first (other views of it see the NumPy
reference), and the storage the originals were re-pointed to must stay untouched.
"""
from _r5 import *


def scenario(rec):
    import torch

    @ct.entry
    def k(z: ct.Mut[ct.f32, "B"], x: ct.Ref[ct.f32, -1], a: ct.f32):
        z.store(ct.load_tile_like(x, z) * a + 1.0)
    N = 64
    xa = np.linspace(-3, 3, N).astype(np.float32)

    def run(kind, repoint):
        if kind == "numpy":
            zmem = np.full(N, np.nan, np.float32)
            xmem = xa.copy()
            zo, xo = zmem[:], xmem[:]         # the objects handed in (views; the *mem names observe)
            other_z, other_x = np.full(N, 7.0, np.float32), np.full(N, 9.0, np.float32)
        else:
            zmem = torch.full((N,), float("nan"))
            xmem = torch.from_numpy(xa.copy())
            zo, xo = zmem[:], xmem[:]
            other_z, other_x = torch.full((N,), 7.0), torch.full((N,), 9.0)
        z = ct.from_dlpack(zo).partition(16)
        x = ct.from_dlpack(xo)
        out = []
        for i in range(5):
            if i == 2:
                try:
                    repoint(zo, xo, other_z, other_x)
                except BaseException as e:  # noqa: BLE001
                    rec(f"{kind}: repoint raised", exc_str(e)[:200])
            zmem[:] = float("nan")
            try:
                z, x, _ = k(z, x, 2.0).sync()
                out.append(bool(np.allclose(as_np(zmem), xa * 2 + 1)))
            except BaseException as e:  # noqa: BLE001
                out.append("EXC " + exc_str(e)[:200])
        untouched = bool(np.all(as_np(other_z) == 7.0) and np.all(as_np(other_x) == 9.0))
        return out, untouched

    def np_shape(zo, xo, oz, ox):
        zo.shape = (8, 8)
        xo.shape = (2, 32)

    def np_strides(zo, xo, oz, ox):
        zo.strides = (0,)
        xo.strides = (-4,)

    def t_set(zo, xo, oz, ox):
        zo.set_(oz.untyped_storage(), 0, (N,), (1,))
        xo.set_(ox.untyped_storage(), 0, (N,), (1,))

    def t_as_strided(zo, xo, oz, ox):
        zo.as_strided_((N // 2,), (2,))
        xo.as_strided_((N,), (0,))

    def t_data(zo, xo, oz, ox):
        zo.data = oz
        xo.data = ox

    def t_resize_smaller(zo, xo, oz, ox):
        zo.resize_(8)
        xo.resize_(8)
    for kind, name, f in (("numpy", "a.shape =", np_shape), ("numpy", "a.strides =", np_strides),
                          ("torch", "set_", t_set), ("torch", "as_strided_", t_as_strided),
                          ("torch", ".data =", t_data), ("torch", "resize_(smaller)", t_resize_smaller)):
        out, untouched = run(kind, f)
        rec(f"{kind} {name}: launches right", out)
        rec(f"{kind} {name}: re-pointed targets untouched", untouched)


def check(log):
    bad = []
    for k, v in log:
        if k == "SCENARIO-RAISED":
            bad.append(v[:300])
        elif "launches right" in k and v != [True] * 5:
            bad.append(f"{k}: {v}")
        elif "untouched" in k and v is not True:
            bad.append(f"{k}: safetile wrote memory the original was re-pointed to")
    return bad


def main():
    problems, on, off = differential(__file__, scenario, check, "repointed wrappers")
    if problems:
        broken("; ".join(problems[:4]))
    held("re-pointing the wrapped originals changes nothing: every repeat reads/writes the wrapped memory")


run_guarded(main, "511")
