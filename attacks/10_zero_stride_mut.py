"""Promise (DESIGN): 'a layout whose elements don't all have distinct addresses (zero or
overlapping strides) can never be mutable'. torch expand / NumPy broadcast views (stride 0)
wrapped by from_dlpack must be refused when partitioned or launched as ct.Mut."""
import torch
from _common import *

cases = []
base = torch.zeros(1, 256)
cases.append(("torch expand (4,256) stride (0,1)", base.expand(4, 256)))
cases.append(("torch expand 1-D stride 0", torch.zeros(1).expand(256)))
a = np.zeros(256, np.float32)
cases.append(("numpy as_strided stride 0", np.lib.stride_tricks.as_strided(a, shape=(4, 64), strides=(0, 4))))
for name, obj in cases:
    try:
        t = ct.from_dlpack(obj)
    except Exception as e:  # noqa: BLE001
        if not is_safetile_error(e):
            broken(f"{name}: from_dlpack raised non-safetile {type(e).__name__}: {e}")
        continue
    shp = t.shape
    nd = len(shp)
    shape = (1, 64) if nd == 2 else (64,)
    try:
        p = t.partition(shape)
    except Exception as e:  # noqa: BLE001
        if not is_safetile_error(e):
            broken(f"{name}: partition raised non-safetile {type(e).__name__}: {e}")
        continue
    k = fill2d if nd == 2 else fill
    x = ct.zeros(shp).sync()
    try:
        k(p, x).sync()
    except Exception as e:  # noqa: BLE001
        if not is_safetile_error(e):
            broken(f"{name}: launch raised non-safetile {type(e).__name__}: {e}")
        continue
    broken(f"{name}: a zero-stride layout was partitioned and launched as ct.Mut")
held("zero-stride layouts never mutable")
