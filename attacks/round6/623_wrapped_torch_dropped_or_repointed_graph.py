"""G3 (memory kept alive "while the launch is built, runs and is replayed"), extending 617: (a) the
program drops its only reference to a CPU torch tensor wrapped by ct.from_dlpack (`del t`) — a
normal thing to do once it is wrapped; (b) a graph is captured over a wrapped CPU torch tensor,
then the tensor is re-pointed with set_(); replays must not write the freed storage (a replay
is refused when "the storage of a torch alias was reallocated since" — here it was freed);
(c) the same with a raw torch Ref re-pointed after capture (documented: refused)."""
from _r6 import *
import gc
import torch

N = 1 << 14
bad, notes = [], []


def junk():
    return [np.full(N, 7.0, np.float32) for _ in range(50)] + [torch.full((N,), 7.0) for _ in range(30)]


def hits(js):
    return sum(int((np.asarray(j) != 7.0).any()) for j in js)


# (a) del t
t = torch.zeros(N)
p = ct.from_dlpack(t).partition(1024)
del t
gc.collect()
js = junk()
(p,) = inc(p).sync()
h = hits(js)
v = p.unpartition().to_numpy()
if h or not (v == 1.0).all():
    bad.append(f"(a) del t: launch wrote {h} fresh arrays / reads {v[:2]}")
else:
    notes.append("(a) del t: storage kept alive")

# (b) graph over a wrapped tensor, set_ after capture
t = torch.zeros(N)
z = ct.from_dlpack(t).partition(1024)
g = inc(z).graph()
g.launch()
t.set_(torch.zeros(N))
gc.collect()
js = junk()
try:
    g.launch()
    h = hits(js)
    if h:
        bad.append(f"(b) graph replay after set_ of the wrapped tensor wrote {h} fresh arrays")
    else:
        notes.append("(b) replay ran, nothing foreign written")
except Exception as e:  # noqa
    notes.append(f"(b) replay refused {type(e).__name__}")

# (c) raw torch Ref re-pointed after capture
xt = torch.full((N,), 2.0)
z2 = ct.from_dlpack(np.zeros(N, np.float32)).partition(1024)
g2 = fill1(z2, xt).graph()
xt.set_(torch.full((N,), 5.0))
gc.collect()
try:
    g2.launch()
    notes.append("(c) replay ran")
except Exception as e:  # noqa
    notes.append(f"(c) replay refused {type(e).__name__}")
if bad:
    broken("; ".join(bad) + " || " + "; ".join(notes))
held("; ".join(notes))
