"""Promise (semantics.md 'What kernel code can see'): private names and slot data are
refused at compile time with a located TileTypeError 'through attribute syntax, getattr and
hasattr alike; ordinary Python functions evaluated at compile time (vars, type, ...) are
never handed a tile, an array or a device object.' Many spellings, on Mut, Ref, mapped
partitions, in-block partitions, tiles and ct.bid results."""
from _common import *

PROBES = [
    "z._array", "getattr(z, '_array')", "getattr(z, '_' + 'array')",
    "vars(z)", "z.__dict__", "type(z)", "z.__class__", "dir(z)", "object.__getattribute__(z, 'store')",
    "z.__getattribute__('store')", "getattr(z, ct.static_eval('_' + 'array'))", "repr(z)", "id(z)",
    "z.__reduce_ex__(2)", "z.store.__self__", "z.store.__func__", "z.__slots__", "type(z).__mro__",
    "str(z)",
    "x._array", "vars(x)", "x.__dict__", "getattr(x, '_value')", "type(x)",
    "t._value", "vars(t)", "type(t)", "t.__dict__", "ct.static_eval(t)",
    "z.partition((16,))._mask", "vars(z.partition((16,)))", "ct.static_eval(z.partition((16,)))",
    "z.load.__globals__", "z.store.__closure__", "(lambda q: q)(z).__dict__",
    "ct.bid(0).__dict__", "callable(z)",
    "z.__class__.__dict__", "sorted(vars(x).items())",
]
fails = []
for i, expr in enumerate(PROBES):
    src = f'''
@ct.entry
def k(z: ct.Mut[ct.f32, "B"], x: ct.Ref[ct.f32, -1]):
    t = ct.load_tile_like(x, z)
    leak = {expr}
    z.store(t)
'''
    k = kernel_from_source(src, tag=f"priv{i}")["k"]
    try:
        k(ct.zeros(64).sync().partition(64), ct.zeros(64).sync()).sync()
    except Exception as e:  # noqa: BLE001
        if isinstance(e, ct.TileError):
            continue
        fails.append(f"{expr}: {type(e).__module__}.{type(e).__name__}: {str(e)[:80]}")
        continue
    fails.append(f"{expr}: compiled and ran")
# values static_eval may see: they must be public facts only (no private names, no IR)
LEAKS = ["ct.static_eval(z)", "ct.static_eval(vars(z))", "ct.static_eval(vars(x))", "hasattr(z, '_array')",
         "ct.static_eval(vars(z.partition((16,))))", "ct.static_eval(ct.bid(0))",
         "ct.static_eval(vars(ct.load_tile_like(x, z)))"]
for i, expr in enumerate(LEAKS):
    src = f'''
@ct.entry
def k(z: ct.Mut[ct.f32, "B"], x: ct.Ref[ct.f32, -1]):
    leak = {expr}
    ct.static_assert(False, ct.static_eval(repr(leak)))
'''
    k = kernel_from_source(src, tag=f"leak{i}")["k"]
    try:
        k(ct.zeros(64).sync().partition(64), ct.zeros(64).sync()).sync()
    except ct.TileStaticAssertionError as e:
        msg = str(e).splitlines()[0]
        if "'_" in msg or "Value" in msg or "ir." in msg or "object at 0x" in msg or "True" in msg:
            fails.append(f"{expr} exposed {msg[:120]}")
    except Exception as e:  # noqa: BLE001
        if not isinstance(e, ct.TileError):
            fails.append(f"{expr}: {type(e).__module__}.{type(e).__name__}")
if fails:
    broken(f"{len(fails)} of {len(PROBES)} probes not refused with a TileError: " + "; ".join(fails))
held("no private or reflective access from kernel code")
