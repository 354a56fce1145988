"""The launch boundary of entry kernels: validate, move arguments in, run, give them back.

``prepare`` checks a launch completely before anything happens: argument kinds,
ownership (nothing moved or borrowed), element types, ranks and static shapes, const
generics, power-of-two sub-tensor shapes, memory aliasing (a mutable argument may not
overlap any other argument, views included), the grid (inferred from the mutable
partitions; every partition and an explicit grid must agree, axis by axis), declared
preconditions, and compilation. Only then does ``LaunchOp`` move the arguments in;
running it gives them back, each as the kind it came in (partition → partition,
shared → shared, tensor → tensor).
"""
from __future__ import annotations

import itertools
import weakref
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from .. import dtypes as dt
from ..runtime.env import backend_override
from ..runtime.launch import normalize_grid
from .deviceop import DeviceOp, ExecContext
from .entry import Compiled, EntryKernel, ParamKey
from .errors import AliasError, DeviceOpError, GridError, LaunchTypeError
from .memory import Extent, extent_of, overlaps
from .ownership import LazyText, Owned, caller_site
from .partition import MappedPartition, Partition, Shared
from .preconditions import ArgInfo
from .tensor import Tensor, _is_torch
from .types import ConstParam, ScalarParam, TensorParam

SCALARS = (bool, int, float, np.bool_, np.integer, np.floating)
AXES = "xyz"
_op_ids = itertools.count(1)


@dataclass
class Plan:
    """A validated launch: what to run, where, and with which memory."""

    compiled: Compiled
    grid3: tuple[int, int, int]
    runtime_args: tuple[Any, ...]
    device: str
    writes: list[Extent] = field(default_factory=list)
    reads: list[Extent] = field(default_factory=list)
    backend: str = "cpu"
    bound: Any = None  # the backend's launch with its arguments resolved (GPU, first run; False: none)


def _data_of(a: Any):
    """(array data, is mutable) of a tensor-like argument."""
    if isinstance(a, (Partition, MappedPartition)):
        return a._tensor._data
    if isinstance(a, Shared):
        return a._tensor._data
    if isinstance(a, Tensor):
        return a._data
    return a


def extent_cached(a: Any) -> Extent:
    """The memory extent of a tensor-like argument (cached on safetile tensors)."""
    t = a._tensor if isinstance(a, (Partition, MappedPartition, Shared)) else a
    if isinstance(t, Tensor):
        e = t.__dict__.get("_extent")
        if e is None:
            e = t._extent = extent_of(t._data)
        return e
    return extent_of(t)


_device_names: dict[Any, str] = {}  # torch.device -> its name ('cpu', 'cuda:0')


def _device_of(data: Any) -> str:
    if isinstance(data, np.ndarray):
        return "cpu"
    dev = data.device
    name = _device_names.get(dev)
    if name is None:
        name = "cpu" if dev.type == "cpu" else str(dev)
        if len(_device_names) < 64:
            _device_names[dev] = name
    return name


def _is_pow2(n: int) -> bool:
    return n > 0 and n & (n - 1) == 0


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


def _bind_dtype(b: _Binder, decl_dtype, actual: dt.DType, name: str, kname: str) -> dt.DType:
    if isinstance(decl_dtype, str):
        b.bind(decl_dtype, actual, f"argument {name!r}")
        return actual
    if actual is not decl_dtype:
        raise LaunchTypeError(f"kernel {kname!r}: argument {name!r} has element type {actual.name} but the "
                              f"parameter is declared {decl_dtype.name}")
    return actual


