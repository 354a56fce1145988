"""Promise (safe.md 5): '"launch grid required" when nothing determines it'. An entry
kernel with only Ref/scalar parameters and no explicit grid is refused; with a grid it can
only read."""
from _common import *


@ct.entry
def reader(x: ct.Ref[ct.f32, -1], v: ct.f32):
    t = ct.load(x, index=(0,), shape=(64,))


x = ct.rand(64, seed=1).sync()
expect_refusal(lambda: reader(x, 1.0).sync(), ct.GridError, ["grid"], "no grid")
try:
    reader(x, 1.0).grid((2, 1, 1)).sync()
except Exception as e:  # noqa: BLE001
    if not is_safetile_error(e):
        broken(f"explicit grid: non-safetile {type(e).__name__}")
held("grid required")
