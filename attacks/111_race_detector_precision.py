"""Promise (safe.md / DESIGN): 'Atomics are not races ...; one block writing an element
twice is program order'; stores past the edge are dropped (no access). The detector must
not report: masked/dropped lanes of edge tiles, one block writing twice, atomic vs atomic,
read vs read, out-of-bounds scatter lanes, disjoint interleaved views of one buffer; and
must report races through views of one buffer passed as different arguments, even of
different dtypes."""
from _common import *

SRC = '''
@ct.kernel
def edge(o, r):
    ct.store(o, index=(ct.bid(0),), tile=ct.full((64,), 1.0, ct.float32))

@ct.kernel
def twice(o, r):
    ct.store(o, index=(ct.bid(0),), tile=ct.full((16,), 1.0, ct.float32))
    ct.store(o, index=(ct.bid(0),), tile=ct.full((16,), 2.0, ct.float32))

@ct.kernel
def atomics(o, r):
    ct.atomic_add(o, ct.arange(16, dtype=ct.int32), ct.full((16,), 1.0, ct.float32))

@ct.kernel
def reads(o, r):
    ct.store(r, index=(ct.bid(0),), tile=ct.load(o, index=(0,), shape=(16,)))

@ct.kernel
def oob_scatter(o, r):
    ct.scatter(o, ct.arange(16, dtype=ct.int32) + 1000, ct.full((16,), 1.0, ct.float32))

@ct.kernel
def two_views(o, r):
    if ct.bid(0) == 0:
        ct.store(o, index=(0,), tile=ct.full((16,), 1.0, ct.float32))
    else:
        ct.store(r, index=(0,), tile=ct.full((16,), 1.0, ct.float32))

@ct.kernel
def view_read(o, r):
    if ct.bid(0) == 0:
        ct.store(o, index=(0,), tile=ct.full((16,), 1.0, ct.float32))
    else:
        t = ct.load(r, index=(0,), shape=(16,))
'''
ks = kernel_from_source(SRC, tag="raceprec")
fails = []


def run(name, grid, args):
    try:
        return ct.detect_races(ks[name], grid, args, raise_on_race=False)
    except Exception as e:  # noqa: BLE001
        fails.append(f"{name}: detector raised {type(e).__name__}: {str(e)[:100]}")
        return None


buf = np.zeros(100, np.float32)
for name, grid, args in [("edge", (2, 1, 1), (buf[0:100], buf)), ("twice", (4, 1, 1), (np.zeros(64, np.float32), buf)),
                         ("atomics", (4, 1, 1), (np.zeros(64, np.float32), buf)),
                         ("reads", (4, 1, 1), (np.zeros(64, np.float32), np.zeros(64, np.float32))),
                         ("oob_scatter", (4, 1, 1), (np.zeros(64, np.float32), buf))]:
    rep = run(name, grid, args)
    if rep:
        fails.append(f"{name}: false race reported: {str(rep)[:120]}")
big = np.zeros(256, np.float32)
rep = run("two_views", (2, 1, 1), (big[0::2], big[1::2]))
if rep:
    fails.append(f"disjoint interleaved views: false race {str(rep)[:100]}")
rep = run("two_views", (2, 1, 1), (big[0::2], big[0::4]))
if rep is not None and not rep:
    fails.append("overlapping strided views of one buffer: race not reported")
rep = run("view_read", (2, 1, 1), (big[0:16], big.view(np.int32)[8:24]))
if rep is not None and not rep:
    fails.append("write vs read through an int32 view of the same bytes: race not reported")
if fails:
    broken("; ".join(fails))
held("no false positives; view races found")
