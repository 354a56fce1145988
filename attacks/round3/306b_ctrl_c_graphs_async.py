"""306 with a real Ctrl-C: 301b's fuzz over graph capture, replay and close, and `asyncio.run` of an
awaited chain. Promise (safety.md G4, "Ctrl-C"): wherever a Ctrl-C lands, the interrupted call fails
with KeyboardInterrupt (nothing else), nothing hangs, and once everything but a view `v` is dropped
the memory is free again (readable, partitionable, launchable, shareable). With safetile's handler
installed, asyncio.run keeps Python's handler as it finds it (safetile's), so a Ctrl-C inside it
raises KeyboardInterrupt where the event loop is; asyncio.run then cancels the awaiting task.

Fuzz: SIGINT to the main thread (signal.pthread_kill) from a timer thread at a random moment."""
import asyncio

from _ctrl_c import *
from _ctrl_c import fuzz_lives, late_is_broken


async def chain(p, xs):
    return await fill(p, xs).then(lambda r: fill(r[0], r[1]))


def life(t, xs):
    p = t.partition(256)
    g = fill(p, xs).graph()
    p, x = g.launch()
    g.launch()
    g.close()
    p, x = asyncio.run(chain(p, xs))
    t = p.unpartition()
    t.to_numpy()
    return t


def body():
    fuzz_lives(life, "graph/async life cycles", after_gc=0.02)  # an abandoned await's job ends on its stream worker


watch_main_thread(18)
run_guarded(late_is_broken(body), "Ctrl-C anywhere (graphs, asyncio)")
