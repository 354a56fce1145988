"""Promise (safety.md G5): "While a launch (or a graph replay) runs, no other launch, replay or
host read touches the memory it writes, and no write touches the memory it reads."
safe.md: "a launch claiming memory a host read is copying waits for the copy"; G6 Outside: "An
unchecked launch waits for safe work in flight on its tensors' memory when it takes them".

Attack (write-after-read, the direction earlier rounds did not time): launch A reads its Ref x
twice, at its start and after a long spin, and stores the difference (all zeros unless x
changed while A ran). While A spins (another thread), the main thread writes x's memory through
a view taken before A was built: (a) a safe launch on a partition of the view, (b) ct.memcpy
into the view, (c) an unchecked ct.launch on the view, (d) a CPU graph replay that writes the
view, (e) a launch writing x through a dtype-reinterpreting (u8-sized) view, (f) x given as a
Shared to A while a view of another wrapper is written. Also the opposite direction: A writes z
while (g) ct.memcpy reads a view of z as its source, (h) t.dup() of a view of z, (i) a launch
reads a view of z as its Ref. Any nonzero output of A, or a copy that saw A half done, is a
race.
"""
from _r4 import *

import threading
import time

SRC = '''
@ct.entry
def spin_diff(z: ct.Mut[ct.f32, "B"], x: ct.Ref[ct.f32, -1], reps: ct.Constant[int]):
    a = ct.load_tile_like(x, z)
    acc = a
    for i in range(reps):
        acc = acc * 1.0
    b = ct.load_tile_like(x, z)
    z.store(b - a + acc * 0.0)

@ct.entry
def spin_write(z: ct.Mut[ct.f32, "B"], v: ct.f32, reps: ct.Constant[int]):
    acc = ct.full((B,), 1.0, ct.float32)
    for i in range(reps):
        acc = acc * 1.0
    z.store(acc * 0.0 + v)

@ct.entry
def setv(z: ct.Mut[ct.f32, "B"], v: ct.f32):
    z.store(ct.full((B,), 1.0, ct.float32) * v)

@ct.entry
def setu(z: ct.Mut[ct.i32, "B"], v: ct.i32):
    z.store(ct.full((B,), 1, ct.int32) * v)

@ct.kernel
def uwrite(a, v: float):
    ct.store(a, index=(ct.bid(0),), tile=ct.full((64,), 1.0, ct.float32) * v)
'''
K = kernel_from_source(SRC, tag="r4_401")
N = 4096
REPS = 12000
fails = []


def run_bg(fn):
    box = {}

    def body():
        try:
            box["r"] = fn()
        except BaseException as e:  # noqa: BLE001
            box["e"] = e
        box["t"] = time.perf_counter()
    th = threading.Thread(target=body, daemon=True)
    th.start()
    return th, box


def write_while_reading(name, writer, shared=False):
    buf = np.ones(N, np.float32)
    xt = ct.from_dlpack(buf)
    view = xt[:]                      # taken before A is built
    x = xt.shared() if shared else xt
    z = ct.zeros(N).sync().partition(64)
    th, box = run_bg(lambda: K["spin_diff"](z, x, REPS).sync())
    time.sleep(0.04)
    try:
        writer(view)
    except Exception as e:  # noqa: BLE001
        if not is_safetile_error(e):
            fails.append(f"{name}: writer raised non-safetile {type(e).__name__}: {str(e)[:100]}")
        else:
            print(f"{name}: writer refused ({type(e).__name__}: {str(e)[:90]})")
    t_w = time.perf_counter()
    th.join(20)
    if "e" in box:
        fails.append(f"{name}: A failed {type(box['e']).__name__}: {box['e']}")
        return
    zz = box["r"][0].unpartition().to_numpy()
    changed = int(np.count_nonzero(zz))
    if changed:
        fails.append(f"{name}: launch A saw its Ref x change while it ran ({changed} elements; writer done "
                     f"{box['t'] - t_w:.3f}s before A)")
    else:
        print(f"{name}: ordered (writer done {t_w - box['t']:+.3f}s after A)")


def w_launch(view):
    K["setv"](view.partition(64), 5.0).sync()


def w_memcpy(view):
    ct.memcpy(view, ct.full(N, 5.0).sync()).sync()


def w_unchecked(view):
    ct.launch(None, (N // 64, 1, 1), K["uwrite"], (view, 5.0))


write_while_reading("(a) safe launch on a view", w_launch)
write_while_reading("(b) memcpy into a view", w_memcpy)
write_while_reading("(c) unchecked launch on a view", w_unchecked)

# (d) graph replay: capture on a view first, then A, then replay while A runs
buf = np.ones(N, np.float32)
xt = ct.from_dlpack(buf)
gview = xt[:]
g = K["setv"](gview.partition(64), 5.0).graph()
z = ct.zeros(N).sync().partition(64)
th, box = run_bg(lambda: K["spin_diff"](z, xt, REPS).sync())
time.sleep(0.04)
g.launch()
th.join(20)
if "e" in box:
    fails.append(f"(d) replay: A failed {type(box['e']).__name__}: {box['e']}")
else:
    c = int(np.count_nonzero(box["r"][0].unpartition().to_numpy()))
    if c:
        fails.append(f"(d) graph replay wrote A's Ref while A ran ({c} elements)")
    else:
        print("(d) graph replay: ordered")
g.close()

# (e) the Ref read through an int32 reinterpretation of the same buffer
buf = np.ones(N, np.float32)
xt = ct.from_dlpack(buf)
iv = ct.from_dlpack(buf.view(np.int32))
z = ct.zeros(N).sync().partition(64)
th, box = run_bg(lambda: K["spin_diff"](z, xt, REPS).sync())
time.sleep(0.04)
try:
    K["setu"](iv.partition(64), 7).sync()
except Exception as e:  # noqa: BLE001
    print("(e) refused", type(e).__name__)
th.join(20)
c = int(np.count_nonzero(box["r"][0].unpartition().to_numpy())) if "r" in box else -1
if c:
    fails.append(f"(e) an i32 view's launch wrote A's f32 Ref while A ran ({c} elements)")
else:
    print("(e) dtype view: ordered")

# (g, h, i) A writes z (slow); a view of z is read meanwhile
for name in ("(g) memcpy from a view of z", "(h) dup of a view of z", "(i) launch reading a view of z",
             "(j) to_numpy of a view of z"):
    zt = ct.zeros(N).sync()
    zview = zt[:]
    th, box = run_bg(lambda: K["spin_write"](zt.partition(64), 3.0, REPS).sync())
    time.sleep(0.04)
    if name.startswith("(g)"):
        dst = ct.zeros(N).sync()
        ct.memcpy(dst, zview).sync()
        seen = dst.to_numpy()
    elif name.startswith("(h)"):
        seen = zview.dup().sync().to_numpy()
    elif name.startswith("(i)"):
        o, _ = fill(ct.zeros(N).sync().partition(64), zview).sync()
        seen = o.unpartition().to_numpy() - 1.0
    else:
        seen = zview.to_numpy()
    th.join(20)
    if not (np.all(seen == 3.0) or np.all(seen == 0.0)):
        fails.append(f"{name}: saw A half done ({np.unique(seen)[:4]})")
    elif np.all(seen == 0.0):
        fails.append(f"{name}: read the old contents while A was writing them (did not wait)")
    else:
        print(f"{name}: waited for A")

if fails:
    broken("; ".join(fails))
held("writes wait for launches reading the memory; reads wait for launches writing it")
