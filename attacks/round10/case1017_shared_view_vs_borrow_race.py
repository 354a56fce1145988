"""G6 vs borrows: a view v = t[0:N] is taken before anything. Thread A loops: s = v.shared(); read s twice
with a pause (and launch copyk(w, s) reading it); s.try_unwrap(). Thread B loops: with ct.borrow_mut(t) as b:
p = b.partition(...); launches inc(p) (C-twin repeats, a then-chain, a graph replay), leaves. Thread C loops
exporting v (np.from_dlpack) and dropping the export.
Expect (G6: while a Shared lives nothing writes its memory): every pair of reads within one Shared's life is
equal and uniform, every copyk result equals those reads; the borrow's b.partition() is refused with an
AliasError while s lives and v.shared() refused while a borrow's partition lives; no raw errors, no hangs;
the final t = number of successful increments. Run with the C fast path on and off."""
from _r10 import *
import random

both_ways()
native_loaded()
rnd = random.Random(os.getpid())
N = 256
t = ct.zeros(N).sync()
v = t[0:N]
problems = []
cnt = {"shared": 0, "share_refused": 0, "borrows": 0, "part_refused": 0, "incs": 0, "exports": 0}
lk = threading.Lock()
stop = threading.Event()


def note(e, where):
    if not st_err(e):
        problems.append(f"{where}: raw {err(e)}")


def A():
    while not stop.is_set():
        try:
            s = v.shared()
        except Exception as e:  # noqa
            note(e, "share")
            cnt["share_refused"] += 1
            time.sleep(0.0005)
            continue
        cnt["shared"] += 1
        r1 = s.to_numpy()
        time.sleep(rnd.uniform(0, 0.003))
        w = ct.zeros(N).sync().partition(64)
        w, _ = copyk(w, s).sync()
        r2 = s.to_numpy()
        wc = w.unpartition().to_numpy()
        if not (np.array_equal(r1, r2) and np.array_equal(r1, wc) and (r1 == r1[0]).all()):
            problems.append(f"Shared's memory changed while it lived: {r1[0]} / {wc[0]} / {r2[0]}")
        while True:
            try:
                s.try_unwrap()
                break
            except Exception as e:  # noqa
                note(e, "unwrap")
                time.sleep(0.0005)


def B():
    k = 0
    while not stop.is_set():
        try:
            with ct.borrow_mut(t) as b:
                try:
                    p = b.partition(64)
                except Exception as e:  # noqa
                    note(e, "partition")
                    cnt["part_refused"] += 1
                    continue
                cnt["borrows"] += 1
                k += 1
                mode = k % 3
                if mode == 0:
                    for _ in range(3):
                        p, = inc(p).sync()
                    n = 3
                elif mode == 1:
                    p, = inc(p).then(lambda v_: inc(v_[0])).sync()
                    n = 2
                else:
                    g = inc(p).graph()
                    g.launch()
                    g.launch()
                    g.close()
                    n = 2
                with lk:
                    cnt["incs"] += n
        except Exception as e:  # noqa
            note(e, "borrow")
        time.sleep(0.0003)


def C():
    while not stop.is_set():
        try:
            ex = np.from_dlpack(v)
            cnt["exports"] += 1
            del ex
        except Exception as e:  # noqa
            note(e, "export")
        time.sleep(0.001)


ths = [threading.Thread(target=f, daemon=True) for f in (A, B, C)]
for th in ths:
    th.start()
time.sleep(6)
stop.set()
for th in ths:
    th.join(10)
if any(th.is_alive() for th in ths):
    threads_dump()
    broke("hang")
gc.collect()
fin = t.to_numpy()
if not (fin == cnt["incs"]).all():
    broke(f"t = {np.unique(fin)[:3]} but {cnt['incs']} increments succeeded")
if cnt["shared"] == 0 or cnt["borrows"] == 0:
    inconclusive(f"no contention: {cnt}")
if problems:
    broke("; ".join(sorted(set(problems))[:4]) + f" {cnt}")
held(f"native={NATIVE}: {cnt}")
