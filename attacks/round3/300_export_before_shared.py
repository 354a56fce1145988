"""# BACKENDS: cpu triton
Promise (safety.md G6): 'While a Shared handle lives, nothing writes its memory.' Mechanism
(round-2 fix): 'A tensor's DLPack export (np.from_dlpack(v), torch.from_dlpack(v), ...) is
refused with an AliasError while its memory overlaps a frozen claim: the consumer may write
an export'. safe.md lists `t.__dlpack__()` as the tensor's zero-copy interop.

The check is made at export time only. An export taken *before* `.shared()` (the same
ordering trick as 'a view taken before .shared()', which G6 does close for views) stays a
writable alias of the Shared's memory: `a = np.from_dlpack(t); s = t.shared(); a[1] = 5`."""
from _r3 import *


def body():
    import torch
    problems = []
    for name, exp in [("np.from_dlpack", np.from_dlpack), ("torch.from_dlpack", torch.from_dlpack)]:
        t = ct.zeros(64).sync()
        try:
            a = exp(t)
        except Exception as e:  # noqa: BLE001
            continue
        try:  # (lead, session 5: a refused .shared() is a defense; the original did not guard it)
            s = t.shared()
        except ct.AliasError:
            continue
        try:
            a[1] = 5
        except Exception:  # noqa: BLE001
            continue
        if s.to_numpy()[1] == 5:
            problems.append(f"a = {name}(t); s = t.shared(); a[1] = 5 wrote the live Shared")
    # an unchecked launch given the earlier export writes the Shared too
    @ct.kernel
    def wr(x):
        ct.store(x, (0,), ct.full((64,), 3.0, ct.float32))
    t = ct.zeros(64).sync()
    a = np.from_dlpack(t) if BACKEND == "cpu" else torch.from_dlpack(t)
    try:  # (lead, session 5: as above)
        s = t.shared()
    except ct.AliasError:
        held("exports taken before .shared() cannot write the Shared (.shared() refused while the export lives)")
    try:
        ct.launch(None, (1,), wr, (a,))
    except Exception:  # noqa: BLE001
        pass
    if s.to_numpy()[0] == 3:
        problems.append("ct.launch(None, (1,), wr, (export_taken_before_shared,)) wrote the live Shared")
    if problems:
        broken("; ".join(problems))
    held("exports taken before .shared() cannot write the Shared")


run_guarded(body, "export before shared")
