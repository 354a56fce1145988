"""Promise (safe.md 3, 'A mutable partition has rank at most 3'): non-power-of-two
sub-tensors, rank-4 Mut partitions, ranks that do not match the annotation are refused
with safetile errors before anything runs; arguments stay usable."""
from _common import *

x = ct.rand(300, seed=1).sync()
for shape in [100, 3, 48]:
    z = ct.zeros(300).sync().partition(shape)
    before = snap(z)
    expect_refusal(lambda: fill(z, x).sync(), ct.LaunchError, [], f"partition({shape})")
    if z.is_moved or snap(z) != before:
        broken(f"partition({shape}): refused but touched")


@ct.entry
def r4(z: ct.Mut[ct.f32, (1, 1, 1, 4)]):
    z.store(ct.full((1, 1, 1, 4), 1.0, ct.float32))


t4 = ct.zeros((2, 2, 2, 4)).sync()
try:
    p = t4.partition((1, 1, 1, 4))
    expect_refusal(lambda: r4(p).sync(), None, [], "rank-4 Mut partition")
except Exception as e:  # noqa: BLE001
    if not is_safetile_error(e):
        broken(f"rank-4 partition: non-safetile {type(e).__name__}: {e}")
z2 = ct.zeros((16, 16)).sync().partition((4, 4))
expect_refusal(lambda: fill(z2, x).sync(), ct.LaunchError, [], "rank-2 partition for a rank-1 Mut")
held("partition shape rules enforced")
