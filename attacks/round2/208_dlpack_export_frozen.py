"""# BACKENDS: cpu triton
Promise (safety.md G6): 'While a Shared handle lives, nothing writes its memory'; G6
mechanism: 'a view taken before .shared() cannot be partitioned, a second wrapper of the
same array cannot be written'; (G3) read-only NumPy memory cannot be a mutable argument.

safetile's own export, `t.__dlpack__()` (safe.md: zero-copy interop), of a Tensor over a
live Shared's memory (a view taken before .shared()): does NumPy / torch receive a
*writable* alias of frozen memory? Also: the export of a tensor moved into a partition,
and `np.asarray` / `.numpy()` (documented as copies) must not alias."""
from _r2 import *


def body():
    import torch
    problems = []
    t = ct.zeros(256).sync()
    view = t[:]
    s = t.shared()
    for name, f in [("np.from_dlpack(view)", lambda: np.from_dlpack(view)),
                    ("torch.from_dlpack(view)", lambda: torch.from_dlpack(view))]:
        try:
            a = f()
        except Exception as e:  # noqa: BLE001
            continue            # refused: fine
        try:
            a[3] = 42
        except Exception:  # noqa: BLE001
            continue            # read-only: fine
        if s.to_numpy()[3] == 42:
            problems.append(f"{name} gave a writable alias of a live Shared's memory (wrote 42 into it)")
        a[3] = 0
    for name, f in [("np.asarray(view)", lambda: np.asarray(view)), ("view.numpy()", lambda: view.numpy())]:
        a = f()
        if a.flags.writeable:
            a[5] = 7
            if s.to_numpy()[5] == 7:
                problems.append(f"{name} is not a copy: wrote a Shared's memory")
    # moved tensor
    t2 = ct.zeros(256).sync()
    p = t2.partition(64)
    try:
        np.from_dlpack(t2)
        problems.append("np.from_dlpack of a tensor moved into a partition succeeded")
    except Exception as e:  # noqa: BLE001
        if not is_safetile_error(e):
            problems.append(f"export of a moved tensor: non-safetile {type(e).__name__}: {e}")
    if problems:
        broken("; ".join(problems))
    held("exports of frozen or moved memory are refused or read-only")


run_guarded(body, "dlpack export frozen")
