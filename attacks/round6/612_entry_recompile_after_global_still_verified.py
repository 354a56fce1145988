"""G1 mechanism 3 ("The compiled IR is checked, run on every specialisation before it is cached")
and G2, against the recompilation semantics.md promises when a module global, a helper function
or a closure variable read by tile code changes. After a first clean launch, the change makes the
kernel write another block's sub-tensor (ct.store at index 0), store into its Ref, or scatter.
The recompiled code must be refused exactly like a fresh kernel with that code (and write
nothing), not run because the specialisation was verified before."""
from _r6 import *

EVIL = 0


def helper(z, t):
    return t


def make_closure():
    mode = [0]

    @ct.entry
    def kc(z: ct.Mut[ct.f32, "B"], x: ct.Ref[ct.f32, -1]):
        t = ct.load_tile_like(x, z)
        z.store(t)
        if mode[0] == 1:
            ct.store(x, index=(0,), tile=t)
    return kc, mode


@ct.entry
def kg(z: ct.Mut[ct.f32, "B"], x: ct.Ref[ct.f32, -1]):
    t = ct.load_tile_like(x, z)
    z.store(helper(z, t))
    if EVIL == 1:
        ct.store(z, index=(0,), tile=t * 0.0 + 99.0)
    if EVIL == 2:
        ct.store(x, index=(0,), tile=t * 0.0 + 98.0)


results, bad = {}, []


def launch(k, tag):
    zb, xb = arr(64), arr(64, 2.0)
    try:
        k(ct.from_dlpack(zb).partition(16), ct.from_dlpack(xb)).sync()
        results[tag] = f"ran z={sorted(set(zb.tolist()))} x={sorted(set(xb.tolist()))}"
        if (zb != 2.0).any() or (xb != 2.0).any():
            bad.append(f"{tag}: {results[tag]}")
    except Exception as e:  # noqa
        results[tag] = f"refused {type(e).__name__}" if is_st(e) else f"RAW {type(e).__name__}"
        if (zb != 0.0).any() or (xb != 2.0).any():
            bad.append(f"{tag}: refused but wrote")


launch(kg, "clean")
EVIL = 1
launch(kg, "global -> store at block 0's index")
EVIL = 2
launch(kg, "global -> store to Ref")
EVIL = 0


def helper(z, t):  # noqa: F811
    ct.store(z, index=(0,), tile=t * 0.0 + 97.0)
    return t


launch(kg, "helper redefined -> store at index 0")
kc, mode = make_closure()
launch(kc, "closure clean")
mode[0] = 1
launch(kc, "closure list element changed (documented untracked)")
# a rebound closure variable (tracked)
def make2():
    flag = 0

    @ct.entry
    def k2(z: ct.Mut[ct.f32, "B"], x: ct.Ref[ct.f32, -1]):
        t = ct.load_tile_like(x, z)
        z.store(t)
        if flag == 1:
            ct.store(x, index=(0,), tile=t)

    def set1():
        nonlocal flag
        flag = 1
    return k2, set1


k2, set1 = make2()
launch(k2, "closure cell clean")
set1()
launch(k2, "closure cell rebound -> store to Ref")
if bad:
    broken("; ".join(bad) + f" || {results}")
held(str(results))
