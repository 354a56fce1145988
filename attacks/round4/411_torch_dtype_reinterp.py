"""Promise (safety.md G3): "Intersecting ranges are compared exactly as sets of bytes (not element
starts), so an f32 view and a u8 view one byte apart overlap"; G6: claims by extent.

Attack (torch reinterpretations, which round 1's 33 did with NumPy only): the Mut is a
partition of a float32 torch buffer; Refs are torch views of the same storage through
.view(torch.bfloat16 / float16 / uint8 / int16 / float8_e4m3fn / float8_e5m2), with storage
offsets landing one byte into the Mut's range or ending one byte into it, 2-D views
(.view(dtype) of a reshaped tensor, transposed), and untyped_storage-based views
(torch.tensor([], dtype).set_(storage, byte_offset//itemsize...)). Every overlapping pair must
be refused (AliasError); disjoint neighbours must run. Then the claims side: the f32 tensor
shared, the u8/bf16 view wrapped and partitioned. Active backend.
"""
# BACKENDS: cpu triton
from _r4 import *

import torch

K = kernel_from_source('''
@ct.entry
def rd(z: ct.Mut[ct.f32, "B"], x: ct.Ref["E", -1]):
    z.store(ct.full((B,), 1.0, ct.float32))

@ct.entry
def wr(z: ct.Mut["E", "B"]):
    z.store(ct.full((B,), 1, E))
''', tag="r4_411")
fails = []
notes = []
DTS = [torch.bfloat16, torch.float16, torch.uint8, torch.int16, torch.float8_e4m3fn, torch.float8_e5m2]


def byteset(t):
    t0 = t.untyped_storage().data_ptr()
    it = t.element_size()
    out = set()
    for idx in np.ndindex(*t.shape):
        a = t.data_ptr() + sum(i * s * it for i, s in zip(idx, t.stride()))
        out.update(range(a - t0, a - t0 + it))
    return out


for dt in DTS:
    for lo, n in [(255, 1), (256, 4), (511, 2), (512, 8), (100, 160), (0, 64)]:
        buf = torch.zeros(256)                     # 1024 bytes
        mut = buf[64:128]                          # bytes 256..511
        b8 = buf.view(torch.uint8)
        es = torch.empty((), dtype=dt).element_size()
        lo -= lo % es
        ref = b8[lo:lo + n * es].view(dt)
        ov = bool(byteset(mut) & byteset(ref))
        try:
            op = K["rd"](ct.from_dlpack(mut).partition(64), ref)
            op.cancel()
            ran = True
        except Exception as e:  # noqa: BLE001
            if not is_safetile_error(e):
                fails.append(f"{dt} at byte {lo}: non-safetile {type(e).__name__}: {str(e)[:80]}")
                continue
            ran = False
            why = type(e).__name__
        if ov and ran:
            fails.append(f"Ref {dt} bytes [{lo}, {lo + ref.numel() * ref.element_size()}) overlaps the f32 Mut "
                         "bytes [256, 512) but the launch was accepted")
        if not ov and not ran and why == "AliasError":
            notes.append(f"{dt}@{lo}: disjoint but refused (conservative)")
# claims: f32 shared, reinterpreting views partitioned and written
for dt in [torch.uint8, torch.int16, torch.bfloat16]:
    for lo in (0, 255, 511):
        buf = torch.arange(256, dtype=torch.float32)
        s = ct.from_dlpack(buf[64:128]).shared()
        snapv = buf[64:128].clone()
        es = torch.empty((), dtype=dt).element_size()
        lo -= lo % es
        w = buf.view(torch.uint8)[lo:lo + 2 * es].view(dt)
        try:
            K["wr"](ct.from_dlpack(w).partition(2)).sync()
        except Exception as e:  # noqa: BLE001
            if not is_safetile_error(e):
                fails.append(f"claims {dt}@{lo}: non-safetile {type(e).__name__}: {str(e)[:80]}")
        if not torch.equal(buf[64:128], snapv):
            fails.append(f"a {dt} view at byte {lo} was partitioned and written over a live Shared f32 tensor")
        del s
print(notes[:5])
if fails:
    broken(f"[{BACKEND}] " + "; ".join(fails[:4]))
held(f"[{BACKEND}] torch dtype reinterpretations: overlaps refused, Shared untouched")
