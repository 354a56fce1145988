"""Shared helpers of the cuTile-compatibility tests: run a launch on the CPU backend or on the
Triton backend in Triton's interpreter, with fresh random data and poisoned outputs."""
from __future__ import annotations

import contextlib

import numpy as np
import pytest

import safetile as ct
from triton_interp import triton_interpreter

BACKENDS = ["cpu", "triton"]


@contextlib.contextmanager
def backend(name: str):
    """Launches inside run on ``name`` ("cpu", or "triton" in Triton's interpreter)."""
    if name == "cpu":
        yield
    else:
        with triton_interpreter():
            yield


def rng() -> np.random.Generator:
    """A generator with a fresh seed (printed by pytest on failure through the test's locals)."""
    return np.random.default_rng(np.random.SeedSequence().entropy)


def poison(shape, dtype) -> np.ndarray:
    """An output array filled with a value no correct result holds here (NaN, or a sentinel)."""
    dtype = np.dtype(dtype)
    if dtype.kind == "f" or dtype.kind == "V":
        return np.full(shape, np.nan, np.float32).astype(dtype)
    if dtype == np.bool_:
        return np.zeros(shape, bool)
    return np.full(shape, np.iinfo(dtype).max - 3, dtype)


def launch(kernel, *args, grid=(1,)):
    ct.launch(None, grid, kernel, args)


def compile_error(kernel, *args, cls=ct.TileError, match=None):
    with pytest.raises(cls, match=match) as info:
        ct.launch(None, (1,), kernel, args)
    return info.value
