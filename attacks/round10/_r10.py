"""Round-10 helpers: watchdog, verdicts (attacks/verdicts.py), a kernel zoo, and a differential runner that
runs a scenario function with the C fast path on (SAFETILE_SAFE_NATIVE=1) and off (=0) in two subprocesses.
A case prints one final line `HELD: ...`, `BROKE: ...` or `INCONCLUSIVE: ...`."""
import os, sys, threading, time, warnings, gc, json, subprocess  # noqa: F401
HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
from verdicts import broke, held, inconclusive, is_st, watchdog  # noqa: E402,F401
os.environ.setdefault("SAFETILE_CACHE_DIR", "/tmp/rt10cache")
import numpy as np  # noqa
import safetile as ct  # noqa
warnings.simplefilter("ignore")
CHILD = bool(os.environ.get("R10_CHILD"))
TIMEOUT = float(os.environ.get("ATTACK_TIMEOUT", "26" if CHILD else "57"))
watchdog(TIMEOUT, "BROKE")

NATIVE = os.environ.get("SAFETILE_SAFE_NATIVE", "1") not in ("0", "off", "false")


def native_loaded():
    if not NATIVE:
        return False
    from safetile.safe.native import FAST
    return bool(FAST.load(build=True))


def err(e, n=160):
    return f"{type(e).__name__}{'' if is_st(e) else '(RAW)'}: {str(e)[:n]}"


def st_err(e):
    """A safetile error. NB: the host-side refusal classes (OwnershipError, AliasError, LaunchError, ...) are
    NOT subclasses of ct.TileError (only compile-time Tile*Errors are); docs say "a safetile error", so the
    criterion is the class's module (as rounds 6-9)."""
    return isinstance(e, Exception) and is_st(e)


POISON = -7777.0


def poisoned(n, v=POISON):
    return ct.full(n, v).sync()


@ct.entry
def copyk(z: ct.Mut[ct.f32, "B"], x: ct.Ref[ct.f32, -1]):
    z.store(ct.load_tile_like(x, z))


@ct.entry
def inc(z: ct.Mut[ct.f32, "B"]):
    z.store(z.load() + 1.0)


@ct.entry
def addk(z: ct.Mut[ct.f32, "B"], x: ct.Ref[ct.f32, -1]):
    z.store(z.load() + ct.load_tile_like(x, z))


@ct.entry
def slow_inc(z: ct.Mut[ct.f32, "B"], n: int):
    """z += 1, after a loop of n dependent tile ops (the CPU backend runs it slowly: a long-running launch)."""
    a = z.load()
    acc = a * 0.0
    for i in range(n):
        acc = acc * 0.5
    z.store(a + 1.0 + acc)


@ct.entry
def inc_m(c: ct.MappedMut[ct.f32, "B"]):
    for idx in c.iter_indices():
        c.store(c.load(idx) + 1.0, idx)


def threads_dump():
    import faulthandler
    faulthandler.dump_traceback(all_threads=True)


# ---- differential: run `scenario()` (returns a JSON-able dict) with the C path on and off ----
def differential(scenario, normalise=None):
    """If this process is a child (R10_CHILD set), run the scenario and print its JSON; else run two
    children and return (native_result, python_result)."""
    if os.environ.get("R10_CHILD"):
        try:
            res = scenario()
        except BaseException as e:  # noqa
            import traceback
            res = {"__crash__": err(e), "tb": traceback.format_exc()[-2000:]}
        sys.stdout.write("R10JSON " + json.dumps(res, default=str) + "\n")
        sys.stdout.flush()
        os._exit(0)
    outs = []
    for nat in ("1", "0"):
        env = dict(os.environ, R10_CHILD="1", SAFETILE_SAFE_NATIVE=nat)
        r = subprocess.run([sys.executable, sys.argv[0]], env=env, capture_output=True, text=True,
                           timeout=TIMEOUT / 2 - 2)
        line = [ln for ln in r.stdout.splitlines() if ln.startswith("R10JSON ")]
        if not line:
            inconclusive(f"child (native={nat}) printed no result: {(r.stdout + r.stderr)[-600:]}")
        outs.append(json.loads(line[-1][8:]))
    return outs[0], outs[1]


def both_ways(label=""):
    """Run this script twice, with the C fast path on and off, each in its own process (the child runs the
    rest of the script and prints a verdict); combine: BROKE if either broke, INCONCLUSIVE if either was,
    else HELD. In a child this returns at once."""
    if CHILD:
        return
    res = {}
    for nat in ("1", "0"):
        env = dict(os.environ, R10_CHILD="1", SAFETILE_SAFE_NATIVE=nat)
        try:
            r = subprocess.run([sys.executable, sys.argv[0]], env=env, capture_output=True, text=True, timeout=28)
            out = r.stdout + r.stderr
        except subprocess.TimeoutExpired as e:
            out = (e.stdout or b"").decode() if isinstance(e.stdout, bytes) else (e.stdout or "")
            out += "\nBROKE: child timed out (hang)"
        v = None
        for ln in out.splitlines():
            for k in ("HELD", "BROKE", "BROKEN", "INCONCLUSIVE"):
                if ln.startswith(k + ":"):
                    v = (k.replace("BROKEN", "BROKE"), ln[len(k) + 1:].strip())
        if v is None:
            v = ("INCONCLUSIVE", "no verdict: " + out[-400:].replace("\n", " | "))
        if v[0] == "BROKE":
            sys.stderr.write(f"---- child native={nat} output ----\n{out[-6000:]}\n")
        res[nat] = v
    msg = f"C path: {res['1'][1]} || Python path: {res['0'][1]}"
    kinds = {res["1"][0], res["0"][0]}
    if "BROKE" in kinds:
        broke(msg)
    if "INCONCLUSIVE" in kinds:
        inconclusive(msg)
    held(msg)


@ct.entry
def slow_inc_m(c: ct.MappedMut[ct.f32, "B"], n: int):
    """mapped: every sub-tensor += 1 after a loop of n tile ops per sub-tensor (a long-running launch)."""
    for idx in c.iter_indices():
        a = c.load(idx)
        acc = a * 0.0
        for i in range(n):
            acc = acc * 0.5
        c.store(a + 1.0 + acc, idx)
