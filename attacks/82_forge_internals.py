"""Promise (semantics.md 'What kernel code can see' + safe.md mapped partitions): kernel
code sees only the documented surface; indices of a mapped partition come only from its
iterator. Attempts through ct.static_eval to fetch safetile internals (private module
functions, device classes, index constructors, unbound methods, raw IR emitters) and use
them to forge an index, unwrap a Mut or store to a Ref must all be compile-time errors."""
from _common import *

MAPPED = {
    "forge PartitionIndex": "PI = ct.static_eval(ct.safe.device.PartitionIndex)\n    for idx in c.iter_indices():\n        c.store(t, PI((0,), c))",
    "PartitionIndex via type(idx)": "for idx in c.iter_indices():\n        P = type(idx)\n        c.store(t, P((0,), c))",
    "mutate idx.coords": "for idx in c.iter_indices():\n        idx.coords = (0,)\n        c.store(t, idx)",
    "forge _IndexRange": "IR = ct.static_eval(ct.safe.device._IndexRange)\n    for idx in IR(c):\n        c.store(ct.full((BM,), 1.0, ct.float32), (0,))",
    "private _check_index": "for idx in c.iter_indices():\n        c._check_index(idx)",
}
PLAIN = {
    "private ops fn via static_eval on Ref": "f = ct.static_eval(ct.ops.memory._store_box)\n    f(x, [ct.bid(0) * 0], t, (0,), None)",
    "private ops fn via static_eval on Mut": "f = ct.static_eval(ct.ops.memory._store_box)\n    f(z, [ct.bid(0) * 0], t, (0,), None)",
    "_array(z) via static_eval": "f = ct.static_eval(ct.ops.memory._array)\n    a = f(z)",
    "getattr fetched by static_eval": "g = ct.static_eval(getattr)\n    a = g(z, '_array')",
    "object.__getattribute__": "g = ct.static_eval(object.__getattribute__)\n    a = g(z, '_index')",
    "raw emit": "ct.ops.memory.emit('store', [t, t])",
    "MutTensor ctor over the Ref": "M = ct.static_eval(ct.safe.device.MutTensor)\n    m = M('w', x, (B,), 1)\n    m.store(t)",
    "RefTensor.store unbound": "S = ct.static_eval(ct.safe.device.RefTensor.store)\n    S(x, t)",
    "OwnedPartition over the Ref": "O = ct.static_eval(ct.safe.device.OwnedPartition)\n    O(x, (B,)).store(t, (0,))",
}
fails = []
for i, (name, body) in enumerate(MAPPED.items()):
    src = f'''
@ct.entry
def k(c: ct.MappedMut[ct.f32, ("BM",)], x: ct.Ref[ct.f32, -1]):
    t = ct.full((BM,), 1.0, ct.float32) * (ct.bid(0) + 1)
    {body}
'''
    k = kernel_from_source(src, tag=f"forgem{i}")["k"]
    try:
        r = k(ct.zeros(256).sync().partition(32).map(4), ct.zeros(4).sync()).sync()
        a = r[0].to_numpy()
        if not all(np.all(a[s * 32:(s + 1) * 32] == (s % 4) + 1) for s in range(8)):
            fails.append(f"{name}: ran and sub-tensors were written by the wrong blocks: {a[::32]}")
        else:
            fails.append(f"{name}: ran (harmless here)")
    except Exception as e:  # noqa: BLE001
        if not isinstance(e, ct.TileError):
            fails.append(f"{name}: {type(e).__module__}.{type(e).__name__}")
for i, (name, body) in enumerate(PLAIN.items()):
    src = f'''
@ct.entry
def k(z: ct.Mut[ct.f32, "B"], x: ct.Ref[ct.f32, -1]):
    t = ct.load_tile_like(x, z)
    {body}
    z.store(t)
'''
    k = kernel_from_source(src, tag=f"forgep{i}")["k"]
    xx = ct.full(64, 3.0).sync()
    try:
        k(ct.zeros(64).sync().partition(64), xx).sync()
        fails.append(f"{name}: ran")
    except Exception as e:  # noqa: BLE001
        if not isinstance(e, ct.TileError):
            fails.append(f"{name}: {type(e).__module__}.{type(e).__name__}: {str(e)[:60]}")
    if not np.all(xx.to_numpy() == 3.0):
        fails.append(f"{name}: the Ref was written")
if fails:
    broken("; ".join(fails))
held("internals fetched through static_eval cannot forge indices or stores")
