"""Class 2. ct.from_dlpack(t).shared() of a CPU torch tensor, then the caller's torch tensor re-pointed
(set_, .data =, as_strided_, resize_ within size, _set_neg; then written where it points elsewhere): the Shared's memory is the view
safetile took (G3 'Outside': a wrapped CPU tensor is viewed from a detach() alias, so re-pointing the
caller's tensor leaves safetile's memory alive and untouched). Launches on the Shared, inside chains and
between syncs, must keep reading the original values; the Shared's contents never change."""
from _r8 import *

ensure_native()
problems, log = [], []
N = N_MUT
for name in ("set_", "data", "as_strided_", "resize_small", "set_neg", "storage_offset"):
    t = torch.arange(N, dtype=torch.float32)
    s = ct.from_dlpack(t).shared()
    ref = np.arange(N, dtype=np.float32)

    def mutate(t=t, name=name):
        other = torch.full((N,), 9.0)
        if name == "set_":
            t.set_(other)
        elif name == "data":
            t.data = other
        elif name == "as_strided_":
            t.as_strided_((N // 2,), (2,))
        elif name == "resize_small":
            t.resize_(N // 2)
        elif name == "set_neg":
            torch._C._set_neg(t, True)
        elif name == "storage_offset":
            t.set_(t.untyped_storage(), 1, (N - 1,), (1,))
        if name in ("set_", "data"):  # t is on other memory now: writing it must not reach the Shared
            with torch.no_grad():
                t.detach().fill_(-1.0)
        # (writing t while it is still on the wrapped storage is foreign code writing the memory: G3 Outside)
    try:
        z = poisoned(N).partition(16)
        (z, s) = copyk(z, s).sync()
        (z, s) = copyk(z, s).then(lambda v: (mutate(), copyk(v[0], v[1]))[1]).sync()
        a = z.unpartition().to_numpy()
        z = poisoned(N).partition(16)
        (z, s) = copyk(z, s).sync()
        b = z.unpartition().to_numpy()
        c = s.to_numpy() if hasattr(s, "to_numpy") else None
        ok = np.array_equal(a, ref) and np.array_equal(b, ref) and (c is None or np.array_equal(c, ref))
        # the memory is shared zero-copy with t's original storage: writes through the *new* t must not reach it
        log.append(f"{name}: in-chain {a[:3].tolist()} after {b[:3].tolist()} shared {None if c is None else c[:3].tolist()}")
        if not ok:
            problems.append(f"{name}: Shared launches read {a[:3].tolist()}/{b[:3].tolist()} (want {ref[:3].tolist()})")
    except Exception as e:  # noqa
        log.append(f"{name}: {err(e, 80)}")
        if not is_st(e):
            problems.append(f"{name}: raw {err(e)}")
print("\n".join(log))
if problems:
    broke("; ".join(problems))
held("the Shared kept reading its own memory after every re-pointing of the caller's tensor")
