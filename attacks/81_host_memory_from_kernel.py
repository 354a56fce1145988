"""Promise: the safe style's guarantees rest on the launch's arguments being the only
memory a kernel touches (ownership, aliasing, the in-flight registry). Kernel code must not
load from or store to host memory reached through globals, closures, dataclass fields,
constants or default arguments (NumPy arrays, safetile Tensors, Shared, torch tensors)."""
import dataclasses

import torch
from _common import *

G_NP = np.zeros(64, np.float32)
G_T = ct.zeros(64).sync()
G_S = ct.zeros(64).sync().shared()
G_TORCH = torch.zeros(64)


@dataclasses.dataclass
class Holder:
    arr: object


G_DC = Holder(np.zeros(64, np.float32))
targets = {"G_NP": lambda: G_NP, "G_T": lambda: G_T.to_numpy(), "G_S": lambda: G_S.to_numpy(),
           "G_TORCH": lambda: G_TORCH.numpy(), "G_DC.arr": lambda: G_DC.arr}
fails = []
for i, tgt in enumerate(targets):
    for j, body in enumerate([
        f"ct.store({tgt}, index=(0,), tile=ct.full((64,), 9.0, ct.float32))",
        f"ct.scatter({tgt}, ct.arange(64, dtype=ct.int32), ct.full((64,), 9.0, ct.float32))",
        f"ct.atomic_add({tgt}, ct.arange(64, dtype=ct.int32), ct.full((64,), 9.0, ct.float32))",
        f"z.store(ct.load({tgt}, index=(0,), shape=(B,)))",
        f"z.store(ct.gather({tgt}, ct.arange(B, dtype=ct.int32)))",
    ]):
        src = f'''
@ct.entry
def k(z: ct.Mut[ct.f32, "B"], x: ct.Ref[ct.f32, -1]):
    {body}
'''
        k = kernel_from_source(src, {"G_NP": G_NP, "G_T": G_T, "G_S": G_S, "G_TORCH": G_TORCH, "G_DC": G_DC}, tag=f"host{i}_{j}")["k"]
        try:
            k(ct.zeros(64).sync().partition(64), ct.zeros(64).sync()).sync()
            fails.append(f"{body[:60]}: ran")
        except Exception as e:  # noqa: BLE001
            if not isinstance(e, ct.TileError):
                fails.append(f"{body[:50]}: {type(e).__name__}")
        if np.any(targets[tgt]() != 0):
            fails.append(f"{tgt} was written by kernel code")
# closure / default argument / Constant parameter
def make(a):
    src = '''
def make_k(a):
    @ct.entry
    def k(z: ct.Mut[ct.f32, "B"], x: ct.Ref[ct.f32, -1]):
        ct.store(a, index=(0,), tile=ct.full((B,), 9.0, ct.float32))
    return k
'''
    return kernel_from_source(src, tag="hostclo")["make_k"](a)


for name, obj in [("closure ndarray", G_NP), ("closure Tensor", G_T)]:
    try:
        make(obj)(ct.zeros(64).sync().partition(64), ct.zeros(64).sync()).sync()
        fails.append(f"{name}: ran")
    except Exception as e:  # noqa: BLE001
        if not isinstance(e, ct.TileError):
            fails.append(f"{name}: {type(e).__name__}")
src = '''
@ct.entry
def kc(z: ct.Mut[ct.f32, "B"], a: ct.Constant[object]):
    ct.store(a, index=(0,), tile=ct.full((B,), 9.0, ct.float32))
'''
try:
    kc = kernel_from_source(src, tag="hostconst")["kc"]
    kc(ct.zeros(64).sync().partition(64), G_T).sync()
    fails.append("Tensor passed as ct.Constant stored to")
except Exception as e:  # noqa: BLE001
    if not is_safetile_error(e) and not isinstance(e, TypeError):
        fails.append(f"Constant: {type(e).__name__}")
if np.any(G_NP != 0) or np.any(G_T.to_numpy() != 0):
    fails.append("host memory written")
if fails:
    broken("; ".join(fails))
held("kernel code cannot reach host memory outside its arguments")
