"""Class 4, unchecked ct.launch on the CPU backend (NumPy; --triton: Triton's interpreter). One thread
re-points the input x with set_ between A (all 1.0), B (all 2.0) and a stride-2 view of C (all 3.0); the main
thread launches ucopy(x, z). Each z must be all 1.0, all 2.0 or all 3.0: never a mix, never foreign memory,
never a crash or a raw error.
# BACKENDS: cpu triton"""
from _r8 import *
import time

N = N_MUT
A = torch.full((N,), 1.0)
B = torch.full((N,), 2.0)
C = torch.full((2 * N,), 3.0)
x = torch.full((N,), 1.0)
stop = threading.Event()


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


th = threading.Thread(target=flipper, daemon=True)
th.start()
t_end = time.time() + 6
seen, problems, n = {}, [], 0
while time.time() < t_end:
    z = torch.full((N,), POISON)
    try:
        ct.launch(None, (N // 16,), ucopy, (x, z, 16))
        vals = tuple(sorted(set(z.tolist())))
        key = vals if len(vals) == 1 else f"mixed({len(vals)} values)"
        seen[key] = seen.get(key, 0) + 1
        if vals not in ((1.0,), (2.0,), (3.0,)):
            problems.append(f"launch {n}: {vals[:6]}")
    except Exception as e:  # noqa
        k = err(e, 50)
        seen[k] = seen.get(k, 0) + 1
        if not is_st(e):
            problems.append(f"launch {n}: {err(e)}")
    n += 1
stop.set()
th.join()
print(f"{n} launches; outcomes {seen}")
if problems:
    broke(f"{len(problems)} of {n} launches: " + "; ".join(problems[:3]))
held(f"{n} unchecked launches each read one whole state")
