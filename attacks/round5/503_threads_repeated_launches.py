"""Promise (safety.md G4/G9): "two threads can never both take one value"; "Any host thread may
launch, sync or read at any time"; G6: while a Shared lives nothing writes its memory; G8 "The
common case in C": the C twin "moves ownership under OWNERSHIP exactly as LaunchOp._take does".

Attack, with the C twin on and off: (A) 8 threads, each repeating `z_i = z_i * 0.5 + s` 150 times
on its own partition, all reading one Shared `s` (every repeat is the C twin's case); every final
z_i must equal the sequential float32 reference, and `s.try_unwrap()` must succeed afterwards
(no hold leaked). (B) 8 threads hammering ONE partition object and one Shared: each takes the
partition by launching `z += 1` (refusals must be safetile UseAfterMoveError, no other outcome);
the final value must equal the number of launches that ran (no lost or doubled ownership).
(C) 6 threads repeat launches reading the current Shared version while one thread repeatedly
unwraps it (when no launch holds it), rewrites it to the next version with a launch, and re-shares
it: every launch result must be one whole version (never a mix, never a version being written),
refusals only safetile errors.
"""
from _r5 import *

import threading
import time


def scenario(rec):
    @ct.entry
    def axpy(z: ct.Mut[ct.f32, "B"], x: ct.Ref[ct.f32, -1]):
        z.store(ct.load(z) * 0.5 + ct.load_tile_like(x, z) if False else z.load() * 0.5 + ct.load_tile_like(x, z))

    @ct.entry
    def inc(z: ct.Mut[ct.f32, "B"], x: ct.Ref[ct.f32, -1]):
        z.store(z.load() + 1.0 + ct.load_tile_like(x, z) * 0.0)

    @ct.entry
    def copy(z: ct.Mut[ct.f32, "B"], x: ct.Ref[ct.f32, -1]):
        z.store(ct.load_tile_like(x, z))

    @ct.entry
    def setv(z: ct.Mut[ct.f32, "B"], v: ct.f32):
        z.store(ct.full((B,), 1.0, ct.float32) * v)

    N = 256
    rng = np.random.default_rng(1)
    sa = rng.standard_normal(N).astype(np.float32)
    s = ct.from_dlpack(sa.copy()).shared()
    errs = []

    # (A)
    T, R = 8, 150
    inits = [rng.standard_normal(N).astype(np.float32) for _ in range(T)]
    bufs = [a.copy() for a in inits]
    parts = [ct.from_dlpack(b).partition(64) for b in bufs]
    barrier = threading.Barrier(T)

    def worker_a(i):
        try:
            barrier.wait()
            z = parts[i]
            for _ in range(R):
                z, _s = axpy(z, s).sync()
                if _s is not s:
                    errs.append("A: Shared came back as another object")
            parts[i] = z
        except BaseException as e:  # noqa: BLE001
            errs.append("A: " + exc_str(e))
    ths = [threading.Thread(target=worker_a, args=(i,)) for i in range(T)]
    [t.start() for t in ths]
    [t.join() for t in ths]
    wrong = 0
    for i in range(T):
        ref = inits[i].copy()
        for _ in range(R):
            ref = (ref * np.float32(0.5) + sa).astype(np.float32)
        if not np.allclose(bufs[i], ref, rtol=1e-5, atol=1e-5):
            wrong += 1
    rec("A wrong results", wrong)
    rec("A errors", errs[:3])
    try:
        t = s.try_unwrap()
        rec("A try_unwrap afterwards", "ok" if isinstance(t, ct.Tensor) else repr(t))
        s = t.shared()
    except BaseException as e:  # noqa: BLE001
        rec("A try_unwrap afterwards", exc_str(e))
        return

    # (B)
    errs.clear()
    zb = np.zeros(64, np.float32)
    box = [ct.from_dlpack(zb).partition(64)]
    ran = [0] * T
    refused = [0] * T
    other = []
    stop = threading.Event()

    def worker_b(i):
        barrier.wait()
        for _ in range(300):
            p = box[0]
            try:
                op = inc(p, s)
            except ct.UseAfterMoveError:
                refused[i] += 1
                continue
            except BaseException as e:  # noqa: BLE001
                other.append("B build: " + exc_str(e))
                continue
            try:
                p2, _ = op.sync()
                ran[i] += 1
                if p2 is not p:
                    other.append("B: partition came back as another object")
            except BaseException as e:  # noqa: BLE001
                other.append("B run: " + exc_str(e))
    ths = [threading.Thread(target=worker_b, args=(i,)) for i in range(T)]
    [t.start() for t in ths]
    [t.join() for t in ths]
    total = sum(ran)
    rec("B final == launches that ran", bool(zb[0] == total and np.all(zb == zb[0])))
    rec("B detail", f"ran {total} refused {sum(refused)} final {float(zb[0])}" if zb[0] != total else "")
    rec("B other outcomes", other[:3])
    rec("B partition usable afterwards", repr(box[0]))

    # (B2) the same with `then` chains of 10 (values given back inside a chain are lent to it;
    # a thread grabbing the partition object meanwhile must be refused)
    zb2 = np.zeros(64, np.float32)
    box2 = [ct.from_dlpack(zb2).partition(64)]
    chains = [0] * T
    other2 = []

    def worker_b2(i):
        barrier.wait()
        for _ in range(60):
            p = box2[0]
            try:
                op = inc(p, s)
            except ct.UseAfterMoveError:
                continue
            except BaseException as e:  # noqa: BLE001
                other2.append("B2 build: " + exc_str(e))
                continue
            for _ in range(9):
                op = op.then(lambda v: inc(v[0], v[1]))
            try:
                op.sync()
                chains[i] += 1
            except BaseException as e:  # noqa: BLE001
                other2.append("B2 run: " + exc_str(e))
    ths = [threading.Thread(target=worker_b2, args=(i,)) for i in range(T)]
    [t.start() for t in ths]
    [t.join() for t in ths]
    rec("B2 final == 10 x chains that ran", bool(zb2[0] == 10 * sum(chains) and np.all(zb2 == zb2[0])))
    rec("B2 detail", f"chains {sum(chains)} final {float(zb2[0])}")
    rec("B2 other outcomes", other2[:3])

    # (C)
    other = []
    p0 = s.try_unwrap().partition(64)
    (p0, _v) = setv(p0, 0.0).sync()
    cur = [p0.unpartition().shared()]
    stop.clear()
    seen = []
    K = 6

    def reader(i):
        outb = np.zeros(N, np.float32)
        z = ct.from_dlpack(outb).partition(64)
        while not stop.is_set():
            sh = cur[0]
            try:
                z, _ = copy(z, sh).sync()
            except (ct.OwnershipError, ct.UseAfterMoveError):
                continue
            except BaseException as e:  # noqa: BLE001
                other.append("C read: " + exc_str(e))
                continue
            if not np.all(outb == outb[0]):
                other.append(f"C: torn version {np.unique(outb)[:5]}")
            seen.append(float(outb[0]))
            time.sleep(0.002 * (i + 1))

    def writer():
        for v in range(1, 41):
            for _ in range(4000):
                try:
                    t = cur[0].try_unwrap()
                    break
                except BaseException:  # noqa: BLE001
                    time.sleep(0.0005)
                    continue
            else:
                other.append("C: never unwrapped")
                return
            p = t.partition(64)
            for _ in range(3):
                (p, _v) = setv(p, float(v)).sync()
            cur[0] = p.unpartition().shared()
    rs = [threading.Thread(target=reader, args=(i,)) for i in range(K)]
    w = threading.Thread(target=writer)
    [t.start() for t in rs]
    w.start()
    w.join()
    stop.set()
    [t.join() for t in rs]
    rec("C other outcomes", other[:3])
    rec("C reads were whole versions 0..40", bool(seen) and all(float(v).is_integer() and 0 <= v <= 40 for v in seen))
    rec("C reads", len(seen) > 0)
    rec("C versions seen", len(set(seen)))


