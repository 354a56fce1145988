"""Promise (safe.md): arguments 'belong to the running terminal until it ends. Code outside
it (another coroutine while an await is unfinished ...) gets UseAfterMoveError ("in use by
an unfinished await of ...")'; 'the terminal's result hands them back for good'.
Coroutine A awaits a slow launch on p. Coroutine B runs one step that lasts past the end
of the device work (any blocking call: here a sync of its own work) and, in the same step,
tries to build a launch on p — before A has been resumed with its result. B must get
UseAfterMoveError; the p A's await returns must be A's."""
import asyncio
import time

from _common import *

N = 1 << 20


@ct.entry
def slow(z: ct.Mut[ct.f32, "B"], x: ct.Ref[ct.f32, -1], v: ct.f32):
    acc = ct.load_tile_like(x, z)
    for i in range(150):
        acc = acc * 0.5 + v
    z.store(acc)


p = ct.zeros(N).sync().partition(4096)
x = ct.zeros(N).sync()
p, x, _ = slow(p, x, 1.0).sync()
q = ct.zeros(N).sync().partition(4096)
y = ct.zeros(N).sync()
q, y, _ = slow(q, y, 1.0).sync()
state = {}
dummy = ct.zeros(8).sync()


async def a():
    state["result"] = await slow(p, x, 3.0)
    state["a_resumed"] = time.time()


async def b():
    global q, y
    await asyncio.sleep(0.01)
    q, y, _ = slow(q, y, 2.0).then(lambda v: slow(v[0], v[1], 2.0)).sync()   # B's own (blocking) work
    try:
        state["stolen"] = slow(p, dummy, 1.0)          # A has not been resumed yet
    except ct.UseAfterMoveError:
        pass


async def main():
    await asyncio.gather(a(), b())


asyncio.run(main())
if "stolen" in state:
    mine = state["result"][0]
    try:
        mine.to_numpy()
        usable = "still usable by A"
    except Exception as e:  # noqa: BLE001
        usable = f"unusable by A ({type(e).__name__}: moved into B's launch)"
    state["stolen"].cancel()
    broken(f"coroutine B built a launch on p after A's device work ended but before A's await returned; "
           f"the p that A's await returned is {usable}")
held("values stay with the awaiting coroutine until it is resumed")
