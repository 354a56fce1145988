"""Promise (safe.md DeviceOps / help(LaunchOp)): a launch dropped unrun is cancelled and
gives its arguments back; running it gives every argument back; unzip 'splits an op ... (the
work still runs once)'. Checked for launches wrapped in then/map/first/unzip/zip chains that
are dropped unrun, driven piecewise, or partially dropped; and map/unmap/unpartition moves."""
import gc

from _common import *

fails = []
x = ct.rand(256, seed=1).sync()


def usable(v):
    try:
        v.to_numpy()
        return True
    except Exception:  # noqa: BLE001
        return False


# dropped chains give the launch's arguments back
for name, wrap in [("then", lambda op: op.then(lambda v: v)), ("map", lambda op: op.map(lambda v: v)),
                   ("first", lambda op: op.first()), ("zip", lambda op: ct.zip(op, ct.value(1))),
                   ("shared", lambda op: op.shared())]:
    z = ct.zeros(256).sync().partition(64)
    chain = wrap(fill(z, x))
    del chain
    gc.collect()
    if not usable(z):
        fails.append(f"{name}: a dropped unrun chain did not give its launch's arguments back")
# first() hands back all arguments, not just the first
z = ct.zeros(256).sync().partition(64)
zz = fill(z, x).first().sync()
if not usable(x):
    fails.append("x unusable after fill(z, x).first().sync()")
# unzip: run once, both pieces
calls = []
z = ct.zeros(256).sync().partition(64)
a, b = fill(z, x).inspect(lambda v: calls.append(1)).unzip(2)
ra = a.sync()
rb = b.sync()
if len(calls) != 1 or ra is not z or rb is not x:
    fails.append(f"unzip: ran {len(calls)} times / wrong pieces")
# one unzip piece dropped unrun, the other never driven: arguments come back
z = ct.zeros(256).sync().partition(64)
a, b = fill(z, x).unzip(2)
del a, b
gc.collect()
if not usable(z):
    fails.append("unzip pieces dropped unrun: z not given back")
# map / unmap / unpartition moves
p = ct.zeros(256).sync().partition(64)
m = p.map(2)
for nm, f in [("p after map", lambda: p.to_numpy()), ("p.unpartition after map", lambda: p.unpartition())]:
    try:
        f()
        fails.append(f"{nm}: allowed")
    except ct.UseAfterMoveError:
        pass
p2 = m.unmap()
for nm, f in [("m after unmap", lambda: m.to_numpy()), ("m.unpartition after unmap", lambda: m.unpartition())]:
    try:
        f()
        fails.append(f"{nm}: allowed")
    except ct.UseAfterMoveError:
        pass
if fails:
    broken("; ".join(fails))
held("combinators hand arguments back exactly once")
