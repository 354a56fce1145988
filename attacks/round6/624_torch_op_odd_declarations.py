"""G7 (d) for torch_op (torch.md: "Mistakes in the declaration ... are refused at registration with an
ArgumentError, naming the parameter"; "An output shape callable is checked on every call: if it
raises or returns anything but sizes >= 0 the call is a LaunchTypeError"). Odd declarations and
shape callables not in round 4's list: Out dtype disagreeing with the Mut's declared element type,
an unknown dtype string, a partition larger than 2**24 elements, a shape callable returning bools,
NumPy ints, floats 3.0, a generator, a list, a huge size, a negative NumPy int, and a callable
whose result's __index__ raises; blocks= for a non-mapped output; grid= for an entry kernel.
Each: registration or call raises a safetile error (or computes right), never a raw exception."""
from _r6 import *
import torch
from safetile.integrations.torch import Out, torch_op


@ct.entry
def add(z: ct.Mut[ct.f32, "B"], x: ct.Ref[ct.f32, -1]):
    z.store(ct.load_tile_like(x, z) + 1.0)


class BadIndex:
    def __index__(self):
        raise RuntimeError("no index")


n = [0]
bad, notes = [], []


def attempt(name, out, call=True, want=(64,), **kw):
    n[0] += 1
    try:
        op = torch_op(f"r6decl::op{n[0]}", add, outputs={"z": out}, **kw)
    except Exception as e:  # noqa
        (notes if is_st(e) else bad).append(f"{name}: register {type(e).__name__}: {str(e)[:70]}")
        return
    if not call:
        return
    try:
        r = op(torch.full((64,), 2.0))
        ok = isinstance(r, torch.Tensor) and tuple(r.shape) == want and bool((r == 3.0).all())
        notes.append(f"{name}: ran {'right' if ok else 'WRONG'}")
        if not ok:
            bad.append(f"{name}: ran with a wrong result {tuple(r.shape)} {r.dtype}")
    except Exception as e:  # noqa
        (notes if is_st(e) else bad).append(f"{name}: call {type(e).__name__}: {str(e)[:70]}")


G = {"B": 16}
attempt("Out dtype float64 vs Mut f32", Out("x", dtype=torch.float64), generics=G)
attempt("Out dtype 'float33'", Out("x", dtype="float33"), generics=G)
attempt("Out dtype int8 by name", Out("x", dtype=torch.int8), generics=G)
attempt("partition 2**25", Out("x", partition=(2**25,)), generics=G)
attempt("partition 0", Out("x", partition=(0,)), generics=G)
attempt("partition -16", Out("x", partition=(-16,)), generics=G)
attempt("shape bools", Out(lambda x: (True,)), want=(1,), generics=G)   # bool is an int: (1,)
attempt("shape numpy int", Out(lambda x: (np.int64(64),)), generics=G)
attempt("shape float 64.0", Out(lambda x: (64.0,)), generics=G)
attempt("shape generator", Out(lambda x: (s for s in (64,))), generics=G)
attempt("shape list", Out(lambda x: [64]), generics=G)
attempt("shape huge", Out(lambda x: (2**62,)), generics=G)
attempt("shape negative numpy", Out(lambda x: (np.int64(-1),)), generics=G)
attempt("shape __index__ raises", Out(lambda x: (BadIndex(),)), generics=G)
attempt("shape callable raises StopIteration", Out(lambda x: next(iter(()))), generics=G)
attempt("blocks= on a plain Mut", Out("x", blocks=4), generics=G)
attempt("grid= for an entry kernel", Out("x"), generics=G, grid=(4, 1, 1))
attempt("generics with a non-int", Out("x"), generics={"B": "16"})
attempt("generics B=3 (not pow2)", Out("x"), generics={"B": 3})
if bad:
    broken("; ".join(bad) + " || " + "; ".join(notes))
held("; ".join(notes))
