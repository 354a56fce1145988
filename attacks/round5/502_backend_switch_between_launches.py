"""Promise (safety.md G8, "The common case in C"): the C twin reuses the latest plan only "with the
same `SAFETILE_BACKEND`"; "the C code decides nothing the Python path would decide differently".

Attack: repeated identical launches while SAFETILE_BACKEND is switched between them (unset ->
triton -> cpu -> unset -> 'bogus' -> 'CPU' -> 'triton ' ...): directly, from inside a `then`
closure between two launches of one chain, and from another thread. The backend that actually
runs each launch is observed with sys.setprofile (which backend package's code ran); results are
checked against NumPy; the whole log must be identical with the C twin on and off, and a launch
after a switch must run on the backend the switch names (TRITON_INTERPRET=1 for triton).
"""
from _r5 import *

import threading


def scenario(rec):
    import torch
    os.environ["TRITON_INTERPRET"] = "1"

    @ct.entry
    def k(z: ct.Mut[ct.f32, "B"], x: ct.Ref[ct.f32, -1], a: ct.f32):
        z.store(ct.load_tile_like(x, z) * a + 1.0)

    # Which backend ran: count calls of the CPU executor's kernel-body function by swapping its
    # code object for a counting wrapper (sys.setprofile would make the C twin decline).
    import importlib
    ex = importlib.import_module("safetile.backends.cpu.executor")
    import types
    orig = ex.execute
    ex.__dict__["_r5_count"] = [0]
    ex.__dict__["_r5_orig"] = types.FunctionType(orig.__code__, orig.__globals__, "execute_orig",
                                                  orig.__defaults__, orig.__closure__)
    ex.__dict__["_r5_orig"].__kwdefaults__ = orig.__kwdefaults__
    wrap_src = "def execute(*a, **kw):\n    _r5_count[0] += 1\n    return _r5_orig(*a, **kw)\n"
    tmp = {}
    exec(compile(wrap_src, ex.__file__, "exec"), ex.__dict__, tmp)
    orig.__code__ = tmp["execute"].__code__
    orig.__defaults__ = None
    orig.__kwdefaults__ = None

    def which(f):
        before = ex.__dict__["_r5_count"][0]
        r = f()
        return r, (["cpu"] if ex.__dict__["_r5_count"][0] > before else ["triton"])

    def setbe(v):
        if v is None:
            os.environ.pop("SAFETILE_BACKEND", None)
        else:
            os.environ["SAFETILE_BACKEND"] = v

    for kind in ("numpy", "torch"):
        xa = np.linspace(-1, 1, 32).astype(np.float32)
        zb = np.zeros(32, np.float32) if kind == "numpy" else torch.zeros(32)
        x = ct.from_dlpack(xa.copy() if kind == "numpy" else torch.from_numpy(xa.copy()))
        z = ct.from_dlpack(zb).partition(16)
        seq = [b for b in (None, "triton", "cpu", None, "bogus", "CPU", "triton ", None, "triton", None)
               for _ in range(3)]
        for i, be in enumerate(seq):
            setbe(be)
            zb[:] = float("nan")
            try:
                (z, x, _), seen = which(lambda: k(z, x, 2.0).sync())
                ok = bool(np.allclose(as_np(zb), xa * 2 + 1))
                rec(f"{kind} step {i} SAFETILE_BACKEND={be!r}", ["ran on", seen, "right" if ok else "WRONG"])
            except Exception as e:  # noqa: BLE001
                rec(f"{kind} step {i} SAFETILE_BACKEND={be!r}", "EXC " + exc_str(e))
            rec(f"{kind} step {i} states", [repr(z), repr(x)])
        setbe(None)
        # switch inside a then chain, between two launches
        for first, second in ((None, "triton"), (None, "triton"), ("triton", None), ("triton", None), (None, None)):
            setbe(first)
            zb[:] = float("nan")
            op = k(z, x, 2.0).then(lambda zx: (setbe(second), k(zx[0], zx[1], 3.0))[1])
            try:
                (z, x, _), seen = which(op.sync)
                rec(f"{kind} chain {first!r}->{second!r}", ["ran on", seen,
                                                              bool(np.allclose(as_np(zb), xa * 3 + 1))])
            except Exception as e:  # noqa: BLE001
                rec(f"{kind} chain {first!r}->{second!r}", "EXC " + exc_str(e))
        setbe(None)
        # switched by another thread between launches
        for i in range(8):
            th = threading.Thread(target=setbe, args=("triton" if i % 4 >= 2 else None,))
            th.start()
            th.join()
            zb[:] = float("nan")
            (z, x, _), seen = which(lambda: k(z, x, 5.0).sync())
            rec(f"{kind} thread-switched {i}", [seen, bool(np.allclose(as_np(zb), xa * 5 + 1))])
        setbe(None)


def check(log):
    bad = []
    for label, val in log:
        if "SAFETILE_BACKEND=" in label and isinstance(val, list):
            be = label.split("SAFETILE_BACKEND=")[1]
            want = ["triton"] if be in ("'triton'",) else ["cpu"] if be in ("None", "'cpu'") else None
            if want is not None and val[1] != want:
                bad.append(f"{label}: ran on {val[1]}")
            if val[2] != "right":
                bad.append(f"{label}: wrong result")
        if "thread-switched" in label:
            i = int(label.split()[-1])
            if val[0] != (["triton"] if i % 4 >= 2 else ["cpu"]) or not val[1]:
                bad.append(f"{label}: {val}")
        if "chain" in label and isinstance(val, list) and not val[2]:
            bad.append(f"{label}: wrong result")
    return bad


def main():
    problems, on, off = differential(__file__, scenario, check, "backend switch")
    if problems:
        broken("; ".join(problems[:5]))
    held(f"{len(on)} observations identical with the C twin on and off; every launch ran on the named backend "
         f"(C build [calls, hits]: {differential.hits})")


run_guarded(main, "502")
