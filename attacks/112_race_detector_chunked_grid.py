"""Promise (semantics.md + race detector): a grid too large for one pass 'runs in chunks of
whole blocks, in block order, with the same results'. A race between block 0 and the last
block (different chunks) must still be reported. One tile value over all blocks > 256 MiB:
a 64x128 float32 tile (32 KiB) over 12288 blocks = 384 MiB."""
import os

from _common import *

SRC = '''
@ct.kernel
def far(o):
    b = ct.bid(0)
    t = ct.full((64, 128), 1.0, ct.float32) * ct.astype(b + 1, ct.float32)
    if (b == 0) | (b == ct.num_blocks(0) - 1):
        ct.store(o, index=(0, 0), tile=t)
'''
k = kernel_from_source(SRC, tag="chunk")["far"]
o = np.zeros((64, 128), np.float32)
G = 12288
try:
    rep = ct.detect_races(k, (G, 1, 1), (o,), raise_on_race=False)
except MemoryError:
    inconclusive("not enough memory")
except Exception as e:  # noqa: BLE001
    broken(f"detector failed on a chunked grid: {type(e).__module__}.{type(e).__name__}: {str(e)[:150]}")
if not rep:
    broken(f"race between block 0 and block {G - 1} (different chunks) not reported")
held(f"chunked grid race reported: {str(rep).splitlines()[0][:100]}")
