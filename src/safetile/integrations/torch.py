"""safetile kernels as PyTorch custom ops (``torch.library``), with no hand-written fake kernel.

::

    from safetile.integrations.torch import Out, torch_op

    @torch_op("mylib::add", outputs={"z": Out("x")}, generics={"B": 128})
    @ct.entry
    def add(z: ct.Mut[ct.f32, "B"], x: ct.Ref[ct.f32, -1], y: ct.Ref[ct.f32, -1]):
        z.store(ct.load_tile_like(x, z) + ct.load_tile_like(y, z))

    z = add(x, y)                      # torch tensors in, a new torch tensor out
    torch.compile(model, fullgraph=True)   # traces through it; CUDA graphs capture it

The op's inputs are the kernel's other parameters in order, without the constants (fixed at
registration). Each output is declared once (``Out``: shape, element type, and for an entry
kernel the partition); torch's fake kernel (what ``torch.compile`` traces with) is derived
from those declarations, and so is the real op's allocation, so the two cannot disagree.

Ownership across the boundary (the safe style's rules, as docs/torch.md says): the op owns
its outputs (each call allocates them with torch's allocator, partitions them for the
launch and hands them to torch once the launch is enqueued); inputs are borrowed for the
call as read-only ``ct.Ref`` arguments (never moved, never written). Outputs are fresh, so
they alias no input; inputs may alias each other. Every call is validated like any safe
launch (element types, ranks, static sizes, preconditions; ``LaunchError`` subclasses).
The work is ordered by torch's current stream; the op takes no part in safetile's in-flight
registry (as for ``ct.from_dlpack``, don't hand the same memory to safe launches still running).
"""
from __future__ import annotations

import dataclasses
import inspect
import math
import operator
from dataclasses import dataclass
from typing import Any
from collections.abc import Callable

import torch

from .. import dtypes as dt
from ..errors import ArgumentError, LaunchTypeError, TileTypeError, describe
from ..frontend.kernel import ArraySpec
from ..runtime.args import arg_specs
from ..runtime.kernel import Kernel
from ..runtime.launch import normalize_grid, prepare
from ..safe.entry import EntryKernel
from ..safe.errors import AllocationError
from ..safe.factories import MAX_TENSOR_BYTES
from ..safe.launch import prepare_runtime, run_plan
from ..safe.tensor import Tensor, torch_dtype
from ..safe.types import ConstParam, ScalarParam, TensorParam

__all__ = ["Out", "torch_op"]


@dataclass(frozen=True)
class Out:
    """An output of a torch op: a kernel parameter the op allocates and returns.

    ``shape``: the name of a tensor input (same shape), a tuple of sizes, or a callable that
    receives the inputs and constants it names (``lambda a, b: (a.shape[0], b.shape[1])``).
    ``dtype``: a torch or safetile element type, or the name of a tensor input; by default the
    parameter's declared element type (``ct.Mut[ct.f32, ...]``), else that of ``shape``'s input.
    ``partition`` (entry kernels): the sub-tensor shape; by default the parameter's sizes, with
    generic names taken from ``generics=``. ``blocks`` (``ct.MappedMut`` parameters): the number
    of tile blocks, an int or a callable like ``shape``.
    """

    shape: Any
    dtype: Any = None
    partition: tuple[int, ...] | None = None
    blocks: Any = None


def torch_op(name: str, kernel: Any = None, *, outputs: dict[str, Out], constants: dict[str, Any] | None = None,
             generics: dict[str, Any] | None = None, grid: Any = None, scalars: dict[str, type] | None = None):
    """Register ``kernel`` as the torch custom op ``name`` ("namespace::op"); returns the op.

    ``@ct.entry`` kernels: the grid follows from the output partitions. ``@ct.kernel``
    (unchecked) kernels: give ``grid`` (a tuple, or a callable receiving the inputs, outputs
    and constants it names); parameters are tensors unless annotated ``int``/``float``/``bool``
    (or a safetile dtype) or listed in ``scalars={"eps": float}``. ``constants`` fixes the
    ``ct.Constant`` parameters; ``generics`` configures an entry kernel (``kernel.generics``).
    Usable as a decorator above ``@ct.entry`` / ``@ct.kernel``.
    """
    if kernel is None:
        return lambda k: torch_op(name, k, outputs=outputs, constants=constants, generics=generics, grid=grid,
                                  scalars=scalars)
    return _TorchOp(name, kernel, outputs, dict(constants or {}), dict(generics or {}), grid,
                    dict(scalars or {})).op


