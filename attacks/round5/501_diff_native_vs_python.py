"""Promise (safety.md G8, "The common case in C"): "the C code decides nothing the Python path
would decide differently"; "Anything else, including every refusal, answers 'not my case'
*before anything is changed*, and the Python path then runs in full (its checks and its worded
errors)"; `SAFETILE_SAFE_NATIVE=0` turns it off. G7: a refused launch leaves every argument
byte-identical and usable.

Attack: one program of repeated launches (the C twin's case) interleaved with everything that
should change the outcome, run in two processes, C twin on and off; every result (checked
against NumPy), every error (class and full message), every argument's state afterwards
(`repr`, which names holders) must be identical: the same partition / tensor passed twice, a
Shared passed three times, a partition unpartitioned and re-partitioned (same facts, new
object), a Shared unwrapped and re-shared, a borrowed partition released, a tensor moved into a
partition then passed as a Ref, odd scalars (NumPy scalars, float/int subclasses with lying
`__eq__`, bool for f32, 2**40 for int, NaN, inf), an explicit grid changed, use-after-move
messages (naming the site), cancelled and dropped launches, repeated launches inside `then`.
(Op numbers, "op #N", are compared too: 517 isolates the case where they differed.)
"""
from _r5 import *

import math


class LyingFloat(float):
    def __eq__(self, o):
        return True

    __hash__ = float.__hash__


class LyingInt(int):
    def __eq__(self, o):
        return True

    __hash__ = int.__hash__


