"""G4 "a launch runs once" with the C lock: one built op (C-twin build; sometimes a then-chain) is handed to
8 threads at once; each calls op.sync(), op.cancel(), `await op` (asyncio.run in that thread) or
op.sync_on(stream). Expect: exactly one of them succeeds per op (run or cancel), every other gets a safetile
error (DeviceOpError/UseAfterMoveError), the partition ends usable and equals the NumPy reference (+1 per
run that won, +0 for a cancel), and nothing is left in flight."""
from _r9 import *
import asyncio

require_c_lock()
N, TILE, ROUNDS, THREADS = 64, 16, 250, 8
p = poisoned(N).partition(TILE)
ref = np.full(N, POISON, np.float32)
problems = []
kinds = {}


async def _await(op):
    return await op


def terminal(op, how, out, i, go):
    go.wait()
    try:
        if how == 0:
            r = op.sync()
        elif how == 1:
            r = op.cancel() if hasattr(op, "cancel") else op.sync()  # a then-chain has no cancel()
        elif how == 2:
            r = asyncio.run(_await(op))
        else:
            r = op.sync_on(ct.Stream("cpu"))
        out[i] = ("ok", how, r)
    except Exception as e:  # noqa
        out[i] = ("err", how, e)


for rnd in range(ROUNDS):
    chained = rnd % 3 == 0
    op = inc(p).then(lambda v: inc(*v)) if chained else inc(p)
    out = [None] * THREADS
    go = threading.Event()
    ths = [threading.Thread(target=terminal, args=(op, (i + rnd) % 4, out, i, go), daemon=True)
           for i in range(THREADS)]
    for th in ths:
        th.start()
    go.set()
    for th in ths:
        th.join(10)
    if any(th.is_alive() for th in ths):
        fmt_threads()
        broke(f"round {rnd}: a terminal hangs")
    oks = [o for o in out if o[0] == "ok"]
    for o in out:
        if o[0] == "err":
            kinds[type(o[2]).__name__] = kinds.get(type(o[2]).__name__, 0) + 1
            if not is_st(o[2]):
                problems.append(f"round {rnd}: raw {err(o[2])}")
    if len(oks) != 1:
        broke(f"round {rnd}: {len(oks)} terminals succeeded on one op ({[o[1] for o in oks]})")
    how = oks[0][1]
    if how != 1 or chained:
        ref += 2.0 if chained else 1.0
    del op, out, oks
    try:
        got = p.to_numpy() if hasattr(p, "to_numpy") else None
    except Exception as e:  # noqa
        broke(f"round {rnd}: p not readable after its op ended: {err(e)}")
    if got is not None and not np.array_equal(got, ref):
        broke(f"round {rnd}: p = {got[0]}, reference {ref[0]} (a launch ran twice or not at all)")
if problems:
    broke("; ".join(problems[:3]))
if memory.REGISTRY._entries:
    broke(f"left in flight: {memory.REGISTRY._entries}")
final = p.unpartition().to_numpy()
if not np.array_equal(final, ref):
    broke(f"final p {final[0]} != reference {ref[0]}")
held(f"{ROUNDS} ops x {THREADS} terminals: exactly one won each time; refusals {kinds}")
