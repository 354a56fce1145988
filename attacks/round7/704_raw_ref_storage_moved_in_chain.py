"""G3 / G8 for the per-terminal raw alias (safety.md: a raw torch Ref's detach() alias is "made once
per terminal and reused while the tensor shows the facts the alias was made from -- equal facts are
the same memory, since the alias keeps the storage it was made on alive"). Equal facts are NOT the
same memory when the storage the alias keeps was reallocated in place: inside a then-closure, between
two launches of one terminal, the program frees (untyped_storage().resize_(0)) or moves (resize_ to 4x)
the storage, allocates a new tensor until one lands at the old data pointer (glibc reuses the chunk),
fills it with 7.0 and re-points t there with t.set_(): t now shows exactly the old facts. The second
launch must read what t shows (7.0) -- as the Python path, which aliases afresh, does -- not the old
storage (1.0) nor freed memory. Several sizes; both paths compared."""
from _r7 import *
import torch


def one(N, how):
    t = torch.full((N,), 1.0)
    st = t.untyped_storage()
    P = t.data_ptr()
    keep, log = [], {}

    def land_at(ptr, v):
        for i in range(400):
            n = torch.empty(N)
            keep.append(n)
            if n.data_ptr() == ptr:
                n.fill_(v)
                return n
            a = np.empty(N, np.float32)
            keep.append(a)
            if a.ctypes.data == ptr:
                a[:] = v
                return torch.from_numpy(a)
        return None

    def step(r):
        z = r[0]
        if how == "free":
            st.resize_(0)
        else:
            st.resize_(st.nbytes() * 4)
        n = land_at(P, 7.0)
        log["landed"] = n is not None
        if n is not None:
            t.set_(n)
        return copyk(z, t)
    z = ct.zeros(N).sync().partition(16)
    try:
        (z, _) = copyk(z, t).then(step).sync()
        v = z.unpartition().to_numpy()
        res = sorted(set(v.tolist()))[:3]
    except Exception as e:  # noqa
        res = err(e, 80)
    return res, log.get("landed")


def scenario():
    out = {}
    for how in ("free", "move"):
        for N in (64, 1024, 4096):
            res, landed = one(N, how)
            out[f"{how} N={N}"] = res if landed else "did not land at the old pointer"
    return out


def judge(c, py):
    for k, v in c.items():
        if isinstance(v, list) and v != [7.0]:
            return "BROKEN", f"C path {k}: second launch read {v}, t shows 7.0"
    landed = sum(isinstance(v, list) for v in c.values())
    if landed == 0:
        return "INCONCLUSIVE", "no allocation landed at the old pointer"
    return "HELD", f"{landed} runs where t showed the old facts over new memory: the launch read t's memory"


differential(scenario, judge, ignore=tuple(f"{h} N={n}" for h in ("free", "move") for n in (64, 1024, 4096)))
