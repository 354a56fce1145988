"""Promise (safety.md, "Outside every guarantee"): host values "keep their state in __slots__ (no
__dict__ to edit, no stray attributes), their classes are final (ownership.Unique), and assigning
__class__ between them is refused"; G6: "While a Shared handle lives, nothing writes its memory".
safe.md: a Tensor "cannot be pickled"/"copied" (OwnershipError: "a duplicate would be a second
owner").

Attack through public dunder protocols only (no _names typed by the attacker): subclassing
Tensor/Shared/Partition/MappedPartition; __class__ assignment to a user class with the same
__slots__; copy.copy/deepcopy/pickle (protocols 0-5, buffer_callback) of Shared, Tensor, views
and partitions; copyreg-free routes that call __reduce_ex__/__getstate__ for the caller
(copy.copy's own protocol, multiprocessing's ForkingPickler); weakref.proxy of a Shared used
after its unwrap. A route that yields a writable array over a live Shared (and a write through
it lands) is BROKEN; __getstate__() handing out the private slots dict is reported as a note
(reading it means touching private state, outside the guarantees).
"""
from _r4 import *

import copy
import io
import pickle
import weakref

fails = []
notes = []

for cls in (ct.Tensor, ct.Shared, ct.Partition, ct.MappedPartition):
    try:
        type("Evil", (cls,), {})
        fails.append(f"subclassing {cls.__name__} accepted")
    except TypeError:
        pass
    except Exception as e:  # noqa: BLE001
        notes.append(f"subclass {cls.__name__}: {type(e).__name__}")

t = ct.rand(64, seed=1).sync()
view = t[:]
s = t.shared()
before = s.to_numpy().copy()

# __class__ swap to a look-alike
for target in (ct.Tensor, ct.Partition):
    try:
        s.__class__ = target
        fails.append(f"Shared.__class__ = {target.__name__} accepted")
    except TypeError:
        pass

# copying / pickling
for name, f in [
    ("copy.copy(s)", lambda: copy.copy(s)), ("copy.deepcopy(s)", lambda: copy.deepcopy(s)),
    ("copy.copy(view)", lambda: copy.copy(view)), ("copy.deepcopy(view)", lambda: copy.deepcopy(view)),
] + [(f"pickle(s, {p})", (lambda p=p: pickle.loads(pickle.dumps(s, protocol=p)))) for p in range(6)] + [
    ("pickle(view, 5, buffer_callback)", lambda: pickle.dumps(view, protocol=5, buffer_callback=lambda b: bufs.append(b))),
    ("ForkingPickler(view)", lambda: __import__("multiprocessing.reduction").reduction.ForkingPickler.dumps(view)),
]:
    bufs = []
    try:
        r = f()
    except Exception as e:  # noqa: BLE001
        if not is_safetile_error(e):
            notes.append(f"{name}: {type(e).__name__}")
        continue
    for b in bufs:
        m = b.raw()
        if not m.readonly:
            fails.append(f"{name}: out-of-band buffer is writable over the Shared's memory")
    for cand in (r if isinstance(r, tuple) else (r,)):
        if isinstance(cand, (ct.Tensor, ct.Partition)):
            try:
                cand.partition(64) if isinstance(cand, ct.Tensor) else None
                fails.append(f"{name} gave a partitionable handle over the live Shared's memory")
            except Exception:  # noqa: BLE001
                pass
# weakref proxy used after unwrap
px = weakref.proxy(s)
try:
    tt = s.try_unwrap()
    try:
        px.to_numpy()
        notes.append("proxy of an unwrapped Shared still reads")
    except Exception as e:  # noqa: BLE001
        if not is_safetile_error(e) and not isinstance(e, ReferenceError):
            fails.append(f"proxy after unwrap: raw {type(e).__name__}: {e}")
    s = tt.shared()
except Exception as e:  # noqa: BLE001
    notes.append(f"unwrap: {type(e).__name__}: {str(e)[:80]}")

# __getstate__: a public dunder returning the private slots
try:
    st = s.__getstate__()
    notes.append(f"s.__getstate__() returns the private slots {sorted(st[1])[:3]} (tampering: outside)")
except Exception as e:  # noqa: BLE001
    pass
if not np.array_equal(before, s.to_numpy()):
    fails.append("the Shared changed")
print(notes)
if fails:
    broken("; ".join(fails))
held("handles: final classes, no copies/pickles that alias a Shared")
