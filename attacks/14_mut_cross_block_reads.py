"""Promise (safe.md): a Mut parameter is 'this block's exclusive sub-tensor'; every
sub-tensor is owned by exactly one block. No kernel may read another block's sub-tensor of
a Mut (a read-write race): load_tile_like from a Mut, in-block partition loads, mapped
loads at forged indices, gather/load/atomics on a Mut, load_advanced_indexing."""
from _common import *

SRC = '''
@ct.entry
def ltl(z: ct.Mut[ct.f32, "B"], w: ct.Mut[ct.f32, "C"]):
    w.store(ct.load_tile_like(z, w))

@ct.entry
def inner_load(z: ct.Mut[ct.f32, "B"], w: ct.Mut[ct.f32, "B"]):
    w.store(z.partition((B,)).load((1,)))

@ct.entry
def mapped_load(c: ct.MappedMut[ct.f32, ("BM",)], w: ct.Ref[ct.f32, -1]):
    for idx in c.iter_indices():
        c.store(c.load((0,)), idx)

@ct.entry
def gather_mut(z: ct.Mut[ct.f32, "B"], w: ct.Mut[ct.f32, "B"]):
    w.store(ct.gather(z, ct.arange(B, dtype=ct.int32) + B))

@ct.entry
def load_mut(z: ct.Mut[ct.f32, "B"], w: ct.Mut[ct.f32, "B"]):
    w.store(ct.load(z, index=(ct.bid(0) + 1,), shape=(B,)))

@ct.entry
def adv_mut(z: ct.Mut[ct.f32, "B"], w: ct.Mut[ct.f32, "B"]):
    w.store(ct.load_advanced_indexing(z, (ct.arange(B, dtype=ct.int32) + B,)))

@ct.entry
def atomic_mut(z: ct.Mut[ct.f32, "B"], w: ct.Mut[ct.f32, "B"]):
    ct.atomic_add(z, ct.arange(B, dtype=ct.int32) + B, ct.full((B,), 1.0, ct.float32))

@ct.entry
def num_tiles_mut(z: ct.Mut[ct.f32, "B"], w: ct.Mut[ct.f32, "B"]):
    w.store(ct.full((B,), 1.0, ct.float32) * ct.num_tiles(z, 0, shape=(B,)))
'''
ks = kernel_from_source(SRC, tag="xblock")
fails = []
for name, k in ks.items():
    if name.startswith("_") or not isinstance(k, ct.EntryKernel):
        continue
    if name == "ltl":
        args = (ct.zeros(256).sync().partition(64), ct.zeros(512).sync().partition(128))
    elif name == "mapped_load":
        args = (ct.zeros(256).sync().partition(32).map(2), ct.zeros(4).sync())
    else:
        args = (ct.zeros(256).sync().partition(64), ct.zeros(256).sync().partition(64))
    try:
        k(*args).sync()
        if name != "num_tiles_mut":
            fails.append(f"{name}: ran")
    except Exception as e:  # noqa: BLE001
        if not isinstance(e, ct.TileError):
            fails.append(f"{name}: {type(e).__module__}.{type(e).__name__}")
if fails:
    broken("; ".join(fails))
held("no cross-block reads of a Mut")
