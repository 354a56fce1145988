"""Promise (safety.md G3): the alias safetile takes of a raw array "keeps the memory alive (a view
holds its base, a torch alias its storage) while the launch is built, runs and is replayed";
G4: dropping a launch frees it at once; safe.md: the caches "keep no tensor alive".
(Repeated launches: the C twin stores each argument's data in the launch it builds.)

Attack, with the C twin on and off: (a) slow launches awaited on a stream worker whose inputs'
only user references are dropped mid-flight (`del` of the NumPy/torch base of a `from_dlpack`
tensor, of a raw NumPy/torch `Ref`, of the Shared's base), with `gc.collect()` and a flood of
same-size allocations filled with garbage while the work runs: the results must equal the NumPy
reference computed before; (b) a `then` chain of 300 repeated launches whose closures call
`gc.collect()` and drop everything they can: right result; (c) after all user references are
gone, every base array is freed (weakrefs die).
"""
from _r5 import *

import asyncio
import gc
import weakref


def scenario(rec):
    import torch

    @ct.entry
    def slow(z: ct.Mut[ct.f32, "B"], x: ct.Ref[ct.f32, -1], s: ct.Ref[ct.f32, -1], reps: ct.Constant[int]):
        acc = ct.load_tile_like(x, z)
        for i in range(reps):
            acc = acc * 1.0
        z.store(acc * 2.0 + ct.load_tile_like(s, z))

    class A(np.ndarray):
        pass
    N = 4096
    rng = np.random.default_rng(9)
    refs = []
    garbage = []
    overlapped = []

    async def one(kind, reps):
        xa = rng.standard_normal(N).astype(np.float32)
        sa = rng.standard_normal(N).astype(np.float32)
        want = xa * 2 + sa
        zb = np.full(N, np.nan, np.float32)
        z = ct.from_dlpack(zb).partition(512)
        sbase = sa.copy().view(A)
        s = ct.from_dlpack(sbase).shared()
        refs.append(weakref.ref(sbase))
        if kind == "tensor":
            xbase = xa.copy().view(A)
            x = ct.from_dlpack(xbase)
            refs.append(weakref.ref(xbase))
            del xbase
        elif kind == "raw numpy":
            x = xa.copy().view(A)
            refs.append(weakref.ref(x))
        else:
            x = torch.from_numpy(xa.copy())
        del sbase
        for _ in range(2):  # repeats: the C twin's case from the second on
            op = slow(z, x, s, reps)
            task = asyncio.ensure_future(_aw(op))
            del op
            if kind != "tensor":
                pass
            await asyncio.sleep(0)
            # flood while the work runs
            overlapped.append(not task.done())
            for _ in range(12):
                g = np.empty(N, np.float32)
                g[:] = 1e30
                garbage.append(g)
                gc.collect()
                await asyncio.sleep(0.001)
            res = await task
            z = res[0]
            ok = bool(np.allclose(zb, want))
            zb[:] = np.nan
            if kind == "tensor":
                x = res[1]
        del x, res, task
        s.try_unwrap()
        del s
        return ok

    async def _aw(op):
        return await op

    async def main():
        out = []
        for kind in ("tensor", "raw numpy", "raw torch"):
            out.append((kind, await one(kind, 1500)))
        return out
    for kind, ok in asyncio.run(main()):
        rec(f"{kind}: result right while inputs were dropped and memory flooded", ok)
    garbage.clear()
    rec("the flood overlapped running work (at least once)", any(overlapped))

    @ct.entry
    def axpy(z: ct.Mut[ct.f32, "B"], x: ct.Ref[ct.f32, -1], s: ct.Ref[ct.f32, -1]):
        z.store(z.load() * 0.5 + ct.load_tile_like(x, z) + ct.load_tile_like(s, z))
    xa = rng.standard_normal(256).astype(np.float32)
    sa = rng.standard_normal(256).astype(np.float32)
    zbase = np.zeros(256, np.float32).view(A)
    xbase = xa.copy().view(A)
    sbase = sa.copy().view(A)
    wz, wx, ws = weakref.ref(zbase), weakref.ref(xbase), weakref.ref(sbase)
    z = ct.from_dlpack(zbase).partition(64)
    x = ct.from_dlpack(xbase)
    s = ct.from_dlpack(sbase).shared()
    del xbase, sbase
    count = [0]

    def step(v):
        count[0] += 1
        if count[0] % 10 == 0:
            gc.collect()
        return axpy(*v)
    op = axpy(z, x, s)
    for _ in range(299):
        op = op.then(step)
    z, x, s = op.sync()
    del op
    ref = np.zeros(256, np.float32)
    for _ in range(300):
        ref = (ref * np.float32(0.5) + xa + sa).astype(np.float32)
    rec("chain of 300 with gc inside: right", bool(np.allclose(zbase, ref, rtol=1e-5, atol=1e-5)))
    s.try_unwrap()
    del z, x, s, zbase
    gc.collect()
    rec("chain: memory freed afterwards", [wz() is None, wx() is None, ws() is None])
    gc.collect()
    rec("async parts: memory freed afterwards", [r() is None for r in refs])


def check(log):
    d = dict((k, v) for k, v in log)
    if "SCENARIO-RAISED" in d:
        return [d["SCENARIO-RAISED"][:400]]
    bad = [k for k, v in log if v is False]
    for k, v in log:
        if isinstance(v, list) and not all(v):
            bad.append(f"{k}: {v}")
    return bad


def main():
    problems, logs = each_mode(__file__, scenario, check, "in-flight memory", timeout=200)
    if problems:
        broken("; ".join(problems[:4]))
    held("inputs dropped mid-flight stay alive until the work ends; chains with gc inside right; memory freed after")


run_guarded(main, "508")