def prepare(kernel: EntryKernel, args: tuple, *, check_ownership: bool = True) -> Plan:
    """Validate a launch and compile it; raises before touching anything.

    Three levels of reuse keep repeated launches cheap without skipping a check:
    - the same argument objects again (safetile tensors, partitions, shared handles, whose
      memory and shape never change, and equal scalars): the whole validated plan is
      reused; only ownership (nothing moved, released or unwrapped) is checked again;
    - the same argument signature: the type-level part (kinds, element types, shapes,
      generics, grid, compilation) is reused; ownership, aliasing and preconditions run;
    - otherwise everything runs.
    """
    names = kernel.param_names
    if len(args) != len(names):
        raise LaunchTypeError(f"kernel {kernel.__name__!r} takes {len(names)} argument(s) ({', '.join(names)}), "
                              f"got {len(args)}")
    key = _identity_key(args)
    if key is not None:
        known = kernel.__dict__.get("_known")
        hit = known.get(key) if known is not None else None
        # the backend follows SAFETILE_BACKEND at launch time: a plan made for another is not reused
        if hit is not None and hit.matches(args) and hit.plan.backend == _backend_now(kernel, hit.plan.device):
            if check_ownership:
                try:
                    for i in hit.owned:
                        args[i]._check()
                except Exception:
                    _ownership(kernel, args, True)  # the same refusal, worded for this launch
                    raise
            return hit.plan
    _ownership(kernel, args, check_ownership)
    plan = _prepare_checked(kernel, args)
    if key is not None:
        known = kernel.__dict__.get("_known")
        if known is None or len(known) > 64:
            known = kernel._known = {}
        known[key] = _Known(args, plan)
    return plan


_IDENTITY_TYPES = frozenset({Partition, MappedPartition, Shared, Tensor})
_VALUE_TYPES = frozenset({int, float, bool, str, type(None)})


def _identity_key(args: tuple) -> tuple | None:
    """Arguments as identities (safetile values) and values (plain scalars), or None when an
    argument is anything else (raw arrays may be resized or re-pointed behind our back)."""
    key = []
    for a in args:
        t = type(a)
        if t in _IDENTITY_TYPES:
            key.append(id(a))
        elif t in _VALUE_TYPES:
            key.append((t, a))
        else:
            return None
    return tuple(key)


class _Known:
    """A validated plan for one set of argument objects (held weakly: the cache keeps no
    tensor alive), with the positions whose ownership must be checked on every launch."""

    __slots__ = ("refs", "owned", "plan")

    def __init__(self, args: tuple, plan: Plan):
        self.refs = tuple(weakref.ref(a) if type(a) in _IDENTITY_TYPES else None for a in args)
        self.owned = tuple(i for i, a in enumerate(args) if type(a) in _IDENTITY_TYPES)
        self.plan = plan

    def matches(self, args: tuple) -> bool:
        for r, a in zip(self.refs, args):
            if r is not None and r() is not a:
                return False
        return True


def _backend_now(kernel: EntryKernel, device: str) -> str:
    return kernel.backend_name or backend_override() or ("cpu" if device == "cpu" else "triton")


def _prepare_checked(kernel: EntryKernel, args: tuple) -> Plan:
    """The full validation (the type-level part cached per argument signature)."""
    sig = _signature(kernel, args)
    plans = kernel._shared.setdefault("plans", {})
    template = plans.get(sig) if sig is not None else None
    if template is None:
        template = _analyze(kernel, args)
        if sig is not None:
            if len(plans) > 256:
                plans.clear()
            plans[sig] = template
    compiled, grid3, device, backend, mutable, infos_static = template
    runtime, writes, reads, infos = _instances(kernel, args, mutable, bool(kernel.preconditions))
    if kernel.preconditions:
        values = dict(infos_static)
        values.update(infos)
        for pc in kernel.preconditions:
            pc.check(values)
    return Plan(compiled, grid3, tuple(runtime), device, writes=writes, reads=reads, backend=backend)


