"""G4 ("Failed terminals ... the moves are undone"; "An await whose ... is cancelled or timed out
... leaves one that has started to finish ... the values it gives back are free for everyone when
it ends"). A chain ending in op.shared() (which turns the partition into a Shared handle of its
tensor while the terminal runs) is awaited with a timeout shorter than a slow closure placed
before .shared(). Nobody receives the terminal's value. After the work has ended (and garbage
is collected), the partition must be usable again (its unpartition() returns the tensor,
writable), not moved into a Shared nobody holds. Variants: the timeout fires after .shared() ran;
`ct.value(t).partition(16)` (the op.partition combinator) instead of .shared()."""
from _r6 import *
import asyncio, gc, time


def slow(v):
    time.sleep(0.6)
    return v


def scenario(where):
    base = arr(64)
    p = ct.from_dlpack(base).partition(16)
    if where == "before":
        op = inc(p).map(slow).shared()
    elif where == "after":
        op = inc(p).shared().map(slow)
    else:  # op.partition(shape) combinator on a tensor the program holds
        t0 = p.unpartition()
        op = ct.value(t0).partition(16).map(slow)

    async def go():
        return await asyncio.wait_for(op, 0.2)
    try:
        asyncio.run(go())
        return "await finished (no timeout?)"
    except asyncio.TimeoutError:
        pass
    except Exception as e:  # noqa
        return f"await raised {type(e).__name__}"
    del op
    time.sleep(1.5)
    gc.collect()
    try:
        t = p.unpartition() if where != "partition combinator" else t0
        if where == "partition combinator":
            t.to_numpy()
    except Exception as e:  # noqa
        msg = f"BAD value unusable: {type(e).__name__}: {str(e)[:110]}"
        try:  # is the memory still frozen by a Shared nobody holds?
            q = ct.from_dlpack(base).partition(16)
            msg += "; a fresh wrapper of the memory can be partitioned (Shared gone, tensor lost)"
        except Exception as e2:  # noqa
            msg += f"; the memory stays frozen: a fresh wrapper is refused ({type(e2).__name__}: {str(e2)[:120]})"
        return msg
    try:
        q = t.partition(16)
        (q,) = inc(q).sync()
        v = q.unpartition().to_numpy()[0]
    except Exception as e:  # noqa
        return f"BAD tensor not writable again: {type(e).__name__}: {str(e)[:150]}"
    return f"ok ({v})"


def control():  # the documented rollback: the same chain failing in sync() gives p back
    p = ct.from_dlpack(arr(64)).partition(16)

    def boom(v):
        raise ValueError("x")
    try:
        inc(p).shared().map(boom).sync()
    except ValueError:
        pass
    try:
        p.unpartition()
        return "ok (rolled back)"
    except Exception as e:  # noqa
        return f"not rolled back: {type(e).__name__}"


out = {"control: failing sync": control()}
out.update({w: scenario(w) for w in ("before", "after", "partition combinator")})
if any(v.startswith("BAD") for v in out.values()):
    broken(str(out))
held(str(out))
