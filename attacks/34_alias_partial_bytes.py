"""Promise (safe.md 4): 'where two views' ranges intersect the exact byte sets are
compared'. Two float64 arrays over one buffer offset by 4 bytes overlap in half of each
element; interleaved views of different item sizes overlapping in some bytes only."""
from _common import *


@ct.entry
def f64(z: ct.Mut[ct.f64, "B"], x: ct.Ref["E", -1]):
    z.store(ct.full((B,), 1.0, ct.float64))


buf = np.zeros(4096, np.uint8)
A = np.frombuffer(buf.data, dtype=np.float64, count=128, offset=0)
A.flags.writeable  # noqa: B018
A = np.ndarray((128,), np.float64, buffer=buf, offset=0)
Bv = np.ndarray((128,), np.float64, buffer=buf, offset=4)      # overlaps every element by 4 bytes
expect_refusal(lambda: f64(ct.from_dlpack(A).partition(64), ct.from_dlpack(Bv)).sync(), ct.AliasError, [], "f64 arrays 4 bytes apart")
# interleaved: Mut = float64 elements 0,2,4.. (bytes 0-7, 16-23, ...) ; Ref = float32 at byte 4, stride 16 bytes
M = np.ndarray((64,), np.float64, buffer=buf, offset=0, strides=(16,))
R = np.ndarray((64,), np.float32, buffer=buf, offset=4, strides=(16,))
expect_refusal(lambda: f64(ct.from_dlpack(M).partition(64), ct.from_dlpack(R)).sync(), ct.AliasError, [], "interleaved f64 vs f32 sharing 4 of 8 bytes")
# the same geometry but disjoint (Ref at byte 8) must pass
R2 = np.ndarray((64,), np.float32, buffer=buf, offset=8, strides=(16,))
try:
    f64(ct.from_dlpack(M).partition(64), ct.from_dlpack(R2)).sync()
except Exception as e:  # noqa: BLE001
    broken(f"disjoint interleaved f64/f32 views refused: {e}")
# Ref one byte overlapping the Mut's last byte, at a weird stride
R3 = np.ndarray((2,), np.uint8, buffer=buf, offset=64 * 16 - 9, strides=(1000,))
expect_refusal(lambda: f64(ct.from_dlpack(M).partition(64), ct.from_dlpack(R3)).sync(), ct.AliasError, [], "uint8 Ref overlapping 1 byte of the last Mut element")
held("byte-exact overlap detection")
