"""Promise (safe.md 'Ownership across a launch'): 'Until the launch has run, using a moved
value raises UseAfterMoveError naming the launch'. Partition/tensor/mapped args of an
unrun LaunchOp: every use raises, naming the launch."""
from _common import *

SRC = '''
@ct.entry
def two(z: ct.Mut[ct.f32, "B"], m: ct.MappedMut[ct.f32, ("BM",)], x: ct.Ref[ct.f32, -1]):
    z.store(ct.load_tile_like(x, z))
    for idx in m.iter_indices():
        m.store(ct.full((BM,), 1.0, ct.float32), idx)
'''
two = kernel_from_source(SRC, tag="uam")["two"]
x = ct.rand(256, seed=1).sync()
z = ct.zeros(256).sync().partition(64)
m = ct.zeros(256).sync().partition(32).map(4)
op = two(z, m, x)
fails = []
uses = {
    "z.to_numpy": lambda: z.to_numpy(), "z.unpartition": lambda: z.unpartition(), "z.map": lambda: z.map(2),
    "z again in a launch": lambda: fill(z, ct.rand(256, seed=1).sync()),
    "z.show": lambda: z.show(), "z.grid": lambda: z.grid(),
    "m.to_numpy": lambda: m.to_numpy(), "m.unmap": lambda: m.unmap(), "m.unpartition": lambda: m.unpartition(),
    "m.show": lambda: m.show(),
}
for name, use in uses.items():
    try:
        use()
    except ct.UseAfterMoveError as e:
        if "two" not in str(e):
            fails.append(f"{name}: error does not name the launch: {e}")
        continue
    except Exception as e:  # noqa: BLE001
        fails.append(f"{name}: {type(e).__name__} instead of UseAfterMoveError")
        continue
    fails.append(f"{name}: allowed while moved into an unrun launch")
z, m, x = op.sync()
z.to_numpy(); m.to_numpy()
if fails:
    broken("; ".join(fails))
held("args of an unrun launch unusable, named")
