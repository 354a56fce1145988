"""G7 (d, c) for the collectives (torch.md: "Refused before anything runs, arguments untouched: ... a
group this process is not in, torch.distributed not initialised"; G7: host refusals are safetile
errors). A single-process gloo group (world size 1). Odd arguments: group given as a string, an
int, a safetile tensor; element types gloo cannot reduce (uint16/uint32/uint64, checked at build or
at sync?); after each refusal or failure the tensor must be usable and byte-identical."""
from _r6 import *
import torch.distributed as dist
from safetile.integrations import distributed as ctd

import os  # noqa: E402
port = 20000 + os.getpid() % 20000
dist.init_process_group("gloo", rank=0, world_size=1, init_method=f"tcp://127.0.0.1:{port}")
bad, notes = [], []


def attempt(name, make_tensor, build):
    base = make_tensor()
    before = base.copy()
    t = ct.from_dlpack(base)
    try:
        op = build(t)
        op.sync()
        notes.append(f"{name}: ran")
    except Exception as e:  # noqa
        if is_st(e):
            notes.append(f"{name}: {type(e).__name__}")
        else:
            bad.append(f"{name}: RAW {type(e).__module__}.{type(e).__name__}: {str(e)[:70]}")
    if not np.array_equal(base, before):
        bad.append(f"{name}: bytes changed")
    try:
        t.to_numpy()
    except Exception as e:  # noqa
        bad.append(f"{name}: tensor unusable afterwards ({type(e).__name__}: {str(e)[:70]})")


f32 = lambda: np.arange(8, dtype=np.float32)  # noqa: E731
attempt("group='x'", f32, lambda t: ctd.all_reduce(t, group="x"))
attempt("group=5", f32, lambda t: ctd.all_reduce(t, group=5))
attempt("group=a tensor", f32, lambda t: ctd.all_reduce(t, group=ct.from_dlpack(np.zeros(2, np.float32))))
for dt in (np.uint16, np.uint32, np.uint64):
    attempt(f"all_reduce {np.dtype(dt).name}", lambda dt=dt: np.arange(8, dtype=dt), lambda t: ctd.all_reduce(t))
    attempt(f"all_gather {np.dtype(dt).name}", lambda dt=dt: np.arange(8, dtype=dt),
            lambda t, dt=dt: ctd.all_gather(ct.from_dlpack(np.zeros(8, dt)), t))
dist.destroy_process_group()
if bad:
    broken("; ".join(bad) + " || " + "; ".join(notes))
held("; ".join(notes))
