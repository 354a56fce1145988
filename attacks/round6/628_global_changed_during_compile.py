"""semantics.md "Python values read at compile time" (a changed global drops the compiled code; "before
a launch reuses compiled code it checks that each still holds the same value") and G9 (threads). A
global that changes *while the kernel compiles* — deterministically, from a function run by
ct.static_eval between two reads of it, and racily, from another thread flipping it during
compilation. After it settles, every launch must compute what a fresh kernel computes for the
global's current value (no compiled code that mixes an old read with the current value survives)."""
from _r6 import *
import threading

SCALE = 2.0


FLIPS = [1]


def _flip():          # changes SCALE once, during the first compilation only
    global SCALE
    if FLIPS[0]:
        FLIPS[0] = 0
        SCALE = 3.0
    return 0


@ct.entry
def k(z: ct.Mut[ct.f32, "B"]):
    a = ct.full((B,), 1.0, ct.float32) * SCALE
    ct.static_eval(_flip())
    b = ct.full((B,), 10.0, ct.float32) * SCALE
    z.store(a + b)


def run(kern):
    z = ct.from_dlpack(arr(16)).partition(16)
    (z,) = kern(z).sync()
    return float(z.unpartition().to_numpy()[0])


res = {"first launch (a read 2.0, b read 3.0)": run(k)}
SCALE = 2.0            # back to the value the first read saw
res["launches"] = [run(k) for _ in range(2)]


@ct.entry
def fresh(z: ct.Mut[ct.f32, "B"]):
    a = ct.full((B,), 1.0, ct.float32) * SCALE
    ct.static_eval(_flip())
    b = ct.full((B,), 10.0, ct.float32) * SCALE
    z.store(a + b)


res["fresh"] = run(fresh)
bad = []
if res["launches"][-1] != res["fresh"]:
    bad.append(f"deterministic: with SCALE back at 2.0 launches give {res['launches']}, a fresh kernel {res['fresh']} (the code mixing 2.0 and 3.0 is reused)")

# racy: another thread flips G between 1.0 and 2.0 while kernels are defined and compiled
G = 1.0
stop = [False]


def flipper():
    global G
    while not stop[0]:
        G = 2.0 if G == 1.0 else 1.0


def mk():
    @ct.entry
    def kk(z: ct.Mut[ct.f32, "B"]):
        a = ct.full((B,), 1.0, ct.float32) * G
        for _ in ct.static_iter(range(20)):
            a = a + 0.0
        b = ct.full((B,), 10.0, ct.float32) * G
        z.store(a + b)
    return kk


th = threading.Thread(target=flipper, daemon=True)
th.start()
mixed = 0
vals = []
kerns = [mk() for _ in range(30)]
for kk in kerns:
    run(kk)
stop[0] = True
th.join(2)
G = 1.0
for kk in kerns:
    v = run(kk)
    if v != 11.0:
        mixed += 1
        vals.append(v)
res["racy: kernels wrong after the global settled at 1.0"] = mixed
if mixed:
    bad.append(f"racy: {mixed} of 30 kernels compiled while G flipped still compute {vals} after G settled at 1.0 (11.0 expected; 12.0 or 21.0 mix an old read with a new one)")
if bad:
    broken("; ".join(bad) + f" || {res}")
held(str(res))
