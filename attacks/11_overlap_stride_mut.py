"""Promise (DESIGN): overlapping strides can never be mutable. Overlapping as_strided
windows and torch.unfold (windows of size 8 step 4) wrapped with from_dlpack."""
import torch
from _common import *

a = np.zeros(512, np.float32)
cases = [
    ("numpy as_strided (64,8) strides (16,4)", np.lib.stride_tricks.as_strided(a, shape=(64, 8), strides=(16, 4))),
    ("numpy sliding_window_view", np.lib.stride_tricks.sliding_window_view(a, 8)[:64]),
    ("torch unfold(0, 8, 4)", torch.zeros(260).unfold(0, 8, 4)),
    ("torch as_strided (8,64) strides (32,1)", torch.zeros(512).as_strided((8, 64), (32, 1))),
    ("torch as_strided 1-D with stride 1 over transposed 2D", torch.zeros(64, 64).t().as_strided((64, 64), (1, 1))),
]
for name, obj in cases:
    try:
        t = ct.from_dlpack(obj)
        shp = t.shape
        p = t.partition((8, 8))
        z, x = fill2d(p, ct.zeros(shp).sync()).sync()
    except Exception as e:  # noqa: BLE001
        if not is_safetile_error(e):
            broken(f"{name}: raised non-safetile {type(e).__module__}.{type(e).__name__}: {e}")
        continue
    broken(f"{name}: overlapping layout launched as ct.Mut")
held("overlapping layouts never mutable")
