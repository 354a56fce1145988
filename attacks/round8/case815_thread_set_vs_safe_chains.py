"""Class 4. One thread re-points a raw torch tensor x (set_) between two storages A (all 1.0) and B (all 2.0)
of the same shape/dtype in a tight loop, also flipping as_strided_ onto a third, longer storage C (all 3.0,
stride 2), while the main thread runs safe launches and chains (C twin hot) reading x. Every launch's output
must be one consistent state: all 1.0, all 2.0 or all 3.0 (never a mix within one launch), never a crash or a
raw error.
# BACKENDS: cpu triton"""
from _r8 import *

ensure_native()
N = N_MUT
A = torch.full((N,), 1.0)
B = torch.full((N,), 2.0)
C = torch.full((2 * N,), 3.0)
x = torch.full((N,), 1.0)
stop = threading.Event()
flips = [0]


def flipper():
    i = 0
    while not stop.is_set():
        m = i % 3
        if m == 0:
            x.set_(A)
        elif m == 1:
            x.set_(B)
        else:
            x.set_(C.untyped_storage(), 0, (N,), (2,))
        i += 1
        flips[0] = i


th = threading.Thread(target=flipper, daemon=True)
th.start()
seen, problems = {}, []
t_end = time.time() + 8 if (time := __import__("time")) else 0
n = 0
while time.time() < t_end:
    z = poisoned(N).partition(16)
    try:
        if n % 2:
            (z, _) = copyk(z, x).sync()
        else:
            (z, _) = copyk(z, x).then(lambda v: copyk(v[0], x)).then(lambda v: copyk(v[0], x)).sync()
        out = z.unpartition().to_numpy()
        vals = tuple(sorted(set(out.tolist())))
        key = vals if len(vals) == 1 else f"mixed({len(vals)} values)"
        seen[key] = seen.get(key, 0) + 1
        if vals not in ((1.0,), (2.0,), (3.0,)):
            problems.append(f"launch {n} read {len(vals)} distinct values, e.g. {vals[:3]}")
    except Exception as e:  # noqa
        k = err(e, 60)
        seen[k] = seen.get(k, 0) + 1
        if not is_st(e):
            problems.append(f"launch {n}: {err(e)}")
    n += 1
stop.set()
th.join()
print(f"{n} launches, {flips[0]} re-pointings; outcomes: {seen}")
if problems:
    broke(f"{len(problems)} of {n} launches read neither state (torn alias past its storage): " + "; ".join(problems[:2]))
held(f"{n} launches under {flips[0]} concurrent re-pointings: each read one whole state")