# ------------------------------------------------------------------------------ registration


@dataclass(frozen=True)
class _Output:
    name: str
    shape: Callable[[dict], tuple]
    dtype: Callable[[dict], Any]
    partition: tuple[int, ...] | None  # entry kernels
    blocks: Callable[[dict], int] | None  # mapped partitions


class _TorchOp:
    """What one registered op knows: its inputs, outputs, constants and how to launch."""

    def __init__(self, name: str, kernel: Any, outputs: dict[str, Out], constants: dict[str, Any],
                 generics: dict[str, Any], grid: Any, scalars: dict[str, type]):
        if not isinstance(name, str) or name.count("::") != 1 or not all(
                part.isidentifier() for part in name.split("::")):
            raise ArgumentError(f"torch op name {name!r} must look like 'namespace::name' (two identifiers)")
        if isinstance(kernel, EntryKernel):
            self.entry = True
            names = list(kernel.param_names)
            decls = list(kernel.decls)
            const = [isinstance(d, ConstParam) for d in decls]
            if grid is not None:
                raise ArgumentError(f"torch_op {name!r}: an entry kernel's grid follows from its partitions; configure "
                                    "an explicit one on the kernel (kernel.grid((x, y, z))) instead of grid=")
            if generics:
                kernel = kernel.generics(**generics)
        elif isinstance(kernel, Kernel):
            self.entry = False
            names = [p.name for p in kernel.params]
            decls = list(kernel.annotations)
            const = list(kernel.constant_params)
            if grid is None:
                raise ArgumentError(f"torch_op {name!r}: an unchecked @ct.kernel needs grid= (a tuple, or a "
                                    "callable of the inputs, outputs and constants it names)")
        else:
            raise ArgumentError(f"torch_op expects an @ct.entry or @ct.kernel, got {type(kernel).__name__}")
        self.name, self.kernel, self.names, self.constants, self.generics = name, kernel, names, constants, generics
        where = f"torch_op {name!r}"
        consts = {n for n, c in zip(names, const) if c}
        if set(constants) != consts:
            missing, extra = sorted(consts - set(constants)), sorted(set(constants) - consts)
            raise ArgumentError(f"{where}: constants= must give exactly the ct.Constant parameters "
                                f"({', '.join(sorted(consts)) or 'none'})"
                                + (f"; missing {', '.join(missing)}" if missing else "")
                                + (f"; not constants: {', '.join(extra)}" if extra else ""))
        for out in outputs:
            if out not in names or out in consts:
                raise ArgumentError(f"{where}: output {out!r} is not an array parameter of {kernel.__name__!r}")
        for n in scalars:
            if self.entry or n not in names or n in consts or n in outputs:
                raise ArgumentError(f"{where}: scalars= names {n!r}, not an input parameter of an unchecked kernel")
        self.inputs: list[tuple[str, str]] = []  # (name, schema type)
        for n, d in zip(names, decls):
            if n in consts or n in outputs:
                if self.entry and n in outputs and not (isinstance(d, TensorParam) and d.mutable):
                    raise ArgumentError(f"{where}: output {n!r} must be a ct.Mut or ct.MappedMut parameter, "
                                        f"it is {d!r}")
                continue
            if self.entry and isinstance(d, TensorParam) and d.mutable:
                raise ArgumentError(f"{where}: {n!r} is mutable ({d!r}): declare it in outputs= (the op allocates it)")
            self.inputs.append((n, self._schema_type(d, scalars.get(n))))
        self.tensor_inputs = [n for n, t in self.inputs if t == "Tensor"]
        if not self.tensor_inputs:
            raise ArgumentError(f"{where}: needs at least one tensor input (its device places the outputs)")
        known = [n for n, _ in self.inputs] + sorted(consts)
        self.outputs = [self._output(where, n, o, dict(zip(names, decls))[n], known) for n, o in outputs.items()]
        self.grid = _named_call(grid, known + list(outputs), f"{where}: grid") if callable(grid) else grid
        ins = ", ".join(f"{t} {n}" for n, t in self.inputs)
        rets = "Tensor" if len(self.outputs) == 1 else "(" + ", ".join("Tensor" for _ in self.outputs) + ")"
        self._traced: dict = {}  # input shapes -> output shapes the fake kernel gave torch
        self._prepared: dict = {}  # unchecked kernels: launches compiled with the inputs read-only, by specs
        self.op = torch.library.custom_op(name, self._run, mutates_args=(), schema=f"({ins}) -> {rets}")
        self.op.register_fake(self._fake)

    def _schema_type(self, decl: Any, declared: type | None) -> str:
        if self.entry:
            if isinstance(decl, ScalarParam):
                return _scalar_schema(decl.dtype)
            return "Tensor"
        if declared is not None:
            return _scalar_schema(declared)
        if decl in (int, float, bool) or isinstance(decl, dt.DType):
            return _scalar_schema(decl)
        return "Tensor"

    def _output(self, where: str, name: str, out: Out, decl: Any, known: list[str]) -> _Output:
        if not isinstance(out, Out):
            raise ArgumentError(f"{where}: outputs[{name!r}] must be an Out(...), got {type(out).__name__}")
        what = f"{where}: output {name!r}"
        shape = out.shape
        if isinstance(shape, str):
            if shape not in self.tensor_inputs:
                raise ArgumentError(f"{what}: shape={shape!r} names no tensor input ({', '.join(self.tensor_inputs)})")
            shape_fn = (lambda v, s=shape: tuple(v[s].shape))  # noqa: E731 - one callable per branch
        elif callable(shape):
            f = _named_call(shape, known, f"{what}: shape")
            shape_fn = (lambda v, f=f: _called_shape(f, v, what))  # noqa: E731 - one callable per branch
        elif isinstance(shape, (tuple, list)) and all(isinstance(n, int) and not isinstance(n, bool) for n in shape):
            shape_fn = (lambda v, s=tuple(shape): s)  # noqa: E731 - one callable per branch
        else:
            raise ArgumentError(f"{what}: shape must be an input's name, a tuple of sizes or a callable, got {shape!r}")
        dtype_fn = self._dtype(what, out, decl)
        partition, blocks = None, None
        if self.entry:
            partition = self._partition(what, out, decl)
            if decl.kind == "mapped":
                if out.blocks is None:
                    raise ArgumentError(f"{what} is a ct.MappedMut: give Out(..., blocks=n) (the number of tile "
                                        "blocks)")
                blocks = _named_call(out.blocks, known, f"{what}: blocks") if callable(out.blocks) \
                    else (lambda v, n=out.blocks: n)
        elif out.partition is not None or out.blocks is not None:
            raise ArgumentError(f"{what}: partition= and blocks= belong to entry kernels (an unchecked kernel picks "
                                "its own store indices)")
        return _Output(name, shape_fn, dtype_fn, partition, blocks)

    def _dtype(self, what: str, out: Out, decl: Any) -> Callable[[dict], Any]:
        d = out.dtype
        if isinstance(d, str) and d in self.tensor_inputs:
            return _dtype_of(d)
        if d is None:
            declared = decl.dtype if isinstance(decl, TensorParam) else None
            if isinstance(declared, dt.DType):
                d = declared
            elif isinstance(out.shape, str):
                return _dtype_of(out.shape)
            else:
                raise ArgumentError(f"{what}: the element type is not known: give Out(..., dtype=...)")
        if isinstance(d, torch.dtype):
            return _always(d)
        try:
            t = torch_dtype(dt.as_dtype(d))
        except TypeError:
            raise ArgumentError(f"{what}: dtype={d!r} is neither an element type nor a tensor input") from None
        return lambda v: t

    def _partition(self, what: str, out: Out, decl: TensorParam) -> tuple[int, ...]:
        if out.partition is not None:
            p = (out.partition,) if isinstance(out.partition, int) else tuple(out.partition)
            if not all(isinstance(n, int) and not isinstance(n, bool) and n > 0 for n in p):
                raise ArgumentError(f"{what}: partition must be positive sizes, got {out.partition!r}")
            return p
        sizes = []
        for s in decl.shape:
            if isinstance(s, str):
                if s not in self.generics:
                    raise ArgumentError(f"{what}: partition size {s!r} is a generic: give generics={{{s!r}: ...}} or "
                                        "Out(..., partition=...)")
                s = self.generics[s]
            if not isinstance(s, int) or s < 1:
                raise ArgumentError(f"{what}: the sub-tensor shape of {decl!r} is not static: give "
                                    "Out(..., partition=...)")
            sizes.append(s)
        return tuple(sizes)

    # ------------------------------------------------------------------ calls

    def _checked_values(self, args: tuple) -> dict[str, Any]:
        """The inputs and constants by name; an entry kernel's tensor inputs checked (element
        type, rank) before outputs are made from them."""
        values = dict(zip((n for n, _ in self.inputs), args))
        values.update(self.constants)
        if self.entry:
            for n, d in zip(self.names, self.kernel.decls):
                if isinstance(d, TensorParam) and not d.mutable:
                    _check_ref(self.kernel.__name__, n, d, values[n])
        return values

    def _allocate(self, values: dict[str, Any]) -> list:
        device = values[self.tensor_inputs[0]].device
        outs = []
        for o in self.outputs:
            shape, dtype = o.shape(values), o.dtype(values)
            try:
                outs.append(torch.empty(shape, dtype=dtype, device=device))
            except (MemoryError, RuntimeError) as e:  # torch's allocators raise RuntimeError subclasses
                raise AllocationError(f"torch_op {self.name!r}: output {o.name!r} of shape {shape} could not be "
                                      f"allocated on {device}: {str(e).splitlines()[0]}") from None
        return outs

    def _launch_inputs_read_only(self, grid: Any, args: tuple) -> None:
        """Launch the unchecked kernel compiled with its tensor inputs read-only. The op's schema says
        its inputs are not mutated (torch.compile relies on it), so a store, scatter or atomic to one
        is refused at the kernel line (a located error) before anything runs. The code that runs is
        the code so checked: when Python state it read changes, it is compiled, and checked, again."""
        kernel = self.kernel
        if not kernel.captured.check():  # as ct.launch does: stale compiled code is dropped
            kernel.refresh()
        ro = tuple(dataclasses.replace(sp, readonly=True) if n in self.tensor_inputs and isinstance(sp, ArraySpec)
                   else sp for n, sp in zip(self.names, arg_specs(kernel, args)))
        try:
            fn = kernel.specialize(ro)
        except TileTypeError as e:
            if "read-only" not in str(e):
                raise  # any other compile error: reported as a launch reports it
            raise TileTypeError(f"torch_op {self.name!r}: the unchecked kernel writes one of its inputs "
                                f"({', '.join(self.tensor_inputs)}), but the op's schema declares inputs unmutated "
                                f"(torch.compile relies on it): store into an output (outputs=) instead\n{e}") from None
        prepared = self._prepared.get(ro)
        if prepared is None or prepared.fn is not fn:
            if len(self._prepared) >= 256:  # many shapes: start again rather than grow
                self._prepared.clear()
            prepared = self._prepared[ro] = prepare(kernel, args, ro)
        prepared(None, normalize_grid(grid), args)

    def _fake(self, *args):
        """torch's fake (meta) kernel: the outputs' shapes, element types and device. Element
        types and ranks of an entry kernel's inputs are checked here too, so ``torch.compile``
        reports them while tracing (the launch checks everything again)."""
        outs = self._allocate(self._checked_values(args))
        key = _shape_key(args)
        if key is not None and all(type(d) is int for o in outs for d in o.shape):
            if len(self._traced) >= 256:
                self._traced.clear()
            self._traced[key] = tuple(tuple(o.shape) for o in outs)
        return outs[0] if len(outs) == 1 else tuple(outs)

    def _check_traced(self, args: tuple, outs: list) -> None:
        """An output shape must be what the fake kernel gave torch for inputs of these shapes (a shape
        callable that is not a pure function of them would leave torch's compiled code with wrong sizes)."""
        want = self._traced.get(_shape_key(args))
        if want is None:
            return
        for o, t, w in zip(self.outputs, outs, want):
            if tuple(t.shape) != w:
                raise LaunchTypeError(f"torch_op {self.name!r}: output {o.name!r} has shape {tuple(t.shape)} now but "
                                      f"{w} when torch traced the op with inputs of the same shapes: its shape "
                                      "callable must be a pure function of the inputs' shapes and the constants")

    def _run(self, *args):
        values = self._checked_values(args)
        outs = self._allocate(values)
        if self._traced:
            self._check_traced(args, outs)
        by_name = {o.name: (o, t) for o, t in zip(self.outputs, outs)}
        if self.entry:
            launch_args, parts = [], []
            for n in self.names:
                if n in by_name:
                    o, t = by_name[n]
                    p = Tensor(t).partition(o.partition)
                    parts.append(p.map(o.blocks(values)) if o.blocks is not None else p)
                    launch_args.append(parts[-1])
                else:
                    launch_args.append(values[n])
            try:
                _launch_entry(self.kernel, tuple(launch_args))
            finally:
                for part in parts:  # the partitions end with the call; torch owns the outputs
                    part.unpartition()
        else:
            values.update((o.name, t) for o, t in zip(self.outputs, outs))
            grid = self.grid(values) if callable(self.grid) else self.grid
            args = tuple(values[n] for n in self.names)
            self._launch_inputs_read_only(grid, args)
        return outs[0] if len(outs) == 1 else tuple(outs)


