"""Round-6 helpers: watchdog, verdict printers, a tiny kernel zoo."""
import os, sys, threading, warnings  # threading: the cases use it through `from _rN import *`
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from verdicts import broke, broken, held, inconclusive, is_st, outside, watchdog  # noqa: E402,F401
os.environ.setdefault("SAFETILE_CACHE_DIR", "off")
import numpy as np  # noqa
import safetile as ct  # noqa
warnings.simplefilter("ignore")
TIMEOUT = float(os.environ.get("ATTACK_TIMEOUT", "20"))


watchdog(TIMEOUT)


def arr(n, v=0.0, dt=np.float32):
    return np.full(n, v, dt)


@ct.entry
def fill1(z: ct.Mut[ct.f32, "B"], x: ct.Ref[ct.f32, -1]):
    z.store(ct.load_tile_like(x, z) + 1.0)


@ct.entry
def inc(z: ct.Mut[ct.f32, "B"]):
    z.store(z.load() + 1.0)


@ct.entry
def copyk(z: ct.Mut[ct.f32, "B"], x: ct.Ref[ct.f32, -1]):
    z.store(ct.load_tile_like(x, z))
