"""Promise (safe.md, The launch boundary): the checks run in order "... 5. aliasing ... 6.
declared preconditions; 7. compilation"; preconditions "receive the arguments they name (tensors
as read-only ArgInfo)"; G3: "The memory a launch writes overlaps no other argument of the
launch"; G8: "The launch checks are a pure function of the arguments' facts".

Attack (403's root cause reached without any gap between build and run: `k(z, a).sync()` in one
expression): user code that runs *inside* the checks — a precondition callable, and a
ct.Constant value's __eq__/__hash__ — re-points a raw NumPy Ref (a.strides = (-4,), made with
np.ndarray(buffer=, offset=)) onto the Mut after the aliasing check has passed. The launch then
reads the re-pointed array: a Ref overlapping its Mut.
"""
from _r4 import *

H = {}


def pre(x):
    a = H.get("a")
    if a is not None:
        a.strides = (-4,)
    return True


class Sneaky:
    def __init__(self):
        self.armed = False

    def __hash__(self):
        if self.armed and H.get("a") is not None:
            H["a"].strides = (-4,)
        return 7

    def __eq__(self, other):
        return isinstance(other, Sneaky)


K = kernel_from_source('''
@ct.entry(preconditions=[pre])
def pf(z: ct.Mut[ct.f32, "B"], x: ct.Ref[ct.f32, -1]):
    z.store(ct.load_tile_like(x, z) + 1.0)

@ct.entry
def cf(z: ct.Mut[ct.f32, "B"], x: ct.Ref[ct.f32, -1], c: ct.Constant[object]):
    z.store(ct.load_tile_like(x, z) + 1.0)
''', {"pre": pre}, tag="r4_414")
fails = []
notes = []


def setup():
    base = np.zeros(128, np.float32)
    base[64:] = np.arange(64) + 100
    a = np.ndarray(shape=(64,), dtype=np.float32, buffer=base, offset=256)
    return base, a


for name, run in [
    ("precondition callable", lambda z, a: K["pf"](z, a).sync()),
    ("Constant.__hash__", lambda z, a: K["cf"](z, a, SNEAKY).sync()),
]:
    SNEAKY = Sneaky()
    base, a = setup()
    # warm: same kernel once with a harmless array, so the Constant path is realistic
    try:
        K["cf"](ct.zeros(64).sync().partition(64), np.zeros(64, np.float32), SNEAKY).sync()
    except Exception:  # noqa: BLE001
        pass
    SNEAKY.armed = True
    H["a"] = a
    try:
        run(ct.from_dlpack(base[:64]).partition(64), a)
    except Exception as e:  # noqa: BLE001
        notes.append(f"{name}: {type(e).__name__}: {str(e)[:80]}")
        if not is_safetile_error(e):
            fails.append(f"{name}: non-safetile {type(e).__name__}")
        H.clear()
        continue
    H.clear()
    if a.strides == (-4,) and base[1] == 1.0:
        fails.append(f"{name} re-pointed the Ref onto the Mut after the alias check: the launch read it "
                     f"(z[:3] = {base[:3]})")
    else:
        notes.append(f"{name}: strides {a.strides}, z[:3] {base[:3]}")
print(notes)
if fails:
    broken("; ".join(fails))
held("user code inside the checks cannot re-point a checked Ref")
