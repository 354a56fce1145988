"""G7 (d) and G1/G3 with empty memory. 0-element tensors in every role: a Mut partition of a
[0] / [0, 8] / [8, 0] tensor (grid with a 0 axis), a MappedPartition of one, an empty Ref beside a
non-empty Mut, a Shared of an empty tensor, memcpy of empty tensors, an empty tensor viewed
twice as two Muts (no bytes: may pass, but must write nothing), a graph of an empty launch, and
a torch 0-size input to a torch_op. Each answers with a result or a safetile error; nothing
outside is written."""
from _r6 import *

problems, notes = [], []


def attempt(name, fn):
    try:
        r = fn()
        notes.append(f"{name}: ok")
        return r
    except Exception as e:  # noqa
        if is_st(e):
            notes.append(f"{name}: {type(e).__name__}")
        else:
            problems.append(f"{name}: RAW {type(e).__name__}: {str(e)[:90]}")


@ct.entry
def k2(z: ct.Mut[ct.f32, ("BM", "BN")]):
    z.store(ct.full((BM, BN), 1.0, ct.float32))


@ct.entry
def kmap(c: ct.MappedMut[ct.f32, "B"]):
    for idx in c.iter_indices():
        c.store(ct.full((B,), 1.0, ct.float32), idx)


@ct.entry
def two(z: ct.Mut[ct.f32, "B"], w: ct.Mut[ct.f32, "B"]):
    z.store(ct.full((B,), 1.0, ct.float32))
    w.store(ct.full((B,), 2.0, ct.float32))


big = np.full(64, -7.0, np.float32)
attempt("inc on [0]/16", lambda: inc(ct.from_dlpack(big[:0]).partition(16)).sync())
attempt("k2 on [0,8]/(4,4)", lambda: k2(ct.from_dlpack(np.zeros((0, 8), np.float32)).partition((4, 4))).sync())
attempt("k2 on [8,0]/(4,4)", lambda: k2(ct.from_dlpack(np.zeros((8, 0), np.float32)).partition((4, 4))).sync())
attempt("map(1) of empty partition", lambda: kmap(ct.from_dlpack(big[:0]).partition(16).map(1)).sync())
attempt("empty Ref beside Mut", lambda: fill1(ct.from_dlpack(big[:16]).partition(16), ct.from_dlpack(big[16:16])).sync())
attempt("empty view twice as two Muts", lambda: two(ct.from_dlpack(big[5:5]).partition(16), ct.from_dlpack(big[5:5]).partition(16)).sync())
attempt("shared of empty + to_numpy", lambda: ct.from_dlpack(big[:0]).shared().to_numpy())
attempt("memcpy empty->empty", lambda: ct.memcpy(ct.from_dlpack(big[3:3]), ct.from_dlpack(np.zeros(0, np.float32))).sync())
attempt("graph of empty launch", lambda: inc(ct.from_dlpack(big[:0]).partition(16)).graph().launch())
attempt("zeros(0).partition(1)", lambda: ct.zeros(0).sync().partition(1))
attempt("zeros((0,)).shared().try_partition(8)", lambda: ct.zeros((0,)).sync().shared().try_partition(8))
attempt("show() of empty partition", lambda: ct.from_dlpack(big[:0]).partition(16).show())
try:
    import torch
    from safetile.integrations.torch import Out, torch_op

    @torch_op("r6zero::add", outputs={"z": Out("x")}, generics={"B": 16})
    @ct.entry
    def addop(z: ct.Mut[ct.f32, "B"], x: ct.Ref[ct.f32, -1]):
        z.store(ct.load_tile_like(x, z) + 1.0)
    r = attempt("torch_op on 0-size input", lambda: addop(torch.zeros(0)))
    if r is not None and tuple(r.shape) != (0,):
        problems.append(f"torch_op 0-size output shape {tuple(r.shape)}")
except ImportError:
    pass
if not (big[16:] == -7.0).all() or not (big[:16] == 1.0).all():   # fill1 over an empty Ref: 0 + 1
    problems.append(f"memory around the empty views changed: {big[:20]}")
if problems:
    broken("; ".join(problems) + " || " + "; ".join(notes))
held("; ".join(notes))
