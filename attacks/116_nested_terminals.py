"""Promise (safe.md): 'Calling a terminal while a DeviceOp executes (e.g. sync() inside a
then closure) is a NestedSyncError; return the op from the closure instead.' Every terminal
(sync, sync_on, graph capture, a graph replay, asyncio.run of an await) inside then / map /
inspect closures must raise NestedSyncError promptly — never deadlock or run nested."""
import asyncio
import threading

from _common import *

x = ct.rand(256, seed=1).sync()
z0 = ct.zeros(256).sync().partition(64)
g = fill(z0, x).graph()
inner = lambda: ct.zeros(4)  # noqa: E731
TERMINALS = {
    "sync": lambda v: inner().sync(),
    "sync_on": lambda v: inner().sync_on(ct.Stream("cpu")),
    "graph()": lambda v: fill(ct.Partition if False else v[0], v[1]).graph(),
    "g.launch()": lambda v: g.launch(),
    "asyncio.run(await)": lambda v: asyncio.run(_aw()),
}


async def _aw():
    return await inner()


fails = []
for comb in ["then", "map", "inspect"]:
    for name, term in TERMINALS.items():
        z = ct.zeros(256).sync().partition(64)
        op = getattr(fill(z, x), comb)(term)
        res = {}

        def drive():
            try:
                res["r"] = op.sync()
            except Exception as e:  # noqa: BLE001
                res["e"] = e
        th = threading.Thread(target=drive, daemon=True)
        th.start()
        th.join(15)
        if th.is_alive():
            fails.append(f"{comb}({name}): deadlock")
            continue
        e = res.get("e")
        if e is None:
            fails.append(f"{comb}({name}): nested terminal ran")
        elif not isinstance(e, ct.NestedSyncError):
            fails.append(f"{comb}({name}): {type(e).__module__}.{type(e).__name__}: {str(e)[:80]}")
if fails:
    broken("; ".join(fails))
held("nested terminals refused with NestedSyncError")
