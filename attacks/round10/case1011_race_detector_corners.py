"""G10: ct.detect_races must report every pair of blocks whose accesses to one byte race (write-write,
write-read, atomic-plain) and nothing else. Corner cases: a race only along grid axis z; gather vs store;
atomic vs plain load; one buffer passed as two overlapping NumPy views; a u8 view vs an f32 view (partial
bytes); an f16 view vs a u8 view touching *different* bytes of one f32 element (no race); Array.slice vs the
whole array; overlapping tiled_view windows (traversal_steps < tile); scatters dropped out of bounds from two
blocks at the same index (no race); atomics vs atomics (no race); masked scatters that partition the array
(no race); repeated indices inside one block (program order, no race) and across blocks (race); an entry
kernel made unchecked. Expect: the report's verdict equals the reference for each, and a racing one names
both blocks."""
from _r10 import *

T = 16


@ct.kernel
def k_zaxis(A):
    ct.store(A, index=(0,), tile=ct.full((T,), 1.0, dtype=ct.float32))


@ct.kernel
def k_gather_vs_store(A):
    b = ct.bid(0)
    if b == 0:
        ct.store(A, index=(0,), tile=ct.full((T,), 1.0, dtype=ct.float32))
    else:
        x = ct.gather(A, ct.arange(1, dtype=ct.int32) + 3)
        ct.store(A, index=(1,), tile=ct.full((T,), 0.0, dtype=ct.float32) + ct.sum(x))


@ct.kernel
def k_atomic_vs_load(A, B):
    b = ct.bid(0)
    if b == 0:
        ct.atomic_add(A, ct.arange(1, dtype=ct.int32) + 5, ct.full((1,), 1.0, dtype=ct.float32))
    else:
        x = ct.load(A, index=(0,), shape=(T,))
        ct.store(B, index=(0,), tile=x)


@ct.kernel
def k_two_views(a, b):
    if ct.bid(0) == 0:
        ct.store(a, index=(1,), tile=ct.full((8,), 1.0, dtype=ct.float32))   # a[8:16]
    else:
        x = ct.load(b, index=(0,), shape=(8,))                                # b[0:8] = a[8:16]
        ct.store(b, index=(4,), tile=x)                                       # b[32:40]: disjoint


@ct.kernel
def k_u8_vs_f32(f, u, out):
    if ct.bid(0) == 0:
        ct.scatter(u, ct.arange(1, dtype=ct.int32) + 1, ct.full((1,), 7, dtype=ct.uint8))  # byte 1 of f[0]
    else:
        ct.store(out, index=(0,), tile=ct.load(f, index=(0,), shape=(4,)))


@ct.kernel
def k_f16_vs_u8_disjoint(h, u, out):
    if ct.bid(0) == 0:
        ct.scatter(h, ct.arange(1, dtype=ct.int32), ct.full((1,), 1.0, dtype=ct.float16))  # bytes 0-1
    else:
        x = ct.gather(u, ct.arange(1, dtype=ct.int32) + 2)                                   # byte 2
        ct.scatter(out, ct.arange(1, dtype=ct.int32), x)


@ct.kernel
def k_slice(A):
    if ct.bid(0) == 0:
        ct.store(A, index=(0,), tile=ct.full((T,), 1.0, dtype=ct.float32))        # A[0:16]
    else:
        s = A.slice(0, 8, 64)
        ct.store(s, index=(0,), tile=ct.full((T,), 2.0, dtype=ct.float32))        # A[8:24]


@ct.kernel
def k_tiled_steps(A):
    v = A.tiled_view((T,), traversal_steps=(8,))
    v.store((ct.bid(0),), ct.full((T,), 1.0, dtype=ct.float32))                  # windows overlap by 8


@ct.kernel
def k_oob_scatter(A):
    ct.scatter(A, ct.arange(1, dtype=ct.int32) + 64, ct.full((1,), 1.0, dtype=ct.float32))   # dropped


@ct.kernel
def k_atomics(A):
    ct.atomic_add(A, ct.arange(4, dtype=ct.int32), ct.full((4,), 1.0, dtype=ct.float32))
    ct.atomic_xchg(A, ct.arange(1, dtype=ct.int32) + 8, ct.full((1,), 1.0, dtype=ct.float32))


