"""G7 (g: wrong results silently) / G3 (facts of NumPy memory). NumPy arrays that are not in native
byte order ('>f4'), unaligned (np.frombuffer at offset 1), or of kinds that merely share an item
size with a declared element type (datetime64 vs i64, complex64 vs f64 — 8 bytes, void 'V4' vs
f32) reach a launch as raw Refs, through ct.from_dlpack / ct.tensor, and as Mut memory. Each must
either compute exactly what NumPy computes or be refused with a safetile error."""
from _r6 import *


@ct.entry
def cp64(z: ct.Mut[ct.i64, "B"], x: ct.Ref[ct.i64, -1]):
    z.store(ct.load_tile_like(x, z))


N = 64
vals = (np.arange(N, dtype=np.float32) * 1.25 + 0.5)
be = vals.astype(">f4")
buf = bytearray(N * 4 + 1)
ua = np.frombuffer(buf, np.float32, count=N, offset=1)
ua[:] = vals
cases = {"big-endian raw Ref": be, "unaligned raw Ref": ua}
bad, notes = [], []
for name, a in cases.items():
    for how in ("raw", "from_dlpack", "tensor"):
        z = ct.from_dlpack(arr(N)).partition(16)
        try:
            src = a if how == "raw" else (ct.from_dlpack(a) if how == "from_dlpack" else ct.tensor(a).sync())
            z, _ = copyk(z, src).sync()
            got = z.unpartition().to_numpy()
            if not np.array_equal(got, vals):
                bad.append(f"{name} via {how}: got {got[:3]} want {vals[:3]}")
            else:
                notes.append(f"{name}/{how} ok")
        except Exception as e:  # noqa
            if not is_st(e):
                bad.append(f"{name} via {how}: RAW {type(e).__name__}: {str(e)[:80]}")
            else:
                notes.append(f"{name}/{how} refused {type(e).__name__}")
# Mut memory in those layouts
for name, a in (("big-endian Mut", np.zeros(N, ">f4")), ("unaligned Mut", np.frombuffer(bytearray(N * 4 + 1), np.float32, count=N, offset=1))):
    try:
        z = ct.from_dlpack(a).partition(16)
        z, _ = copyk(z, vals.copy()).sync()
        if not np.array_equal(np.asarray(a, np.float32), vals):
            bad.append(f"{name}: memory holds {np.asarray(a)[:3]} want {vals[:3]}")
        else:
            notes.append(f"{name} ok")
    except Exception as e:  # noqa
        (notes if is_st(e) else bad).append(f"{name}: {type(e).__name__}: {str(e)[:80]}")
# same item size, other kind
i64 = np.arange(N, dtype=np.int64)
for name, a in (("datetime64 as i64 Ref", i64.astype("datetime64[s]")), ("complex64 as i64 Ref", np.zeros(N, np.complex64)),
                ("timedelta64 as i64 Ref", i64.astype("timedelta64[s]"))):
    z = ct.from_dlpack(np.zeros(N, np.int64)).partition(16)
    try:
        z, _ = cp64(z, a).sync()
        bad.append(f"{name}: accepted (read as int64)")
    except Exception as e:  # noqa
        (notes if is_st(e) else bad).append(f"{name}: {type(e).__name__}: {str(e)[:80]}")
if bad:
    broken("; ".join(bad))
held("; ".join(notes))
