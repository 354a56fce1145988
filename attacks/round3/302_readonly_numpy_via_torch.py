"""# BACKENDS: cpu triton
Promise (safety.md G3): 'Read-only NumPy memory cannot be a mutable argument.' (safe.md:
`ct.from_dlpack(x)` is the zero-copy interop boundary; a launch writes only memory the
caller could write.)

The read-only check looks at NumPy's writeable flag; the same read-only NumPy memory reached
through torch (`torch.from_numpy(ro)`, `torch.from_dlpack(ro)` — torch has no read-only
tensors) is accepted: `ct.from_dlpack(torch.from_numpy(ro)).partition(64)` and a safe launch
writes memory NumPy marked read-only — also the buffer of an immutable Python `bytes` object
(`torch.frombuffer(b)`)."""
import warnings

from _r3 import *


def body():
    import torch
    warnings.simplefilter("ignore")
    xs = ct.ones(256).sync().shared()
    problems = []
    ro = np.zeros(256, np.float32)
    ro.setflags(write=False)
    b = bytes(1024)
    before = bytes(bytearray(b))  # a distinct object (bytes(b) is b)
    for name, make in [("torch.from_numpy(ro)", lambda: torch.from_numpy(ro)),
                       ("torch.from_dlpack(ro)", lambda: torch.from_dlpack(ro)),
                       ("torch.frombuffer(bytes_obj)", lambda: torch.frombuffer(b, dtype=torch.float32))]:
        try:
            src = make()
        except Exception:  # noqa: BLE001
            continue
        try:
            t = ct.from_dlpack(src)
            z, _ = fill(t.partition(64), xs).sync()
        except Exception as e:  # noqa: BLE001
            if not is_safetile_error(e):
                problems.append(f"{name}: non-safetile {type(e).__name__}: {e}")
            continue
        problems.append(f"fill(ct.from_dlpack({name}).partition(64), xs) ran")
    if ro[0] != 0:
        problems.append(f"read-only ndarray written (ro[0] = {ro[0]})")
    if b != before:
        problems.append(f"an immutable bytes object was written ({b[:8]!r})")
    if problems:
        broken("; ".join(problems))
    held("read-only NumPy memory refused as a mutable argument also through torch")


run_guarded(body, "read-only numpy via torch")