@ct.kernel
def k_masked_partition(A):
    b = ct.bid(0)
    idx = ct.arange(T, dtype=ct.int32) + b * 10          # overlapping index ranges...
    ok = idx < b * 10 + 10                                # ...masked to disjoint ones by out-of-bounds indices
    ct.scatter(A, ct.where(ok, idx, idx * 0 - 1), ct.full((T,), 1.0, dtype=ct.float32))


@ct.kernel
def k_repeat_in_block(A):
    b = ct.bid(0)
    idx = ct.arange(T, dtype=ct.int32) * 0 + b * 2       # one element repeated 16 times in one block
    ct.scatter(A, idx, ct.full((T,), 1.0, dtype=ct.float32))


@ct.kernel
def k_repeat_across(A):
    idx = ct.arange(T, dtype=ct.int32) * 0 + 3            # every block writes element 3
    ct.scatter(A, idx, ct.full((T,), 1.0, dtype=ct.float32))


@ct.entry(unchecked=True)
def e_unchecked(A):
    ct.store(A, index=(0,), tile=ct.full((T,), 1.0, dtype=ct.float32))


@ct.kernel
def k_transposed(A, At, out):
    if ct.bid(0) == 0:
        ct.store(A, index=(0, 0), tile=ct.full((1, T), 1.0, dtype=ct.float32))      # A[0, 0:16]
    else:
        ct.store(out, index=(0, 0), tile=ct.load(At, index=(0, 0), shape=(T, 1)))  # At[0:16, 0] = A[0, 0:16]


@ct.kernel
def k_reversed(A, R):
    if ct.bid(0) == 0:
        ct.store(A, index=(0,), tile=ct.full((T,), 1.0, dtype=ct.float32))   # A[0:16]
    else:
        ct.store(R, index=(3,), tile=ct.full((T,), 2.0, dtype=ct.float32))   # R[48:64] = A[15::-1]


def f32(n=64):
    return np.zeros(n, np.float32)


base = f32(128)
buf = f32(64)
sq = np.zeros((16, 16), np.float32)
rv = f32(64)
cases = [
    ("zaxis", k_zaxis, (1, 1, 2), lambda: (f32(),), True),
    ("gather_vs_store", k_gather_vs_store, (2, 1, 1), lambda: (f32(),), True),
    ("atomic_vs_load", k_atomic_vs_load, (2, 1, 1), lambda: (f32(), f32()), True),
    ("two_views", k_two_views, (2, 1, 1), lambda: (base[0:64], base[8:72]), True),
    ("u8_vs_f32", k_u8_vs_f32, (2, 1, 1), lambda: (buf, buf.view(np.uint8), f32()), True),
    ("f16_vs_u8_disjoint", k_f16_vs_u8_disjoint, (2, 1, 1), lambda: (buf.view(np.float16), buf.view(np.uint8), np.zeros(4, np.uint8)), False),
    ("slice", k_slice, (2, 1, 1), lambda: (f32(),), True),
    ("tiled_steps", k_tiled_steps, (4, 1, 1), lambda: (f32(),), True),
    ("oob_scatter", k_oob_scatter, (2, 1, 1), lambda: (f32(),), False),
    ("atomics", k_atomics, (3, 1, 1), lambda: (f32(),), False),
    ("masked_partition", k_masked_partition, (4, 1, 1), lambda: (f32(),), False),
    ("repeat_in_block", k_repeat_in_block, (4, 1, 1), lambda: (f32(),), False),
    ("repeat_across", k_repeat_across, (4, 1, 1), lambda: (f32(),), True),
    ("transposed", k_transposed, (2, 1, 1), lambda: (sq, sq.T, np.zeros((16, 1), np.float32)), True),
    ("reversed", k_reversed, (2, 1, 1), lambda: (rv, rv[::-1]), True),
    ("entry_unchecked", e_unchecked, (2, 1, 1), lambda: (f32(),), True),
]
wrong = []
errs = []
seen = {}
for name, k, grid, mk, expect in cases:
    try:
        rep = ct.detect_races(k, grid, mk(), raise_on_race=False)
    except Exception as e:  # noqa
        errs.append(f"{name}: {err(e, 200)}")
        continue
    got = bool(rep)
    seen[name] = got
    if got != expect:
        wrong.append(f"{name}: expected {'a race' if expect else 'no race'}, got: {str(rep)[:220]}")
if wrong:
    broke("; ".join(wrong[:4]) + (f"; errors: {errs[:2]}" if errs else ""))
if errs:
    inconclusive("kernels refused (attack written wrong?): " + "; ".join(errs[:4]))
held(f"all {len(seen)} verdicts right: {seen}")
