"""Helpers of the adversarial corpus (tests/test_attacks_*.py).

A refused attack must raise a safetile error (an exception class of the package, never a
NumPy, torch or Python one) and leave every argument byte-identical and usable. Data is
random; outputs are poisoned with NaN so that a write that should not happen shows.
"""
from __future__ import annotations

import re
import threading
import time

import numpy as np
import pytest

import safetile as ct


def rnd(shape, seed=0, dtype=ct.f32):
    return ct.randn(shape, seed=seed, dtype=dtype).sync()


def poisoned(shape, dtype=np.float32):
    """A tensor of NaN (integers: 0x5A bytes), so that a write that should not happen shows."""
    if np.issubdtype(dtype, np.floating):
        return ct.from_dlpack(np.full(shape, np.nan, dtype=dtype))
    return ct.from_dlpack(np.full(shape, 0x5A, dtype=dtype))


def raw(o):
    """The memory behind a host value (a NumPy view), without any ownership check."""
    if isinstance(o, ct.MappedPartition):
        o = o._partition
    if isinstance(o, (ct.Partition, ct.Shared)):
        o = o._tensor
    if isinstance(o, ct.Tensor):
        o = o._data
    if type(o).__module__.startswith("torch"):
        return o.detach().numpy()
    return o


def snapshot(objs):
    return [np.array(raw(o), copy=True) for o in objs]


def untouched(objs, snaps):
    for o, s in zip(objs, snaps):
        assert raw(o).tobytes() == s.tobytes(), f"{o!r} was written by a refused operation"
        if hasattr(o, "is_moved"):
            assert not o.is_moved, f"{o!r} was moved by a refused operation"


def is_safetile_error(e: BaseException) -> bool:
    return any(c.__module__.startswith("safetile") for c in type(e).__mro__)


def refused(objs, action, exc=Exception, pattern=None):
    """Run ``action``: it must raise a safetile error of type ``exc`` (message matching
    ``pattern``) and leave ``objs`` byte-identical and unmoved. Returns the error."""
    snaps = snapshot(objs)
    with pytest.raises(exc) as info:
        action()
    e = info.value
    assert is_safetile_error(e), f"a foreign error escaped: {type(e).__module__}.{type(e).__name__}: {e}"
    if pattern is not None:
        assert re.search(pattern, str(e), re.S), str(e)
    untouched(objs, snaps)
    return e


@ct.entry
def inc(z: ct.Mut[ct.f32, "B"]):
    """z += 1 over z's sub-tensor."""
    z.store(z.load() + 1.0)


@ct.entry
def add(z: ct.Mut[ct.f32, "B"], x: ct.Ref[ct.f32, -1]):
    """z += x over z's sub-tensor."""
    z.store(z.load() + ct.load_tile_like(x, z))


@ct.entry
def spin_write(z: ct.Mut[ct.f32, "B"], v: ct.f32, reps: ct.Constant[int]):
    """A slow launch (reps multiplies per element) that ends by writing v: work in flight."""
    acc = ct.full((B,), 1.0, ct.float32)
    for i in range(reps):
        acc = acc * 1.0
    z.store(acc * 0.0 + v)


WAIT = 10  # seconds: an upper bound for events that come at once; never reached when the code is right


def wait_until(cond, what: str) -> None:
    """Poll ``cond`` until it holds; fail after ``WAIT`` seconds (a mutant that never makes it true
    fails the test instead of hanging it until mutmut's wall limit)."""
    deadline = time.monotonic() + WAIT
    while not cond():
        assert time.monotonic() < deadline, f"{what} never happened"
        threading.Event().wait(0.001)


class Pause:
    """A ``then`` closure that stops the chain until ``go`` is set (``entered``: it is stopped there)."""

    def __init__(self):
        self.entered, self.go = threading.Event(), threading.Event()

    def __call__(self, value):
        self.entered.set()
        assert self.go.wait(WAIT)
        return value
