"""Promise (safe.md): a mapped partition stores only at indices produced by its own
iterator; 'a tuple, a tile, a rebuilt tuple or an index from another partition's iterator
is a compile-time TileSafetyError'. Try arithmetic on the index, rebuilt tuples, indices
from another partition, from a nested loop of another partition, via helpers."""
from _common import *

SRC = '''
@ct.entry
def k_plus1(c: ct.MappedMut[ct.f32, ("BM",)], v: ct.f32):
    for idx in c.iter_indices():
        i, = idx
        c.store(ct.full((BM,), 1.0, ct.float32), (i + 1,))

@ct.entry
def k_rebuilt(c: ct.MappedMut[ct.f32, ("BM",)], v: ct.f32):
    for idx in c.iter_indices():
        i, = idx
        c.store(ct.full((BM,), 1.0, ct.float32), (i,))

@ct.entry
def k_other(c: ct.MappedMut[ct.f32, ("BM",)], d: ct.MappedMut[ct.f32, ("BM",)], v: ct.f32):
    for idx in d.iter_indices():
        c.store(ct.full((BM,), 1.0, ct.float32), idx)

@ct.entry
def k_nested_other(c: ct.MappedMut[ct.f32, ("BM",)], d: ct.MappedMut[ct.f32, ("BM",)], v: ct.f32):
    for idx in c.iter_indices():
        for jdx in d.iter_indices():
            c.store(ct.full((BM,), 1.0, ct.float32), jdx)

def helper_store(c, t, idx):
    i, = idx
    c.store(t, (i * 1,))

@ct.entry
def k_helper(c: ct.MappedMut[ct.f32, ("BM",)], v: ct.f32):
    for idx in c.iter_indices():
        helper_store(c, ct.full((BM,), 1.0, ct.float32), idx)

@ct.entry
def k_const(c: ct.MappedMut[ct.f32, ("BM",)], v: ct.f32):
    for idx in c.iter_indices():
        c.store(ct.full((BM,), 1.0, ct.float32), (0,))

@ct.entry
def k_bid(c: ct.MappedMut[ct.f32, ("BM",)], v: ct.f32):
    for idx in c.iter_indices():
        c.store(ct.full((BM,), 1.0, ct.float32), (ct.bid(0),))

@ct.entry
def k_where(c: ct.MappedMut[ct.f32, ("BM",)], v: ct.f32):
    for idx in c.iter_indices():
        j = idx if v > 0.0 else idx
        c.store(ct.full((BM,), 1.0, ct.float32), j)

@ct.entry
def k_loopvar_escape(c: ct.MappedMut[ct.f32, ("BM",)], v: ct.f32):
    last = None
    for idx in c.iter_indices():
        last = idx
    c.store(ct.full((BM,), 1.0, ct.float32), last)

@ct.entry
def k_static_eval(c: ct.MappedMut[ct.f32, ("BM",)], v: ct.f32):
    for idx in c.iter_indices():
        c.store(ct.full((BM,), 1.0, ct.float32), ct.static_eval((0,)))
'''
ks = kernel_from_source(SRC, tag="mapfor")
two = {"k_other", "k_nested_other"}
fails = []
for name in ["k_plus1", "k_rebuilt", "k_other", "k_nested_other", "k_helper", "k_const", "k_bid", "k_loopvar_escape", "k_static_eval"]:
    k = ks[name]
    m = ct.zeros(256).sync().partition(32).map(3)
    args = [m]
    if name in two:
        args.append(ct.zeros(256).sync().partition(32).map(3))
    args.append(1.0)
    try:
        r = k(*args).sync()
    except Exception as e:  # noqa: BLE001
        if not is_safetile_error(e):
            fails.append(f"{name}: non-safetile {type(e).__name__}: {e}")
        elif not isinstance(e, (ct.TileSafetyError, ct.TileError)):
            fails.append(f"{name}: refused but as {type(e).__name__} (not a compile-time error): {str(e)[:100]}")
        continue
    fails.append(f"{name}: accepted and ran")
if fails:
    broken("; ".join(fails))
held("forged mapped indices refused at compile time")
