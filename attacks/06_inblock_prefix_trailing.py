"""Promise (safe.md): the in-block partition store on a partition_prefix((1,)) of
[heads, T, D] writes only this block's head; an index past T on the trailing axis, or a
head index other than 0, writes nothing anywhere. Active backend."""
# BACKENDS: cpu triton
from _common import *


@ct.entry
def kv_write(kc: ct.Mut[ct.f32, (1, "T", "D")], h: int, pos: int):
    t = ct.full((1, 1, 8), 1.0, ct.float32) * (ct.bid(0) + 1)
    kc.partition((1, 1, 8)).store(t, (h, pos, 0))


for h, pos in [(0, 3), (1, 0), (-1, 0), (0, 16), (0, -1), (0, 17), (2, 2), (0, 2**20)]:
    buf = make_buf((4, 16, 8))
    kc = ct.from_dlpack(buf).partition_prefix((1,))
    kc, _, _ = kv_write(kc, h, pos).sync()
    a = as_np(buf)
    exp = np.zeros((4, 16, 8), np.float32)
    if h == 0 and 0 <= pos < 16:
        for b in range(4):
            exp[b, pos, :] = b + 1
    if not np.array_equal(a, exp):
        nz = np.argwhere(a != exp)
        broken(f"[{BACKEND}] store at (h={h}, pos={pos}) wrote outside the allowed rows: {nz[:6].tolist()}")
held(f"[{BACKEND}] prefix in-block stores stay in the block's own head and row range")
