"""Promise (safe.md): "On the GPU a plan also keeps its resolved kernel arguments (its key holds
every pointer, shape and scalar), so launching it again is one call into the C launcher"; G8: a
reused plan only when every fact is unchanged; "a CUDA-backed one re-reads its data pointer on
every launch"; G3: `Plan.pins` refuses a launch whose torch memory moved; G8 "The common case in
C": `run` submits a bound GPU plan and checks `Plan.pins`.

Attack (needs CUDA; INCONCLUSIVE without): repeated launches on CUDA tensors where the bound
arguments must change although the key compares equal or the memory moved: (a) a run-time
`ct.f32` scalar 0.0 then -0.0 (the key compares (float, 0.0) == (float, -0.0); the bound tail
holds the first one's value?) — 1/z must be -inf; (b) the output's CUDA storage reallocated
(`resize_` of the original tensor's storage beyond its size) between repeats — refused with a
safetile error or run on the new memory, never a write to the freed block; (c) a raw CUDA torch
`Ref` re-pointed with `set_` between repeats — the launch reads the new memory. Each with the C
twin on and off, results against NumPy.
"""
from _r5 import *


def scenario(rec):
    import torch
    if not torch.cuda.is_available():
        rec("no cuda", True)
        return

    @ct.entry
    def k(z: ct.Mut[ct.f32, "B"], x: ct.Ref[ct.f32, -1], a: ct.f32):
        z.store(ct.load_tile_like(x, z) * a)
    dev = "cuda"
    N = 1024
    # (a)
    zt = torch.full((N,), 7.0, device=dev)
    x = ct.from_dlpack(torch.ones(N, device=dev))
    z = ct.from_dlpack(zt).partition(256)
    for v in (0.0, 0.0, -0.0, -0.0, 0.0, -0.0):
        z, x, _ = k(z, x, v).sync()
        torch.cuda.synchronize()
        rec(f"(a) a={v!r}: 1/z[0]", [float((1.0 / zt)[0].item()), float("-inf") if str(v).startswith("-") else float("inf")])
    # (b)
    zt = torch.full((N,), 7.0, device=dev)
    xt = torch.arange(N, dtype=torch.float32, device=dev)
    x = ct.from_dlpack(xt.clone())
    z = ct.from_dlpack(zt).partition(256)
    for i in range(3):
        z, x, _ = k(z, x, 2.0).sync()
    old_ptr = zt.data_ptr()
    zt.untyped_storage().resize_(N * 4 * 64)  # reallocates: every tensor on it moves
    filler = [torch.full((N,), 5.0, device=dev) for _ in range(16)]  # may take the freed block
    try:
        z, x, _ = k(z, x, 3.0).sync()
        torch.cuda.synchronize()
        clobbered = any(bool((f != 5.0).any()) for f in filler)
        rec("(b) after resize_", ["ran", "a filler block was written" if clobbered else "fillers intact"])
    except BaseException as e:  # noqa: BLE001
        rec("(b) after resize_", ["refused" if is_safetile_error(e) else exc_str(e)[:200], ""])
    # (c)
    zt = torch.full((N,), 7.0, device=dev)
    xr = torch.ones(N, device=dev)
    other = torch.full((N,), 4.0, device=dev)
    z = ct.from_dlpack(zt).partition(256)
    for i in range(3):
        z, xr_, _ = k(z, xr, 2.0).sync()
    xr.set_(other.untyped_storage(), 0, (N,), (1,))
    z, _, _ = k(z, xr, 2.0).sync()
    torch.cuda.synchronize()
    rec("(c) raw Ref set_ between repeats: z[0]", [float(zt[0].item()), 8.0])


def check(log):
    bad = []
    for k_, v in log:
        if k_ == "SCENARIO-RAISED":
            bad.append(v[:300])
        elif k_.startswith("(a)") or k_.startswith("(c)"):
            if v[0] != v[1]:
                bad.append(f"{k_}: got {v[0]}, want {v[1]}")
        elif k_.startswith("(b)") and (v[1] == "a filler block was written" or v[0] not in ("ran", "refused")):
            bad.append(f"{k_}: {v}")
    return bad


def main():
    problems, on, off = differential(__file__, scenario, check, "gpu bound plans")
    if ["no cuda", True] in on:
        inconclusive("no CUDA device here: run on the GPU (SAFETILE_BACKEND=triton is implied by CUDA tensors)")
    if problems:
        broken("; ".join(problems[:4]))
    held(f"bound GPU plans: {len(on)} checks right with the C twin on and off")


run_guarded(main, "515")
