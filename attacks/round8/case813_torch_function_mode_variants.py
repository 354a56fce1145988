"""Class 3 (TorchFunctionMode). The Python launch path reads a raw Ref through torch's Python methods (a
TorchFunctionMode sees and may answer each), the C twin through the C++ reader (no mode), and the CPU
backend takes the memory through DLPack. Variants: (a) a transparent mode (only observes): both paths must
give the plain result; (b) a mode answering is_neg() False for a negative view: must still be refused or read
as shown (-x), never the un-negated memory; (c) a mode whose detach() returns another plain tensor y: what
runs must be what the checks read (y's values), consistently on both paths; (d) a mode lying that a Ref is
longer than it is (shape): refused or read within the real tensor, never a crash.
# BACKENDS: cpu triton"""
import subprocess
from _r8 import *
from torch.overrides import TorchFunctionMode

N = 64


class Observe(TorchFunctionMode):
    seen = set()

    def __torch_function__(self, func, types, args=(), kwargs=None):
        Observe.seen.add(getattr(func, "__name__", str(func)))
        return func(*args, **(kwargs or {}))


class NotNeg(TorchFunctionMode):
    def __torch_function__(self, func, types, args=(), kwargs=None):
        if getattr(func, "__name__", "") == "is_neg":
            return False
        return func(*args, **(kwargs or {}))


class SwapDetach(TorchFunctionMode):
    def __init__(self, y):
        super().__init__()
        self.y = y

    def __torch_function__(self, func, types, args=(), kwargs=None):
        if getattr(func, "__name__", "") == "detach":
            return self.y
        return func(*args, **(kwargs or {}))


class LongShape(TorchFunctionMode):
    def __torch_function__(self, func, types, args=(), kwargs=None):
        r = func(*args, **(kwargs or {}))
        n = getattr(func, "__name__", "")
        if n == "__get__" and isinstance(r, torch.Size) and len(r) == 1 and r[0] == N // 4:
            return torch.Size([N])
        return r


def one(mode_factory, x, rounds=3):
    res = []
    for _ in range(rounds):
        z = poisoned(N).partition(16)
        try:
            with mode_factory():
                (z, _) = copyk(z, x).sync()
            res.append(str(z.unpartition().to_numpy()[[0, 1, 2, 20, 40]].tolist()))
        except Exception as e:  # noqa
            zz = None
            try:
                zz = z.unpartition().to_numpy()
            except Exception:  # noqa
                pass
            res.append(err(e, 50) + ("" if zz is None or (zz == POISON).all() else " WROTE"))
    return res


def scenario():
    ensure_native()
    out = {"c_twin": c_path_loaded()}
    x = torch.arange(N, dtype=torch.float32)
    run_copy(x)
    out["a_transparent"] = one(Observe, x)
    out["b_notneg"] = one(NotNeg, torch._neg_view(torch.arange(N, dtype=torch.float32)))
    y = torch.full((N,), 5.0)
    out["c_swapdetach"] = one(lambda: SwapDetach(y), x)
    out["d_longshape"] = one(LongShape, torch.arange(N // 4, dtype=torch.float32))
    return out


if os.environ.get("R8_CHILD"):
    import json
    print("R8JSON " + json.dumps(scenario()))
    os._exit(0)
import json
res = {}
for mode in ("c", "py"):
    env = dict(os.environ, R8_CHILD="1")
    if mode == "py":
        env["SAFETILE_SAFE_NATIVE"] = "0"
    p = subprocess.run([sys.executable, __file__], env=env, capture_output=True, text=True, timeout=90)
    ln = [l for l in p.stdout.splitlines() if l.startswith("R8JSON ")]
    res[mode] = json.loads(ln[0][7:]) if ln else {"CRASH": (p.stdout + p.stderr)[-600:]}
    for k, v in res[mode].items():
        print(mode, k, v)
problems = []
for mode, o in res.items():
    if "CRASH" in o:
        problems.append(f"{mode}: crashed")
        continue
    for k, vals in o.items():
        if k == "c_twin":
            continue
        for v in vals:
            if "(RAW)" in v or "WROTE" in v:
                problems.append(f"{mode} {k}: {v}")
    if any(v.startswith("[0.0, 1.0, 2.0") for v in o["b_notneg"]):  # -x shows [-0.0, -1.0, ...]
        problems.append(f"{mode} b_notneg: read the un-negated memory {o['b_notneg']}")
    if o["a_transparent"] != ["[0.0, 1.0, 2.0, 20.0, 40.0]"] * 3:
        problems.append(f"{mode} a_transparent: {o['a_transparent']}")
if "CRASH" not in res["c"] and "CRASH" not in res["py"]:
    for k in ("a_transparent", "b_notneg", "c_swapdetach", "d_longshape"):
        if res["c"][k] != res["py"][k]:
            problems.append(f"C twin and Python path differ on {k}: C={res['c'][k]} Py={res['py'][k]}")
if problems:
    broke("; ".join(problems))
held("modes: transparent plain; lies refused or read as the checks saw; both paths agree")