def _signature(kernel: EntryKernel, args: tuple):
    """A hashable summary of everything the type-level checks depend on (None: do not cache)."""
    # the kernel's configuration part is fixed per EntryKernel object (configuring makes a new one,
    # and EntryKernel._clone drops this cached value)
    head = kernel.__dict__.get("_sig_head")
    if head is None:
        head = kernel._sig_head = (tuple(sorted((k, repr(v)) for k, v in kernel.explicit_generics.items())),
                                   kernel.explicit_grid, kernel.backend_name)
    out: list[Any] = [head, backend_override()]
    for is_const, a in zip(kernel.const_flags, args):
        t = type(a)
        if is_const:
            try:
                hash(a)
            except TypeError:
                return None
            out.append(("C", t, a))
        elif t is Partition:
            d = a._tensor._data
            out.append(("P", d.dtype, d.shape, a._pshape, a._prefix, _device_of(d)))
        elif t is Shared:
            d = a._tensor._data
            out.append(("T", t, d.dtype, d.shape, _device_of(d)))
        elif t is int:  # the range decides int32 / int64 for a generic scalar type
            out.append(("S", t, -2147483648 <= a < 2147483648))
        elif t is float or t is bool:
            out.append(("S", t))
        elif isinstance(a, Partition):
            d = a._tensor._data
            out.append(("P", d.dtype, d.shape, a._pshape, a._prefix, _device_of(d)))
        elif isinstance(a, MappedPartition):
            d = a._tensor._data
            out.append(("M", d.dtype, d.shape, a._partition._pshape, a._partition._prefix, a._n, _device_of(d)))
        elif isinstance(a, (Tensor, Shared)):
            d = a._tensor._data if isinstance(a, Shared) else a._data
            out.append(("T", t, d.dtype, d.shape, _device_of(d)))
        elif isinstance(a, np.ndarray):
            out.append(("N", a.dtype, a.shape))
        elif _is_torch(a) and hasattr(a, "data_ptr"):  # a raw torch tensor (ct.Ref)
            out.append(("R", t, a.dtype, a.shape, _device_of(a)))
        elif isinstance(a, int) and not isinstance(a, bool):
            out.append(("S", t, -2147483648 <= a < 2147483648))
        elif isinstance(a, SCALARS):
            out.append(("S", t))
        else:
            return None
    return tuple(out)


def _passed_as(name: str, kname: str) -> str:
    return f"passed as argument {name!r} of kernel {kname!r}"


def _ownership(kernel: EntryKernel, args: tuple, check_ownership: bool) -> None:
    """Every argument usable (not moved or borrowed) and no value passed twice where that is unsafe."""
    kname = kernel.__name__
    seen: dict[int, tuple[str, bool]] = {}
    for name, mut, a in zip(kernel.param_names, kernel.mut_flags, args):
        if not isinstance(a, (Owned, Shared)):
            continue
        key = id(a)
        if key in seen:
            first, first_mut = seen[key]
            if mut or first_mut:
                raise AliasError(f"kernel {kname!r}: the same {a.label} is passed as argument {first!r} and "
                                 f"argument {name!r}; a mutable argument must not alias any other argument")
            if isinstance(a, Owned):
                raise AliasError(f"kernel {kname!r}: the same {a.label} is passed as argument {first!r} and "
                                 f"argument {name!r}; a tensor moves into one parameter only: pass "
                                 "ct.shared(t) to read it through several")
        seen[key] = (name, mut)
        if check_ownership:
            a._check(LazyText(_passed_as, name, kname))


_WRAPPERS = (Partition, MappedPartition, Shared)


def _instances(kernel: EntryKernel, args: tuple, mutable: tuple, want_infos: bool = True):
    """Per-launch memory checks: runtime data, extents, and no mutable argument aliasing another."""
    runtime: list[Any] = []
    writes: list[Extent] = []
    reads: list[Extent] = []
    extents: list[tuple[str, Extent, bool]] = []
    infos: dict[str, Any] = {}
    for name, a, mut in zip(kernel.param_names, args, mutable):
        if mut is None:  # scalar or constant
            runtime.append(a)
            if want_infos:
                infos[name] = a
            continue
        ta = type(a)
        t = a._tensor if (ta is Partition or ta is Shared or ta is MappedPartition or isinstance(a, _WRAPPERS)) else a
        if isinstance(t, Tensor):
            runtime.append(t._data)
            e = t.__dict__.get("_extent")
            if e is None:
                e = t._extent = extent_of(t._data)
        else:
            runtime.append(t)
            e = extent_of(t)
        (writes if mut else reads).append(e)
        extents.append((name, e, mut))
    n = len(extents)
    if writes and n > 1:  # every mutable argument against every other argument, in argument order
        for i in range(n):
            n1, e1, m1 = extents[i]
            for j in range(i + 1, n):
                n2, e2, m2 = extents[j]
                if (m1 or m2) and overlaps(e1, e2):
                    mut, other = (n1, n2) if m1 else (n2, n1)
                    raise AliasError(f"kernel {kernel.__name__!r}: mutable argument {mut!r} overlaps argument "
                                     f"{other!r} in memory; a mutable argument must not alias any other argument "
                                     "(views included)")
    return runtime, writes, reads, infos


