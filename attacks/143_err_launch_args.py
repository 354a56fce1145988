"""Promise (errors.py doc): 'A rejected launch raises a LaunchError subclass before any work
runs ... LaunchTypeError (argument count, kinds, element types)', naming the argument."""
import torch
from _errq import *


@ct.entry
def k(z: ct.Mut[ct.f32, "B"], x: ct.Ref[ct.f32, -1], a: ct.f32, n: int, c: ct.Constant[int]):
    z.store(ct.load_tile_like(x, z) * a + n + c)


P = lambda: ct.zeros(64).sync().partition(64)  # noqa: E731
X = lambda: ct.zeros(64).sync()  # noqa: E731
CASES = [
    ("too few", lambda: k(P(), X(), 1.0, 1)), ("too many", lambda: k(P(), X(), 1.0, 1, 2, 3)),
    ("kwargs", lambda: k(z=P(), x=X(), a=1.0, n=1, c=2)), ("list as Ref", lambda: k(P(), [0.0] * 64, 1.0, 1, 2)),
    ("None as Ref", lambda: k(P(), None, 1.0, 1, 2)), ("str as scalar", lambda: k(P(), X(), "a", 1, 2)),
    ("complex scalar", lambda: k(P(), X(), 1j, 1, 2)), ("float for int", lambda: k(P(), X(), 1.0, 1.5, 2)),
    ("huge int", lambda: k(P(), X(), 1.0, 2 ** 80, 2)), ("list Constant", lambda: k(P(), X(), 1.0, 1, [2])),
    ("complex array Ref", lambda: k(P(), np.zeros(64, np.complex64), 1.0, 1, 2)),
    ("object array Ref", lambda: k(P(), np.array([object()] * 64), 1.0, 1, 2)),
    ("0-d array Ref", lambda: k(P(), np.float32(1.0), 1.0, 1, 2)), ("bool array Ref", lambda: k(P(), np.zeros(64, bool), 1.0, 1, 2)),
    ("f64 array Ref", lambda: k(P(), np.zeros(64), 1.0, 1, 2)), ("Tensor as Mut", lambda: k(X(), X(), 1.0, 1, 2)),
    ("ndarray as Mut", lambda: k(np.zeros(64, np.float32), X(), 1.0, 1, 2)),
    ("torch meta tensor Ref", lambda: k(P(), torch.zeros(64, device="meta"), 1.0, 1, 2)),
    ("torch requires_grad Ref", lambda: k(P(), torch.zeros(64, requires_grad=True), 1.0, 1, 2) and (_ for _ in ()).throw(ct.LaunchError("fine"))),
    ("DeviceOp producing int", lambda: k(P(), ct.value(3), 1.0, 1, 2).sync()),
    ("partition as Ref", lambda: k(P(), P(), 1.0, 1, 2)), ("bool as f32 scalar", lambda: k(P(), X(), np.array([1.0]), 1, 2)),
]
run_cases([(n, (lambda f=f: (lambda r: r.sync() if isinstance(r, ct.DeviceOp) else r)(f()))) for n, f in CASES], "bad launch arguments")
