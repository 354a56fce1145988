"""Arrays placed in the middle of a larger buffer of sentinels, for tests that launch a kernel on
the NumPy backend or in Triton's interpreter and must see any access outside an array: a write
there shows in the guard region, a read returns the sentinel."""
from __future__ import annotations

import contextlib

import numpy as np

from triton_interp import triton_interpreter

GUARD = 4096  # sentinel elements on either side of an array
XFILL, YFILL = 5.0, -9.0  # sentinels around arrays that are read (X) and written (Y)


def wrap(v: int, bits: int = 32, signed: bool = True) -> int:
    """``v`` as a ``bits``-bit integer wraps it (two's complement where ``signed``)."""
    v = int(v) % (1 << bits)
    return v - (1 << bits) if signed and v >= 1 << (bits - 1) else v


def backend(name: str):
    """The context a launch runs in: Triton's interpreter for "triton", else the default backend."""
    return triton_interpreter() if name == "triton" else contextlib.nullcontext()


def guarded(name: str, content, fill):
    """(buffer, view): ``content`` in the middle of a buffer of ``fill`` with GUARD elements either
    side (a torch tensor for the "triton" backend)."""
    content = np.asarray(content)
    base = np.full(content.size + 2 * GUARD, fill, content.dtype)
    base[GUARD:GUARD + content.size] = content.ravel()
    if name == "triton":
        import torch
        base = torch.from_numpy(base)
    return base, base[GUARD:GUARD + content.size].reshape(content.shape)


def host(x) -> np.ndarray:
    import torch
    return x.numpy() if isinstance(x, torch.Tensor) else np.asarray(x)
