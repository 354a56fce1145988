"""Promise (docs/torch.md, 'Ownership across the boundary' — 'The safe style's rules hold on
both sides'): 'Inputs are borrowed for the call as read-only ct.Ref arguments: nothing
moves, nothing writes them (opcheck checks this too)'; and 'An unchecked @ct.kernel op has
exactly the unchecked style's guarantees: the kernel picks its store indices'.

a. An unchecked `@ct.kernel` registered with torch_op stores into one of its *inputs*.
   Registration and calls are accepted, torch's schema says the input is not mutated, so
   eager and torch.compile(inductor) disagree (torch reuses the buffer it thinks is
   unchanged).
b. The same through `@ct.entry` (a store to a Ref) must be refused."""
from _r2 import *


def body():
    import torch
    from safetile.integrations.torch import Out, torch_op
    problems = []

    @torch_op("rt2x::evil", outputs={"z": Out("x")}, grid=lambda x: (x.shape[0] // 16, 1, 1))
    @ct.kernel
    def evil(z, x):
        t = ct.load(x, (ct.bid(0),), (16,))
        ct.store(x, (ct.bid(0),), t * 0.0 + 99.0)
        ct.store(z, (ct.bid(0),), t + 1.0)

    x = torch.ones(64)
    try:
        evil(x)
    except Exception as e:  # noqa: BLE001 - a safetile refusal before anything runs is the fix
        if not is_safetile_error(e):
            problems.append(f"a: non-safetile error {type(e).__module__}.{type(e).__name__}")
        elif x[0].item() != 1.0:
            problems.append("a: refused, but after writing its input")
    if x[0].item() == 99.0:
        def f(x):
            y = x * 1.0
            return y + evil(y)
        eager = f(torch.ones(64))[0].item()
        comp = torch.compile(f, fullgraph=True)(torch.ones(64))[0].item()
        problems.append(f"a: an unchecked torch_op wrote its input x (1 -> 99), accepted at registration and call; "
                        f"torch's schema calls x unmutated, so f(x) = x*1 + op(x*1) is {eager} eagerly and "
                        f"{comp} under torch.compile")

    try:
        @torch_op("rt2x::evil2", outputs={"z": Out("x")}, generics={"B": 16})
        @ct.entry
        def evil2(z: ct.Mut[ct.f32, "B"], x: ct.Ref[ct.f32, -1]):
            ct.store(x, (ct.bid(0),), ct.load_tile_like(x, z) * 0.0 + 99.0)
            z.store(ct.load_tile_like(x, z))
        x = torch.ones(64)
        evil2(x)
        if x[0].item() != 1.0:
            problems.append("b: a safe torch_op wrote its input")
    except Exception as e:  # noqa: BLE001
        if not is_safetile_error(e):
            problems.append(f"b: non-safetile error {type(e).__module__}.{type(e).__name__}")
    if problems:
        broken("; ".join(problems))
    held("torch ops never write their inputs")


run_guarded(body, "torch_op input write")
