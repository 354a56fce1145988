"""Class 1. A raw torch tensor x (a Ref of a safe kernel) re-pointed in place between separate launches,
after the C twin and the plan cache are hot for x's old facts: set_ to other storage, a storage offset,
x.data = other, as_strided_, resize_ (grow: storage reallocated; shrink), share_memory_, x.data = x.view(int32),
torch._C._set_neg, x.data = _neg_view, a fresh UntypedStorage, requires_grad_. Every next launch must read
what x shows now, or be refused with a safetile error that writes nothing (poisoned output checked).
# BACKENDS: cpu triton"""
from _r8 import *

ensure_native()
problems, log = [], []
for name, mut in mutations():
    x = torch.arange(N_MUT, dtype=torch.float32)
    for _ in range(3):                      # hot: plan cached, C twin taking the launch
        out = run_copy(x)
        assert (out == np.arange(N_MUT)).all()
    try:
        mut(x)
    except Exception as e:  # noqa
        log.append(f"{name}: torch refused the mutation ({type(e).__name__})")
        continue
    before = x.detach().clone() if not x.is_neg() else None
    z = poisoned(N_MUT).partition(16)
    exc = out = None
    try:
        (z, _) = copyk(z, x).sync()
    except Exception as e:  # noqa
        exc = e
    out = z.unpartition().to_numpy() if exc is None else None
    if exc is not None:
        try:
            zz = z.unpartition().to_numpy()
            out = zz
        except Exception:  # noqa
            pass
    p = judge_copy(name, x, out, exc)
    if exc is not None and before is not None and not torch.equal(x.detach(), before):
        p = f"{name}: refusal changed x"
    log.append(f"{name}: " + ("refused " + err(exc, 50) if exc else "ran, read x's current values") + ("" if p is None else "  <-- " + p))
    if p:
        problems.append(p)
print("\n".join(log))
if problems:
    broke("; ".join(problems))
held(f"{len(log)} mutations: each next launch read x's current values or was refused with a safetile error")
