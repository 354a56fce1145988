"""Promise (safety.md G4): "with safetile imported a Ctrl-C inside `asyncio.run` raises
KeyboardInterrupt where the event loop is ..., and `asyncio.run` then cancels the remaining tasks
(an awaiting terminal lets go of its work as above)"; interrupted waiters: a job that has not
started never runs and its launch keeps its arguments (op.cancel() gets them back; a dropped one
gives them back); one that has started finishes and its values are free when it ends.

Attack, with the C twin on and off: 30 times, `asyncio.run` of 6 coroutines each repeating
`z_i = z_i * 0.5 + s` with `await` (single launches and chains of 3) is hit by a real SIGINT after
a random 5-60 ms. After each interrupt the program waits (documented API only: gc, retrying)
until every partition can be launched again — each must come back within 5 s — and checks that
its content is a whole number of steps of the float32 recurrence (never a half-applied step);
the Shared must unwrap at the end.
"""
from _r5 import *

import asyncio
import gc
import random
import signal
import threading
import time


def scenario(rec):
    @ct.entry
    def step(z: ct.Mut[ct.f32, "B"], s: ct.Ref[ct.f32, -1]):
        z.store(z.load() * 0.5 + ct.load_tile_like(s, z))

    N = 256
    C = 6
    sa = np.full(N, 1.0, np.float32)
    s = ct.from_dlpack(sa.copy()).shared()
    bufs = [np.zeros(N, np.float32) for _ in range(C)]
    parts = [ct.from_dlpack(b).partition(64) for b in bufs]
    # every reachable value of z after k steps from 0: 2 - 2**-k (float32)
    reach = set()
    v = np.float32(0)
    for _ in range(200):
        reach.add(float(v))
        v = np.float32(v * np.float32(0.5) + np.float32(1.0))
    reach.add(float(v))
    problems = []
    rnd = random.Random(11)
    interrupts = 0

    async def worker(i):
        while True:
            p = parts[i]
            if i % 2:
                parts[i], _ = await step(p, s)
            else:
                parts[i], _ = await step(p, s).then(lambda v: step(*v)).then(lambda v: step(*v))

    async def main():
        await asyncio.gather(*[worker(i) for i in range(C)])

    for r in range(30):
        for b in bufs:
            b[:] = 0.0
        delay = rnd.uniform(0.005, 0.06)
        timer = threading.Timer(delay, lambda: os.kill(os.getpid(), signal.SIGINT))
        timer.start()
        try:
            asyncio.run(main())
        except KeyboardInterrupt:
            interrupts += 1
        except BaseException as e:  # noqa: BLE001
            problems.append(f"round {r}: {exc_str(e)[:200]}")
        timer.join()
        # every partition must come back: try to launch on it (then cancel) until it works
        for i in range(C):
            t0 = time.time()
            while True:
                try:
                    op = step(parts[i], s)
                    op.cancel()
                    break
                except ct.UseAfterMoveError:
                    gc.collect()
                    if time.time() - t0 > 5:
                        problems.append(f"round {r}: partition {i} never came back: {repr(parts[i])[:200]}")
                        break
                    time.sleep(0.01)
                except BaseException as e:  # noqa: BLE001
                    problems.append(f"round {r}: partition {i}: {exc_str(e)[:200]}")
                    break
            vals = set(float(u) for u in np.unique(bufs[i]))
            bad = [u for u in vals if u not in reach]
            if bad or len(vals) > 1:
                problems.append(f"round {r}: partition {i} holds {sorted(vals)[:4]} (not one whole step count)")
        if len(problems) > 5:
            break
    rec("interrupted rounds", interrupts)
    rec("problems", problems[:4])
    t0 = time.time()
    last = None
    while time.time() - t0 < 5:
        try:
            s.try_unwrap()
            last = True
            break
        except BaseException as e:  # noqa: BLE001
            last = exc_str(e)[:200]
            gc.collect()
            time.sleep(0.02)
    rec("Shared unwraps", last)


def check(log):
    d = dict(log)
    if "SCENARIO-RAISED" in d:
        return [d["SCENARIO-RAISED"][:300]]
    bad = []
    if d["problems"]:
        bad.append(f"{d['problems']}")
    if d["Shared unwraps"] is not True:
        bad.append(f"Shared: {d['Shared unwraps']}")
    if d["interrupted rounds"] < 20:
        bad.append(f"only {d['interrupted rounds']} rounds were interrupted (inconclusive)")
    return bad


def main():
    problems, logs = each_mode(__file__, scenario, check, "ctrl-c asyncio")
    if problems:
        if all("inconclusive" in p for p in problems):
            inconclusive("; ".join(problems))
        broken("; ".join(problems[:3]))
    held("Ctrl-C into asyncio.run of repeated awaits: every value came back, contents whole steps, Shared unwraps "
         + str({k: dict(v)["interrupted rounds"] for k, v in logs.items()}))


run_guarded(main, "519")
