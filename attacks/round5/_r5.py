"""Round-5 helpers: attacks/_common.py (through sys.path), a differential runner (the same
scenario with the safe launch's C twin on and off) and a C-path hit counter."""
import json
import os
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from _common import *  # noqa: E402,F401,F403
from _common import _hang, _t  # noqa: E402,F401

import threading  # noqa: E402

if os.environ.get("R5_CHILD") != "1":
    # the parent runs three children one after another: give it a longer watchdog
    _t.cancel()
    _pt = threading.Timer(float(os.environ.get("R5_PARENT_TIMEOUT", "400")), _hang)
    _pt.daemon = True
    _pt.start()

CHILD = os.environ.get("R5_CHILD") == "1"


def native_module():
    from safetile.safe import native
    return native


def wait_c_loaded(limit=40.0):
    """The C twin is compiled and loaded in the background after the first launches: launch a
    throwaway kernel until it is there (so the scenario's repeats can take it)."""
    nat = native_module()
    if os.environ.get("SAFETILE_SAFE_NATIVE") == "0":
        return False
    try:  # load it now without launching anything (so both runs create the same objects)
        if nat.FAST.load(True) and nat.FAST.build is not None:
            return True
    except Exception:  # noqa: BLE001
        pass

    @ct.entry
    def _warm(z: ct.Mut[ct.f32, "B"]):
        z.store(ct.full((B,), 1.0, ct.float32))
    p = ct.from_dlpack(np.zeros(8, np.float32)).partition(8)
    import time
    t0 = time.time()
    while time.time() - t0 < limit:
        (p,) = _warm(p).sync()
        if nat.FAST.build is not None:
            return True
        time.sleep(0.05)
    return False


def count_c_builds():
    """Wrap the loaded C build so hits are counted (changes the caller frames: use only in runs
    whose messages are not compared). Returns a dict {'calls', 'hits'}."""
    nat = native_module()
    c = {"calls": 0, "hits": 0}
    # make sure it is loaded: one throwaway launch
    @ct.entry
    def _warm(z: ct.Mut[ct.f32, "B"]):
        z.store(ct.full((B,), 1.0, ct.float32))
    p = ct.from_dlpack(np.zeros(8, np.float32)).partition(8)
    for _ in range(3):
        (p,) = _warm(p).sync()
    import time
    for _ in range(100):
        if nat.FAST.build is not None:
            break
        time.sleep(0.05)
    real = nat.FAST.build
    if real is None:
        return None

    def build(*a):
        c["calls"] += 1
        r = real(*a)
        if r is not None:
            c["hits"] += 1
        return r
    nat.FAST.build = build
    return c


def c_path_loaded():
    nat = native_module()
    return nat.FAST.build is not None


def child_main(scenario):
    """In the child: run scenario(log) and print the log as one JSON line."""
    log = []
    _t.cancel()  # the child's own watchdog: longer (the parent has its own)
    _w = threading.Timer(float(os.environ.get("R5_CHILD_TIMEOUT", "150")), _hang)
    _w.daemon = True
    _w.start()
    wait_c_loaded()
    counter = count_c_builds() if os.environ.get("R5_COUNT") == "1" else None

    def rec(label, value):
        log.append([label, value if isinstance(value, (int, float, str, bool, type(None), list, dict)) else repr(value)])
    try:
        scenario(rec)
    except BaseException as e:  # noqa: BLE001
        import traceback
        rec("SCENARIO-RAISED", f"{type(e).__module__}.{type(e).__name__}: {e}\n{traceback.format_exc()[-1500:]}")
    import signal
    import time
    for _ in range(100):
        try:
            signal.signal(signal.SIGINT, signal.SIG_IGN)
            break
        except KeyboardInterrupt:
            continue
    for _ in range(40):
        if c_path_loaded() or os.environ.get("SAFETILE_SAFE_NATIVE") == "0":
            break
        time.sleep(0.05)
    rec("__c_loaded__", c_path_loaded())
    if counter is not None:
        rec("__c_hits__", [counter["calls"], counter["hits"]])
    sys.stdout.write("R5LOG " + json.dumps(log) + "\n")
    sys.stdout.flush()
    os._exit(0)


