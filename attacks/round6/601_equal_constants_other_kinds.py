"""G8 / safe.md "compiles once per specialisation: ... constants" and semantics.md ("Constants
passed as ct.Constant arguments compile apart whenever they compute differently, even where ==
calls them equal"). Round 5 (500/509) fixed floats' sign, bool/int/float and dataclass fields.
New kinds of equal-but-different constants a user meets: NumPy scalars (np.float32(1.5) ==
1.5 == np.float64(1.5)), IntEnum members (Color.RED == 1), str subclasses, Fraction(3, 2) ==
1.5, Decimal, and a plain class whose __eq__/__hash__ ignore a field. Each kernel looks at the
constant at compile time; a launch with the second value must compute what a fresh kernel
computes for it. Fresh kernel objects per pair; order tested both ways."""
from _r6 import *
import enum, fractions, decimal


class Color(enum.IntEnum):
    RED = 1


class Tag(str):
    pass


class Cfg:
    def __init__(self, n, scale):
        self.n, self.scale = n, scale

    def __eq__(self, o):
        return isinstance(o, Cfg) and o.n == self.n

    def __hash__(self):
        return hash(self.n)

    def __repr__(self):
        return f"Cfg(n={self.n}, scale={self.scale})"


def probe(v):
    # what the kernel computes from the constant at compile time
    if isinstance(v, Cfg):
        return float(v.scale)
    return {np.float32: 2.0, np.float64: 3.0, Color: 4.0, Tag: 5.0, fractions.Fraction: 6.0,
            decimal.Decimal: 7.0}.get(type(v), 1.0)


def make(direct=False):
    if direct:  # plain attribute read of the constant in tile code (no static_eval)
        @ct.entry
        def kd(z: ct.Mut[ct.f32, "B"], c: ct.Constant[object]):
            z.store(ct.full((B,), 1.0, ct.float32) * c.scale)
        return kd

    @ct.entry
    def k(z: ct.Mut[ct.f32, "B"], c: ct.Constant[object]):
        z.store(ct.full((B,), 1.0, ct.float32) * ct.static_eval(probe(c)))
    return k


def run(k, v):
    z = ct.from_dlpack(arr(16)).partition(16)
    z, _ = k(z, v).sync()
    return float(z.unpartition().to_numpy()[0])


PAIRS = [(1.5, np.float32(1.5)), (np.float32(1.5), np.float64(1.5)), (1, Color.RED), ("a", Tag("a")),
         (1.5, fractions.Fraction(3, 2)), (1.5, decimal.Decimal("1.5")), (Cfg(1, 2.0), Cfg(1, 9.0))]
bad, errs = [], []
for a, b in PAIRS:
    for x, y in ((a, b), (b, a)):
        try:
            d = isinstance(x, Cfg)
            k = make(d)
            fx = run(k, x)
            fy = run(k, y)
            ref = run(make(d), y)
        except Exception as e:  # noqa
            errs.append(f"{x!r},{y!r}: {type(e).__name__}: {str(e)[:100]}")
            continue
        if fy != ref:
            bad.append(f"{type(y).__name__} {y!r} after {type(x).__name__} {x!r}: got {fy}, fresh kernel {ref}")
if bad:
    broken("equal-but-different constants reuse another's compiled code: " + "; ".join(bad))
if errs:
    inconclusive("; ".join(errs))
held(f"{len(PAIRS)*2} equal-but-different constant pairs each compiled apart")