def _shape_key(args: tuple) -> Any:
    """The inputs' shapes, element types and scalar values (None when a size is symbolic)."""
    key = []
    for a in args:
        if isinstance(a, torch.Tensor):
            shape = tuple(a.shape)
            if not all(type(d) is int for d in shape):
                return None
            key.append((shape, a.dtype))
        elif type(a) in (int, float, bool):
            key.append(a)
        else:
            return None
    return tuple(key)


def _dtype_of(name: str) -> Callable[[dict], Any]:
    """The dtype of the call's tensor ``name`` (an output's dtype taken from an input)."""
    return lambda v: v[name].dtype


def _always(value: Any) -> Callable[[dict], Any]:
    """A function of the call's values that gives ``value`` whatever they are (a fixed dtype)."""
    return lambda v: value


def _launch_entry(kernel: EntryKernel, args: tuple) -> None:
    """A fully checked safe launch, enqueued on torch's current stream (no sync: graph capture
    and torch's stream order need none)."""
    run_plan(*prepare_runtime(kernel, args))


def _check_ref(kname: str, name: str, decl: TensorParam, t: Any) -> None:
    where = f"argument {name!r} of kernel {kname!r}"
    if t.dim() != decl.ndim:
        raise LaunchTypeError(f"{where}: the tensor shape {tuple(t.shape)} has rank {t.dim()} but {decl!r} has rank "
                              f"{decl.ndim}")
    if isinstance(decl.dtype, dt.DType):
        try:
            actual = dt.as_dtype(t.dtype)
        except TypeError as e:
            raise LaunchTypeError(f"{where}: {e}") from None
        if actual is not decl.dtype:
            raise LaunchTypeError(f"{where} has element type {actual.name} but the parameter is declared "
                                  f"{decl.dtype.name}")


