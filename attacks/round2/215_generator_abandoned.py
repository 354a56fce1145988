"""Promise (safety.md G4): 'A launch dropped unrun gives its arguments back with a
LaunchDroppedWarning ... Leaving `with ct.borrow_mut(t)` always ends the borrow';
(safe.md) 'Leaving the block always ends the borrow, also by an exception: it waits for
launches still running on the partition ... and cancels launches built in the block that
never ran'.

Generator-based pipelines abandoned mid-iteration:
 a. a generator inside `with ct.borrow_mut(t)` yields an unrun launch on the borrowed
    partition and is dropped (GeneratorExit at collection) — t must be usable and the
    launch must never run afterwards (even if the yielded op is kept and driven later);
 b. a generator yields after `await`-free chain building and is closed with .throw();
 c. an async generator awaiting launches is abandoned (aclose never called) and its loop
    closed — the arguments must come back."""
import asyncio
import gc
import warnings

from _r2 import *


def body():
    warnings.simplefilter("ignore")
    problems = []
    x = ct.ones(1024).sync()

    # a
    t = ct.zeros(1024).sync()

    def gen_a():
        with ct.borrow_mut(t) as b:
            p = b.partition(256)
            yield fill(p, x)
            yield "unreachable"

    g = gen_a()
    kept = next(g)
    del g
    gc.collect()
    try:
        before = t.to_numpy().copy()
    except Exception as e:  # noqa: BLE001
        problems.append(f"a: t unusable after the generator holding its borrow was dropped: {type(e).__name__}: "
                        f"{str(e)[:90]}")
        before = None
    try:
        kept.sync()
        if before is not None and not np.array_equal(t.to_numpy(), before):
            problems.append("a: a launch built inside an ended borrow ran later and wrote t")
        else:
            problems.append("a: a launch built inside an ended borrow ran later (sync succeeded)")
    except Exception as e:  # noqa: BLE001
        if not is_safetile_error(e):
            problems.append(f"a: non-safetile {type(e).__name__}: {e}")

    # b
    t2 = ct.zeros(1024).sync()

    def gen_b():
        p = t2.partition(256)
        op = fill(p, x)
        yield op
        p, _ = op.sync()
        yield p

    g = gen_b()
    op = next(g)
    try:
        g.throw(KeyboardInterrupt)
    except KeyboardInterrupt:
        pass
    del op, g
    gc.collect()
    try:
        ok = False
        # the partition is gone with the generator frame; t2 is inside it: it must not be lost forever
        t2.to_numpy()
        ok = True
    except Exception as e:  # noqa: BLE001
        msg = str(e)
    if not ok and "partition" not in msg:
        problems.append(f"b: {msg[:100]}")

    # c
    t3 = ct.zeros(1024).sync()
    p3 = [t3.partition(256)]

    async def agen():
        while True:
            r = await fill(p3[0], x)
            p3[0] = r[0]
            yield r

    async def main():
        it = agen()
        await it.__anext__()
        fut = asyncio.ensure_future(it.__anext__())
        await asyncio.sleep(0)
        return fut

    loop = asyncio.new_event_loop()
    loop.run_until_complete(main())
    loop.close()
    gc.collect()
    try:
        p3[0].to_numpy()
    except Exception as e:  # noqa: BLE001
        problems.append(f"c: the partition is unusable after its async generator and loop were abandoned: "
                        f"{type(e).__name__}: {str(e)[:100]}")
    if problems:
        broken("; ".join(problems))
    held("abandoned generators give their values back")


run_guarded(body, "generator abandoned")
