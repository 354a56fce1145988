"""Promise (DESIGN race detector): 'it records the bytes each block writes, reads and
updates atomically, and reports conflicts between different blocks (write-write,
write-read, atomic-plain), with the blocks and the region'. One kernel per kind, through
tile stores, scatter, advanced indexing, gather, tiled views and slices."""
from _common import *

SRC = '''
@ct.kernel
def ww_store(o, r):
    ct.store(o, index=(0,), tile=ct.full((16,), 1.0, ct.float32))

@ct.kernel
def ww_scatter(o, r):
    ct.scatter(o, ct.arange(16, dtype=ct.int32) * 0 + 5, ct.full((16,), 1.0, ct.float32))

@ct.kernel
def ww_adv(o, r):
    ct.store_advanced_indexing(o, (ct.arange(16, dtype=ct.int32) // 4,), ct.full((16,), 1.0, ct.float32))

@ct.kernel
def ww_slice(o, r):
    ct.store(o.slice(0, ct.bid(0) * 8, ct.bid(0) * 8 + 16), index=(0,), tile=ct.full((16,), 1.0, ct.float32))

@ct.kernel
def ww_tiled(o, r):
    v = o.tiled_view((16,), traversal_steps=(8,))
    v.store((ct.bid(0),), ct.full((16,), 1.0, ct.float32))

@ct.kernel
def wr_load(o, r):
    if ct.bid(0) == 0:
        ct.store(o, index=(0,), tile=ct.full((16,), 1.0, ct.float32))
    else:
        ct.store(r, index=(ct.bid(0),), tile=ct.load(o, index=(0,), shape=(16,)))

@ct.kernel
def wr_gather(o, r):
    if ct.bid(0) == 0:
        ct.scatter(o, ct.arange(16, dtype=ct.int32), ct.full((16,), 1.0, ct.float32))
    else:
        ct.store(r, index=(ct.bid(0),), tile=ct.gather(o, ct.arange(16, dtype=ct.int32) + 15))

@ct.kernel
def wr_adv(o, r):
    if ct.bid(0) == 0:
        ct.store(o, index=(1,), tile=ct.full((16,), 1.0, ct.float32))
    else:
        ct.store(r, index=(ct.bid(0),), tile=ct.load_advanced_indexing(o, (ct.arange(16, dtype=ct.int32) + 16,)))

@ct.kernel
def ap_add(o, r):
    if ct.bid(0) == 0:
        ct.atomic_add(o, ct.arange(16, dtype=ct.int32), ct.full((16,), 1.0, ct.float32))
    else:
        ct.store(o, index=(0,), tile=ct.full((16,), 1.0, ct.float32))

@ct.kernel
def ap_read(o, r):
    if ct.bid(0) == 0:
        ct.atomic_add(o, ct.arange(16, dtype=ct.int32), ct.full((16,), 1.0, ct.float32))
    else:
        ct.store(r, index=(ct.bid(0),), tile=ct.load(o, index=(0,), shape=(16,)))

@ct.kernel
def ap_xchg(o, r):
    if ct.bid(0) == 0:
        ct.atomic_xchg(o, ct.arange(16, dtype=ct.int32), ct.full((16,), 1.0, ct.float32))
    else:
        ct.store(o, index=(0,), tile=ct.full((16,), 2.0, ct.float32))

@ct.kernel
def ap_tiledview(o, r):
    v = o.tiled_view((16,))
    if ct.bid(0) == 0:
        v.atomic_add((0,), ct.full((16,), 1.0, ct.float32))
    else:
        v.store((0,), ct.full((16,), 1.0, ct.float32))
'''
ks = kernel_from_source(SRC, tag="race")
fails = []
for name, k in ks.items():
    if not name[:3] in ("ww_", "wr_", "ap_"):
        continue
    o = np.zeros(256, np.float32)
    r = np.zeros(256, np.float32)
    try:
        rep = ct.detect_races(k, (2, 1, 1), (o, r), raise_on_race=False)
    except Exception as e:  # noqa: BLE001
        fails.append(f"{name}: detector raised {type(e).__module__}.{type(e).__name__}: {str(e)[:100]}")
        continue
    txt = str(rep)
    if not rep or "(0, 0, 0)" not in txt or "(1, 0, 0)" not in txt:
        fails.append(f"{name}: race not reported ({txt[:80]!r})")
if fails:
    broken("; ".join(fails))
held("every conflict kind reported with both blocks")
