"""Promise (DESIGN): compiles are atomic and 'compile state belongs to one compilation,
never to a process-wide global'. 8 threads first-launch 8 different specialisations (and
kernels with compile errors) at once; every result must be right, every error its own."""
import threading

from _common import *

SRC = '''
@ct.entry
def scaled(z: ct.Mut["E", "B"], x: ct.Ref["E", -1], k: ct.Constant[int]):
    z.store(ct.load_tile_like(x, z) * k)

@ct.entry
def broken_k(z: ct.Mut[ct.f32, "B"], x: ct.Ref[ct.f32, -1], k: ct.Constant[int]):
    z.store(ct.full((B * 2,), 1.0, ct.float32))
'''
ks = kernel_from_source(SRC, tag="thrcomp")
bad = []
bar = threading.Barrier(8)
DT = [(ct.float32, np.float32), (ct.float64, np.float64)]


def worker(i):
    bar.wait()
    try:
        for rep in range(3):
            dt, npdt = DT[i % 2]
            if i == 7:
                try:
                    ks["broken_k"](ct.zeros(128).sync().partition(64), ct.ones(128).sync(), i).sync()
                    bad.append("broken kernel compiled")
                except ct.TileError as e:
                    if "broken_k" not in str(e) and "B * 2" not in str(e):
                        bad.append(f"compile error of thread 7 misattributed: {str(e)[:100]}")
                continue
            n = 64 * (i + 1)
            z = ct.zeros(n, dtype=dt).sync().partition(16 << (i % 3))
            x = ct.ones(n, dtype=dt).sync()
            z, x, _ = ks["scaled"](z, x, i + 1).sync()
            a = z.unpartition().to_numpy()
            if a.dtype != npdt or not np.all(a == i + 1):
                bad.append(f"thread {i}: got {np.unique(a)[:4]} dtype {a.dtype}, want {i+1}")
    except Exception as e:  # noqa: BLE001
        bad.append(f"thread {i}: {type(e).__module__}.{type(e).__name__}: {str(e)[:120]}")


ths = [threading.Thread(target=worker, args=(i,)) for i in range(8)]
[th.start() for th in ths]
[th.join(60) for th in ths]
if any(th.is_alive() for th in ths):
    broken("threads hung")
if bad:
    broken("; ".join(bad[:5]))
held("concurrent compiles independent and correct")
