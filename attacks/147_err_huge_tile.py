"""Promise (semantics.md 'Errors'): a mistake in a kernel is a located Tile…Error; a grid too
large for the CPU backend is refused (GridError, nothing runs). A tile of 2**40 elements
(4 TiB of float32; no GPU can hold it) should be refused at compile time, not compiled and
then left to hang or die in the backend. Each case runs in a subprocess with a 20 s limit."""
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
CASES = {
    "constant 2**40 tile summed": "u = ct.full((2**40,), 1.0, ct.float32)\n    z.store(ct.full((B,), 1.0, ct.float32) * ct.sum(u))",
    "materialised 2**36 tile": "u = ct.full((2**36,), 1.0, ct.float32) * ct.astype(ct.bid(0), ct.float32)\n    z.store(ct.full((B,), 1.0, ct.float32) * ct.sum(u))",
}
CHILD = r'''
import sys
sys.path.insert(0, %r)
from _common import *
src = """
@ct.entry
def k(z: ct.Mut[ct.f32, "B"], x: ct.Ref[ct.f32, -1]):
    %s
"""
k = kernel_from_source(src, tag="huge")["k"]
try:
    k(ct.zeros(64).sync().partition(64), ct.zeros(64).sync()).sync()
    print("RESULT accepted-and-ran")
except ct.TileError as e:
    print("RESULT tile-error", type(e).__name__)
except (ct.LaunchError, ct.TileRuntimeError) as e:
    print("RESULT launch-error", type(e).__name__)
except BaseException as e:
    print("RESULT raw", type(e).__module__ + "." + type(e).__name__, str(e)[:80])
'''
fails = []
for name, body in CASES.items():
    code = CHILD % (HERE, body)
    try:
        r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=20,
                           env=dict(os.environ, ATTACK_TIMEOUT="30"))
        out = [ln for ln in r.stdout.splitlines() if ln.startswith("RESULT")]
        res = out[-1] if out else f"no result (rc {r.returncode}): {r.stderr.strip().splitlines()[-1:]}"
    except subprocess.TimeoutExpired:
        res = "RESULT hang (killed after 20 s)"
    if "tile-error" not in res and "launch-error" not in res:
        fails.append(f"{name}: {res}")
if fails:
    print("BROKEN: " + "; ".join(fails))
    sys.exit(1)
print("HELD: huge tiles refused")