def _scalar_schema(d: Any) -> str:
    if d is bool or d is dt.bool_:
        return "bool"
    if d is int or (isinstance(d, dt.DType) and not d.is_float):
        return "int"
    if d is float or isinstance(d, dt.DType):
        return "float"
    if isinstance(d, str):  # a generic element type: any number
        return "Scalar"
    raise ArgumentError(f"{d!r} is not a scalar type (int, float, bool or a safetile dtype)")


def _called_shape(f: Callable[[dict], Any], values: dict, what: str) -> tuple[int, ...]:
    """An output shape from the user's callable, checked: sizes are integers >= 0, and the
    tensor is addressable; anything else is a ``LaunchTypeError`` naming the output."""
    try:
        shape = f(values)
    except Exception as e:  # noqa: BLE001 - the user's callable failed: say which output's
        raise LaunchTypeError(f"{what}: the shape callable raised {describe(e)}") from e
    try:
        sizes = tuple(operator.index(n) for n in shape)
    except Exception:  # noqa: BLE001 - not sizes (a TypeError, or an __index__/__iter__ of the user's that raises)
        sizes = None
    if sizes is None or isinstance(shape, (str, bytes)) or any(isinstance(n, bool) or n < 0 for n in sizes):
        raise LaunchTypeError(f"{what}: the shape callable must return a tuple of sizes >= 0, got {shape!r}")
    if math.prod(sizes) > MAX_TENSOR_BYTES:
        raise LaunchTypeError(f"{what}: the shape {sizes} has more than 2**62 elements")
    return sizes


def _named_call(fn: Callable, known: list[str], what: str) -> Callable[[dict], Any]:
    """``fn`` called with the values it names (checked now against ``known``)."""
    params = inspect.signature(fn).parameters
    if any(p.kind is p.VAR_KEYWORD for p in params.values()):
        return lambda v: fn(**v)
    wanted = list(params)
    unknown = [n for n in wanted if n not in known]
    if unknown:
        raise ArgumentError(f"{what}: the callable asks for {', '.join(unknown)}, which name no input or constant "
                            f"(known: {', '.join(known)})")
    return lambda v: fn(**{n: v[n] for n in wanted})
