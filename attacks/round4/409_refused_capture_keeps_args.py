"""Promise (safety.md G7): "Every refusal is a safetile error raised before anything runs; every
argument stays byte-identical and usable." G4: "an unrun operation does not keep its arguments
forever". safe.md (Graphs): "Operations that allocate ... are refused with GraphCaptureError".

Attack: graph captures that are refused, then every reference dropped and gc.collect(): are
the launch's arguments usable again? (a) op = fill(z, x).shared(); op.graph() — refused
(AliasError: the graph would write z while op.shared() makes it Shared) but the capture has
already turned x and z into Shared handles nobody holds: x stays "moved into shared tensor#1 ...
get it back with .try_unwrap()", z "moved into the tensor returned by .unpartition()", forever;
a view of x taken before is checked too (a leaked frozen claim would keep it from being
partitioned); (b) the same inside ct.graph_scope(); (c) a then-chain whose second step allocates
(refused: GraphCaptureError); (d) a chain whose closure raises during capture.
"""
from _r4 import *

import gc

fails = []
notes = []


def check(name, x, z, xview):
    gc.collect()
    problems = []
    try:
        x.to_numpy()
    except Exception as e:  # noqa: BLE001
        problems.append(f"x unusable ({type(e).__name__}: {str(e)[:110]})")
    try:
        z.unpartition()
    except Exception as e:  # noqa: BLE001
        problems.append(f"z unusable ({type(e).__name__}: {str(e)[:110]})")
    try:
        p = xview.partition(64)
        p.unpartition()
    except Exception as e:  # noqa: BLE001
        problems.append(f"a view of x cannot be partitioned ({type(e).__name__}: {str(e)[:100]})")
    if problems:
        fails.append(f"{name}: after the refused capture and gc: " + "; ".join(problems))
    else:
        notes.append(f"{name}: arguments back")


def attempt(name, make):
    x = ct.rand(64, seed=1).sync()
    xview = x[:]
    z = ct.zeros(64).sync().partition(64)
    try:
        make(z, x).graph()
        notes.append(f"{name}: capture accepted")
        return
    except Exception as e:  # noqa: BLE001
        if not is_safetile_error(e) and not str(e).startswith("closure fails"):
            fails.append(f"{name}: non-safetile {type(e).__name__}: {e}")
            return
        notes.append(f"{name}: refused ({type(e).__name__})")
    check(name, x, z, xview)


attempt("(a) fill(z, x).shared().graph()", lambda z, x: fill(z, x).shared())
attempt("(c) then-step allocating", lambda z, x: fill(z, x).then(lambda r: ct.zeros(64)))


def boom(r):
    raise ValueError("closure fails during capture")


attempt("(d) closure raising in capture", lambda z, x: fill(z, x).then(boom))

# (b) graph_scope
x = ct.rand(64, seed=1).sync()
xview = x[:]
z = ct.zeros(64).sync().partition(64)
try:
    with ct.graph_scope() as sc:
        sc.record(fill(z, x).shared())
    notes.append("(b) scope accepted")
except Exception as e:  # noqa: BLE001
    notes.append(f"(b) scope refused ({type(e).__name__})")
del sc
check("(b) graph_scope recording op.shared()", x, z, xview)
print(notes)
if fails:
    broken("; ".join(fails))
held("refused captures give every argument back")
