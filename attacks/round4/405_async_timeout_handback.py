"""Promise (safety.md G4, Interrupted waiters): "A waiter that stops waiting — ... a cancelled or
timed-out await ... leaves one that has started to finish: it stays registered (host reads of
views and overlapping launches wait for it), and the values it gives back are free for everyone
when it ends, not before."

Attack: asyncio.wait_for(op, timeout) / asyncio.timeout / task.cancel() on awaits of slow launches
and of then-chains (slow launch, then a second slow launch on the first's result) while the
stream worker runs them. Right after the cancellation the attacker polls: (1) the original
handles (z.unpartition(), a new launch on z) — they may only become usable once all the work
has ended, so the data seen at that moment must be the chain's final values; (2) a view taken
before, read at once — it must wait and see the final values; (3) a second await of the same
op — refused or given the values, never a second run. Also asyncio.gather of several awaits of
one op.shared() with one of them cancelled.
"""
from _r4 import *

import asyncio
import time

K = kernel_from_source('''
@ct.entry
def spin_add(z: ct.Mut[ct.f32, "B"], v: ct.f32, reps: ct.Constant[int]):
    acc = z.load()
    for i in range(reps):
        acc = acc * 1.0
    z.store(acc + v)
''', tag="r4_405")
N = 4096
fails = []
notes = []


def poll_usable(z, deadline=10.0):
    t0 = time.perf_counter()
    while time.perf_counter() - t0 < deadline:
        try:
            return z.unpartition()
        except ct.UseAfterMoveError:
            time.sleep(0.001)
    return None


async def case_wait_for(chain, how):
    t = ct.zeros(N).sync()
    view = t[:]
    z = t.partition(64)
    op = K["spin_add"](z, 1.0, 15000)
    final = 1.0
    if chain:
        op = op.then(lambda r: K["spin_add"](r[0], 10.0, 15000))
        final = 11.0
    try:
        if how == "wait_for":
            await asyncio.wait_for(op, 0.03)
        elif how == "timeout":
            async with asyncio.timeout(0.03):
                await op
        else:
            task = asyncio.ensure_future(op)
            await asyncio.sleep(0.03)
            task.cancel()
            await task
        notes.append(f"{how}/chain={chain}: finished before the timeout")
        return
    except (asyncio.TimeoutError, asyncio.CancelledError):
        pass
    seen_view = view.to_numpy()
    if not np.all(seen_view == final):
        fails.append(f"{how}/chain={chain}: a view read right after the cancel saw {np.unique(seen_view)[:3]}, "
                     f"not the final {final}")
    tt = poll_usable(z)
    if tt is None:
        fails.append(f"{how}/chain={chain}: z never given back")
        return
    got = tt.to_numpy()
    if not np.all(got == final):
        fails.append(f"{how}/chain={chain}: z usable again while the work had not ended: {np.unique(got)[:3]}")
    try:
        await op
        fails.append(f"{how}/chain={chain}: a second await of the cancelled op ran it again")
    except Exception as e:  # noqa: BLE001
        if not is_safetile_error(e):
            fails.append(f"{how}/chain={chain}: second await raised non-safetile {type(e).__name__}: {e}")


async def case_shared_gather():
    t = ct.zeros(N).sync()
    view = t[:]
    op = K["spin_add"](t.partition(64), 2.0, 15000).shared()

    async def consumer(i):
        r = await op
        return r
    tasks = [asyncio.ensure_future(consumer(i)) for i in range(3)]
    await asyncio.sleep(0.02)
    tasks[0].cancel()
    res = await asyncio.gather(*tasks, return_exceptions=True)
    for i, r in enumerate(res):
        if isinstance(r, BaseException) and not isinstance(r, asyncio.CancelledError) and not is_safetile_error(r):
            fails.append(f"shared gather: consumer {i} raised non-safetile {type(r).__name__}: {r}")
    vals = [r for r in res if not isinstance(r, BaseException)]
    for r in vals:
        s = r[0]
        if not np.all(s.to_numpy() == 2.0):
            fails.append(f"shared gather: a consumer got {np.unique(s.to_numpy())[:3]}")
    if not np.all(view.to_numpy() == 2.0):
        fails.append("shared gather: the view saw partial work")


for chain in (False, True):
    for how in ("wait_for", "timeout", "cancel"):
        asyncio.run(case_wait_for(chain, how))
asyncio.run(case_shared_gather())
print(notes)
if fails:
    broken("; ".join(fails))
held("timed-out / cancelled awaits: values come back only after the work ended; views wait")
