"""Promise (safety.md G8): "the latest plan and its key are also kept as one pair
(KernelCaches.last), and a launch whose key equals it (compared fact by fact, by identity) reuses
that plan"; "The common case in C": the C twin reuses `KernelCaches.last` only when every key part
is that plan's; G9: caches are safe under threads ("the first result wins").

Attack, with the C twin on and off: 6 threads launch ONE kernel with argument sets whose plans
differ — partition shapes 16/32/64/128 (distinct specialisations: the generic B differs),
different tensor lengths, scalars that differ, a partition-prefix 2-D case through a second
kernel sharing nothing — so `last` flips between plans thousands of times while other threads
read it. Every launch's output must equal its own NumPy reference (a launch run with another
thread's plan would use the wrong tile size, grid or scalar), and nothing may be written outside
each thread's buffer (guard regions around every output).
"""
from _r5 import *

import threading


def scenario(rec):
    @ct.entry
    def k(z: ct.Mut[ct.f32, "B"], x: ct.Ref[ct.f32, -1], a: ct.f32):
        z.store(ct.load_tile_like(x, z) * a + ct.full((B,), 1.0, ct.float32) * B)

    configs = [(16, 64, 1.0), (32, 64, 2.0), (64, 192, 3.0), (128, 256, 4.0), (16, 48, 5.0), (32, 96, 1.0)]
    G = 64
    errs = []
    wrong = []
    counts = [0] * len(configs)
    barrier = threading.Barrier(len(configs))

    def worker(i):
        B, n, a = configs[i]
        rng = np.random.default_rng(i)
        xa = rng.standard_normal(n).astype(np.float32)
        full = np.full(n + 2 * G, -7.0, np.float32)
        zmem = full[G:G + n]
        z = ct.from_dlpack(zmem).partition(B)
        x = ct.from_dlpack(xa.copy())
        want = xa * np.float32(a) + np.float32(B)
        barrier.wait()
        try:
            for r in range(250):
                zmem[:] = np.nan
                if r % 5 == 4:
                    op = k(z, x, a)
                    op = op.then(lambda v: k(v[0], v[1], a))
                    z, x, _ = op.sync()
                else:
                    z, x, _ = k(z, x, a).sync()
                counts[i] += 1
                if not np.allclose(zmem, want):
                    wrong.append(f"thread {i} (B={B}, n={n}, a={a}) round {r}: {zmem[:3]} want {want[:3]}")
                    return
                if not (np.all(full[:G] == -7.0) and np.all(full[G + n:] == -7.0)):
                    wrong.append(f"thread {i}: wrote outside its buffer")
                    return
        except BaseException as e:  # noqa: BLE001
            errs.append(f"thread {i}: " + exc_str(e)[:200])
    ths = [threading.Thread(target=worker, args=(i,)) for i in range(len(configs))]
    [t.start() for t in ths]
    [t.join() for t in ths]
    rec("wrong results", wrong[:3])
    rec("errors", errs[:3])
    rec("launch rounds", sum(counts))


def check(log):
    d = dict(log)
    if "SCENARIO-RAISED" in d:
        return [d["SCENARIO-RAISED"][:300]]
    bad = []
    if d["wrong results"]:
        bad.append(f"{d['wrong results']}")
    if d["errors"]:
        bad.append(f"{d['errors']}")
    return bad


def main():
    problems, logs = each_mode(__file__, scenario, check, "plan thrash", timeout=200)
    if problems:
        broken("; ".join(problems[:3]))
    held("6 threads flipping one kernel's latest plan: every launch ran its own plan "
         + str({k: dict(v)["launch rounds"] for k, v in logs.items()}))


run_guarded(main, "514")
