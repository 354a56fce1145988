"""Promise (safe.md): 'a *view* taken before the move (another object over the same memory)
waits for the unfinished launch that writes that memory'; (safety.md G5) 'While a launch
... runs, no other ... host read touches the memory it writes'.

Interrupt the waiting side of a launch that is running on a stream worker — a SIGINT
(KeyboardInterrupt) during sync_on, an asyncio task.cancel() during await, an
asyncio.wait_for timeout — then read a view taken before the partition at once. The read
must not finish before the launch has finished writing."""
import asyncio
import signal
import threading
import time

from _r2 import *


@ct.entry
def slow(z: ct.Mut[ct.f32, "B"], x: ct.Ref[ct.f32, -1], v: ct.f32):
    acc = ct.load_tile_like(x, z)
    for i in range(4000):
        acc = acc * 0.5 + v
    z.store(acc)


N = 1 << 18
x = ct.zeros(N).sync()
problems = []


def fresh():
    global x
    x = ct.zeros(N).sync()      # a fresh input each case (an interrupted terminal keeps its own)
    t = ct.zeros(N).sync()
    view = t[0:8]
    return t.partition(4096), view


def check(what, view, done):
    a = view.to_numpy()
    t_read = time.perf_counter()
    for _ in range(200):     # let the launch finish if it is still running
        if done:
            break
        time.sleep(0.05)
    if not done:
        problems.append(f"{what}: launch never finished")
    elif t_read < done[0]:
        problems.append(f"{what}: view read returned {a[:2]} {done[0] - t_read:.3f}s before the "
                        "launch finished writing that memory")


def body():
    global x
    p, _ = fresh()
    p, x, _ = slow(p, x, 1.0).sync()            # compile

    # 1. SIGINT while sync_on waits for the running launch
    p, view = fresh()
    s = ct.Stream("cpu")
    s.submit(lambda: time.sleep(0.05))
    done = []
    op = slow(p, x, 7.0).inspect(lambda r: done.append(time.perf_counter()))
    main = threading.main_thread().ident
    threading.Timer(0.2, lambda: signal.pthread_kill(main, signal.SIGINT)).start()
    try:
        op.sync_on(s)
        inconclusive("interrupt missed")
    except KeyboardInterrupt:
        pass
    check("KeyboardInterrupt in sync_on", view, done)

    # 1b. the same, then a second writer on a view: it must run after the first (last write wins)
    p, _ = fresh()
    t2 = ct.zeros(N).sync()
    view2 = t2[:]
    p = t2.partition(4096)
    s.submit(lambda: time.sleep(0.05))
    done = []
    op = slow(p, x, 7.0).inspect(lambda r: done.append(time.perf_counter()))
    threading.Timer(0.2, lambda: signal.pthread_kill(main, signal.SIGINT)).start()
    try:
        op.sync_on(s)
        inconclusive("interrupt missed")
    except KeyboardInterrupt:
        pass
    q, _ = fill_bid(view2.partition(4096), ct.zeros(8).sync()).sync()     # writes 1..64 per block
    t_second = time.perf_counter()
    for _ in range(200):
        if done:
            break
        time.sleep(0.05)
    time.sleep(0.1)
    final = q.unpartition().to_numpy()
    if done and t_second < done[0] and not np.array_equal(final, np.repeat(np.arange(1, 65, dtype=np.float32), 4096)):
        problems.append(f"write-write race: a launch on a view ran {done[0] - t_second:.3f}s before the "
                        f"interrupted launch finished, which then overwrote it (final values {np.unique(final)[:3]})")

    # 2. task.cancel() during await; 3. wait_for timeout
    async def cancel_case(kind):
        p, view = fresh()
        done = []
        op = slow(p, x, 7.0).inspect(lambda r: done.append(time.perf_counter()))
        if kind == "cancel":
            task = asyncio.ensure_future(op)
            await asyncio.sleep(0.1)
            task.cancel()
            try:
                await task
            except asyncio.CancelledError:
                pass
        else:
            try:
                await asyncio.wait_for(op, 0.1)
            except asyncio.TimeoutError:
                pass
        check(f"asyncio {kind}", view, done)

    asyncio.run(cancel_case("cancel"))
    asyncio.run(cancel_case("wait_for"))
    if problems:
        broken("; ".join(problems))
    held("view reads wait for interrupted launches")


run_guarded(body, "interrupt view read")
