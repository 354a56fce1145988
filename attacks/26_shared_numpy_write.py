"""Promise: a Shared is read-only. np.asarray(shared), shared.to_numpy(), and NumPy's
DLPack import of the Shared/its tensor must not give a writable alias of its memory."""
from _common import *

t = ct.full(64, 3.0).sync()
s = t.shared()
before = snap(s)
for name, get in [("np.asarray(s)", lambda: np.asarray(s)), ("s.to_numpy()", lambda: s.to_numpy()),
                  ("np.array(s, copy=False)", lambda: np.array(s, copy=False)),
                  ("np.from_dlpack(s)", lambda: np.from_dlpack(s))]:
    try:
        a = get()
    except Exception as e:  # noqa: BLE001
        continue
    try:
        a[...] = 99.0
    except Exception:  # noqa: BLE001
        continue
    if snap(s) != before:
        broken(f"{name} returned a writable alias of a Shared; writing it changed the Shared to {s.to_numpy()[:3]}")
held("host copies of a Shared are copies or read-only")