def scenario(rec):
    rng = np.random.default_rng(5)

    @ct.entry
    def axpy(z: ct.Mut[ct.f32, "B"], x: ct.Ref[ct.f32, -1], a: ct.f32):
        z.store(ct.load_tile_like(x, z) * a + 1.0)

    @ct.entry
    def two_refs(z: ct.Mut[ct.f32, "B"], x: ct.Ref[ct.f32, -1], y: ct.Ref[ct.f32, -1]):
        z.store(ct.load_tile_like(x, z) + ct.load_tile_like(y, z))

    @ct.entry
    def two_muts(z: ct.Mut[ct.f32, "B"], w: ct.Mut[ct.f32, "B"], x: ct.Ref[ct.f32, -1]):
        v = ct.load_tile_like(x, z)
        z.store(v + 1.0)
        w.store(v + 2.0)

    @ct.entry
    def three(z: ct.Mut[ct.f32, "B"], x: ct.Ref[ct.f32, -1], y: ct.Ref[ct.f32, -1], u: ct.Ref[ct.f32, -1]):
        z.store(ct.load_tile_like(x, z) + ct.load_tile_like(y, z) * 2.0 + ct.load_tile_like(u, z) * 4.0)

    @ct.entry
    def scal_i(z: ct.Mut[ct.f32, "B"], n: int):
        z.store(ct.full((B,), 1.0, ct.float32) * n)

    N = 64
    xa = rng.standard_normal(N).astype(np.float32)
    ya = rng.standard_normal(N).astype(np.float32)

    def attempt(label, f, expect=None):
        try:
            r = f()
            if expect is not None:
                got = expect()
                rec(label, ["ok", got])
            else:
                rec(label, "ok")
            return r
        except BaseException as e:  # noqa: BLE001
            rec(label, "EXC " + exc_str(e))
            return e

    def vals(a):
        return [round(float(v), 5) for v in np.asarray(a).ravel()[:6]]

    zb = np.full(N, np.nan, np.float32)
    x = ct.from_dlpack(xa.copy())
    y = ct.from_dlpack(ya.copy())
    z = ct.from_dlpack(zb).partition(16)
    # 1. plain repeats (the C twin's case)
    for i in range(5):
        z, x, _ = axpy(z, x, 2.0).sync()
        rec(f"repeat {i}", [bool(np.allclose(zb, xa * 2 + 1)), vals(zb)])
    # 2. scalars that compare equal but differ, or are odd
    for v in (2, True, np.float32(2.0), np.float64(3.0), LyingFloat(5.0), LyingInt(7), float("nan"), float("inf"),
              2 ** 40, -0.0, 1e300, "2.0", None, 2.0):
        zb[:] = np.nan
        def go(v=v):
            nonlocal z, x
            z, x, _ = axpy(z, x, v).sync()
        attempt(f"scalar {v!r} ({type(v).__name__})", go, lambda: vals(zb))
        rec(f"scalar {v!r} states", [repr(z), repr(x)])
    # 3. same partition twice / same tensor twice / Shared three times
    w = ct.from_dlpack(np.zeros(N, np.float32)).partition(16)
    def two_ok():
        nonlocal z, w, x
        z, w, x = two_muts(z, w, x).sync()
    for i in range(3):
        attempt(f"two_muts distinct {i}", two_ok, lambda: vals(zb))
    attempt("two_muts same partition twice", lambda: two_muts(z, z, x).sync())
    rec("after same partition twice", [repr(z), repr(x)])
    def tr():
        nonlocal z, x, y
        z, x, y = two_refs(z, x, y).sync()
    for i in range(3):
        attempt(f"two_refs distinct {i}", tr, lambda: vals(zb))
    def tr_same():
        nonlocal z, x
        z, x, x2 = two_refs(z, x, x).sync()
        rec("same tensor twice: results identical objects", x is x2)
    for i in range(3):
        attempt(f"two_refs same tensor twice {i}", tr_same, lambda: vals(zb))
        rec(f"after same tensor twice {i}", [repr(z), repr(x)])
    s = ct.from_dlpack(ya.copy()).shared()
    def sh3():
        nonlocal z
        z, a, b, c = three(z, s, s, s).sync()
        rec("shared thrice identity", [a is s, b is s, c is s])
    for i in range(4):
        attempt(f"Shared thrice {i}", sh3, lambda: [bool(np.allclose(zb, ya * 7)), vals(zb)])
    # 4. Shared unwrapped between repeats, then re-shared
    t = attempt("try_unwrap", lambda: s.try_unwrap())
    attempt("launch with unwrapped Shared", lambda: three(z, s, s, s).sync())
    rec("after unwrapped", [repr(z), repr(s)])
    if isinstance(t, ct.Tensor):
        s = t.shared()
        for i in range(2):
            attempt(f"re-shared {i}", sh3, lambda: vals(zb))
    # 5. unpartition / re-partition (new object, same facts) and other shapes
    t = z.unpartition()
    attempt("launch with unpartitioned partition", lambda: axpy(z, x, 1.0).sync())
    z = t.partition(16)
    for i in range(2):
        def go():
            nonlocal z, x
            z, x, _ = axpy(z, x, 3.0).sync()
        attempt(f"re-partitioned {i}", go, lambda: bool(np.allclose(zb, xa * 3 + 1)))
    t = z.unpartition()
    z = t.partition(32)
    def go32():
        nonlocal z, x
        z, x, _ = axpy(z, x, 4.0).sync()
    attempt("partition 32", go32, lambda: bool(np.allclose(zb, xa * 4 + 1)))
    t = z.unpartition()
    # 6. tensor moved into a partition, then passed as a Ref
    zz = t.partition(16)
    attempt("moved tensor as Ref", lambda: axpy(zz, t, 1.0).sync())
    rec("after moved tensor as Ref", [repr(zz), repr(t)])
    t = zz.unpartition()
    # 7. borrowed partition, released in between
    bt = ct.from_dlpack(np.zeros(N, np.float32))
    bp = ct.borrow_mut(bt).partition(16)
    for i in range(2):
        def gob():
            nonlocal bp, x
            bp, x, _ = axpy(bp, x, 5.0).sync()
        attempt(f"borrowed {i}", gob, lambda: bool(np.allclose(bt.to_numpy() if False else 0, 0)))
    attempt("read borrowed tensor", lambda: bt.to_numpy().sum())
    bp.release()
    attempt("launch with released partition", lambda: axpy(bp, x, 5.0).sync())
    attempt("read after release", lambda: [round(float(v), 4) for v in bt.to_numpy()[:4]])
    rec("after release", [repr(bp), repr(bt)])
    # 8. explicit grid changed between repeats
    z = t.partition(16)
    for g in ((4, 1, 1), (4, 1, 1), (2, 1, 1), (4, 1, 1), (8, 1, 1)):
        def gog(g=g):
            nonlocal z, x
            z, x, _ = axpy.grid(g)(z, x, 1.5).sync()
        attempt(f"grid {g}", gog, lambda: bool(np.allclose(zb, xa * 1.5 + 1)))
    # 9. use after move, messages, cancel, drop
    op = axpy(z, x, 1.0)
    attempt("use after move (build)", lambda: axpy(z, x, 1.0))
    attempt("use after move (read)", lambda: x.to_numpy())
    op.cancel()
    rec("after cancel", [repr(z), repr(x), repr(op)])
    op = axpy(z, x, 1.0)
    del op
    import gc
    gc.collect()
    rec("after drop", [repr(z), repr(x)])
    for i in range(3):
        def gor():
            nonlocal z, x
            z, x, _ = axpy(z, x, 6.0).sync()
        attempt(f"after drop repeat {i}", gor, lambda: bool(np.allclose(zb, xa * 6 + 1)))
    # 10. repeated launches inside then
    op = axpy(z, x, 1.0)
    for i in range(20):
        op = op.then(lambda zx: axpy(zx[0], zx[1], 1.0 + len(str(i)) * 0))
    def chain():
        nonlocal z, x
        z, x, _ = op.sync()
    attempt("then chain", chain, lambda: bool(np.allclose(zb, xa + 1)))
    # 11. scalar int param: bool, big, subclass
    for v in (1, True, LyingInt(3), np.int64(4), 2 ** 31 - 1, 2 ** 31, 2 ** 63, -1, 1):
        def goi(v=v):
            nonlocal z
            z, _ = scal_i(z, v).sync()
        attempt(f"int param {v!r} ({type(v).__name__})", goi, lambda: vals(zb))
    rec("final", [repr(z), repr(x), repr(y), repr(s)])


def check(log):
    bad = []
    for label, val in log:
        if label.startswith("repeat") and not val[0]:
            bad.append(f"{label}: wrong result {val}")
        if isinstance(val, list) and len(val) == 2 and val[0] == "ok" and val[1] is False:
            bad.append(f"{label}: wrong result")
        if isinstance(val, str) and val.startswith("EXC") and "safetile" not in val.split(":")[0]:
            bad.append(f"{label}: non-safetile error {val[:150]}")
    return bad


def main():
    problems, on, off = differential(__file__, scenario, check, "differential")
    if problems:
        broken("; ".join(problems[:5]))
    held(f"{len(on)} observations identical with the C twin on and off, results right "
         f"(C build [calls, hits]: {differential.hits})")


run_guarded(main, "501")
