"""Promise (safe.md): 'ct.detect_races also accepts an entry kernel (grid=None), which is how
the tests show the safe examples race-free.' Running an entry kernel under the detector
must keep the launch boundary: an aliasing call is refused with AliasError before running
(nothing written), ownership is respected (moved args refused), a race-free kernel with
in-block partition stores and mapped walks reports no race, and arguments come back."""
from _common import *

SRC = '''
@ct.entry
def kv(kc: ct.Mut[ct.f32, (1, "T", "D")], pos: int):
    kc.partition((1, 1, D)).store(ct.full((1, 1, D), 1.0, ct.float32) * (ct.bid(0) + 1), (0, pos, 0))

@ct.entry
def mw(c: ct.MappedMut[ct.f32, ("BM",)], v: ct.f32):
    for idx in c.iter_indices():
        c.store(ct.full((BM,), 1.0, ct.float32) * v, idx)
'''
ks = kernel_from_source(SRC, tag="raceentry")
fails = []
t = ct.zeros(256).sync()
z = t[0:128].partition(64)
x = t[64:192]
before = snap(t)
try:
    ct.detect_races(fill, None, (z, x))
    fails.append("aliasing entry launch ran under the detector")
except Exception as e:  # noqa: BLE001
    if not isinstance(e, ct.AliasError):
        fails.append(f"aliasing call: {type(e).__module__}.{type(e).__name__} instead of AliasError")
if snap(t) != before:
    fails.append("the refused detector run wrote")
p = ct.zeros(256).sync().partition(64)
op = fill(p, ct.zeros(256).sync())
try:
    ct.detect_races(fill, None, (p, ct.zeros(256).sync()))
    fails.append("detector ran on a partition moved into another launch")
except Exception as e:  # noqa: BLE001
    if not is_safetile_error(e):
        fails.append(f"moved arg: non-safetile {type(e).__name__}")
op.cancel()
for name, args in [("kv", (ct.zeros((4, 16, 8)).sync().partition_prefix((1,)), 3)),
                   ("mw", (ct.zeros(256).sync().partition(32).map(3), 2.0))]:
    try:
        rep = ct.detect_races(ks[name], None, args, raise_on_race=False)
        if rep:
            fails.append(f"{name}: false race {str(rep)[:100]}")
    except Exception as e:  # noqa: BLE001
        fails.append(f"{name}: {type(e).__module__}.{type(e).__name__}: {str(e)[:100]}")
    try:
        args[0].to_numpy()
    except Exception as e:  # noqa: BLE001
        fails.append(f"{name}: argument not given back after the detector run ({type(e).__name__})")
if fails:
    broken("; ".join(fails))
held("detector keeps the safe launch boundary")
