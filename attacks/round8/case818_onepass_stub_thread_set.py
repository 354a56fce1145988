"""Class 4 on ct.launch's one-pass path (C Reader + C++ fact reader, stub launcher as in case 817). One thread
re-points x between A (64 f32), B (64 f32) and a stride-2 view of C (128 f32) with set_ (torch runs set_ with
the GIL released); the main thread launches. Every recorded (pointer, size, stride) must be one of the three
consistent states -- a torn one (A's pointer with C's stride 2) would make a GPU kernel read 256 bytes past A."""
from _r8 import *
import time

fp = c_reader_fastpath(ucopy)
N = 64
A = torch.full((N,), 1.0)
B = torch.full((N,), 2.0)
C = torch.full((2 * N,), 3.0)
x = torch.full((N,), 1.0)
z = torch.zeros(N)
v = StubVariant("V")
fp.learn(v, (4, 1, 1), (x, z, 16))
# teach the stride-2 key too (a fresh stride-2 tensor of the same dtype/alignment)
c2 = torch.full((2 * N,), 0.0)[::2]
fp.learn(v, (4, 1, 1), (c2, z, 16))
states = {(x.data_ptr(), N, 1), (A.data_ptr(), N, 1), (B.data_ptr(), N, 1), (C.data_ptr(), N, 2)}
stop = threading.Event()


def flipper():
    i = 0
    while not stop.is_set():
        m = i % 3
        if m == 0:
            x.set_(A)
        elif m == 1:
            x.set_(B)
        else:
            x.set_(C.untyped_storage(), 0, (N,), (2,))
        i += 1


th = threading.Thread(target=flipper, daemon=True)
th.start()
t_end = time.time() + 6
n = hits = 0
torn = {}
while time.time() < t_end:
    k = len(v.calls)
    if fp(None, (4,), (x, z, 16)):
        hits += 1
        c = v.calls[-1]
        s = (c[5], c[6], c[7])
        if s not in states:
            torn[s] = torn.get(s, 0) + 1
    n += 1
stop.set()
th.join()
names = {A.data_ptr(): "A", B.data_ptr(): "B", C.data_ptr(): "C"}
desc = {f"{names.get(p, hex(p))},n={sz},stride={st}": c for (p, sz, st), c in torn.items()}
print(f"{n} launches, {hits} fast hits, torn: {desc}")
if torn:
    broke(f"{sum(torn.values())} of {hits} one-pass launches passed a torn (pointer, shape, stride): {desc} "
          "(A/B hold 64 floats: stride 2 reads 256 bytes past them)")
held(f"{hits} one-pass launches each passed one consistent state")
