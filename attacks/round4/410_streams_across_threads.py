"""Promise (safety.md G9): "Any host thread may launch, sync or read at any time"; safe.md:
"op.sync_on(stream) — run on ct.Stream(device) and wait"; "launches on one stream are ordered
by the stream"; G5: "a launch on another stream that conflicts with an unfinished one waits".

Attack: one ct.Stream object shared by 4 threads (sync_on from all of them at once), plus two
private streams, plus the default pool and await from an event loop in a fifth thread, every
launch incrementing a counter through its own view of one buffer (read-modify-write via a Ref
of the same memory is refused, so each launch does c = c + 1 through a Mut load). Lost updates
mean two launches on different (or the same) streams overlapped; a deadlock is a stream worker
waiting on itself. 6 s.
"""
from _r4 import *

import asyncio
import threading
import time

K = kernel_from_source('''
@ct.entry
def bump(z: ct.Mut[ct.f32, "B"]):
    z.store(z.load() + 1.0)
''', tag="r4_410")
N = 1 << 14
base = ct.zeros(N).sync()
views = [base[:] for _ in range(8)]
shared_stream = ct.Stream("cpu")
own = [ct.Stream("cpu"), ct.Stream("cpu")]
counts = [0] * 8
errs = []
stop = time.perf_counter() + 5


def worker(i, mode):
    v = views[i]
    try:
        while time.perf_counter() < stop:
            op = K["bump"](v.partition(1024))
            if mode == "shared":
                (p,) = op.sync_on(shared_stream)
            elif mode == "own":
                (p,) = op.sync_on(own[i % 2])
            elif mode == "pool":
                (p,) = op.sync()
            else:
                async def go():
                    return await op
                (p,) = asyncio.run(go())
            v = p.unpartition()
            counts[i] += 1
    except Exception as e:  # noqa: BLE001
        errs.append(f"thread {i} ({mode}): {type(e).__name__}: {str(e)[:120]}")


modes = ["shared", "shared", "shared", "shared", "own", "own", "pool", "await"]
ths = [threading.Thread(target=worker, args=(i, m), daemon=True) for i, m in enumerate(modes)]
for th in ths:
    th.start()
for th in ths:
    th.join(12)
if any(th.is_alive() for th in ths):
    broken(f"deadlock: {sum(th.is_alive() for th in ths)} threads stuck ({counts})")
if errs:
    broken("; ".join(errs[:3]))
got = base.to_numpy()
total = sum(counts)
if not np.all(got == total):
    broken(f"lost updates: counter {np.unique(got)[:4]} but {total} launches ran ({counts})")
held(f"{total} launches over shared/own/pool streams and await, no update lost ({counts})")
