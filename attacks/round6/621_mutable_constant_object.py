"""G8 / semantics.md "Python values read at compile time" ("cfg.width = 16 on a user object" is
tracked: the compiled code is dropped and the next launch compiles again). Here the user object
is not a global but the *ct.Constant argument itself* (hashable by identity, the default for a
class): launch with cfg, then set cfg.scale = 3.0 and launch with the same object. The second
launch must compute with 3.0 (as a fresh kernel does), on the Python path and when repeated (the
C twin's "captured Python state identical"). Controls: the same object read as a module global."""
from _r6 import *


class Cfg:
    def __init__(self, scale):
        self.scale = scale


def make():
    @ct.entry
    def k(z: ct.Mut[ct.f32, "B"], c: ct.Constant[object]):
        z.store(ct.full((B,), 1.0, ct.float32) * c.scale)
    return k


G = Cfg(2.0)


@ct.entry
def kg(z: ct.Mut[ct.f32, "B"]):
    z.store(ct.full((B,), 1.0, ct.float32) * G.scale)


def run(k, *a):
    z = ct.from_dlpack(arr(16)).partition(16)
    r = k(z, *a).sync()
    return float(r[0].unpartition().to_numpy()[0])


res = {}
cfg = Cfg(2.0)
k = make()
res["first"] = run(k, cfg)
run(k, cfg)
cfg.scale = 3.0
res["after cfg.scale = 3.0"] = [run(k, cfg) for _ in range(3)]
res["fresh kernel"] = run(make(), cfg)
res["global control before"] = run(kg)
G.scale = 3.0
res["global control after"] = run(kg)
bad = []
if any(v != res["fresh kernel"] for v in res["after cfg.scale = 3.0"]):
    bad.append(f"a mutated Constant object keeps its old compiled value: {res['after cfg.scale = 3.0']} vs fresh {res['fresh kernel']}")
if bad:
    broken("; ".join(bad) + f" || {res}")
held(str(res))
