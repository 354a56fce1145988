"""G2 ("The inputs of a torch_op are read-only for unchecked kernels too: the kernel is compiled with
them read-only and that compiled code is what runs ..., recompiled and checked again when Python state
it read changes"), G9 (any thread at any time). An unchecked @ct.kernel torch_op whose body stores
into its input when the module global WRITE is true, and whose output depends on the global SCALE.
Another thread flips WRITE and SCALE continuously while the main thread calls the op with fresh
inputs (eager, and through torch.compile(backend="aot_eager")). Every call must either be refused
before it runs (TileTypeError) or leave its input unchanged; outputs must be x*1+1 or x*2+1 (never
mixed within one call: a torn compile runs only for the launch that compiled it and must be
consistent with what it read ... here each SCALE read is a single read per compile)."""
from _r7 import *
import torch, time
from safetile.integrations.torch import Out, torch_op

WRITE = False
SCALE = 1.0


@ct.kernel
def kern(x, out, TILE: ct.Constant[int]):
    b = ct.bid(0)
    t = ct.load(x, index=(b,), shape=(TILE,))
    ct.store(out, index=(b,), tile=t * SCALE + 1.0)
    if WRITE:
        ct.store(x, index=(b,), tile=t * 0.0 - 5.0)


op = torch_op("r7flip::k", kern, outputs={"out": Out("x")}, constants={"TILE": 16},
              grid=lambda x: (ct.cdiv(x.shape[0], 16), 1, 1))
stop = threading.Event()


def flipper():
    global WRITE, SCALE
    i = 0
    while not stop.is_set():
        WRITE = (i % 3 == 1)
        SCALE = 1.0 if i % 2 == 0 else 2.0
        i += 1
        time.sleep(0.0003)


th = threading.Thread(target=flipper, daemon=True)
th.start()
bad, refused, ran = [], 0, 0
compiled = torch.compile(lambda x: op(x), backend="aot_eager")
t0 = time.time()
i = 0
while time.time() - t0 < 8 and len(bad) < 3:
    x = torch.full((64,), 2.0)
    try:
        y = op(x) if i % 4 else compiled(x)
        ran += 1
        vals = sorted(set(y.tolist()))
        if vals not in ([3.0], [5.0]):
            bad.append(f"call {i}: output {vals} (expected all 3.0 or all 5.0)")
    except Exception as e:  # noqa
        if type(e).__name__ in ("TileTypeError",) or "TileTypeError" in repr(e):
            refused += 1
        else:
            bad.append(f"call {i}: {err(e, 100)}")
    if not (x == 2.0).all():
        bad.append(f"call {i}: the op WROTE its input: {sorted(set(x.tolist()))}")
    i += 1
stop.set()
th.join(5)
print(f"{i} calls: {ran} ran, {refused} refused")
if bad:
    broken("; ".join(bad))
if ran == 0 or refused == 0:
    inconclusive(f"the flips did not reach both outcomes ({ran} ran, {refused} refused)")
held(f"{ran} calls ran with their input untouched, {refused} refused (TileTypeError) while globals flipped")
