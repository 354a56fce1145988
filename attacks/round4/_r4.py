"""Round-4 helpers: attacks/_common.py (through sys.path) and a few shared kernels."""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from _common import *  # noqa: E402,F401,F403
from _common import _hang  # noqa: E402,F401


def slow_fill_src():
    """An entry kernel whose blocks each spin a while (a long-running launch on the CPU backend)."""
    return '''
@ct.entry
def slow(z: ct.Mut[ct.f32, "B"], x: ct.Ref[ct.f32, -1], reps: ct.Constant[int]):
    acc = ct.load_tile_like(x, z)
    for i in range(reps):
        acc = acc * 1.0
    z.store(acc + 1.0)
'''
