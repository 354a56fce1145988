"""Promise (safety.md G4): 'a launch dropped unrun gives its arguments back with a
LaunchDroppedWarning'; 'Claims end when their holder gives the memory back or is collected';
G9: 'Any host thread may launch, sync or read at any time' (claims: 'a finalizer releasing a
collected holder's claim may run inside any allocation, also under it').

Garbage collection runs finalizers inside *any* allocation, so the give-back of a dropped op,
the claim release of a collected partition/Shared and the LaunchDroppedWarning machinery run
re-entrantly inside ownership transitions, claims, launches and registry updates. Fuzz: with
gc thresholds at 1 (a collection at nearly every allocation), keep making reference cycles
that hold unrun launches, partitions, Shared handles and graphs while doing ordinary work in
2 threads; then check: no hang, no non-safetile error, every value recoverable, every memory
claimable again."""
import gc
import warnings

from _r3 import *


def body():
    warnings.simplefilter("ignore")
    xs = ct.ones(256).sync().shared()
    errors = []
    keep = []

    def garbage(n):
        # cycles: a list holding an unrun op / partition / Shared / graph, and itself
        for i in range(n):
            t = ct.zeros(256).sync()
            k = i % 4
            if k == 0:
                obj = fill(t.partition(64), xs)          # unrun op, dropped in a cycle
            elif k == 1:
                obj = t.partition(64)
            elif k == 2:
                obj = t.shared()
            else:
                obj = fill(t.partition(64), xs).graph()
            cyc = [obj]
            cyc.append(cyc)

    def worker(seed):
        try:
            for i in range(40):
                t = ct.zeros(256).sync()
                v = t[:]
                p = t.partition(64)
                garbage(2)
                p, _ = fill(p, xs).sync()
                t = p.unpartition()
                s = t.shared()
                garbage(1)
                s.to_numpy()
                t = s.try_unwrap()
                keep.append(v)
                if not np.all(t.to_numpy() == 2.0):
                    errors.append(f"wrong value {t.to_numpy()[:3]}")
        except Exception as e:  # noqa: BLE001
            errors.append(f"{type(e).__module__}.{type(e).__name__}: {str(e)[:200]}")

    old = gc.get_threshold()
    gc.set_threshold(1, 1, 1)
    ths = [threading.Thread(target=worker, args=(s,), daemon=True) for s in range(2)]
    for th in ths:
        th.start()
    for th in ths:
        th.join(15)
    gc.set_threshold(*old)
    if any(th.is_alive() for th in ths):
        broken("hang: finalizers run by a collection inside safetile's own critical sections deadlock "
               + "; ".join(errors))
    gc.collect()
    for v in keep:
        try:
            v.partition(64).unpartition().shared()
        except Exception as e:  # noqa: BLE001
            errors.append(f"memory stayed claimed: {type(e).__name__}: {str(e)[:150]}")
            break
    if errors:
        broken("; ".join(errors[:3]))
    held(f"{len(keep)} life cycles under constant collection, no deadlock or leak")


run_guarded(body, "gc finalizers re-entry")
