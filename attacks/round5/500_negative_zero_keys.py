"""Promise (safety.md G8): "A reused plan is only reused when every fact its checks read is
unchanged" ... "scalar and constant values"; safe.md: "One kernel compiles once per
specialisation: element types, ranks, partition shapes, static sizes, generics, constants";
semantics.md: captured Python values "compare by type and value"; semantics.md: "The Triton
backend keeps the sign of zero like the CPU backend".

Attack: -0.0 == 0.0 and hash(-0.0) == hash(0.0) in Python, but they are different values
(1/x gives -inf vs +inf). Launch a kernel with a constant 0.0, then the *same* launch with
-0.0 (the repeated-launch common case: same kernel, same argument objects, a scalar that
compares equal). (a) `c: ct.Constant[float]` in an entry kernel; (b) a module global read by
the kernel rebound from 0.0 to -0.0 between launches; (c) an unchecked `@ct.kernel` with a
Constant through `ct.launch`; (d) a run-time `ct.f32` scalar (control). Each result is checked
against NumPy (1/z must be -inf after -0.0) and the same program runs with the C twin on and
off (SAFETILE_SAFE_NATIVE=0). Active backend (CPU; Triton interpreter with torch).
"""
# BACKENDS: cpu triton
from _r5 import *

ZERO = 0.0


def scenario(rec):
    import torch

    def buf(v):
        return torch.full((8,), v) if BACKEND == "triton" else np.full(8, v, np.float32)

    def sign_of_inv(b):
        with np.errstate(all="ignore"):
            return float((1.0 / as_np(b))[0])

    @ct.entry
    def kc(z: ct.Mut[ct.f32, "B"], x: ct.Ref[ct.f32, -1], c: ct.Constant[float]):
        z.store(ct.load_tile_like(x, z) * c)

    @ct.entry
    def kg(z: ct.Mut[ct.f32, "B"], x: ct.Ref[ct.f32, -1]):
        z.store(ct.load_tile_like(x, z) * ZERO)

    @ct.entry
    def ks(z: ct.Mut[ct.f32, "B"], x: ct.Ref[ct.f32, -1], c: ct.f32):
        z.store(ct.load_tile_like(x, z) * c)

    for name, kern in (("Constant[float]", kc), ("f32 scalar", ks)):
        base = buf(7.0)
        x = ct.from_dlpack(buf(1.0))
        z = ct.from_dlpack(base).partition(8)
        for v in (0.0, -0.0, 0.0, -0.0):
            z, x, _ = kern(z, x, v).sync()
            rec(f"{name} c={v!r}: 1/z[0]", sign_of_inv(base))

    global ZERO
    base = buf(7.0)
    x = ct.from_dlpack(buf(1.0))
    z = ct.from_dlpack(base).partition(8)
    for v in (0.0, -0.0, 0.0, -0.0):
        ZERO = v
        z, x = kg(z, x).sync()
        rec(f"global ZERO={v!r}: 1/z[0]", sign_of_inv(base))

    @ct.kernel
    def uk(X, c: ct.Constant[float]):
        ct.store(X, index=(ct.bid(0),), tile=ct.full((8,), 1.0, ct.float32) * c)

    for v in (0.0, -0.0):
        X = buf(7.0)
        ct.launch(None, (1,), uk, (X, v))
        rec(f"unchecked Constant c={v!r}: 1/X[0]", sign_of_inv(X))


def check(log):
    bad = []
    for label, val in log:
        if ":" in label and "c=" in label or "ZERO=" in label:
            want_neg = "-0.0" in label.split(":")[0]
            want = float("-inf") if want_neg else float("inf")
            if val != want:
                bad.append(f"{label.split(':')[0]}: 1/z = {val}, NumPy says {want}")
    return bad


def main():
    problems, on, off = differential(__file__, scenario, check, "negative zero")
    if problems:
        uniq = sorted(set(p for p in problems))
        both = sorted(set(p.split("] ", 1)[1] for p in uniq if p.startswith("[native on]")) &
                      set(p.split("] ", 1)[1] for p in uniq if p.startswith("[native off]")))
        broken(f"[{BACKEND}] C twin on and off alike: " + "; ".join(both) if both else
               f"[{BACKEND}] " + "; ".join(uniq[:4]))
    held(f"[{BACKEND}] -0.0 after 0.0 recompiles/rebinds everywhere: {len(on)} checks")


run_guarded(main, "500")
