"""G4 (safety.md, "Interrupted waiters": a waiter that gave up -- a timed-out await -- leaves started
work to finish, and "when that work succeeds its combinators' moves are undone as a failed terminal's
are"; round-6 fix for attack 618). Race the rollback against delivery: `inc(p).map(slow).shared()`
awaited with asyncio.wait_for whose timeout is close to the work's own duration, many rounds. Every
round must end in exactly one of two states: the await delivered the Shared (it is readable, and p
stays moved into it), or it timed out and, once the work ended, p is usable again (rolled back).
Never both (a delivered Shared that was unwrapped under the program, or p given back while the
program holds a live Shared of its memory: a writable alias of a Shared, G6), never neither (p lost)."""
from _r7 import *
import asyncio, gc, time


def scenario():
    delivered = timed_out = 0
    bad = []
    base = arr(64)
    p = ct.from_dlpack(base).partition(16)
    for i in range(24):
        d = 0.02
        op = inc(p).map(lambda v: (time.sleep(d), v)[1]).shared()

        async def go():
            return await asyncio.wait_for(op, d + (i % 8 - 4) * 0.003)
        res = None
        try:
            res = asyncio.run(go())
        except asyncio.TimeoutError:
            pass
        except Exception as e:  # noqa
            bad.append(f"round {i}: await raised {err(e, 60)}")
            break
        del op
        if res is not None:
            delivered += 1
            (s,) = res
            try:
                s.to_numpy()
            except Exception as e:  # noqa
                bad.append(f"round {i}: delivered Shared unusable: {err(e, 80)}")
                break
            try:
                p.unpartition()
                bad.append(f"round {i}: await delivered a Shared AND p was given back (writable alias)")
                break
            except ct.UseAfterMoveError:
                pass
            t = s.try_unwrap()
        else:
            timed_out += 1
            deadline = time.time() + 3
            t = None
            while time.time() < deadline:
                gc.collect()
                try:
                    t = p.unpartition()
                    break
                except ct.UseAfterMoveError:
                    time.sleep(0.02)
            if t is None:
                bad.append(f"round {i}: timed out and p never came back")
                break
        p = t.partition(16)
    return {"bad": bad, "both outcomes seen": delivered > 0 and timed_out > 0,
            "counts": f"{delivered} delivered, {timed_out} timed out"}


def judge(c, py):
    for name, o in (("C", c), ("Python", py)):
        if o["bad"]:
            return "BROKEN", f"{name} path: {o['bad']}"
    return "HELD", f"every round delivered xor rolled back (C: {c['counts']}; Py: {py['counts']})"


differential(scenario, judge, ignore=("counts", "both outcomes seen"))
