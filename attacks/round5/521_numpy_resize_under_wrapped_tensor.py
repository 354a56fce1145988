"""Promise (safety.md G3): safetile's own alias "keeps the memory alive (a view holds its base, a
torch alias its storage) while the launch is built, runs and is replayed"; G8: "A safetile tensor
holds a private view of its memory, so whoever handed the array in cannot reset its shape or
strides". The docs carve out only torch: "Resizing the storage of a wrapped *CPU* torch tensor frees
the memory under the tensor's NumPy view: do not".

Attack: the NumPy twin of that carve-out, through NumPy's public API. Wrap a NumPy array with
`ct.from_dlpack` and partition it, launch a few times (the repeated-launch case), then
`base.resize(bigger, refcheck=False)` — NumPy reallocates the buffer and frees the old one although
safetile's view still points into it — and allocate same-size arrays filled with 7.0 until one lands
on the freed block. The next safe launch must be refused with a safetile error (or at least not
write memory it does not own): here it writes the freed block, i.e. another live array. With the
C twin on and off. (If this is meant to be outside like torch's case, the docs should say so.)
"""
from _r5 import *


def scenario(rec):
    @ct.entry
    def k(z: ct.Mut[ct.f32, "B"], x: ct.Ref[ct.f32, -1]):
        z.store(ct.load_tile_like(x, z) + 1.0)
    n = 1 << 16
    base = np.zeros(n, np.float32)
    old = base.__array_interface__["data"][0]
    z = ct.from_dlpack(base).partition(1024)
    x = ct.from_dlpack(np.ones(n, np.float32))
    for _ in range(3):
        z, x = k(z, x).sync()
    try:
        base.resize((n * 16,), refcheck=False)
        rec("resize(refcheck=False) allowed", True)
    except BaseException as e:  # noqa: BLE001
        rec("resize(refcheck=False) allowed", exc_str(e)[:200])
        return
    victims = []
    for _ in range(400):
        a = np.full(n, 7.0, np.float32)
        p = a.__array_interface__["data"][0]
        victims.append(a)
        if p <= old < p + a.nbytes or old <= p < old + 4 * n:
            break
    on_old = [a for a in victims if abs(a.__array_interface__["data"][0] - old) < 4 * n]
    rec("a new array overlaps the freed block", bool(on_old))
    try:
        z, x = k(z, x).sync()
        clobbered = sum(int((a != 7.0).any()) for a in victims)
        rec("launch after resize", ["ran", f"{clobbered} other live array(s) written"])
    except BaseException as e:  # noqa: BLE001
        rec("launch after resize", ["refused" if is_safetile_error(e) else exc_str(e)[:200], ""])


def check(log):
    d = dict(log)
    if "SCENARIO-RAISED" in d:
        return [d["SCENARIO-RAISED"][:300]]
    v = d.get("launch after resize")
    if v and v[0] == "ran" and not v[1].startswith("0 "):
        return [f"after base.resize(..., refcheck=False) a safe launch on the wrapped tensor ran and {v[1]} "
                f"(freed memory NumPy handed to them)"]
    if v and v[0] not in ("ran", "refused"):
        return [f"launch after resize: {v[0]}"]
    return []


def main():
    problems, on, off = differential(__file__, scenario, check, "numpy resize")
    d = dict(on)
    if d.get("a new array overlaps the freed block") is False and not problems:
        inconclusive("no new array landed on the freed block (allocator); nothing to see")
    if problems:
        both = sorted(set(p.split("] ", 1)[1] for p in problems if p.startswith("[native on]")) &
                      set(p.split("] ", 1)[1] for p in problems if p.startswith("[native off]")))
        broken(("C twin on and off alike: " + "; ".join(both)) if both else "; ".join(problems[:3]))
    held("after base.resize(refcheck=False) the wrapped tensor's launch wrote nothing it does not own")


run_guarded(main, "521")
