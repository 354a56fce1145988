"""Promise (README / help(ct.launch)): 'Everything is checked (grid, argument count and
kinds, compilation) before any argument is touched, so a rejected launch writes nothing.'
For the unchecked ct.launch: bad grids, wrong arg counts, compile errors, bad constants;
every byte of every NumPy/torch argument must be unchanged and the error a safetile one."""
import torch
from _common import *

SRC = '''
@ct.kernel
def good(a, b, n: ct.Constant[int]):
    ct.store(a, index=(ct.bid(0),), tile=ct.load(b, index=(ct.bid(0),), shape=(n,)) + 1.0)

@ct.kernel
def bad(a, b, n: ct.Constant[int]):
    ct.store(a, index=(ct.bid(0),), tile=ct.load(b, index=(ct.bid(0),), shape=(n,)) + 1.0)
    ct.store(a, index=(0,), tile=ct.full((n * 2,), 1.0, ct.float32).reshape((n, 3)))
'''
ks = kernel_from_source(SRC, tag="unchk")
fails = []
for name, call in [
    ("grid 0", lambda a, b: ct.launch(None, (0, 1, 1), ks["good"], (a, b, 16))),
    ("grid negative", lambda a, b: ct.launch(None, (-1,), ks["good"], (a, b, 16))),
    ("grid 4-D", lambda a, b: ct.launch(None, (1, 1, 1, 1), ks["good"], (a, b, 16))),
    ("grid str", lambda a, b: ct.launch(None, "x", ks["good"], (a, b, 16))),
    ("too few args", lambda a, b: ct.launch(None, (4,), ks["good"], (a, b))),
    ("non-pow2 constant", lambda a, b: ct.launch(None, (4,), ks["good"], (a, b, 12))),
    ("compile error", lambda a, b: ct.launch(None, (4,), ks["bad"], (a, b, 16))),
    ("grid > 2**31 blocks", lambda a, b: ct.launch(None, (2**16, 2**16, 2), ks["good"], (a, b, 16))),
]:
    for kind in ("numpy", "torch"):
        if kind == "numpy":
            a = np.random.default_rng(1).random(64, dtype=np.float32)
            b = np.random.default_rng(2).random(64, dtype=np.float32)
        else:
            a, b = torch.rand(64), torch.rand(64)
        before = snap(a, b)
        try:
            call(a, b)
            fails.append(f"{name} [{kind}]: accepted")
        except Exception as e:  # noqa: BLE001
            if not is_safetile_error(e):
                fails.append(f"{name} [{kind}]: {type(e).__module__}.{type(e).__name__}: {str(e)[:60]}")
        if snap(a, b) != before:
            fails.append(f"{name} [{kind}]: arguments changed by the rejected launch")
if fails:
    broken("; ".join(fails))
held("rejected unchecked launches write nothing")
