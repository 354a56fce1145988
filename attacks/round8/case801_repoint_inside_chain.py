"""Class 2. The same in-place re-pointings as case 800, made inside one terminal (a `then` chain), after
two launches of the chain used x (the C twin caches x's alias per terminal and reuses it "while x shows
the facts it was made from"). The chain's last launch must read what x shows then, or the chain must fail
with a safetile error whose refused launch wrote nothing (the earlier launches wrote arange, so the
output must be arange or x's new values -- never anything else).
# BACKENDS: cpu triton"""
from _r8 import *

ensure_native()
problems, log = [], []
for name, mut in mutations():
    x = torch.arange(N_MUT, dtype=torch.float32)
    run_copy(x)  # plan hot

    def step(v, mut=mut, x=x):
        mut(x)
        return fill1(v[0], x)      # +1: tells the last launch apart from the earlier ones
    z = poisoned(N_MUT).partition(16)
    op = copyk(z, x).then(lambda v: copyk(v[0], x)).then(lambda v: copyk(v[0], x)).then(step)
    exc = None
    try:
        (z, _) = op.sync()
    except Exception as e:  # noqa
        exc = e
    if exc is None:
        out = z.unpartition().to_numpy().astype(np.float64)
        v = shown(x)
        k = min(N_MUT, v.size)
        if not np.array_equal(out[:k], v[:k] + 1):
            p = f"{name}: last launch read {(out[:4] - 1).tolist()} while x shows {v[:4].tolist()}"
        else:
            p = None
        log.append(f"{name}: ran, read x's current values" + ("" if p is None else "  <-- " + p))
    else:
        p = None if is_st(exc) else f"{name}: raw {err(exc)}"
        # the refused launch must not have written: z (given back by the failed terminal) holds arange
        try:
            zz = z.unpartition().to_numpy()
            if not (np.array_equal(zz, np.arange(N_MUT)) or (zz == POISON).all()):
                p = f"{name}: refused but output is {zz[:4].tolist()}"
        except Exception as e2:  # noqa
            p = (p or "") + f" {name}: output unusable after the failed chain: {err(e2, 60)}"
        log.append(f"{name}: chain refused {err(exc, 60)}" + ("" if p is None else "  <-- " + p))
    if p:
        problems.append(p)
print("\n".join(log))
if problems:
    broke("; ".join(problems))
held(f"{len(log)} mutations inside chains: read x's current values or refused with a safetile error")
