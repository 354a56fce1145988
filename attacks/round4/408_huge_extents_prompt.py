"""Promise (safety.md G3): "Intersecting ranges are compared exactly as sets of bytes ...
distinct_elements refuses zero strides ... (beyond 4 MiB, conservatively refused)"; G7: "no
refusal waits on a computation that never ends".

Attack: arguments whose element counts are astronomically large but whose memory is tiny
(as_strided views with zero strides: 2**30..2**62 elements over a few bytes), placed so their
byte ranges intersect a Mut's range while sharing no byte with it (a zero-stride Ref on an odd
element between a Mut's even elements), and as Refs far from the Mut, 2-D with one zero axis.
The launch check must answer (accept or refuse with a safetile error) within 2 s each; an
exact byte enumeration of such a view would not end.
"""
from _r4 import *

import threading
import time

from numpy.lib.stride_tricks import as_strided

K = kernel_from_source('''
@ct.entry
def f2(z: ct.Mut[ct.f32, "B"], x: ct.Ref[ct.f32, (-1, -1)]):
    z.store(ct.full((B,), 1.0, ct.float32))
''', tag="r4_408")
buf = np.zeros(8192, np.float32)
CASES = [
    ("zero-stride 2**40 on an odd element between even Mut elements", buf[0:128:2], as_strided(buf[1:], (2**40,), (0,)), fill),
    ("zero-stride 2**60 far away", buf[0:64], as_strided(buf[4000:], (2**60,), (0,)), fill),
    ("2-D (2**31, 2) zero/odd strides, interleaved", buf[0:128:2], as_strided(buf[1:], (2**31, 2), (0, 8)), K["f2"]),
    ("2-D (2**20, 2**20) zero strides inside the Mut range", buf[0:256:4], as_strided(buf[2:], (2**20, 2**20), (0, 0)), K["f2"]),
    ("2-D (3, 2**40) stride 0 then 16 bytes", buf[0:256:4], as_strided(buf[1:], (3, 2**40), (16, 0)), K["f2"]),
]
fails = []
notes = []
for name, m, a, k in CASES:
    box = {}

    def go():
        try:
            op = k(ct.from_dlpack(m).partition(64), a)
            box["r"] = "accepted"
            op.cancel()
        except Exception as e:  # noqa: BLE001
            box["r"] = e
    t0 = time.perf_counter()
    th = threading.Thread(target=go, daemon=True)
    th.start()
    th.join(2.0)
    if th.is_alive():
        fails.append(f"{name}: the launch check has not answered after 2 s")
        continue
    r = box["r"]
    if isinstance(r, Exception) and not is_safetile_error(r):
        fails.append(f"{name}: non-safetile {type(r).__name__}: {str(r)[:80]}")
    notes.append(f"{name}: {r if isinstance(r, str) else type(r).__name__} in {time.perf_counter() - t0:.3f}s")
print("\n".join(notes))
if fails:
    broken("; ".join(fails))
held("huge zero-stride arguments answered promptly")