def _analyze(kernel: EntryKernel, args: tuple):
    """The type-level checks and compilation (cached per argument signature)."""
    kname = kernel.__name__
    names = kernel.param_names
    b = _Binder(kernel)
    keys: list[ParamKey] = []
    mutable: list[Any] = []
    infos: dict[str, Any] = {}
    devices: dict[str, str] = {}
    grids: list[tuple[str, tuple[int, int, int], bool]] = []  # (name, grid3, is_prefix)
    for name, decl, a in zip(names, kernel.decls, args):
        where = f"argument {name!r} of kernel {kname!r}"
        if isinstance(a, DeviceOp):
            raise LaunchTypeError(f"{where}: a DeviceOp must be resolved before validation")
        if isinstance(decl, ConstParam):
            try:
                hash(a)
            except TypeError:
                raise LaunchTypeError(f"{where}: ct.Constant arguments must be hashable, got "
                                      f"{type(a).__name__}") from None
            keys.append(ParamKey("const", value=a))
            mutable.append(None)
            continue
        if isinstance(decl, ScalarParam):
            if not isinstance(a, SCALARS):
                want = decl.dtype if isinstance(decl.dtype, str) else decl.dtype.name
                raise LaunchTypeError(f"{where} is a scalar ({want}), got {type(a).__name__}")
            if isinstance(decl.dtype, str):
                from ..runtime.args import scalar_spec
                d = scalar_spec(a)
                b.bind(decl.dtype, d, f"argument {name!r}")
            else:
                d = decl.dtype
            keys.append(ParamKey("scalar", dtype=d))
            mutable.append(None)
            continue
        assert isinstance(decl, TensorParam)
        if decl.kind == "mut":
            if isinstance(a, MappedPartition):
                raise LaunchTypeError(f"{where} is ct.Mut (one sub-tensor per block); a mapped partition needs a "
                                      "ct.MappedMut parameter")
            if not isinstance(a, Partition):
                raise LaunchTypeError(f"{where} is mutable (ct.Mut): pass a partition, e.g. "
                                      f"t.partition({tuple(1 if isinstance(s, str) else s for s in decl.shape)}), "
                                      f"got {type(a).__name__}")
            sub = a._sub_shape()
            grid_rank = len(a._pshape)
            grids.append((name, a._grid3(), a._prefix))
        elif decl.kind == "mapped":
            if not isinstance(a, MappedPartition):
                raise LaunchTypeError(f"{where} is ct.MappedMut: pass t.partition(shape).map(num_tile_blocks), got "
                                      f"{type(a).__name__}")
            sub = a._partition._sub_shape()
            grid_rank = len(a._partition._pshape)
            grids.append((name, a._grid3(), False))
        else:
            if isinstance(a, (Partition, MappedPartition)):
                raise LaunchTypeError(f"{where} is read-only (ct.Ref): pass the tensor itself or ct.shared(t), "
                                      "not a partition")
            if not (isinstance(a, (Tensor, Shared, np.ndarray)) or _is_torch(a)):
                raise LaunchTypeError(f"{where} is a read-only tensor (ct.Ref): pass a Tensor, ct.shared(t), a NumPy "
                                      f"array or a torch tensor, got {type(a).__name__}")
            sub = None
            grid_rank = 0
        data = _data_of(a)
        try:
            actual = dt.as_dtype(data.dtype)
        except TypeError as e:
            raise LaunchTypeError(f"{where}: {e}") from None
        d = _bind_dtype(b, decl.dtype, actual, name, kname)
        shape = tuple(int(n) for n in (sub if sub is not None else data.shape))
        what = "the sub-tensor shape" if sub is not None else "the tensor shape"
        if len(shape) != decl.ndim:
            raise LaunchTypeError(f"{where}: {what} {shape} has rank {len(shape)} but {decl!r} has rank {decl.ndim}")
        static: list[Any] = []
        for axis, (want, have) in enumerate(zip(decl.shape, shape)):
            if isinstance(want, str):
                b.bind(want, have, f"{what} of {name!r} (axis {axis})")
                static.append(have)
            elif want == -1:
                static.append(have if sub is not None else None)
            else:
                if want != have:
                    raise LaunchTypeError(f"{where}: {what} is {shape} but {decl!r} needs size {want} on axis {axis}")
                static.append(have)
        if sub is not None:
            bad = [n for n in sub if not _is_pow2(n)]
            if bad:
                raise LaunchTypeError(f"{where}: sub-tensor shape {sub} must be powers of two (tiles are "
                                      "power-of-two shaped); choose another partition shape")
            keys.append(ParamKey(decl.kind, d, len(data.shape), tuple(sub), grid_rank))
        else:
            keys.append(ParamKey("ref", d, len(data.shape), tuple(static)))
        mutable.append(decl.mutable)
        devices[name] = _device_of(data)
        infos[name] = ArgInfo(name, tuple(int(n) for n in data.shape), actual)

    # every generic named in an annotation must be determined
    for name, decl in zip(names, kernel.decls):
        wanted = []
        if isinstance(decl, TensorParam):
            wanted = [s for s in decl.shape if isinstance(s, str)] + ([decl.dtype] if isinstance(decl.dtype, str) else [])
        for g in wanted:
            if g not in b.values:
                raise LaunchTypeError(f"kernel {kname!r}: generic {g!r} (parameter {name!r}) is not determined by the "
                                      f"arguments; give it with {kname}.generics({g}=...)")

    if len(set(devices.values())) > 1:
        listing = ", ".join(f"{n!r} on {d}" for n, d in devices.items())
        raise LaunchTypeError(f"kernel {kname!r}: arguments live on different devices ({listing})")
    device = next(iter(devices.values()), "cpu")
    # aliasing comes before the grid and preconditions (it is checked again on every launch)
    _instances(kernel, args, tuple(mutable))
    grid3 = _grid(kernel, grids)
    if kernel.preconditions:
        values = dict(b.values)
        values.update(infos)
        values.update({n: a for n, a, m in zip(names, args, mutable) if m is None})
        for pc in kernel.preconditions:
            pc.check(values)
    compiled = kernel.specialize(tuple(keys), dict(b.values))
    backend = _backend_now(kernel, device)
    if backend not in ("cpu", "triton"):
        raise LaunchTypeError(f"unknown backend {backend!r} (SAFETILE_BACKEND): use 'cpu' or 'triton'")
    infos_static = dict(b.values)
    infos_static.update(infos)
    return compiled, grid3, device, backend, tuple(mutable), infos_static


