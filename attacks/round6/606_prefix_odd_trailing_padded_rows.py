"""G1 mechanism 5 ("edge sub-tensors are masked, so no block writes outside its tensor") for
partition_prefix whose prefix does not divide the leading axes (a partial edge block) over layouts
with gaps: a view [:5, :, :4] of a [6, 4, 8] buffer (row stride 8, poisoned gaps after every row,
a poisoned row after the view), a transposed (Fortran-ordered) [6, 4] view, and a rank-4 prefix
output [3, 3, 2, 4] inside [4, 4, 3, 8]. (Trailing sizes must be powers of two: checked.) The kernel writes its whole
sub-tensor; every byte outside the view must keep its poison, every element inside must be
written exactly once with the block's value."""
# BACKENDS: cpu triton
from _r6 import *

POISON = -7.0
results, bad = [], []


def try_kernel(name, buf, view, prefix, make_kernel, expect):
    before = buf.copy()
    try:
        k = make_kernel()
        p = ct.from_dlpack(view).partition_prefix(prefix)
        (p,) = k(p).sync()
        p.unpartition()
    except Exception as e:  # noqa
        if not is_st(e):
            bad.append(f"{name}: RAW {type(e).__name__}: {str(e)[:100]}")
        elif not np.array_equal(buf, before):
            bad.append(f"{name}: refused ({type(e).__name__}) but memory changed")
        else:
            results.append(f"{name}: refused {type(e).__name__}")
        return
    mask = np.zeros(buf.shape, bool)
    np.lib.stride_tricks.as_strided  # noqa
    # mark the view's elements through a boolean twin of the buffer
    mb = np.zeros(buf.shape, bool)
    vmask = expect(mb)                  # expect sets True on the view and returns expected values array
    outside = ~mb
    if not (buf[outside] == POISON).all():
        bad.append(f"{name}: wrote {int((buf[outside] != POISON).sum())} element(s) outside the view")
    elif not np.array_equal(buf[mb], vmask[mb]):
        bad.append(f"{name}: wrong values inside the view")
    else:
        results.append(f"{name}: exact")


def k3():
    @ct.entry
    def k(z: ct.Mut[ct.f32, ("P", "R", "C")]):
        z.store(ct.full((P, R, C), 1.0, ct.float32) + ct.bid(0).astype(ct.float32))
    return k


# [6, 3, 8] buffer, view [:, :, :5] -> prefix (2,) : sub-tensor (2, 3, 5)
buf = np.full((6, 4, 8), POISON, np.float32)


def exp1(mb):
    mb[:5, :, :4] = True
    e = np.zeros(buf.shape, np.float32)
    for i in range(5):
        e[i] = 1.0 + i // 2
    return e


try_kernel("[6,4,8][:5,:,:4] prefix (2,)", buf, buf[:5, :, :4], (2,), k3, exp1)

# rank 4 with odd trailing: [4, 3, 5, 7] view of [4, 3, 6, 8]
buf4 = np.full((4, 4, 3, 8), POISON, np.float32)


def k4():
    @ct.entry
    def k(z: ct.Mut[ct.f32, ("P", "Q", "R", "C")]):
        z.store(ct.full((P, Q, R, C), 1.0, ct.float32) + ct.bid(0).astype(ct.float32) * 10.0 + ct.bid(1).astype(ct.float32))
    return k


def exp4(mb):
    mb[:3, :3, :2, :4] = True
    e = np.zeros(buf4.shape, np.float32)
    for i in range(3):
        for j in range(3):
            e[i, j] = 1.0 + (i // 2) * 10.0 + (j // 2)
    return e


try_kernel("[4,4,3,8][:3,:3,:2,:4] prefix (2,2)", buf4, buf4[:3, :3, :2, :4], (2, 2), k4, exp4)

# transposed 2-D: buffer [5, 8], view T[:, :5]... use buf2[:5, :6].T -> shape (6, 5), strides (4, 32)
buf2 = np.full((5, 8), POISON, np.float32)   # view buf2[:4, :6].T: shape (6, 4), strides (4 B, 32 B)


def k2():
    @ct.entry
    def k(z: ct.Mut[ct.f32, ("P", "C")]):
        z.store(ct.full((P, C), 1.0, ct.float32) + ct.bid(0).astype(ct.float32))
    return k


def exp2(mb):
    mb[:4, :6] = True
    e = np.zeros(buf2.shape, np.float32)
    for r in range(6):          # view row r is buffer column r
        e[:4, r] = 1.0 + r // 4
    return e


try_kernel("[5,8][:4,:6].T prefix (4,)", buf2, buf2[:4, :6].T, (4,), k2, exp2)
if bad:
    broken("; ".join(bad))
held("; ".join(results))
