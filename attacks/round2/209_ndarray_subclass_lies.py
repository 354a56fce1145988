"""# BACKENDS: cpu triton
Promise (safety.md G3): 'The memory a launch writes overlaps no other argument of the
launch'; (G8) 'raw arrays are read in full on every launch'; (safe.md, launch boundary 5)
overlapping arguments 'are refused naming both arguments (AliasError)'.

A NumPy ndarray subclass (accepted for a ct.Ref parameter) whose `__array_interface__`
property reports another data address, passed beside a partition of the same memory.
A plain ndarray / plain subclass view is refused with AliasError; the lying one must be
too (or refused as a type)."""
from _r2 import *


class LyingInterface(np.ndarray):
    @property
    def __array_interface__(self):
        d = dict(np.ndarray.__array_interface__.__get__(self))
        d["data"] = (0x7F0000000000, False)
        return d


def body():
    nb = np.zeros(4096, np.float32)
    p = ct.from_dlpack(nb).partition(1024)
    honest = nb[1024:]
    expect_refusal(lambda: fill(p, honest), ct.AliasError, what="honest overlapping view")
    liar = nb[1024:].view(LyingInterface)
    try:
        r = fill(p, liar).sync()
    except Exception as e:  # noqa: BLE001
        if is_safetile_error(e):
            held(f"lying subclass refused: {type(e).__name__}")
        broken(f"non-safetile error {type(e).__name__}: {e}")
    broken("an ndarray subclass with a lying __array_interface__ passed the aliasing check: mutable 'z' "
           "(partition of nb) and read-only 'x' = nb[1024:] in one launch (blocks 1..3 write what blocks 0..2 read)")


run_guarded(body, "ndarray subclass lies")
