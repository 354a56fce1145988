"""Round-7 helpers: watchdog, verdict printers, a tiny kernel zoo, and a differential driver that
runs one scenario twice in child processes -- with the safe launch's C twin loaded (its four C
method descriptors installed) and with SAFETILE_SAFE_NATIVE=0 -- and compares what they observed."""
import json, os, subprocess, sys, threading, warnings  # (the cases use these through `from _r7 import *`)
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from verdicts import broke, broken, held, inconclusive, is_st, outside, watchdog  # noqa: E402,F401
os.environ.setdefault("SAFETILE_CACHE_DIR", "off")
import numpy as np  # noqa
import safetile as ct  # noqa
import safetile.safe.native as native  # noqa
warnings.simplefilter("ignore")
TIMEOUT = float(os.environ.get("ATTACK_TIMEOUT", "25"))
MODE = os.environ.get("R7_MODE", "")          # "" parent, "c" or "py" child


watchdog(TIMEOUT)


def err(e, n=110):
    """type, module-ness and message of an exception, for comparing."""
    return f"{type(e).__name__}{'' if is_st(e) else '(raw)'}: {str(e)[:n]}"


def arr(n, v=0.0, dt=np.float32):
    return np.full(n, v, dt)


def c_loaded():
    from safetile.safe import launch
    return (native.FAST.build is not None and type(ct.EntryKernel.__call__).__name__ == "method_descriptor"
            and type(launch.LaunchOp._run).__name__ == "method_descriptor")


def setup_mode():
    """In a child: make sure the C path is loaded (mode c) or absent (mode py)."""
    if MODE == "c":
        native.FAST.load(build=True)
        if not c_loaded():
            print("R7JSON " + json.dumps({"__setup__": "C path could not be loaded"}))
            sys.stdout.flush()
            os._exit(0)
    elif MODE == "py":
        assert native.FAST.build is None, "SAFETILE_SAFE_NATIVE=0 but the C path is loaded"


@ct.entry
def fill1(z: ct.Mut[ct.f32, "B"], x: ct.Ref[ct.f32, -1]):
    z.store(ct.load_tile_like(x, z) + 1.0)


@ct.entry
def inc(z: ct.Mut[ct.f32, "B"]):
    z.store(z.load() + 1.0)


@ct.entry
def copyk(z: ct.Mut[ct.f32, "B"], x: ct.Ref[ct.f32, -1]):
    z.store(ct.load_tile_like(x, z))


@ct.entry
def add2(z: ct.Mut[ct.f32, "B"], x: ct.Ref[ct.f32, -1], y: ct.Ref[ct.f32, -1]):
    z.store(ct.load_tile_like(x, z) + ct.load_tile_like(y, z))


def child(mode, timeout=None, extra_env=None):
    env = dict(os.environ)
    env["R7_MODE"] = mode
    env["ATTACK_TIMEOUT"] = str(timeout or max(5.0, TIMEOUT / 2 - 1))
    if mode == "py":
        env["SAFETILE_SAFE_NATIVE"] = "0"
    else:
        env.pop("SAFETILE_SAFE_NATIVE", None)
    env.update(extra_env or {})
    try:
        r = subprocess.run([sys.executable, os.path.abspath(sys.argv[0])], env=env, capture_output=True, text=True,
                           timeout=(timeout or TIMEOUT / 2) + 3)
    except subprocess.TimeoutExpired:
        return {"__crash__": "child timed out"}
    for ln in r.stdout.splitlines()[::-1]:
        if ln.startswith("R7JSON "):
            return json.loads(ln[7:])
    tail = (r.stdout + r.stderr).strip().splitlines()[-6:]
    return {"__crash__": f"rc={r.returncode}", "__tail__": tail}


def report(obs):
    print("R7JSON " + json.dumps(obs, default=str))
    sys.stdout.flush()
    os._exit(0)


def diff(a, b):
    keys = sorted(set(a) | set(b))
    return {k: (a.get(k), b.get(k)) for k in keys if a.get(k) != b.get(k)}


def differential(scenario, judge=None, ignore=()):
    """Run scenario() in a child with the C path and one without; compare. judge(c, py) may return
    (verdict, message) for scenario-specific checks; differences outside `ignore` are BROKEN."""
    if MODE:
        setup_mode()
        report(scenario())
    c = child("c")
    py = child("py")
    for name, o in (("C", c), ("Python", py)):
        print(f"--- {name} path:")
        for k, v in o.items():
            print(f"   {k}: {v}")
    if "__setup__" in c:
        inconclusive(c["__setup__"])
    if "__crash__" in c or "__crash__" in py:
        broken(f"child crashed: C={c.get('__crash__')} {c.get('__tail__', '')} Py={py.get('__crash__')} "
               f"{py.get('__tail__', '')}")
    if judge is not None:
        v = judge(c, py)
        if v is not None and v[0] == "BROKEN":
            broken(v[1])
    d = {k: v for k, v in diff(c, py).items() if k not in ignore}
    if d:
        broken("C path and Python path differ: " + "; ".join(f"{k}: C={v[0]!r} vs Py={v[1]!r}" for k, v in d.items()))
    if judge is not None and v is not None:
        {"HELD": held, "OUTSIDE": outside, "INCONCLUSIVE": inconclusive}[v[0]](v[1])
    held(f"both paths agree on {len(c)} observations")
