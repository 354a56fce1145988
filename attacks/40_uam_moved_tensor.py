"""Promise (safe.md): 'Using a moved value raises UseAfterMoveError naming what moved it'.
Every public way to read, export, view, copy, share, borrow or re-partition a tensor that
was moved into a partition / Shared must raise UseAfterMoveError naming the mover."""
import torch
from _common import *

fails = []
for mover, move in [("partition", lambda t: t.partition(64)), ("shared", lambda t: t.shared()),
                    ("partition_prefix", lambda t: t.partition_prefix((64,)))]:
    t = ct.zeros(256).sync()
    move(t)
    uses = {
        "to_numpy": lambda: t.to_numpy(), "np.asarray": lambda: np.asarray(t),
        "__dlpack__": lambda: t.__dlpack__(), "np.from_dlpack": lambda: np.from_dlpack(t),
        "torch.from_dlpack": lambda: torch.from_dlpack(t), "getitem": lambda: t[0:4],
        "slice": lambda: t.slice(0, 0, 4), "reshape": lambda: t.reshape(16, 16),
        "dup": lambda: t.dup().sync(), "to_host": lambda: t.to_host().sync(),
        "to_device": lambda: ct.to_device(t, "cpu").sync(), "partition": lambda: t.partition(64),
        "shared": lambda: t.shared(), "borrow_mut": lambda: ct.borrow_mut(t).partition(64),
        "memcpy dst": lambda: ct.memcpy(t, ct.zeros(256).sync()).sync(),
        "memcpy src": lambda: ct.memcpy(ct.zeros(256).sync(), t).sync(),
        "as Ref": lambda: fill(ct.zeros(256).sync().partition(64), t).sync(),
        "from_dlpack(t)": lambda: ct.from_dlpack(t), "len": lambda: len(t),
        "__array__": lambda: t.__array__(),
    }
    for name, use in uses.items():
        try:
            use()
        except ct.UseAfterMoveError as e:
            continue
        except Exception as e:  # noqa: BLE001
            fails.append(f"{mover}/{name}: {type(e).__module__}.{type(e).__name__} instead of UseAfterMoveError: {str(e)[:80]}")
            continue
        fails.append(f"{mover}/{name}: allowed on a moved tensor")
if fails:
    broken("; ".join(fails))
held("every use of a moved tensor raises UseAfterMoveError")
