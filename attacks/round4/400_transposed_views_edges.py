"""Promise (safety.md G1 mechanism 5): "Partitions are disjoint by construction: ceil-division
tiling; edge sub-tensors are masked, so no block writes outside its tensor." safe.md: "Parts past
the tensor's edge are dropped, so edge blocks never write outside the tensor."

Attack: output (Mut) views whose axes are permuted relative to memory (transposes of a larger
buffer, 3-D permutes, 2-D NumPy views with a negative stride on one axis, column slices of a
transposed buffer), partitioned with edge sub-tensors on every axis, mapped and prefix
partitions of them too; and Ref inputs read through the same kinds of views. Every byte of
the underlying buffer is compared with a NumPy reference: only the view's elements may change,
each to the right value. Active backend (CPU; Triton interpreter on torch views).
"""
# BACKENDS: cpu triton
from _r4 import *

import torch

SRC = '''
@ct.entry
def cp2(z: ct.Mut[ct.f32, ("BM", "BN")], x: ct.Ref[ct.f32, (-1, -1)]):
    z.store(ct.load_tile_like(x, z) * 2.0 + 1.0)

@ct.entry
def cp3(z: ct.Mut[ct.f32, ("A", "BM", "BN")], x: ct.Ref[ct.f32, (-1, -1, -1)]):
    z.store(ct.load_tile_like(x, z) * 2.0 + 1.0)

@ct.entry
def cpmap(c: ct.MappedMut[ct.f32, ("BM", "BN")], x: ct.Ref[ct.f32, (-1, -1)]):
    for idx in c.iter_indices():
        i, j = idx
        c.store(x.partition((BM, BN)).load((i, j)) * 2.0 + 1.0, idx)

@ct.entry
def cppre(z: ct.Mut[ct.f32, ("BM", "N")], x: ct.Ref[ct.f32, (-1, -1)]):
    z.store(ct.load_tile_like(x, z) * 2.0 + 1.0)
'''
K = kernel_from_source(SRC, tag="r4_400")


def torch_or_np(arr):
    return torch.from_numpy(arr) if BACKEND == "triton" else arr


fails = []
rng = np.random.default_rng(4)


def case(name, make_view, kernel, part, mapped=None, prefix=False):
    """make_view(buf) -> view (numpy) of buf; the Mut is that view; x = fresh data of its shape
    given through another permuted view."""
    base = np.full((4000,), -7.0, np.float32)
    buf = torch_or_np(base)
    vnp = make_view(base)
    shape = vnp.shape
    # input: same shape, but laid out transposed in its own buffer
    xsrc = rng.standard_normal(shape[::-1]).astype(np.float32)
    xview = xsrc.transpose(tuple(range(len(shape)))[::-1])
    try:
        if BACKEND == "triton":
            tv = make_view(torch.from_numpy(base)) if False else None
        t = ct.from_dlpack(torch_or_np(vnp) if BACKEND == "triton" else vnp)
        x = ct.from_dlpack(torch_or_np(xview) if BACKEND == "triton" else xview)
        p = t.partition_prefix(part) if prefix else t.partition(part)
        if mapped:
            p = p.map(mapped)
        kernel(p, x).sync()
    except Exception as e:  # noqa: BLE001
        if is_safetile_error(e):
            print(f"{name}: refused ({type(e).__name__}: {str(e)[:100]})")
            return
        fails.append(f"{name}: non-safetile {type(e).__module__}.{type(e).__name__}: {str(e)[:120]}")
        return
    exp = np.full((4000,), -7.0, np.float32)
    make_view(exp)[...] = xview * 2.0 + 1.0
    got = np.asarray(base)
    if not np.array_equal(got, exp):
        bad = np.nonzero(got != exp)[0]
        outside = [int(i) for i in bad if exp[i] == -7.0]
        fails.append(f"{name}: {len(bad)} wrong elements ({len(outside)} outside the view, e.g. {outside[:4]})")
    else:
        print(f"{name}: exact")


def v2(b, rows, cols, ld):
    return b[: rows * ld].reshape(rows, ld)


# 2-D transposes of a (30, 50) block of a (30, 64) buffer: view shape (50, 30), strides (1, 64)
case("T of column slice", lambda b: v2(b, 30, 64, 64)[:, :50].T, K["cp2"], (16, 16))
case("T of row+col slice", lambda b: v2(b, 30, 64, 64)[3:27, 5:50].T, K["cp2"], (8, 32))
case("T partition 1xN", lambda b: v2(b, 30, 64, 64)[:, 7:57].T, K["cp2"], (1, 32))
case("T partition Nx1", lambda b: v2(b, 30, 64, 64)[:, 7:57].T, K["cp2"], (64, 1))
case("T strided rows", lambda b: v2(b, 60, 64, 64)[::2, 1:60:3].T, K["cp2"], (8, 8))
case("T mapped", lambda b: v2(b, 30, 64, 64)[:, :50].T, K["cpmap"], (16, 16), mapped=3)
case("T prefix", lambda b: v2(b, 32, 64, 64)[:, :50].T, K["cppre"], (16,), prefix=True)
# 3-D permutes of a (5, 12, 40) block of a (5, 12, 64) buffer
case("3D permute (2,0,1)", lambda b: b[: 5 * 12 * 64].reshape(5, 12, 64)[:, :, :40].transpose(2, 0, 1), K["cp3"], (8, 4, 8))
case("3D permute (1,2,0)", lambda b: b[: 5 * 12 * 64].reshape(5, 12, 64)[:, 1:11, 3:40].transpose(1, 2, 0), K["cp3"], (4, 16, 2))
if BACKEND == "cpu":
    # NumPy only: negative strides on one axis of a 2-D / 3-D view
    case("neg rows", lambda b: v2(b, 30, 64, 64)[::-1, 2:50], K["cp2"], (16, 16))
    case("neg cols of T", lambda b: v2(b, 30, 64, 64)[:, 49:1:-1].T, K["cp2"], (16, 16))
    case("neg both", lambda b: v2(b, 30, 64, 64)[27:0:-2, 60:3:-3], K["cp2"], (4, 8))
    case("neg mapped", lambda b: v2(b, 30, 64, 64)[::-1, ::-1][:, 10:], K["cpmap"], (8, 16), mapped=5)
    case("neg 3D", lambda b: b[: 5 * 12 * 64].reshape(5, 12, 64)[::-1, :, 40:0:-1].transpose(2, 0, 1), K["cp3"], (16, 2, 4))
if fails:
    broken(f"[{BACKEND}] " + "; ".join(fails))
held(f"[{BACKEND}] permuted / negative-stride views: exact writes, nothing outside")
