"""``ct.launch``: validate a launch completely, then run it on the backend that owns the data.

Hot path: every kernel keeps a dispatch cache (``Kernel.dispatch``) from the launch's
argument signature (``runtime/args.signature``: attribute reads only) to a ``Prepared``
launch: the compiled Function, its specs, whether the data is on a CUDA device, and the
backend's per-specialisation launcher. The first launch with a new signature goes through
every check (``arg_specs``, compilation) and fills the entry; a later launch with the same
signature has, by construction of the signature, the same specs and passes the same
argument checks, so it only checks the grid and calls the backend.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from ..errors import GridError, LaunchTypeError
from ..frontend.kernel import runtime_leaves
from .args import SCALAR_TYPES, arg_specs, as_numpy, flat_runtime_args, has_aggregates, is_cuda, signature
from .backends import BACKENDS
from .env import backend_override
from .kernel import Kernel

MAX_GRID_DIM = 2**24 - 1
_DISPATCH_LIMIT = 1024  # distinct signatures kept per kernel (then the cache starts over)


def normalize_grid(grid: Any) -> tuple[int, int, int]:
    """A grid of 1 to 3 positive dimensions, each at most 2**24 - 1, as (x, y, z)."""
    if type(grid) is tuple:  # fast path: a tuple of Python ints in range
        n = len(grid)
        if n == 3:
            x, y, z = grid
            if type(x) is int and type(y) is int and type(z) is int and 0 < x <= MAX_GRID_DIM \
                    and 0 < y <= MAX_GRID_DIM and 0 < z <= MAX_GRID_DIM:
                return grid
        elif n == 1:
            x = grid[0]
            if type(x) is int and 0 < x <= MAX_GRID_DIM:
                return (x, 1, 1)
        elif n == 2:
            x, y = grid
            if type(x) is int and type(y) is int and 0 < x <= MAX_GRID_DIM and 0 < y <= MAX_GRID_DIM:
                return (x, y, 1)
    elif type(grid) is int and 0 < grid <= MAX_GRID_DIM:
        return (grid, 1, 1)
    return _normalize_grid_checked(grid)


def _normalize_grid_checked(grid: Any) -> tuple[int, int, int]:
    if isinstance(grid, (int, np.integer)) and not isinstance(grid, bool):
        grid = (int(grid),)
    if not isinstance(grid, (tuple, list)) or not 1 <= len(grid) <= 3:
        raise GridError(f"grid must be a tuple of 1 to 3 positive integers, got {grid!r}")
    dims = []
    for axis, n in enumerate(grid):
        if isinstance(n, bool) or not isinstance(n, (int, np.integer)):
            raise GridError(f"grid axis {axis} must be an integer, got {n!r}")
        if not 1 <= int(n) <= MAX_GRID_DIM:
            raise GridError(f"grid axis {axis} is {int(n)}; each grid dimension must be between 1 and "
                            f"{MAX_GRID_DIM} (2**24 - 1)")
        dims.append(int(n))
    return tuple(dims + [1] * (3 - len(dims)))  # type: ignore[return-value]


def check_args(kernel: Any, args: Any) -> tuple:
    if not isinstance(kernel, Kernel):
        hint = " (an @ct.entry kernel is called, not launched: kernel(*args).sync())" \
            if type(kernel).__name__ == "EntryKernel" else ""
        raise LaunchTypeError(f"ct.launch expects a @ct.kernel, got {type(kernel).__name__}{hint}")
    if not isinstance(args, (tuple, list)):
        raise LaunchTypeError(f"kernel arguments must be a tuple, got {type(args).__name__}")
    if len(args) != len(kernel.params):
        raise LaunchTypeError(f"kernel {kernel.__name__!r} takes {len(kernel.params)} argument(s) "
                              f"({', '.join(p.name for p in kernel.params)}), got {len(args)}")
    return tuple(args)


def check_stream(stream: Any) -> None:
    """The CPU backend runs in order on the calling thread and has no use for a stream, but a
    value that is not one (a device, a string, a grid in the wrong place) is a mistake: refuse it
    rather than ignore it. Streams are None, raw handles (int), and objects of the stream
    protocols (torch, CuPy, ``__cuda_stream__``, ``ct.Stream``)."""
    if type(stream) is int or any(hasattr(stream, a) for a in _STREAM_ATTRS):
        return
    raise LaunchTypeError(f"the stream argument of ct.launch must be None or a stream (torch, CuPy, ct.Stream, "
                          f"an int handle), got {type(stream).__name__} {stream!r:.60}")


_STREAM_ATTRS = ("cuda_stream", "ptr", "__cuda_stream__", "torch_stream")


class Prepared:
    """What a launch with one argument signature needs: everything that depends only on it."""

    __slots__ = ("kernel", "fn", "specs", "on_gpu", "_gpu", "flat")

    def __init__(self, kernel: Kernel, fn, specs: tuple, on_gpu: bool):
        self.kernel = kernel
        self.fn = fn
        self.specs = specs
        self.on_gpu = on_gpu
        self._gpu = None
        # tuple and dataclass arguments: the backends see their leaves as separate arguments
        self.flat = FlatKernel(kernel, specs) if has_aggregates(specs) else None

    def gpu(self):
        """The Triton backend's launcher for this specialisation: ``(stream, grid3, args) -> None``."""
        g = self._gpu
        if g is None:
            g = self._gpu = BACKENDS.get("triton").specialization(self.flat or self.kernel, self.fn, self.specs)
        return g

    def __call__(self, stream: Any, grid3: tuple, args: tuple):
        """Run the launch; returns the GPU backend's compiled variant when one ran on CUDA (and
        the one-pass path may learn it: never for flattened aggregate arguments)."""
        kernel: Kernel | FlatKernel = self.kernel
        if self.flat is not None:
            args, kernel = flat_runtime_args(self.specs, args), self.flat
        if self.on_gpu or backend_override() == "triton":  # forced: Triton interpreter tests
            ran = (self._gpu or self.gpu())(stream, grid3, args)
            return ran if self.flat is None else None
        if stream is not None:
            check_stream(stream)
        run_cpu(self.fn, grid3, kernel, args)
        return None


