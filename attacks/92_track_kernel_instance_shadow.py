"""Promise (semantics.md): attribute reads of user objects are tracked ('cfg.width = 16 on
a user object'). Kernel reads cfg.W where W lives on the class; then (a) Cfg.W changes,
(b) an instance attribute cfg.W shadows the class attribute. Both must recompile."""
# BACKENDS: cpu triton
from _common import *


class Cfg:
    W = 2.0


cfg = Cfg()


@ct.kernel
def k(z, x):
    ct.store(z, index=(0,), tile=ct.load(x, index=(0,), shape=(64,)) * cfg.W)


x = np.ones(64, np.float32)
z = np.zeros(64, np.float32)


def run():
    ct.launch(None, (1,), k, (z, x))
    return float(z[0])


got = [run()]
Cfg.W = 4.0
got.append(run())
cfg.W = 6.0
got.append(run())
if got != [2.0, 4.0, 6.0]:
    broken(f"class attribute / instance shadowing: got {got}, want [2.0, 4.0, 6.0]")
held("attribute changes tracked")
