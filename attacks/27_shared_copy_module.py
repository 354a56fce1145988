"""Promise (DESIGN): 'A Shared value has no mutable alias anywhere'; safe.md: try_unwrap
gives the tensor back once no launch holds the handle (Shared.clone() handles die with the
unwrap: attack 38). Python's copy.copy / copy.deepcopy / pickle of a Shared handle must not
yield a handle that stays readable as 'Shared' while the memory is written after unwrap."""
import copy
import pickle

from _common import *

x = ct.rand(256, seed=1).sync()
fails = []
for name, dup in [("copy.copy", copy.copy), ("copy.deepcopy", copy.deepcopy),
                  ("pickle round trip", lambda s: pickle.loads(pickle.dumps(s)))]:
    s = ct.zeros(256).sync().shared()
    try:
        c = dup(s)
    except Exception as e:  # noqa: BLE001
        continue
    u = s.try_unwrap()
    try:
        before = c.to_numpy().copy()
    except Exception:  # noqa: BLE001
        continue            # the duplicate died with the unwrap: fine
    p, _ = fill(u.partition(64), x).sync()
    try:
        after = c.to_numpy()
    except Exception:  # noqa: BLE001
        continue
    if not np.array_equal(before, after):
        fails.append(f"{name}: the duplicated Shared handle still reads the memory after unwrap, and sees the launch's writes ({after[:2]})")
    elif name == "copy.copy":
        fails.append(f"{name}: duplicated Shared handle outlives the unwrap")
if fails:
    broken("; ".join(fails))
held("duplicated Shared handles die with the unwrap (or are independent copies)")
