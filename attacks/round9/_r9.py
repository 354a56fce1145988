"""Round-9 helpers: the C lock (safe/native_lock.py) must be in use; watchdog; verdicts; a kernel zoo.
A case prints a final line `HELD: ...`, `BROKE: ...`, `OUTSIDE: ...` or `INCONCLUSIVE: ...`."""
import os, sys, threading, time, warnings, gc  # noqa: F401 (the cases use them through `from _r9 import *`)
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from verdicts import broke, broken, held, inconclusive, is_st, outside, watchdog  # noqa: E402,F401
os.environ.setdefault("SAFETILE_CACHE_DIR", "/tmp/rt9cache")
import numpy as np  # noqa
import safetile as ct  # noqa
import safetile.safe.ownership as ownership  # noqa
from safetile.safe import memory  # noqa
warnings.simplefilter("ignore")
TIMEOUT = float(os.environ.get("ATTACK_TIMEOUT", "50"))
watchdog(TIMEOUT, "BROKE")

C_LOCK = type(ownership.OWNERSHIP).__name__ == "Lock" and type(memory.REGISTRY._lock).__name__ == "Lock"


def require_c_lock():
    """Every attack of this round runs with the C lock; the C twin loaded (as in a warm process)."""
    if not C_LOCK and os.environ.get("R9_ALLOW_RLOCK") != "1":
        inconclusive(f"OWNERSHIP is {type(ownership.OWNERSHIP).__name__}, not the C Lock (build the safe C "
                     "module first with this SAFETILE_CACHE_DIR)")
    if os.environ.get("SAFETILE_SAFE_NATIVE", "1") not in ("0", "off", "false"):
        from safetile.safe.native import FAST
        if not FAST.load(build=True):
            inconclusive("the C twin could not be loaded")


def lock_kind():
    return type(ownership.OWNERSHIP).__name__


def err(e, n=120):
    return f"{type(e).__name__}{'' if is_st(e) else '(RAW)'}: {str(e)[:n]}"


POISON = -7777.0


def poisoned(n):
    return ct.full(n, POISON).sync()


@ct.entry
def copyk(z: ct.Mut[ct.f32, "B"], x: ct.Ref[ct.f32, -1]):
    z.store(ct.load_tile_like(x, z))


@ct.entry
def inc(z: ct.Mut[ct.f32, "B"]):
    z.store(z.load() + 1.0)


@ct.entry
def addk(z: ct.Mut[ct.f32, "B"], x: ct.Ref[ct.f32, -1]):
    z.store(z.load() + ct.load_tile_like(x, z))


def fmt_threads():
    import faulthandler
    faulthandler.dump_traceback(all_threads=True)