class FlatKernel:
    """A kernel as the backends see it when tuple or dataclass arguments are passed leaf by leaf:
    every argument runtime (``constant_params`` all False), the rest the kernel's own."""

    def __init__(self, kernel: Kernel, specs: tuple):
        self.kernel = kernel
        self.__name__ = kernel.__name__
        self.constant_params = [False] * sum(len(runtime_leaves(s)) for s in specs)
        self.backend_cache = kernel.backend_cache
        self.hints = kernel.hints
        self.gpu_fast = None

    def specialize(self, specs):
        return self.kernel.specialize(specs)


def launch(stream: Any, grid: Any, kernel: Kernel, args: Any, /, *,
           programmatic_dependent_launch: bool = False) -> None:
    """Launch ``kernel`` over ``grid`` with ``args`` on ``stream`` (``None`` on the CPU).

    Everything is checked (grid, argument count and kinds, compilation) before any
    argument is touched, so a rejected launch writes nothing. ``programmatic_dependent_launch``
    (cuTile Python's flag: the kernel may start before its predecessor ends) is what safetile's
    GPU launches always do on sm_90+, each kernel waiting for its predecessor before it touches
    memory (docs/architecture.md), so the flag changes nothing.
    """
    if programmatic_dependent_launch not in (False, True):
        raise LaunchTypeError("programmatic_dependent_launch must be True or False, "
                              f"got {programmatic_dependent_launch!r}")
    if type(args) is tuple and type(kernel) is Kernel:
        if not kernel.captured.check():  # Python state the compiled code folded in: unchanged?
            kernel.refresh()
        fast = kernel.gpu_fast  # the one-pass path checks the argument count itself
        if fast is not None and fast(stream, grid, args):
            return
        sig = signature(kernel, args) if len(args) == len(kernel.constant_params) else None
        if sig is not None:
            prepared = kernel.dispatch.get(sig)
            if prepared is not None:
                grid3 = normalize_grid(grid)
                ran = prepared(stream, grid3, args)
                if ran is not None:  # a CUDA launch the one-pass path did not know (a new shape)
                    _learn(kernel, ran, grid3, args)
                return
    else:
        sig = None
    args = check_args(kernel, args)
    grid3 = normalize_grid(grid)
    if sig is None:
        kernel.refresh()
    prepared = prepare(kernel, args)
    if sig is None and type(kernel) is Kernel:
        sig = signature(kernel, args)
    if sig is not None:
        d = kernel.dispatch
        if len(d) >= _DISPATCH_LIMIT:
            d.clear()
        d[sig] = prepared
    ran = prepared(stream, grid3, args)
    if ran is not None and type(kernel) is Kernel:
        _learn(kernel, ran, grid3, args)


def _learn(kernel: Kernel, variant, grid3, args) -> None:
    if not kernel.static_arrays:  # array sizes in the specialisation: the checked path every time
        BACKENDS.get("triton").learn_fast(kernel, variant, grid3, args)


def prepare(kernel: Kernel, args: tuple, specs: tuple | None = None) -> Prepared:
    """The fully checked part of a launch: specs (argument kinds, dtypes, constants) and compilation.
    ``specs``: what to compile for instead of the arguments' own (torch_op: its inputs read-only)."""
    if specs is None:
        specs = arg_specs(kernel, args)
    on_gpu = any(is_cuda(a) for a in flat_runtime_args(specs, args))
    fn = kernel.specialize(specs)
    return Prepared(kernel, fn, specs, on_gpu)


def run_cpu(fn, grid3, kernel: Kernel | FlatKernel, args: tuple, race_detector=None) -> None:
    slots = fn.__dict__.get("_cpu_slots")
    if slots is None:  # which argument feeds which parameter: once per Function (kept with it)
        runtime = iter(fn.runtime_params)
        slots = fn._cpu_slots = tuple(
            (i, p.value.id, p.kind == "array", p.value.type.dtype.np_dtype if p.kind != "array" else None)
            for i, is_const in enumerate(kernel.constant_params) if not is_const for p in (next(runtime),))
    arrays, scalars = {}, {}
    for i, vid, is_array, np_dtype in slots:
        a = args[i]
        if is_array:
            arrays[vid] = a if type(a) is np.ndarray else as_numpy(a)
        else:
            scalars[vid] = np.asarray(a, dtype=np_dtype) if isinstance(a, SCALAR_TYPES) else a
    BACKENDS.get("cpu").execute(fn, grid3, arrays, scalars, race_detector)
