"""Class 3. The unchecked ct.launch on host torch tensors (CPU backend; with --triton, Triton's interpreter):
a negative view, a conjugate view, a sparse tensor, a meta tensor, a 0-d tensor and a 17-d tensor as the
input. A refusal must be a safetile error that writes nothing (poisoned output checked); a run must read the
values the tensor shows (a negative view shows -x).
# BACKENDS: cpu triton"""
from _r8 import *

N = 64
base = torch.arange(N, dtype=torch.float32)
cases = {
    "neg_view": torch._neg_view(base.clone()),
    "sparse": base.to_sparse(),
    "meta": torch.empty(N, device="meta"),
    "zero_d": torch.tensor(1.0),
    "dims17": torch.zeros((1,) * 16 + (N,)),
    "expand": torch.tensor([2.0]).expand(N),
}
problems, log = [], []
z0 = torch.full((N,), POISON)
ct.launch(None, (N // 16,), ucopy, (base, z0.clone(), 16))  # warm
for name, x in cases.items():
    z = torch.full((N,), POISON)
    try:
        ct.launch(None, (N // 16,), ucopy, (x, z, 16))
        v = shown(x).reshape(-1) if x.layout == torch.strided and x.device.type != "meta" else None
        ok = v is not None and v.size >= N and np.array_equal(z.numpy().astype(np.float64), v[:N])
        log.append(f"{name}: ran, z[:3]={z[:3].tolist()}" + ("" if ok else "  <-- not what x shows"))
        if not ok and name != "zero_d":
            problems.append(f"{name}: ran, read {z[:3].tolist()} while x shows {None if v is None else v[:3].tolist()}")
    except Exception as e:  # noqa
        wrote = not bool((z == POISON).all())
        log.append(f"{name}: refused {err(e, 80)}" + (" WROTE" if wrote else ""))
        if not is_st(e):
            problems.append(f"{name}: raw {err(e, 100)}")
        if wrote:
            problems.append(f"{name}: refused but wrote")
print("\n".join(log))
if problems:
    broke("; ".join(problems))
held("odd tensors in unchecked launches: read as shown or refused with safetile errors")
