"""G4 / (e) deadlock. A host closure in a chain (map/then/inspect) that raises StopIteration — the
everyday bug of calling next() on an exhausted iterator. With sync() the terminal fails and
gives the values back. With `await op` the CPU work runs on the stream's worker and its result is
handed to the event loop through a future; a StopIteration cannot be set on an asyncio future
(asyncio raises TypeError inside a loop callback), so the awaiting coroutine may never resume.
Checks: the await finishes within 5 s (with an exception), and the partition moved into the chain
is usable afterwards (also after asyncio.wait_for gives up)."""
from _r6 import *
import asyncio, time


def stop(v):
    return next(iter(()))   # StopIteration


def run_await(op, limit):
    async def go():
        return await asyncio.wait_for(op, limit)
    try:
        r = asyncio.run(go())
        return f"returned {r!r}"
    except asyncio.TimeoutError:
        return "TIMEOUT"
    except BaseException as e:  # noqa
        return f"{type(e).__name__}"


out, bad = {}, []
# 1. plain value chain
out["value.map(stop)"] = run_await(ct.value(1).map(stop), 5)
# 2. with a launch before the closure: its partition is lent to the terminal
base = arr(64)
z = ct.from_dlpack(base).partition(16)
out["inc(z).map(stop)"] = run_await(inc(z).map(stop), 5)
time.sleep(0.5) if False else None
try:
    t = z.unpartition()
    st = f"z usable afterwards, values {t.to_numpy()[0]}"
except Exception as e:  # noqa
    st = f"z unusable afterwards: {type(e).__name__}: {str(e)[:120]}"
    bad.append(st)
out["after"] = st
# 3. sync for comparison
z2 = ct.from_dlpack(arr(64)).partition(16)
try:
    inc(z2).map(stop).sync()
    out["sync"] = "returned"
except BaseException as e:  # noqa
    out["sync"] = type(e).__name__
for k, v in out.items():
    if v == "TIMEOUT" or v.startswith("returned"):
        bad.append(f"await of {k}: {v}")
if bad:
    broken("; ".join(bad) + f" || {out}")
held(str(out))
