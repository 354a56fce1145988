"""Round-6 helpers: watchdog, verdict printers, a tiny kernel zoo."""
import faulthandler, os, sys, threading, warnings
os.environ.setdefault("SAFETILE_CACHE_DIR", "off")
import numpy as np  # noqa
import safetile as ct  # noqa
warnings.simplefilter("ignore")
TIMEOUT = float(os.environ.get("ATTACK_TIMEOUT", "20"))


def _out(kind, msg, code):
    sys.stdout.write(f"{kind}: {msg}\n")
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)


def held(msg=""): _out("HELD", msg, 0)
def broken(msg): _out("BROKEN", msg, 1)
def outside(msg): _out("OUTSIDE", msg, 0)
def inconclusive(msg): _out("INCONCLUSIVE", msg, 3)


def _hang():
    sys.stdout.write("BROKEN: watchdog fired after %.0fs (hang/deadlock)\n" % TIMEOUT)
    sys.stdout.flush()
    faulthandler.dump_traceback(all_threads=True)
    os._exit(1)


_t = threading.Timer(TIMEOUT, _hang)
_t.daemon = True
_t.start()


def is_st(e):
    return type(e).__module__.startswith("safetile")


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
