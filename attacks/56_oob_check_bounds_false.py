"""Promise (DESIGN): 'Out-of-bounds element access through the safe API: impossible'. The
foundation's ct.load/ct.gather take check_bounds=False, and Ref arrays offer slice and
tiled_view; none may read outside a Ref view base[8:18] of a buffer of 7s (active backend).
"""
# BACKENDS: cpu triton
from _common import *

SRC = '''
@ct.entry
def k_load(z: ct.Mut[ct.f32, "B"], x: ct.Ref[ct.f32, -1]):
    z.store(ct.load(x, index=(0,), shape=(B,), check_bounds=False))

@ct.entry
def k_gather(z: ct.Mut[ct.f32, "B"], x: ct.Ref[ct.f32, -1]):
    z.store(ct.gather(x, ct.arange(B, dtype=ct.int32) - 8, check_bounds=False))

@ct.entry
def k_slice(z: ct.Mut[ct.f32, "B"], x: ct.Ref[ct.f32, -1]):
    z.store(ct.load(x.slice(0, -8, 100), index=(0,), shape=(B,)))

@ct.entry
def k_tiled(z: ct.Mut[ct.f32, "B"], x: ct.Ref[ct.f32, -1]):
    z.store(x.tiled_view((B,), traversal_steps=(3,)).load((1,)))

@ct.entry
def k_adv(z: ct.Mut[ct.f32, "B"], x: ct.Ref[ct.f32, -1]):
    z.store(ct.load_advanced_indexing(x, (ct.arange(B, dtype=ct.int32) - 8,)))

@ct.entry
def k_order(z: ct.Mut[ct.f32, "B"], x: ct.Ref[ct.f32, -1]):
    z.store(ct.load(x, index=(-1,), shape=(B,), padding_mode=ct.PaddingMode.ZERO, check_bounds=False))
'''
ks = kernel_from_source(SRC, tag="cbf")
buf = make_buf(256, fill_value=7.0)
x = ct.from_dlpack(buf)[8:18]
fails = []
for name, k in ks.items():
    if not name.startswith("k_"):
        continue
    try:
        z, _ = k(ct.zeros(64).sync().partition(64), x).sync()
    except Exception as e:  # noqa: BLE001
        if not is_safetile_error(e):
            fails.append(f"{name}: non-safetile {type(e).__name__}")
        continue
    a = z.unpartition().to_numpy()
    if np.count_nonzero(a) > 10:
        fails.append(f"{name}: read {np.count_nonzero(a)} sevens from a 10-element view")
if fails:
    broken(f"[{BACKEND}] " + "; ".join(fails))
held(f"[{BACKEND}] no out-of-view reads")
