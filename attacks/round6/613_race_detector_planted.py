"""G10 ("ct.detect_races reports every pair of blocks whose accesses to one byte race"). Planted
races the earlier rounds did not plant: (a) stores through a stepped tiled_view whose windows
overlap (semantics.md calls that a race), (b) store_advanced_indexing rows shared by two blocks,
(c) a run-time Array.slice whose bounds are clamped so two blocks' slices meet, (d) a kernel with
an atomic inside a while loop (its blocks run one after another) that also stores plainly to a
shared element, (e) an i32 atomic_add by one block against a plain f32 load by another through a
second argument viewing the same bytes, (f) a write by block 1 read by block 0 through a 0-d-ish
single-element load. Each must be reported (raise_on_race=False report says a race); a race-free
twin of each must not be."""
from _r6 import *


def races(kernel, grid, args):
    try:
        rep = ct.detect_races(kernel, grid, args, raise_on_race=False)
    except Exception as e:  # noqa
        return f"ERR {type(e).__name__}: {str(e)[:80]}"
    return bool(rep.conflicts)


@ct.kernel
def tv_store(a, T: ct.Constant[int]):
    b = ct.bid(0)
    v = a.tiled_view((T,), traversal_steps=(T // 2,))
    v.store((b,), ct.full((T,), 1.0, ct.float32) + b)


@ct.kernel
def tv_store_ok(a, T: ct.Constant[int]):
    b = ct.bid(0)
    v = a.tiled_view((T,), traversal_steps=(T,))
    v.store((b,), ct.full((T,), 1.0, ct.float32) + b)


@ct.kernel
def adv_store(a, rows):
    b = ct.bid(0)
    idx = ct.load(rows, index=(b,), shape=(2,))
    ct.store_advanced_indexing(a, (idx,), ct.full((2,), 1.0, ct.float32))


@ct.kernel
def slice_store(a, n: int, T: ct.Constant[int]):
    b = ct.bid(0)
    s = a.slice(0, b * n, b * n + T)
    ct.store(s, index=(0,), tile=ct.full((T,), 1.0, ct.float32))


@ct.kernel
def spin_and_store(a, lock, T: ct.Constant[int]):
    b = ct.bid(0)
    while ct.atomic_cas(lock, (0,), 0, 1) != 0:
        pass
    ct.atomic_xchg(lock, (0,), 0)
    ct.store(a, index=(0,), tile=ct.full((T,), 1.0, ct.float32) + b)


@ct.kernel
def spin_ok(a, lock, T: ct.Constant[int]):
    b = ct.bid(0)
    while ct.atomic_cas(lock, (0,), 0, 1) != 0:
        pass
    ct.atomic_xchg(lock, (0,), 0)
    ct.store(a, index=(b,), tile=ct.full((T,), 1.0, ct.float32) + b)


@ct.kernel
def atomic_vs_view(ai, af, out):
    b = ct.bid(0)
    if b == 0:
        ct.atomic_add(ai, (3,), 1)
    else:
        t = ct.load(af, index=(0,), shape=(4,))
        ct.store(out, index=(0,), tile=t)


@ct.kernel
def one_elem(a, out):
    b = ct.bid(0)
    if b == 1:
        ct.store(a, index=(0,), tile=ct.full((1,), 5.0, ct.float32))
    else:
        ct.store(out, index=(0,), tile=ct.load(a, index=(0,), shape=(1,)))


res = {}
a = np.zeros(64, np.float32)
res["tiled_view overlapping windows"] = (races(tv_store, (4, 1, 1), (a, 16)), True)
res["tiled_view disjoint windows"] = (races(tv_store_ok, (4, 1, 1), (np.zeros(64, np.float32), 16)), False)
res["advanced-index rows shared"] = (races(adv_store, (2, 1, 1), (np.zeros(8, np.float32), np.array([0, 1, 1, 2], np.int32))), True)
res["advanced-index rows disjoint"] = (races(adv_store, (2, 1, 1), (np.zeros(8, np.float32), np.array([0, 1, 2, 3], np.int32))), False)
res["run-time slices meet"] = (races(slice_store, (2, 1, 1), (np.zeros(64, np.float32), 8, 16)), True)
res["run-time slices disjoint"] = (races(slice_store, (2, 1, 1), (np.zeros(64, np.float32), 16, 16)), False)
res["spin-lock kernel, shared store"] = (races(spin_and_store, (3, 1, 1), (np.zeros(16, np.float32), np.zeros(1, np.int32), 16)), True)
res["spin-lock kernel, own stores"] = (races(spin_ok, (3, 1, 1), (np.zeros(48, np.float32), np.zeros(1, np.int32), 16)), False)
buf = np.zeros(4, np.int32)
res["i32 atomic vs f32 view load"] = (races(atomic_vs_view, (2, 1, 1), (buf, buf.view(np.float32), np.zeros(4, np.float32))), True)
res["1-element write vs read"] = (races(one_elem, (2, 1, 1), (np.zeros(1, np.float32), np.zeros(1, np.float32))), True)
bad = [f"{k}: detector said {v[0]}, truth {v[1]}" for k, v in res.items() if v[0] != v[1]]
if bad:
    broken("; ".join(bad))
held(str({k: v[0] for k, v in res.items()}))
