"""The checks of an entry kernel launch: a pure function of the arguments' facts.

``check_types`` reads what the arguments are (``facts.py``: kinds, element types, shapes,
partition shapes, devices; scalar types; constant values) and decides the specialisation:
argument kinds, element types, ranks and static sizes, consistent generics, power-of-two
sub-tensors, the grid (every mutable partition's grid equals the launch grid, so each
block owns exactly one sub-tensor of each). ``check_memory`` reads where the arguments are
(byte extents) and the scalar values: no mutable argument overlaps another argument or
itself, the declared preconditions hold; then it compiles. Neither looks at ownership
(``launch.py`` checks and moves in one step) and neither has a side effect besides
compiling, so their results are cached keyed on exactly the facts they read.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol

from .. import dtypes as dt
from ..frontend.kernel import const_signature
from ..runtime.env import backend_override
from ..runtime.launch import normalize_grid
from .entry import Compiled, EntryKernel, ParamKey
from .errors import AliasError, GridError, LaunchTypeError
from .facts import SCALARS, ArgFacts
from .memory import Extent, distinct_elements, overlaps
from .partition import MAX_TILE_ELEMENTS
from .preconditions import ArgInfo
from .types import ConstParam, ScalarParam, TensorParam

AXES = "xyz"


@dataclass(frozen=True)
class Junk:
    """The fact of an argument that is neither tensor-like, scalar nor hashable: its type name."""

    type_name: str


@dataclass(slots=True)  # slots: the C run reads ``device`` at its offset (native_run.py)
class TypeCheck:
    """What the type-level checks decided (compilation waits for the preconditions)."""

    keys: tuple[ParamKey, ...]
    generics: dict[str, Any]
    grid3: tuple[int, int, int]
    device: str
    backend: str
    mutable: tuple  # per parameter: True/False for tensors, None for scalars and constants
    infos: dict[str, Any]  # generics and ArgInfo per tensor parameter (what preconditions see)
    compiled: Compiled | None = None  # after the first launch that passed the preconditions


class BoundLaunch(Protocol):
    """A launch with its arguments resolved once (the Triton backend's ``Bound``)."""

    device: int  # the CUDA device index it was resolved for

    def __call__(self, stream: int) -> None: ...


@dataclass(slots=True)  # slots: the safe launch's C path reads them at their offsets (native.py)
class Plan:
    """A validated launch: what to run, where, and which memory it writes and reads."""

    checked: TypeCheck
    writes: list[Extent] = field(default_factory=list)
    reads: list[Extent] = field(default_factory=list)
    bound: BoundLaunch | Literal[False] | None = None  # the backend's launch with its arguments resolved
    # (GPU, made on the first run; False: the backend cannot bind it, e.g. the interpreter)
    precondition_values: dict | None = None  # what callable preconditions are given (run on every launch)
    # (argument index, name, data pointer) of each torch tensor the launch reads or writes: the checks
    # hold for that pointer, and a torch storage can be reallocated under any tensor on it (``resize_``)
    pins: tuple = ()

    @property
    def compiled(self) -> Compiled:
        c = self.checked.compiled
        assert c is not None  # check_memory compiles before it makes a Plan
        return c

    @property
    def grid3(self) -> tuple[int, int, int]:
        return self.checked.grid3

    @property
    def device(self) -> str:
        return self.checked.device

    @property
    def backend(self) -> str:
        return self.checked.backend


def backend_now(kernel: EntryKernel, device: str) -> str:
    """The backend a launch on ``device`` runs on (``SAFETILE_BACKEND`` is read at launch time)."""
    return kernel.backend_name or backend_override() or ("cpu" if device == "cpu" else "triton")


class _Binder:
    """Binds const generics consistently across arguments."""

    def __init__(self, kernel: EntryKernel):
        self.kernel = kernel
        self.values: dict[str, Any] = dict(kernel.explicit_generics)
        self.source: dict[str, str] = {n: "kernel.generics(...)" for n in self.values}

    def bind(self, name: str, value: Any, where: str) -> None:
        if name in self.values:
            if self.values[name] != value:
                raise LaunchTypeError(f"kernel {self.kernel.__name__!r}: generic {name!r} is "
                                      f"{_show(self.values[name])} from {self.source[name]} but "
                                      f"{_show(value)} from {where}")
            return
        self.values[name] = value
        self.source[name] = where


def _show(v):
    return v.name if isinstance(v, dt.DType) else repr(v)


def _is_pow2(n: int) -> bool:
    return n > 0 and n & (n - 1) == 0


def _fact_name(f: Any) -> str:
    if isinstance(f, ArgFacts):
        return {"partition": "Partition", "mapped": "MappedPartition", "shared": "Shared", "tensor": "Tensor",
                "array": "ndarray", "torch": "Tensor (torch)"}[f.kind]
    if isinstance(f, Junk):
        return f.type_name
    return type(f).__name__


def check_types(kernel: EntryKernel, facts: tuple) -> TypeCheck:
    """Kinds, element types, shapes, generics, the grid. ``facts``: one per
    parameter (``ArgFacts``, a scalar or constant value, or ``Junk``)."""
    kname = kernel.__name__
    b = _Binder(kernel)
    keys: list[ParamKey] = []
    mutable: list[Any] = []
    infos: dict[str, Any] = {}
    devices: dict[str, str] = {}
    grids: list[tuple[str, tuple[int, int, int]]] = []
    for name, decl, f in zip(kernel.param_names, kernel.decls, facts):
        where = f"argument {name!r} of kernel {kname!r}"
        if isinstance(decl, ConstParam):
            if isinstance(f, (ArgFacts, Junk)):
                raise LaunchTypeError(f"{where}: ct.Constant arguments must be hashable values, got {_fact_name(f)}")
            keys.append(ParamKey("const", value=f, signature=const_signature(f)))
            mutable.append(None)
            continue
        if isinstance(decl, ScalarParam):
            if isinstance(f, (ArgFacts, Junk)) or not isinstance(f, SCALARS):
                want = decl.dtype if isinstance(decl.dtype, str) else decl.dtype.name
                raise LaunchTypeError(f"{where} is a scalar ({want}), got {_fact_name(f)}")
            if isinstance(decl.dtype, str):
                from ..runtime.args import scalar_spec
                d = scalar_spec(f)
                b.bind(decl.dtype, d, f"argument {name!r}")
            else:
                d = decl.dtype
            keys.append(ParamKey("scalar", dtype=d))
            mutable.append(None)
            continue
        assert isinstance(decl, TensorParam)
        kind = f.kind if isinstance(f, ArgFacts) else None
        if decl.kind == "mut":
            if kind == "mapped":
                raise LaunchTypeError(f"{where} is ct.Mut (one sub-tensor per block); a mapped partition needs a "
                                      "ct.MappedMut parameter")
            if kind != "partition":
                raise LaunchTypeError(f"{where} is mutable (ct.Mut): pass a partition, e.g. "
                                      f"t.partition({tuple(1 if isinstance(s, str) else s for s in decl.shape)}), "
                                      f"got {_fact_name(f)}")
        elif decl.kind == "mapped":
            if kind != "mapped":
                raise LaunchTypeError(f"{where} is ct.MappedMut: pass t.partition(shape).map(num_tile_blocks), got "
                                      f"{_fact_name(f)}")
        elif kind in ("partition", "mapped"):
            raise LaunchTypeError(f"{where} is read-only (ct.Ref): pass the tensor itself or ct.shared(t), "
                                  "not a partition")
        elif kind is None:
            raise LaunchTypeError(f"{where} is a read-only tensor (ct.Ref): pass a Tensor, ct.shared(t), a NumPy "
                                  f"array or a torch tensor, got {_fact_name(f)}")
        sub = f.sub_shape if decl.mutable else None
        if decl.mutable and not f.writeable:
            raise LaunchTypeError(f"{where}: the partitioned memory is read-only (a NumPy array with "
                                  "writeable=False); a mutable argument needs writable memory")
        if f.dtype is None:
            raise LaunchTypeError(f"{where}: {f.dtype_error}")
        d = _bind_dtype(b, decl.dtype, f.dtype, name, kname)
        shape = sub if sub is not None else f.shape
        what = "the sub-tensor shape" if sub is not None else "the tensor shape"
        if len(shape) != decl.ndim:
            raise LaunchTypeError(f"{where}: {what} {shape} has rank {len(shape)} but {decl!r} has rank {decl.ndim}")
        static: list[Any] = []
        for axis, (want, have) in enumerate(zip(decl.shape, shape)):
            if isinstance(want, str):
                b.bind(want, have, f"{what} of {name!r} (axis {axis})")
                static.append(have)
            elif want == -1:
                static.append(None)  # a dynamic size (a mutable parameter's key is its sub-tensor shape)
            else:
                if want != have:
                    raise LaunchTypeError(f"{where}: {what} is {shape} but {decl!r} needs size {want} on axis {axis}")
                static.append(have)
        if sub is not None:
            if any(not _is_pow2(n) for n in sub):
                raise LaunchTypeError(f"{where}: sub-tensor shape {sub} must be powers of two (tiles are "
                                      "power-of-two shaped); choose another partition shape")
            if math.prod(sub) > MAX_TILE_ELEMENTS:
                raise LaunchTypeError(f"{where}: a sub-tensor of shape {sub} is larger than the largest tile "
                                      f"({MAX_TILE_ELEMENTS} elements)")
            keys.append(ParamKey(decl.kind, d, len(f.shape), tuple(sub), len(f.pshape)))
            grids.append((name, f.grid3()))
        else:
            keys.append(ParamKey("ref", d, len(f.shape), tuple(static)))
        mutable.append(decl.mutable)
        devices[name] = f.device
        infos[name] = ArgInfo(name, f.shape, f.dtype)

    # every generic named in an annotation must be determined
    for name, decl in zip(kernel.param_names, kernel.decls):
        if isinstance(decl, TensorParam):
            wanted = [s for s in decl.shape if isinstance(s, str)]
            if isinstance(decl.dtype, str):
                wanted.append(decl.dtype)
            for g in wanted:
                if g not in b.values:
                    raise LaunchTypeError(f"kernel {kname!r}: generic {g!r} (parameter {name!r}) is not determined "
                                          f"by the arguments; give it with {kname}.generics({g}=...)")
    if len(set(devices.values())) > 1:
        listing = ", ".join(f"{n!r} on {d}" for n, d in devices.items())
        raise LaunchTypeError(f"kernel {kname!r}: arguments live on different devices ({listing})")
    device = next(iter(devices.values()), "cpu")
    grid3 = launch_grid(kname, kernel.explicit_grid, grids)
    backend = backend_now(kernel, device)
    if backend not in ("cpu", "triton"):
        raise LaunchTypeError(f"unknown backend {backend!r} (SAFETILE_BACKEND): use 'cpu' or 'triton'")
    values = dict(b.values)
    values.update(infos)
    return TypeCheck(tuple(keys), dict(b.values), grid3, device, backend, tuple(mutable), values)


def _bind_dtype(b: _Binder, decl_dtype, actual: dt.DType, name: str, kname: str) -> dt.DType:
    if isinstance(decl_dtype, str):
        b.bind(decl_dtype, actual, f"argument {name!r}")
        return actual
    if actual is not decl_dtype:
        raise LaunchTypeError(f"kernel {kname!r}: argument {name!r} has element type {actual.name} but the "
                              f"parameter is declared {decl_dtype.name}")
    return actual


def launch_grid(kname: str, explicit, grids: list[tuple[str, tuple[int, int, int]]]) -> tuple[int, int, int]:
    """The launch grid: every mutable partition's grid (padded to 3-D with 1s; a mapped
    partition's is ``(num_tile_blocks, 1, 1)``; a prefix partition's counts its partitioned
    axes only) and an explicit grid must be equal, axis by axis, so the blocks map one-to-one
    onto each mutable partition's sub-tensors."""
    inferred, source = None, None
    for name, g in grids:
        if inferred is None:
            inferred, source = g, name
            continue
        for axis in range(3):
            if g[axis] != inferred[axis]:
                raise GridError(f"kernel {kname!r}: grid mismatch on axis {axis} ({AXES[axis]}): the partition of "
                                f"{name!r} has {g[axis]} blocks but the partition of {source!r} has "
                                f"{inferred[axis]} (grids {g} and {inferred}); every mutable partition must have "
                                "exactly one sub-tensor per block")
    if explicit is not None and inferred is not None:
        for axis in range(3):
            if explicit[axis] != inferred[axis]:
                raise GridError(f"kernel {kname!r}: the launch grid {tuple(explicit)} does not match the grid "
                                f"{inferred} inferred from the partition of {source!r} on axis {axis} "
                                f"({AXES[axis]}); every block must own exactly one sub-tensor")
    grid3 = explicit if explicit is not None else inferred
    if grid3 is None:
        raise GridError(f"kernel {kname!r}: launch grid required: no mutable partition argument determines it; give "
                        f"one with {kname}.grid((x, y, z))")
    try:
        return normalize_grid(tuple(grid3))
    except ValueError as e:
        raise GridError(f"kernel {kname!r}: {e}") from None


def check_memory(kernel: EntryKernel, tc: TypeCheck, facts: tuple) -> Plan:
    """No mutable argument overlaps another argument or itself; the preconditions hold."""
    writes: list[Extent] = []
    reads: list[Extent] = []
    named: list[tuple[str, Extent, bool]] = []
    scalars: dict[str, Any] = {}
    for name, f, mut, key in zip(kernel.param_names, facts, tc.mutable, tc.keys):
        if mut is None:
            if key.kind == "scalar" and not dt.fits(f, key.dtype):
                # the value, not only its type (the type-level checks are cached on the type)
                why = "overflows it" if dt.representable(f, key.dtype) else f"is not a {key.dtype.name} value"
                raise LaunchTypeError(f"argument {name!r} of kernel {kernel.__name__!r} is a scalar of type "
                                      f"{key.dtype.name}; {f!r} {why}")
            scalars[name] = f
            continue
        e = f.extent
        if mut and not distinct_elements(e):
            raise AliasError(f"kernel {kernel.__name__!r}: mutable argument {name!r} overlaps itself: its layout "
                             f"(shape {e.shape}, strides {tuple(s // e.itemsize for s in e.strides)}) gives several "
                             "elements the same memory (zero or overlapping strides: expand, broadcast_to, "
                             "as_strided); a mutable argument needs distinct elements")
        (writes if mut else reads).append(e)
        named.append((name, e, mut))
    for i, (n1, e1, m1) in enumerate(named):  # every mutable argument against every other, in order
        for n2, e2, m2 in named[i + 1:]:
            if (m1 or m2) and overlaps(e1, e2):
                mut, other = (n1, n2) if m1 else (n2, n1)
                raise AliasError(f"kernel {kernel.__name__!r}: mutable argument {mut!r} overlaps argument "
                                 f"{other!r} in memory; a mutable argument must not alias any other argument "
                                 "(views included)")
    values = None
    if kernel.preconditions:
        values = dict(tc.infos)
        values.update(scalars)
        for pc in kernel.preconditions:
            pc.check(values)
    if tc.compiled is None:
        tc.compiled = kernel.specialize(tc.keys, tc.generics)
    return Plan(tc, writes, reads, precondition_values=values)
