"""``ct.launch``: validate a launch completely, then run it on the backend that owns the data."""
from __future__ import annotations

import os
from typing import Any

import numpy as np

from ..frontend.kernel import Kernel
from .args import SCALAR_TYPES, arg_specs, as_numpy, is_cuda

MAX_GRID_DIM = 2**24 - 1


def normalize_grid(grid: Any) -> tuple[int, int, int]:
    """A grid of 1 to 3 positive dimensions, each at most 2**24 - 1, as (x, y, z)."""
    if isinstance(grid, (int, np.integer)) and not isinstance(grid, bool):
        grid = (int(grid),)
    if not isinstance(grid, (tuple, list)) or not 1 <= len(grid) <= 3:
        raise ValueError(f"grid must be a tuple of 1 to 3 positive integers, got {grid!r}")
    dims = []
    for axis, n in enumerate(grid):
        if isinstance(n, bool) or not isinstance(n, (int, np.integer)):
            raise ValueError(f"grid axis {axis} must be an integer, got {n!r}")
        if not 1 <= int(n) <= MAX_GRID_DIM:
            raise ValueError(f"grid axis {axis} is {int(n)}; each grid dimension must be between 1 and "
                             f"{MAX_GRID_DIM} (2**24 - 1)")
        dims.append(int(n))
    return tuple(dims + [1] * (3 - len(dims)))  # type: ignore[return-value]


def check_args(kernel: Any, args: Any) -> tuple:
    if not isinstance(kernel, Kernel):
        raise TypeError(f"ct.launch expects a @ct.kernel, got {type(kernel).__name__}")
    if not isinstance(args, (tuple, list)):
        raise TypeError(f"kernel arguments must be a tuple, got {type(args).__name__}")
    if len(args) != len(kernel.params):
        raise TypeError(f"kernel {kernel.__name__!r} takes {len(kernel.params)} argument(s) "
                        f"({', '.join(p.name for p in kernel.params)}), got {len(args)}")
    return tuple(args)


def launch(stream: Any, grid: Any, kernel: Kernel, args: Any) -> None:
    """Launch ``kernel`` over ``grid`` with ``args`` on ``stream`` (``None`` on the CPU).

    Everything is checked (grid, argument count and kinds, compilation) before any
    argument is touched, so a rejected launch writes nothing.
    """
    args = check_args(kernel, args)
    grid3 = normalize_grid(grid)
    specs = arg_specs(kernel, args)
    on_gpu = any(is_cuda(a) for a, c in zip(args, kernel.constant_params) if not c)
    fn = kernel.specialize(specs)
    if on_gpu or os.environ.get("SAFETILE_BACKEND") == "triton":  # forced: Triton interpreter tests
        from ..backends.triton.launcher import launch_gpu
        launch_gpu(stream, grid3, kernel, fn, specs, args)
        return
    run_cpu(fn, grid3, kernel, args)


def run_cpu(fn, grid3, kernel: Kernel, args: tuple, race_detector=None) -> None:
    from ..backends.cpu.executor import execute
    arrays, scalars = {}, {}
    runtime = iter(fn.runtime_params)
    for a, is_const in zip(args, kernel.constant_params):
        if is_const:
            continue
        p = next(runtime)
        if p.kind == "array":
            arrays[p.value.id] = as_numpy(a)
        else:
            scalars[p.value.id] = np.asarray(a, dtype=p.value.type.dtype.np_dtype) \
                if isinstance(a, SCALAR_TYPES) else a
    execute(fn, grid3, arrays, scalars, race_detector)
