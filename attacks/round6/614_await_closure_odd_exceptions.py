"""G4 / (e) deadlock, extending 610. `await op` where a host closure of the chain raises an
exception asyncio treats specially when it crosses from the stream worker's future into the
event loop: asyncio.CancelledError, concurrent.futures.CancelledError, asyncio.InvalidStateError,
SystemExit, KeyboardInterrupt, GeneratorExit, StopAsyncIteration, and a plain ValueError (control).
Each await must finish within 5 s (any exception) and the partition moved into the chain must be
usable afterwards."""
from _r6 import *
import asyncio, concurrent.futures as cf, threading

EXC = {
    "ValueError (control)": ValueError("x"),
    "asyncio.CancelledError": asyncio.CancelledError(),
    "concurrent.futures.CancelledError": cf.CancelledError(),
    "asyncio.InvalidStateError": asyncio.InvalidStateError(),
    "SystemExit": SystemExit(2),
    "KeyboardInterrupt": KeyboardInterrupt(),
    "GeneratorExit": GeneratorExit(),
    "StopAsyncIteration": StopAsyncIteration(),
}
out, bad = {}, []
for name, exc in EXC.items():
    z = ct.from_dlpack(arr(64)).partition(16)

    def clo(r, exc=exc):
        raise exc
    op = inc(z).map(clo)
    res = {}

    def runner():
        async def go():
            return await op
        try:
            res["r"] = asyncio.run(go())
        except BaseException as e:  # noqa
            res["e"] = type(e).__name__
    th = threading.Thread(target=runner, daemon=True)
    th.start()
    th.join(5)
    if th.is_alive():
        out[name] = "HANG"
        bad.append(f"{name}: await never finished")
    else:
        out[name] = res.get("e", f"returned {res.get('r')!r}")
        if "r" in res:
            bad.append(f"{name}: await returned {res['r']!r} although the chain failed")
    try:
        z.unpartition()
    except Exception as e:  # noqa
        bad.append(f"{name}: partition unusable afterwards ({type(e).__name__}: {str(e)[:80]})")
if bad:
    broken("; ".join(bad) + f" || {out}")
held(str(out))
