"""Promise (safe.md 4): byte ranges from pointer, shape, strides, item size. A Ref that
reinterprets the Mut's bytes as another dtype (int32 view, uint8 view, float64 view) must
be refused."""
from _common import *


@ct.entry
def fill_any(z: ct.Mut[ct.f32, "B"], x: ct.Ref["E", -1]):
    z.store(ct.full((B,), 1.0, ct.float32))


a = np.zeros(256, np.float32)
for name, view in [("int32 view", a.view(np.int32)), ("uint8 view", a.view(np.uint8)),
                   ("float64 view", a.view(np.float64)), ("uint8 last byte", a.view(np.uint8)[-1:]),
                   ("int16 slice middle", a.view(np.int16)[201:203])]:
    z = ct.from_dlpack(a).partition(64)
    before = snap(a)
    expect_refusal(lambda: fill_any(z, ct.from_dlpack(view)).sync(), ct.AliasError, [], f"Mut f32 vs Ref {name}")
    expect_refusal(lambda: fill_any(ct.from_dlpack(a).partition(64), view).sync(), ct.AliasError, [], f"Mut f32 vs raw NumPy {name}")
    if snap(a) != before:
        broken(f"{name}: refused launch wrote")
held("dtype-reinterpreting views refused")