def _grid(kernel: EntryKernel, grids) -> tuple[int, int, int]:
    kname = kernel.__name__
    inferred, source = None, None
    for name, g, prefix in grids:
        if prefix:
            continue
        if inferred is None:
            inferred, source = g, name
            continue
        for axis in range(3):
            if g[axis] != inferred[axis]:
                raise GridError(f"kernel {kname!r}: grid mismatch on axis {axis} ({AXES[axis]}): the partition of "
                                f"{name!r} has {g[axis]} blocks but the partition of {source!r} has "
                                f"{inferred[axis]} (grids {g} and {inferred})")
    explicit = kernel.explicit_grid
    if explicit is not None and inferred is not None:
        for axis in range(3):
            if explicit[axis] != inferred[axis]:
                raise GridError(f"kernel {kname!r}: the launch grid {explicit} does not match the grid {inferred} "
                                f"inferred from the partition of {source!r} on axis {axis} ({AXES[axis]})")
    grid3 = explicit or inferred
    prefixes = [(n, g) for n, g, p in grids if p]
    if grid3 is None and prefixes:
        grid3 = tuple(max(g[a] for _, g in prefixes) for a in range(3))
    if grid3 is None:
        raise GridError(f"kernel {kname!r}: launch grid required: no mutable partition argument determines it; give "
                        f"one with {kname}.grid((x, y, z))")
    for name, g in prefixes:
        for axis in range(3):
            if g[axis] > grid3[axis]:
                raise GridError(f"kernel {kname!r}: prefix overrun on axis {axis} ({AXES[axis]}): the prefix "
                                f"partition of {name!r} has {g[axis]} blocks but the launch grid has {grid3[axis]}")
    try:
        return normalize_grid(tuple(grid3))
    except ValueError as e:
        raise GridError(f"kernel {kname!r}: {e}") from None


