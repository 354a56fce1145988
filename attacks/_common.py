"""Shared helpers for the red-team attacks.

Exit codes: 0 = guarantee HOLDS, 1 = BROKEN, 2 = HANG (watchdog), 3 = attack itself failed
(inconclusive).  Every script imports this first; it puts src/ on sys.path and arms a
watchdog so that a hang is reported instead of blocking the runner.
"""
from __future__ import annotations

import faulthandler
import os
import sys
import threading
import traceback
import warnings

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "src"))
os.environ.setdefault("SAFETILE_CACHE_DIR", "off")

import numpy as np  # noqa: E402

import safetile as ct  # noqa: E402

warnings.simplefilter("ignore")

TIMEOUT = float(os.environ.get("ATTACK_TIMEOUT", "60"))


def _hang():
    sys.stdout.write("HANG: watchdog fired after %.0fs\n" % TIMEOUT)
    sys.stdout.flush()
    faulthandler.dump_traceback(all_threads=True)
    os._exit(2)


_t = threading.Timer(TIMEOUT, _hang)
_t.daemon = True
_t.start()


def broken(msg: str):
    print("BROKEN:", msg)
    sys.stdout.flush()
    os._exit(1)


def held(msg: str = ""):
    print("HELD:", msg)
    sys.stdout.flush()
    os._exit(0)


def inconclusive(msg: str):
    print("INCONCLUSIVE:", msg)
    sys.stdout.flush()
    os._exit(3)


SAFETILE_ERRORS = tuple(
    getattr(ct, n) for n in dir(ct)
    if isinstance(getattr(ct, n), type) and issubclass(getattr(ct, n), Exception)
)


def is_safetile_error(e: BaseException) -> bool:
    return type(e).__module__.startswith("safetile")


def snap(*objs):
    """Bytes of each object (NumPy arrays, torch tensors, safetile values), read raw."""
    out = []
    for o in objs:
        out.append(raw_bytes(o))
    return out


def raw_bytes(o):
    import numpy as _np
    if isinstance(o, _np.ndarray):
        base = o
        while isinstance(base.base, _np.ndarray):
            base = base.base
        return bytes(_np.ascontiguousarray(o).view(_np.uint8).ravel())
    try:
        import torch
        if isinstance(o, torch.Tensor):
            return bytes(o.detach().contiguous().view(-1).view(torch.uint8).numpy())
    except ImportError:
        pass
    return bytes(_np.ascontiguousarray(o.to_numpy()).view(_np.uint8).ravel())


def expect_refusal(fn, exc=None, names=(), what=""):
    """Call fn; it must raise a safetile error (of class exc if given) whose message names
    every string in names. Returns the exception; calls broken() otherwise."""
    try:
        r = fn()
    except BaseException as e:  # noqa: BLE001
        if not is_safetile_error(e):
            broken(f"{what}: raised a non-safetile {type(e).__module__}.{type(e).__name__}: {e}")
        if exc is not None and not isinstance(e, exc):
            broken(f"{what}: raised {type(e).__name__} instead of {exc}: {e}")
        for n in names:
            if n not in str(e):
                broken(f"{what}: error does not name {n!r}: {type(e).__name__}: {e}")
        return e
    broken(f"{what}: accepted (returned {r!r})")


def run_guarded(fn, what):
    """Run an attack body; any unexpected exception is an inconclusive result."""
    try:
        fn()
    except SystemExit:
        raise
    except BaseException:  # noqa: BLE001
        traceback.print_exc()
        inconclusive(f"{what}: attack raised unexpectedly")


# ---- kernels shared by many attacks -------------------------------------------------
@ct.entry
def fill(z: ct.Mut[ct.f32, "B"], x: ct.Ref[ct.f32, -1]):
    """z = x + 1 over z's sub-tensor."""
    z.store(ct.load_tile_like(x, z) + 1.0)


@ct.entry
def fill_bid(z: ct.Mut[ct.f32, "B"], x: ct.Ref[ct.f32, -1]):
    """Every element of block b's sub-tensor becomes b + 1."""
    z.store(ct.full((B,), 1.0, ct.float32) * (ct.bid(0) + 1))


@ct.entry
def fill2d(z: ct.Mut[ct.f32, ("BM", "BN")], x: ct.Ref[ct.f32, (-1, -1)]):
    z.store(ct.load_tile_like(x, z) + 1.0)


@ct.entry
def const2d(z: ct.Mut[ct.f32, ("BM", "BN")], v: ct.f32):
    z.store(ct.full((BM, BN), 1.0, ct.float32) * v)


def T(name, f):
    """Probe helper: run f, print the result or the exception."""
    try:
        r = f()
        print(name, "->", r)
        return r
    except Exception as e:  # noqa: BLE001
        print(name, "EXC", type(e).__module__, type(e).__name__, str(e)[:300])
        return e


def kernel_from_source(src: str, ns: dict | None = None, tag: str = "k"):
    """Define kernels from text (registered with linecache so safetile can read it)."""
    import linecache
    import hashlib
    name = os.path.join(HERE, "_gen_%s_%s.py" % (tag, hashlib.md5(src.encode()).hexdigest()[:10]))
    linecache.cache[name] = (len(src), None, src.splitlines(True), name)
    g = {"ct": ct, "np": np}
    if ns:
        g.update(ns)
    exec(compile(src, name, "exec"), g)
    return g


BACKEND = os.environ.get("SAFETILE_BACKEND", "cpu")


def make_buf(n, dtype=np.float32, fill_value=0.0):
    """A host buffer of the active backend's kind (NumPy on cpu, torch on triton)."""
    if BACKEND == "triton":
        import torch
        tdt = {np.float32: torch.float32, np.float64: torch.float64, np.int32: torch.int32}[dtype]
        return torch.full(n if isinstance(n, tuple) else (n,), fill_value, dtype=tdt)
    return np.full(n, fill_value, dtype)


def as_np(buf):
    if isinstance(buf, np.ndarray):
        return buf
    return buf.numpy()