def check(log):
    d = dict((k, v) for k, v in log)
    bad = []
    if "SCENARIO-RAISED" in d:
        bad.append("scenario raised " + d["SCENARIO-RAISED"][:300])
    if d.get("A wrong results"):
        bad.append(f"A: {d['A wrong results']} of 8 threads got a wrong result")
    if d.get("A errors"):
        bad.append(f"A: {d['A errors']}")
    if d.get("A try_unwrap afterwards") != "ok":
        bad.append(f"A: try_unwrap afterwards: {d.get('A try_unwrap afterwards')}")
    if d.get("B final == launches that ran") is not True:
        bad.append(f"B: {d.get('B detail')}")
    if d.get("B2 final == 10 x chains that ran") is not True:
        bad.append(f"B2: {d.get('B2 detail')}")
    if d.get("B2 other outcomes"):
        bad.append(f"B2: {d['B2 other outcomes']}")
    if d.get("B other outcomes"):
        bad.append(f"B: {d['B other outcomes']}")
    if d.get("C reads were whole versions 0..40") is not True:
        bad.append("C: a read saw something other than a whole version")
    if d.get("C other outcomes"):
        bad.append(f"C: {d['C other outcomes']}")
    return bad


def main():
    problems, logs = each_mode(__file__, scenario, check, "threads")
    if problems:
        broken("; ".join(problems[:4]))
    held("threads: no lost/doubled ownership, results equal the sequential reference, whole versions only; "
         + str({k: dict(v).get('C versions seen') for k, v in logs.items()}) + " versions seen by readers")


run_guarded(main, "503")
