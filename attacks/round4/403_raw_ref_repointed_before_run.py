"""Promise (safety.md G3): "The memory a launch writes overlaps no other argument of the
launch"; G8: "raw arrays are read in full on every launch"; safe.md: "Before it moves
anything, it checks ... 5. aliasing: a mutable argument may not overlap any other argument in
memory"; G5: "While a launch ... runs, no other launch ... touches the memory it writes".
(Round 2's 214 closed this for graph replays: "a replay is refused ... when any of them
changed in place since". This is the same change made between a launch's build and its run.)

Attack: build op = fill(z, a) with a raw NumPy (or torch) Ref a disjoint from z, then, before
op.sync(), re-point a in place onto z's memory (NumPy: a.strides = (-4,) on an ndarray made
with buffer=/offset=; torch: a.set_(storage, 0, ...)). A fresh launch with those arguments is
refused (AliasError); the built one runs, reading the re-pointed array, i.e. a Ref overlapping
the Mut. Second part: the same trick makes a launch read the output of another launch while
that one is still running (the in-flight registry was consulted with the stale extent): a slow
launch A writes base[:N] in a thread; B = fill(zB, a) is built with a over base[N:], a is
re-pointed into base[:N], B.sync() returns before A ends, having read A's output memory.
Active backend (CPU; Triton interpreter with torch).
"""
# BACKENDS: cpu triton
from _r4 import *

import threading
import time

import torch

fails = []
notes = []


def np_ref(base, off_elems, n):
    return np.ndarray(shape=(n,), dtype=np.float32, buffer=base, offset=4 * off_elems)


# ---- part 1: Ref re-pointed onto the Mut between build and run
if BACKEND == "cpu":
    base = np.zeros(128, np.float32)
    base[64:] = np.arange(64) + 100
    a = np_ref(base, 64, 64)
    z = ct.from_dlpack(base[:64]).partition(64)
    op = fill(z, a)
    a.strides = (-4,)                       # now a = base[64], base[63], ..., base[1]: overlaps z
    fresh = ct.from_dlpack(np.zeros(64, np.float32)[:]) if False else None
    try:
        res = op.sync()
        if base[1] == 1.0 and base[0] == 101.0:
            fails.append("NumPy: op = fill(z, a); a.strides = (-4,) (a now overlaps z); op.sync() ran, "
                         f"reading the re-pointed a (z[:3] = {base[:3]}); a fresh fill(z, a) is an AliasError")
        else:
            notes.append(f"NumPy: ran with the old layout ({base[:3]})")
    except Exception as e:  # noqa: BLE001
        if not is_safetile_error(e):
            fails.append(f"NumPy: non-safetile {type(e).__name__}: {e}")
        else:
            notes.append(f"NumPy: refused at run ({type(e).__name__})")
tb = torch.zeros(128)
tb[64:] = torch.arange(64.0) + 100
ta = tb[64:]
z = ct.from_dlpack(tb[:64]).partition(64)
op = fill(z, ta)
ta.set_(tb.untyped_storage(), 0, (64,), (1,))   # now ta = tb[0:64] = z's memory
try:
    op.sync()
    if float(tb[63]) == 1.0:
        fails.append("torch: op = fill(z, t); t.set_(z's storage, 0, ...); op.sync() ran with the Ref = the Mut's "
                     "memory")
    else:
        notes.append(f"torch: ran with the old layout ({tb[60:64]})")
except Exception as e:  # noqa: BLE001
    if not is_safetile_error(e):
        fails.append(f"torch: non-safetile {type(e).__name__}: {e}")
    else:
        notes.append(f"torch: refused at run ({type(e).__name__})")

# ---- part 2: a launch reading another launch's output while it runs (CPU timing)
if BACKEND == "cpu":
    SRC = '''
@ct.entry
def spin_write(z: ct.Mut[ct.f32, "B"], v: ct.f32, reps: ct.Constant[int]):
    acc = ct.full((B,), 1.0, ct.float32)
    for i in range(reps):
        acc = acc * 1.0
    z.store(acc * 0.0 + v)
'''
    K = kernel_from_source(SRC, tag="r4_403")
    N = 4096
    base = np.zeros(2 * N, np.float32)
    zA = ct.from_dlpack(base[:N]).partition(64)
    a = np_ref(base, N, N)
    opB = fill(ct.zeros(N).sync().partition(64), a)
    box = {}

    def run_a():
        K["spin_write"](zA, 7.0, 20000).sync()
        box["a_end"] = time.perf_counter()
    th = threading.Thread(target=run_a, daemon=True)
    th.start()
    time.sleep(0.04)
    a.strides = (-4,)                        # a = base[N], base[N-1], ..., base[1]: A's output
    zB, _ = opB.sync()
    b_end = time.perf_counter()
    th.join(20)
    seen = zB.unpartition().to_numpy() - 1.0
    if b_end < box["a_end"] and np.all(seen[1:] == 0.0):
        fails.append(f"B read A's output memory while A ran (B ended {box['a_end'] - b_end:.3f}s before A; read the "
                     "old zeros A was overwriting with 7)")
    else:
        notes.append(f"part 2: B after A ({b_end - box['a_end']:+.3f}s), read {np.unique(seen[1:])[:3]}")
print("; ".join(notes))
if fails:
    broken(f"[{BACKEND}] " + "; ".join(fails))
held(f"[{BACKEND}] raw Refs changed after the build are re-checked at run")
