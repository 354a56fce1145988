"""Promise (safe.md, "Preconditions"): a failing precondition rejects the launch with
PreconditionError naming the condition and the values; G7: a refused launch writes nothing and
moves nothing; G8: a plan is reused only when every fact its checks read is unchanged; "The
common case in C": the C twin declines any kernel with a callable precondition.

Attack, with the C twin on and off (every observation compared, results against NumPy):
repeated launches where a precondition's inputs change between two repeats — a callable reading a
module global (LIMIT lowered, then raised), a callable whose truth value comes from an object with
an odd `__bool__` (raises / returns a NumPy bool / flips every call), a string precondition over a
scalar parameter (n changes: 3 → 12 → 3, and n = True), a string precondition over a generic and a
dim (the partition re-made with another shape); after each refusal every argument must be usable
and unchanged.
"""
from _r5 import *

LIMIT = 100


class Flip:
    n = 0

    def __bool__(self):
        Flip.n += 1
        return bool(Flip.n % 2)


class Raises:
    def __bool__(self):
        raise ValueError("no truth value")


MODE = {"v": True}


def scenario(rec):
    global LIMIT

    @ct.entry(preconditions=[lambda x: x.shape[0] <= LIMIT])
    def kg(z: ct.Mut[ct.f32, "B"], x: ct.Ref[ct.f32, -1]):
        z.store(ct.load_tile_like(x, z) + 1.0)

    @ct.entry(preconditions=[lambda x: MODE["v"]])
    def kb(z: ct.Mut[ct.f32, "B"], x: ct.Ref[ct.f32, -1]):
        z.store(ct.load_tile_like(x, z) + 2.0)

    @ct.entry(preconditions=["n < 10", "B <= 32", "dim(x, 0) % B == 0"])
    def ks(z: ct.Mut[ct.f32, "B"], x: ct.Ref[ct.f32, -1], n: int):
        z.store(ct.load_tile_like(x, z) + ct.full((B,), 1.0, ct.float32) * n)

    N = 64
    xa = np.linspace(0, 1, N).astype(np.float32)
    zb = np.full(N, np.nan, np.float32)
    z = ct.from_dlpack(zb).partition(16)
    x = ct.from_dlpack(xa.copy())

    def go(label, kern, *extra, want=None):
        nonlocal z, x
        zb[:] = -5.0
        try:
            r = kern(z, x, *extra).sync()
            z, x = r[0], r[1]
            rec(label, ["ran", bool(np.allclose(zb, want)) if want is not None else None])
        except BaseException as e:  # noqa: BLE001
            rec(label, ["EXC " + exc_str(e)[:300], bool(np.all(zb == -5.0))])
        rec(label + " states", [repr(z), repr(x)])

    for i, lim in enumerate((100, 100, 10, 10, 100, 64, 63)):
        LIMIT = lim
        go(f"global LIMIT={lim} ({i})", kg, want=xa + 1)
    for i, v in enumerate((True, True, np.bool_(True), np.bool_(False), Flip(), Flip(), Flip(), Raises(), 1, 0,
                           None, True)):
        MODE["v"] = v
        go(f"truth value {type(v).__name__} ({i})", kb, want=xa + 2)
    for i, n in enumerate((3, 3, 12, 3, True, 9, 10, 3)):
        go(f"n={n!r} ({i})", ks, n, want=xa + float(n))
    t = z.unpartition()
    z = t.partition(64)
    go("B=64 partition", ks, 3, want=xa + 3)
    t = z.unpartition()
    z = t.partition(32)
    go("B=32 partition", ks, 3, want=xa + 3)
    go("B=32 partition again", ks, 3, want=xa + 3)


def check(log):
    bad = []
    for k_, v in log:
        if k_ == "SCENARIO-RAISED":
            bad.append(v[:300])
        elif isinstance(v, list) and len(v) == 2 and v[0] == "ran" and v[1] is False:
            bad.append(f"{k_}: wrong result")
        elif isinstance(v, list) and len(v) == 2 and isinstance(v[0], str) and v[0].startswith("EXC"):
            if "safetile" not in v[0].split(":")[0]:
                bad.append(f"{k_}: non-safetile {v[0][:120]}")
            if v[1] is not True:
                bad.append(f"{k_}: a refused launch wrote its output")
        elif k_.endswith("states") and any("moved" in s for s in v):
            bad.append(f"{k_}: {v}")
    return bad


def main():
    problems, on, off = differential(__file__, scenario, check, "preconditions")
    if problems:
        broken("; ".join(problems[:4]))
    held(f"{len(on)} observations identical with the C twin on and off; refusals write and move nothing")


run_guarded(main, "518")
