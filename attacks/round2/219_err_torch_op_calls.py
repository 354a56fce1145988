"""Promise (docs/torch.md): 'Every call is a validated launch: element types, ranks, static
sizes, preconditions and the grid are checked before anything runs, raising the usual
LaunchError subclasses'; 'Mistakes in the declaration ... are refused at registration,
naming the parameter'; (safety.md G7) every refusal is a safetile error.

Output declarations that go wrong only at call time: an Out shape callable returning a
negative size, raising, or asking for 2**40 elements; an impure shape callable (different
shapes on successive calls) under torch.compile. Each must be a safetile error naming the
output (the impure one may also be caught by torch, but must never run out of bounds)."""
from _r2 import *


def body():
    import torch
    from safetile.integrations.torch import Out, torch_op
    fails = []
    x = torch.ones(256)

    def decl(name, shape):
        @torch_op(f"rt4::{name}", outputs={"z": Out(shape)}, generics={"B": 64})
        @ct.entry
        def k(z: ct.Mut[ct.f32, "B"], x: ct.Ref[ct.f32, -1]):
            z.store(ct.load_tile_like(x, z))
        return k

    for name, shape in [("neg", lambda x: (-5,)), ("raises", lambda x: 1 // 0), ("huge", lambda x: (2 ** 40,)),
                        ("notuple", lambda x: "abc")]:
        op = decl(name, shape)
        try:
            op(x)
            fails.append(f"{name}: accepted")
        except Exception as e:  # noqa: BLE001
            if not is_safetile_error(e):
                fails.append(f"Out({name} shape): {type(e).__module__}.{type(e).__name__}: {str(e)[:60]}")
            elif "z" not in str(e):
                fails.append(f"Out({name} shape): does not name the output 'z': {str(e)[:60]}")
    calls = [0]

    def impure(x):
        calls[0] += 1
        return (x.shape[0] + 64 * (calls[0] % 2),)

    op = decl("impure", impure)
    f = torch.compile(lambda x: op(x) * 2.0, fullgraph=True)
    for _ in range(2):
        try:
            r = f(x)
            if not torch.all(r[:256] == 2.0):
                fails.append(f"impure Out shape under torch.compile: wrong values {r[:4]}")
        except Exception as e:  # noqa: BLE001
            if not is_safetile_error(e):
                fails.append(f"impure Out shape under torch.compile: {type(e).__module__}.{type(e).__name__}: "
                             f"{str(e)[:50]}")
            break
    if fails:
        broken(f"{len(fails)} torch_op output-declaration failures not safetile errors: " + " | ".join(fails))
    held("torch_op call-time declaration failures are safetile errors")


run_guarded(body, "err torch_op calls")