# ------------------------------------------------------------------------------ running

def run_plan(plan: Plan, stream=None, race_detector=None) -> None:
    """Run a validated launch on its backend (no ownership bookkeeping)."""
    c = plan.compiled
    if plan.backend == "cpu":
        if plan.device != "cpu":
            raise LaunchTypeError("the CPU backend runs on host memory; these arguments live on "
                                  f"{plan.device}")
        from ..runtime.launch import run_cpu
        run_cpu(c.fn, plan.grid3, c.shim, tuple(plan.runtime_args), race_detector)
        return
    bound = plan.bound
    if bound and stream is not None and stream.device_index == bound.device:
        bound(stream.handle)  # the common case: a plan launched again on a stream of its device
        return
    runner = c.gpu
    if runner is None:  # the backend's launcher for this specialisation, kept with the compiled kernel
        try:
            from ..backends.triton.launcher import specialization
        except ImportError as e:
            raise LaunchTypeError(f"the Triton GPU backend is not available: {e}") from None
        runner = c.gpu = specialization(c.shim, c.fn, c.specs)
    if bound is None and stream is not None and stream.is_cuda:
        # the plan's tensors keep their memory and layout: resolve the arguments once
        bound = plan.bound = runner.bind(plan.grid3, plan.runtime_args) or False
        if bound and stream.device_index == bound.device:
            bound(stream.handle)
            return
    # host memory goes to the launcher only in interpreter mode (TRITON_INTERPRET=1)
    runner(getattr(stream, "torch_stream", None), plan.grid3, plan.runtime_args)


def _moved_into(op: "LaunchOp") -> str:
    return f"{op.label}; it is given back by that launch's result (e.g. `z, x, y = op.sync()`)"


