"""G7 ("a scalar whose *value* does not fit its declared type: n: int given 1.5 or 2**40 ...
checked per value although the type-level checks are cached per type"). Declared narrow scalar
types given values they cannot hold, as Python and NumPy numbers, each after a launch with a
fitting value of the same Python type (type-level cache warm): ct.u8 given 300 and -1, ct.i8
given 200, ct.i16 given 40000, ct.u32 given -1 and 2**32, ct.i64 given 2**63, ct.u64 given -1,
int given np.uint64(2**63), ct.f16 given 1e6 (no finite float16), bool given 2, and ct.i32 given
np.int64(2**40). Each must be refused (LaunchTypeError) or computed exactly; a silent wrap or
saturation is a wrong result. The kernel stores the scalar into an i64/f32 output."""
from _r6 import *


def mk(dt, out_dt, ct_out):
    @ct.entry
    def k(z: ct.Mut[ct_out, "B"], v: dt):
        z.store(ct.full((B,), 0, ct_out) + ct.astype(v, ct_out))
    return k


CASES = [
    ("ct.u8", ct.u8, [3, 300, -1]), ("ct.i8", ct.i8, [3, 200]), ("ct.i16", ct.i16, [3, 40000]),
    ("ct.u32", ct.u32, [3, -1, 2**32]), ("ct.i64", ct.i64, [3, 2**63]), ("ct.u64", ct.u64, [3, -1]),
    ("int", int, [np.uint64(3), np.uint64(2**63)]), ("ct.i32", ct.i32, [np.int64(3), np.int64(2**40)]),
    ("ct.f16", ct.f16, [3.0, 1e6]), ("bool", bool, [True, 2]),
]
bad, notes = [], []
for name, dt, vals in CASES:
    out_np, out_ct = (np.float64, ct.f64) if name in ("ct.f16",) else (np.int64, ct.i64)
    if name == "ct.u64":
        out_np, out_ct = np.uint64, ct.u64
    if name == "bool":
        out_np, out_ct = np.int32, ct.i32
    try:
        k = mk(dt, out_np, out_ct)
    except Exception as e:  # noqa
        notes.append(f"{name}: declaration {type(e).__name__}")
        continue
    for v in vals:
        zb = np.zeros(16, out_np)
        try:
            k(ct.from_dlpack(zb).partition(16), v).sync()
        except Exception as e:  # noqa
            if not is_st(e):
                bad.append(f"{name} <- {v!r}: RAW {type(e).__name__}")
            else:
                notes.append(f"{name}<-{v!r}: {type(e).__name__}")
            continue
        got = zb[0]
        want = float(v) if out_np is np.float64 else int(v)
        if (float(got) != float(want)) if out_np is np.float64 else (int(got) != want):
            bad.append(f"{name} <- {v!r}: accepted, kernel saw {got!r}")
        else:
            notes.append(f"{name}<-{v!r}: exact")
if bad:
    broken("; ".join(bad) + " || " + "; ".join(notes))
held("; ".join(notes))
