"""G4 / G9 with the C path switched under running code (safety.md: the four hot methods are C method
descriptors while the twin is loaded; "FAST.off() puts the Python methods back"). Two threads run
then-chains (a partition incremented by launches built inside closures, with a raw torch Ref and a
raw NumPy Ref, plus a Shared) while a third thread flips safetile.safe.native.FAST.off() /
FAST.load(build=False) as fast as it can. Every launch must run exactly once (the counters equal the
number of launches), no exception, every value usable at the end, the methods' final kind matching
the last switch, and no thread stuck (deadline joins)."""
from _r7 import *
import torch, time
from safetile.safe.launch import LaunchOp

native.FAST.load(build=True)
if not c_loaded():
    inconclusive("C path could not be loaded")

STEPS = 6


@ct.entry
def acc(z: ct.Mut[ct.f32, "B"], x: ct.Ref[ct.f32, -1], y: ct.Ref[ct.f32, -1]):
    z.store(z.load() + ct.load_tile_like(x, z) + ct.load_tile_like(y, z))
errors = []
done_launches = [0, 0]
stop = threading.Event()


def worker(w):
    a = arr(256)
    p = ct.from_dlpack(a).partition(64)
    rt = torch.ones(256)
    rn = np.zeros(256, np.float32)
    sh = ct.from_dlpack(arr(256)).shared()
    n = 0
    try:
        while not stop.is_set():
            def step(r):
                return acc(r[0], rt, rn)
            op = acc(p, rt, sh)
            for _ in range(STEPS - 1):
                op = op.then(step)
            (p, _, _) = op.then(lambda r: inc(r[0])).sync() + (None, None)
            n += STEPS + 1
    except BaseException as e:  # noqa
        errors.append(f"worker {w}: {err(e, 120)}")
    done_launches[w] = n
    try:
        v = p.unpartition().to_numpy()
        if not (v == v[0]).all():
            errors.append(f"worker {w}: non-uniform result")
        sh.to_numpy()
    except BaseException as e:  # noqa
        errors.append(f"worker {w} end: {err(e, 120)}")
    done_launches[w] = (n, float(v[0]) if 'v' in dir() else None)


flips = [0]


def toggler():
    i = 0
    try:
        while not stop.is_set():
            if i % 2 == 0:
                native.FAST.off()
            else:
                native.FAST.load(build=False)
            i += 1
            time.sleep(0.0005)
    except BaseException as e:  # noqa
        errors.append(f"toggler: {err(e, 120)}")
    flips[0] = i


ts = [threading.Thread(target=worker, args=(w,), daemon=True) for w in range(2)]
tg = threading.Thread(target=toggler, daemon=True)
for t in ts + [tg]:
    t.start()
time.sleep(6)
stop.set()
for t in ts + [tg]:
    t.join(8)
    if t.is_alive():
        broken("a thread is stuck after the switches (deadlock)")
# each chain: STEPS acc launches adding 1 (rt ones; rn, sh zeros) and one inc: +STEPS+1 per chain
for w, r in enumerate(done_launches):
    if not isinstance(r, tuple):
        continue
    n, v = r
    if v != n:
        errors.append(f"worker {w}: {n} launches ran but the counter is {v}")
kinds = type(ct.EntryKernel.__call__).__name__, type(LaunchOp._run).__name__, type(ct.DeviceOp.then).__name__
if errors:
    broken("; ".join(errors[:4]))
print("launches:", done_launches, "flips:", flips[0], "final method kinds:", kinds)
if flips[0] < 20 or not all(isinstance(r, tuple) and r[0] > 0 for r in done_launches):
    inconclusive("too few flips or launches")
held(f"{flips[0]} switches under {sum(r[0] for r in done_launches)} launches: every one ran exactly once")