def run_child(path, native, extra_env=None, timeout=170):
    env = dict(os.environ)
    env["R5_CHILD"] = "1"
    env["SAFETILE_SAFE_NATIVE"] = "1" if native else "0"
    if extra_env:
        env.update(extra_env)
    r = subprocess.run([sys.executable, path], env=env, capture_output=True, text=True, timeout=timeout)
    for ln in r.stdout.splitlines():
        if ln.startswith("R5LOG "):
            return json.loads(ln[6:]), r
    return None, r


def exc_str(e):
    return f"{type(e).__module__}.{type(e).__name__}: {e}"


def _norm_ids(x):
    import re
    if isinstance(x, str):
        return re.sub(r"op #\d+", "op #N", x)
    if isinstance(x, list):
        return [_norm_ids(v) for v in x]
    if isinstance(x, dict):
        return {k: _norm_ids(v) for k, v in x.items()}
    return x


def differential(path, scenario, check=None, what="", extra_env=None, normalize_op_ids=False):
    """Parent side: run the scenario with the C twin on and off; every log line must be equal.
    check(log) -> list of problems found in one log (e.g. wrong results), applied to both."""
    if CHILD:
        child_main(scenario)
        return
    on, r_on = run_child(path, True, extra_env)
    off, r_off = run_child(path, False, extra_env)
    if on is None or off is None:
        print((r_on.stdout + r_on.stderr)[-3000:])
        print((r_off.stdout + r_off.stderr)[-3000:])
        inconclusive(f"{what}: a child printed no log")
    cnt, _r = run_child(path, True, dict(extra_env or {}, R5_COUNT="1"))
    hits = [x[1] for x in (cnt or []) if x[0] == "__c_hits__"]
    differential.hits = hits[0] if hits else None
    problems = []
    if [x for x in on if x[0] == "__c_loaded__"] != [["__c_loaded__", True]]:
        problems.append("the C twin was not loaded in the native run")
    on_ = [x for x in on if x[0] != "__c_loaded__"]
    off_ = [x for x in off if x[0] != "__c_loaded__"]
    if normalize_op_ids:  # op numbering is 517's subject; compare everything else
        on_, off_ = _norm_ids(on_), _norm_ids(off_)
    diffs = []
    for i in range(max(len(on_), len(off_))):
        a = on_[i] if i < len(on_) else None
        b = off_[i] if i < len(off_) else None
        if a != b:
            diffs.append((a, b))
    if diffs:
        a, b = diffs[0]
        problems.append(f"{len(diffs)} log line(s) differ between C twin on and off; first: on={a!r} off={b!r}")
    if check:
        for name, log in (("native on", on_), ("native off", off_)):
            for p in check(log):
                problems.append(f"[{name}] {p}")
    return problems, on_, off_


def each_mode(path, scenario, check, what="", extra_env=None, timeout=170):
    """Parent side: run the scenario with the C twin on (counting C hits in a separate pass when
    count=True) and off; no comparison of logs (thread interleavings differ), check() each."""
    if CHILD:
        child_main(scenario)
        return
    problems, logs = [], {}
    for native in (True, False):
        log, r = run_child(path, native, extra_env, timeout)
        name = "native on" if native else "native off"
        if log is None:
            out = (r.stdout + r.stderr)[-2500:]
            print(out)
            if "HANG" in out:
                problems.append(f"[{name}] hung: {out.strip().splitlines()[0][:200]}")
                continue
            inconclusive(f"{what}: the {name} child printed no log")
        if native and [x for x in log if x[0] == "__c_loaded__"] != [["__c_loaded__", True]]:
            problems.append("the C twin was not loaded in the native run")
        log = [x for x in log if x[0] != "__c_loaded__"]
        logs[name] = log
        for p in check(log):
            problems.append(f"[{name}] {p}")
    return problems, logs
