"""G7 ("a scalar whose *value* does not fit its declared type ... a ct.f16 given 1e6 (a finite value
beyond the type's range: round 6, attack 622) ... is a LaunchTypeError") and G8 ("zero float scalars
key their sign"; the C path reuses a plan only when "scalars as tuples compare" equal). Values at and
beyond each float type's edge (f16, bf16, f32, and a generic element type "E" bound to f16 by a tensor),
huge Python ints (10**400, which float() cannot convert), Fraction/Decimal, a float subclass, NumPy
float64 beyond f32; then -0.0 after 0.0 and 0.0 after -0.0 on a warm plan (1/alpha shows the sign).
Each value must run correctly or be a LaunchTypeError with the partition usable; both paths agree."""
from _r7 import *
from fractions import Fraction
from decimal import Decimal


@ct.entry
def sc16(z: ct.Mut[ct.f32, "B"], a: ct.f16):
    z.store(ct.full((B,), 1.0, ct.float32) * a.astype(ct.float32))


@ct.entry
def scbf(z: ct.Mut[ct.f32, "B"], a: ct.bf16):
    z.store(ct.full((B,), 1.0, ct.float32) * a.astype(ct.float32))


@ct.entry
def sc32(z: ct.Mut[ct.f32, "B"], a: ct.f32):
    z.store(ct.full((B,), 1.0, ct.float32) * a)


@ct.entry
def scgen(z: ct.Mut[ct.f32, "B"], x: ct.Ref["E", -1], a: "E"):
    z.store(ct.load_tile_like(x, z).astype(ct.float32) * 0.0 + a.astype(ct.float32))


@ct.entry
def inv(z: ct.Mut[ct.f32, "B"], a: ct.f32):
    z.store(ct.full((B,), 1.0, ct.float32) / a)


class MyF(float):
    pass


def run(k, *extra):
    z = ct.zeros(16).sync().partition(16)
    try:
        r = k(z, *extra).sync()
        v = float(r[0].unpartition().to_numpy()[0])
        return "inf" if v == float("inf") else ("-inf" if v == -float("inf") else ("nan" if v != v else v))
    except Exception as e:  # noqa
        try:
            z.grid()
            u = ""
        except Exception:  # noqa
            u = " [z NOT usable]"
        return err(e, 40) + u


def scenario():
    out = {}
    x16 = np.zeros(16, np.float16)
    for v in (65504.0, 65519.0, 65520.0, -65520.0, 1e6, float("inf"), float("nan")):
        out[f"f16 {v}"] = run(sc16, v)
        out[f"E=f16 {v}"] = run(scgen, x16, v)
    for v in (3.3895313892515355e38, 3.3961e38, 3.5e38):
        out[f"bf16 {v}"] = run(scbf, v)
    for v in (3.4028235e38, 3.4028235677973366e38, 3.4028236e38, 3.40282357e38 + 1e30, 1e39, np.float64(1e300)):
        out[f"f32 {v!r}"] = run(sc32, v)
    for v in (10 ** 400, -(10 ** 400), 2 ** 128, Fraction(10 ** 400, 3), Decimal("1e400"), MyF(1e300), True):
        out[f"f32 {type(v).__name__} {str(v)[:12]}"] = run(sc32, v)
    out["E=f16 int 70000"] = run(scgen, x16, 70000)
    out["0.0 then -0.0"] = [run(inv, 0.0), run(inv, 0.0), run(inv, -0.0), run(inv, -0.0), run(inv, 0.0)]
    return out


def judge(c, py):
    bad = []
    for k, v in c.items():
        if isinstance(v, str) and ("(raw)" in v or "NOT usable" in v):
            bad.append(f"{k}: {v}")
        if isinstance(v, str) and v in ("inf", "-inf") and not k.endswith(" inf") and "0.0 then" not in k:
            bad.append(f"{k}: ran with {v}")
    if c["0.0 then -0.0"] != ["inf", "inf", "-inf", "-inf", "inf"]:
        bad.append(f"signed zeros: {c['0.0 then -0.0']}")
    if bad:
        return "BROKEN", "C path: " + "; ".join(bad)
    return "HELD", "edges refused or exact; signed zeros keyed"


differential(scenario, judge)