class LaunchOp(DeviceOp):
    """A lazy launch of an entry kernel; running it returns the arguments, same kinds in as out."""

    def __init__(self, kernel: EntryKernel, args: tuple):
        self.kernel = kernel
        self.args = args = tuple(args)
        self.arity = len(args)
        self.id = next(_op_ids)
        self.site = caller_site()
        self._state = "built"
        self._plan: Plan | None = None
        for a in args:
            if isinstance(a, DeviceOp):  # resolved when the op runs
                self._hold(args)
                return
        self._plan = prepare(kernel, args)
        self._hold(args, check=False)  # prepare has just checked that every argument is usable

    @property
    def label(self) -> str:
        return f"launch {self.kernel.__name__!r} (op #{self.id}, created at {self.site})"

    def _device(self):
        if self._plan is not None:
            return self._plan.device
        for a in self.args:
            if isinstance(a, DeviceOp):
                d = a._device()
                if d is not None:
                    return d
            elif not isinstance(a, SCALARS):
                try:
                    return _device_of(_data_of(a))
                except AttributeError:
                    pass
        return None

    # ------------------------------------------------------------------ ownership

    def _hold(self, values, check: bool = True) -> None:
        into = None
        for a in values:
            if isinstance(a, Shared):
                a._holders += 1
            elif isinstance(a, Owned):
                if into is None:
                    into = LazyText(_moved_into, self)
                a._move(into, holder=self, check=check)

    def _give_back(self, values, ctx: ExecContext | None = None) -> None:
        for a in values:
            if isinstance(a, Shared):
                a._holders -= 1
            elif isinstance(a, Owned) and a._holder is self:
                a._give_back(ctx)

    def _children(self):
        return tuple(a for a in self.args if isinstance(a, DeviceOp))

    def _abandon(self) -> None:
        if self._state == "built":
            self._state = "abandoned"
            self._give_back(self.args)
        super()._abandon()

    def _wait_done(self) -> bool:
        """Whether the launch has run (a borrow scope waits for in-flight work first)."""
        ev = getattr(self, "_inflight", None)
        if ev is not None:
            ev.wait_host()
        return self._state in ("done", "failed")

    def _reconfigure(self, kernel: EntryKernel) -> "LaunchOp":
        if self._state != "built":
            raise DeviceOpError(f"{self.label} was already run; configure the kernel before launching")
        try:
            if self._plan is not None:
                plan = prepare(kernel, self.args, check_ownership=False)
                self._plan = plan
        except Exception:
            self._state = "rejected"
            self._give_back(self.args)
            raise
        self.kernel = kernel
        return self

    def grid(self, grid) -> "LaunchOp":
        """Set an explicit grid (checked against the partitions; a rejected launch gives its arguments back)."""
        try:
            k = self.kernel.grid(grid)
        except Exception:
            self._state = "rejected"
            self._give_back(self.args)
            raise
        return self._reconfigure(k)

    def generics(self, mapping=None, **values) -> "LaunchOp":
        """Set explicit const generics (a rejected launch gives its arguments back)."""
        try:
            k = self.kernel.generics(mapping, **values)
        except Exception:
            self._state = "rejected"
            self._give_back(self.args)
            raise
        return self._reconfigure(k)

    # ------------------------------------------------------------------ execution

    def _run(self, ctx: ExecContext):
        if self._state != "built":
            raise DeviceOpError(f"{self.label} has already {'run' if self._state == 'done' else self._state}; "
                                "a launch runs once (use .shared() to reuse a result, or a graph to replay)")
        self._state = "running"
        resolved = list(self.args)
        try:
            for i, a in enumerate(self.args):
                if isinstance(a, DeviceOp):
                    resolved[i] = a._run(ctx)
            plan = self._plan
            if plan is None:
                produced = [(n, r) for n, r, a in zip(self.kernel.param_names, resolved, self.args)
                            if isinstance(a, DeviceOp)]
                for n, r in produced:
                    if isinstance(r, (Owned, Shared)):
                        r._check(f"passed as argument {n!r} of kernel {self.kernel.__name__!r}")
                plan = self._plan = prepare(self.kernel, tuple(resolved), check_ownership=False)
                self._hold(r for _, r in produced)
            if ctx.capturing:
                ctx.recorder.record(self.label, lambda stream, p=plan: run_plan(p, stream),
                                    plan.writes + plan.reads, plan.device)
            else:
                self._execute(plan, ctx)
        except BaseException:
            self._state = "failed"
            self._give_back(resolved, ctx)
            raise
        self._state = "done"
        self._give_back(resolved, ctx)
        return tuple(resolved)

    def _execute(self, plan: Plan, ctx: ExecContext) -> None:
        # the terminal's in-flight entry gets this launch's memory; conflicting unfinished work of
        # other terminals is waited for first (work on this stream is ordered by the stream)
        entry = self._inflight = ctx.begin(self, plan, plan.writes, plan.reads)
        try:
            run_plan(plan, ctx.stream)
        finally:
            entry.set_enqueued()
