"""Promise (semantics.md): 'Tile-space store, scatter and atomics drop out-of-bounds
elements. Negative indices are out of bounds'; gathers read padding there. With int64
index tiles whose values exceed 2**31 or 2**32 (e.g. 2**32 + i), a backend that narrows
to 32 bits would read/write in-bounds elements instead. Safe style (Ref gather) and the
in-block partition store with an int64 scalar. Active backend."""
# BACKENDS: cpu triton
from _common import *

SRC = '''
@ct.entry
def g64(z: ct.Mut[ct.f32, "B"], x: ct.Ref[ct.f32, -1], off: ct.i64):
    z.store(ct.gather(x, ct.arange(B, dtype=ct.int64) + off))

@ct.entry
def adv64(z: ct.Mut[ct.f32, "B"], x: ct.Ref[ct.f32, -1], off: ct.i64):
    z.store(ct.load_advanced_indexing(x, (ct.arange(B, dtype=ct.int64) + off,)))

@ct.entry
def part64(z: ct.Mut[ct.f32, "B"], x: ct.Ref[ct.f32, -1], off: ct.i64):
    z.partition((16,)).store(ct.full((16,), 5.0, ct.float32), (off,))
'''
ks = kernel_from_source(SRC, tag="i64")
xbuf = make_buf(64, fill_value=7.0)
x = ct.from_dlpack(xbuf)
fails = []
for off in [2**32, 2**32 + 8, -(2**32), 2**31, 2**40, -(2**63)]:
    for name in ["g64", "adv64"]:
        try:
            z, _, _ = ks[name](ct.from_dlpack(make_buf(64)).partition(64), x, np.int64(off)).sync()
        except Exception as e:  # noqa: BLE001
            if not is_safetile_error(e):
                fails.append(f"{name}({off}): non-safetile {type(e).__name__}: {str(e)[:60]}")
            continue
        a = z.unpartition().to_numpy()
        if np.any(a != 0):
            fails.append(f"{name} at offset {off}: read {np.count_nonzero(a)} in-bounds elements (index wrapped)")
    zb = make_buf(64)
    try:
        ks["part64"](ct.from_dlpack(zb).partition(64), x, np.int64(off)).sync()
    except Exception as e:  # noqa: BLE001
        if not is_safetile_error(e):
            fails.append(f"part64({off}): non-safetile {type(e).__name__}: {str(e)[:60]}")
        continue
    if np.any(as_np(zb) != 0):
        fails.append(f"in-block store at index {off}: wrote {np.count_nonzero(as_np(zb))} elements (index wrapped)")
if fails:
    broken(f"[{BACKEND}] " + "; ".join(fails))
held(f"[{BACKEND}] 64-bit indices never wrap")
