"""Promise (safety.md G4, "Ctrl-C anywhere"): a real Ctrl-C "never leaves memory claimed"; it is
held back over safetile's critical sections and raised where safe; a launch interrupted while it
runs "fails ... and gives back what it took"; a built launch dropped gives its arguments back.
G8 "The common case in C": the C twin moves ownership (lock, take, slot writes, calls back into
Python for the lock, the op reference, the call site) — code the handler cannot see into.

Attack, with the C twin on and off: real SIGINTs (os.kill from a helper thread every 0.1-3 ms) for
~4 s while the main thread runs tight loops of repeated launches (sync, `then` chains of 5, built
then cancelled) over one partition, one tensor and one Shared. After every KeyboardInterrupt the
program recovers only with the documented API (cancel the op it holds, if any, then gc) and
checks that no argument is left moved, lent or held; at the end every argument must be usable,
the Shared must unwrap, and 50 more launches must compute the NumPy reference.
"""
from _r5 import *

import gc
import random
import signal
import threading
import time


def scenario(rec):
    @ct.entry
    def k(z: ct.Mut[ct.f32, "B"], x: ct.Ref[ct.f32, -1], s: ct.Ref[ct.f32, -1], a: ct.f32):
        z.store(ct.load_tile_like(x, z) * a + ct.load_tile_like(s, z))

    N = 256
    xa = np.linspace(-1, 1, N).astype(np.float32)
    sa = np.full(N, 0.25, np.float32)
    zb = np.zeros(N, np.float32)
    z = ct.from_dlpack(zb).partition(64)
    x = ct.from_dlpack(xa.copy())
    s = ct.from_dlpack(sa.copy()).shared()
    for _ in range(5):
        z, x, s, _ = k(z, x, s, 2.0).sync()
    # plain flags, not threading.Event: an interrupt inside Event.set() (stdlib code, not
    # interrupt-safe) would leave its lock taken and hang this harness
    flags = {"stop": False, "pause": True}  # the sender starts paused; the loop below clears it
    rnd = random.Random(7)

    def sender():
        while not flags["stop"]:
            time.sleep(rnd.uniform(0.0001, 0.003))
            if not flags["pause"]:
                os.kill(os.getpid(), signal.SIGINT)
    cnt = {"interrupts": 0, "it": 0}
    stuck = []
    other = []

    def drain():
        """Pause the sender and let every pending interrupt arrive."""
        flags["pause"] = True
        for _ in range(100):
            try:
                time.sleep(0.002)
                time.sleep(0.002)
                return
            except KeyboardInterrupt:
                cnt["interrupts"] += 1

    def one_iteration(box):
        mode = cnt["it"] % 3
        cnt["it"] += 1
        z, x, s = box["z"], box["x"], box["s"]
        if mode == 0:
            box["op"] = k(z, x, s, 2.0)
            box["op"].sync()
        elif mode == 1:
            op = k(z, x, s, 2.0)
            box["op"] = op
            for _ in range(4):
                op = op.then(lambda v: k(v[0], v[1], v[2], 2.0))
            op.sync()
        else:
            box["op"] = k(z, x, s, 2.0)
            box["op"].cancel()
        box["op"] = None

    box = {"z": z, "x": x, "s": s, "op": None}
    th = threading.Thread(target=sender, daemon=True)
    th.start()
    t_end = time.time() + 4.0
    state = {"recover": False, "done": False}

    def recover():
        drain()
        op = box["op"]
        box["op"] = None
        if op is not None:
            try:
                op.cancel()
            except ct.DeviceOpError:
                pass
        del op
        bad = [repr(v) for v in (box["z"], box["x"]) if "moved" in repr(v) or "in use" in repr(v)]
        if bad:
            gc.collect()
            bad = [repr(v) for v in (box["z"], box["x"]) if "moved" in repr(v) or "in use" in repr(v)]
            if bad:
                stuck.append(bad[0][:250])
        state["recover"] = False

    for _attempt in range(100000):  # a KeyboardInterrupt may land anywhere in our own code too
        try:
            while True:
                try:
                    if state["recover"]:
                        recover()
                    if time.time() >= t_end:
                        state["done"] = True
                        break
                    flags["pause"] = False
                    one_iteration(box)
                except KeyboardInterrupt:
                    state["recover"] = True
                    cnt["interrupts"] += 1
                except BaseException as e:  # noqa: BLE001
                    state["recover"] = True
                    if not is_safetile_error(e):
                        other.append(exc_str(e)[:200])
        except KeyboardInterrupt:
            state["recover"] = True
            cnt["interrupts"] += 1
        if state["done"]:
            break
    try:
        recover()
    except KeyboardInterrupt:
        recover()
    flags["pause"] = True
    flags["stop"] = True
    for _ in range(1000):
        try:
            th.join()
            drain()
            signal.signal(signal.SIGINT, signal.SIG_IGN)
            break
        except KeyboardInterrupt:
            cnt["interrupts"] += 1
    z, x, s = box["z"], box["x"], box["s"]
    interrupts, it = cnt["interrupts"], cnt["it"]
    rec("interrupts", interrupts > 10)
    rec("iterations", it > 50)
    rec("arguments left moved/in use after recovery", sorted(set(stuck))[:3])
    rec("non-safetile errors", other[:3])
    ok = True
    try:
        for _ in range(50):
            zb[:] = np.nan
            z, x, s, _ = k(z, x, s, 3.0).sync()
            ok = ok and bool(np.allclose(zb, xa * 3 + 0.25))
        rec("later launches right", ok)
    except BaseException as e:  # noqa: BLE001
        rec("later launches right", exc_str(e)[:300])
    try:
        s.try_unwrap()
        rec("Shared unwraps", True)
    except BaseException as e:  # noqa: BLE001
        rec("Shared unwraps", exc_str(e)[:300])
    print("interrupts", interrupts, "iterations", it, file=sys.stderr)


def check(log):
    d = dict((k, v) for k, v in log)
    bad = []
    if "SCENARIO-RAISED" in d:
        return [d["SCENARIO-RAISED"][:300]]
    if d["arguments left moved/in use after recovery"]:
        bad.append(f"left behind: {d['arguments left moved/in use after recovery']}")
    if d["non-safetile errors"]:
        bad.append(f"non-safetile: {d['non-safetile errors']}")
    if d["later launches right"] is not True:
        bad.append(f"later launches: {d['later launches right']}")
    if d["Shared unwraps"] is not True:
        bad.append(f"Shared: {d['Shared unwraps']}")
    if not d["interrupts"] or not d["iterations"]:
        bad.append("too few interrupts/iterations to say anything (inconclusive)")
    return bad


def main():
    problems, logs = each_mode(__file__, scenario, check, "ctrl-c")
    if problems:
        if all("inconclusive" in p for p in problems):
            inconclusive("; ".join(problems))
        broken("; ".join(problems[:4]))
    held("real Ctrl-C in tight repeated-launch loops: nothing left moved, later launches right, Shared unwraps")


run_guarded(main, "506")
