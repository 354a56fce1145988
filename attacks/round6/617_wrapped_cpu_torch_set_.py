"""G3 ("it keeps the memory alive (a view holds its base, a torch alias its storage)"; Outside lists
only *resizing* a wrapped CPU torch tensor's storage) and G8 ("A safetile tensor holds a private
view of its memory, so whoever handed the array in cannot reset its shape or strides"). Here a
CPU torch tensor wrapped by ct.from_dlpack is re-pointed in place with torch's set_() (and
as_strided_ / a .data assignment), which drop the tensor's reference to its original storage
without resizing anything, or moved to shared memory with share_memory_() (what one does before
handing a tensor to torch.multiprocessing), which swaps the storage's buffer in place. If safetile's view does not keep that storage alive, the next safe
launch writes freed memory that torch's allocator has handed to new tensors."""
from _r6 import *
import gc
import json
import os
import subprocess
import sys
import torch

N = 1 << 14
VARIANTS = ("set_", "data=", "as_strided_ + set_", "share_memory_()")


def child(how):
    t = torch.zeros(N)
    w = ct.from_dlpack(t)
    p = w.partition(1024)
    (p,) = inc(p).sync()
    if how == "set_":
        t.set_(torch.zeros(N))
    elif how == "data=":
        t.data = torch.zeros(N)
    elif how == "share_memory_()":
        t.share_memory_()          # moves the storage's bytes into shared memory, frees the old block
    else:
        t.as_strided_((N // 2,), (2,))
        t.set_(torch.empty(0))
    gc.collect()
    junk = [np.full(N, 7.0, np.float32) for _ in range(50)] + [torch.full((N,), 7.0) for _ in range(50)]
    try:
        (p,) = inc(p).sync()
    except Exception as e:  # noqa
        return f"launch refused {type(e).__name__}"
    hit = sum(int((np.asarray(j) != 7.0).any()) for j in junk)
    got = p.unpartition().to_numpy()
    if hit:
        return f"BAD the safe launch wrote {hit} fresh array(s) allocated after the re-point (freed storage reused)"
    if not (got == 2.0).all():
        return f"BAD wrapped tensor reads {got[:2]} (expected 2.0): freed memory"
    return "storage kept alive, 2.0"


if len(sys.argv) > 1:
    print("RESULT", json.dumps(child(sys.argv[1])))
    sys.stdout.flush()
    os._exit(0)

bad, notes = [], []
for how in VARIANTS:
    r = subprocess.run([sys.executable, os.path.abspath(__file__), how], capture_output=True, text=True, timeout=60)
    line = [ln for ln in r.stdout.splitlines() if ln.startswith("RESULT ")]
    if r.returncode < 0:
        bad.append(f"{how}: the process died with signal {-r.returncode} (SIGSEGV=11) during the next safe launch")
    elif not line:
        bad.append(f"{how}: child failed rc={r.returncode}: {(r.stdout + r.stderr).strip().splitlines()[-1:]}")
    else:
        msg = json.loads(line[0][7:])
        (bad if msg.startswith("BAD") else notes).append(f"{how}: {msg}")
# docs/safety.md G3 Outside (added during this round): "Reallocating that storage in place — resize_
# beyond its size, share_memory_() — frees the memory under every view of it ...: do not"
DOCUMENTED = ("share_memory_()",)
doc = [b for b in bad if b.startswith(DOCUMENTED)]
bad = [b for b in bad if not b.startswith(DOCUMENTED)]
if bad:
    broken("; ".join(bad + doc) + " || " + "; ".join(notes))
if doc:
    outside("G3 Outside (share_memory_ reallocates the storage in place): " + "; ".join(doc) + " || " + "; ".join(notes))
held("; ".join(notes))
