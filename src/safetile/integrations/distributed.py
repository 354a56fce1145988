"""torch.distributed collectives as safetile DeviceOps: composable, and recordable into graphs.

::

    from safetile.integrations import distributed as ctd

    x = ctd.all_reduce(x).sync_on(stream)                  # sum over the default group, in place
    out, part = ctd.all_gather(out, part, group=g).sync_on(stream)
    chain = launch_a(...).then(lambda r: ctd.all_reduce(r[0]))  # one DeviceOp
    g = chain.graph(stream)                                # the collective is part of the graph

A collective is a DeviceOp like a launch, under the safe style's rules. It owns what it
writes: that tensor moves into the operation when it is built (a writable claim keeps its
memory from becoming ``Shared`` meanwhile) and its result gives it back. What it only
reads moves in too (a ``Shared`` input is held, as a launch holds one). Before anything
runs it refuses, naming the argument: a written tensor that overlaps another argument, a
non-contiguous tensor (the transports need dense memory, so a written tensor's elements are
distinct), mismatched shapes,
element types or devices, a process group this process is not in, and a CPU tensor on an
NCCL-only group. A refused collective leaves every argument untouched.

Where it runs: on the terminal's stream. On the GPU, torch's NCCL backend orders the
collective after the stream's earlier work and the stream's later work after it, so
``graph()`` captures it into the CUDA graph with the launches around it (NCCL collectives
can be captured; the graph's warm-up run, before the capture, also creates the
communicator). On the CPU (gloo) a graph replay calls it between the recorded launches.
As with any torch.distributed program, every rank of the group must run the same
collectives in the same order.
"""
from __future__ import annotations

import warnings
from typing import Any
from collections.abc import Callable

import numpy as np
import torch
import torch.distributed as dist

from .. import dtypes as dt
from ..errors import ArgumentError, LaunchTypeError, describe
from ..safe.claims import CLAIMS, WRITABLE
from ..safe.deviceop import DeviceOp
from ..safe.errors import AliasError, DeviceOpError, LaunchDroppedWarning
from ..safe.memory import extent_of, notify_all, overlaps, wait_until
from ..safe.ownership import OWNERSHIP, caller_site
from ..safe.partition import Shared
from ..safe.tensor import Tensor

__all__ = ["Collective", "all_gather", "all_reduce", "group_rank", "group_size"]

_REDUCE_OPS = {"sum": "SUM", "max": "MAX", "min": "MIN", "product": "PRODUCT"}
# the element types gloo and NCCL both reduce and gather (int16, uint16/32/64 and the float8 types are
# refused by gloo at run time, and NCCL has no int16)
_COLLECTIVE_DTYPES = frozenset({"bool", "int8", "uint8", "int32", "int64", "float16", "bfloat16", "float32",
                                "float64"})


def _check_group(group: Any, what: str) -> tuple[int, int]:
    """(rank, size) of this process in ``group`` (None: the default group), or a clear error."""
    if not dist.is_available() or not dist.is_initialized():
        raise DeviceOpError(f"{what}: torch.distributed is not initialised (call "
                            "torch.distributed.init_process_group first, or run under torchrun)")
    if group is not None and not isinstance(group, dist.ProcessGroup):
        raise ArgumentError(f"{what}: group must be a torch.distributed process group (or None for the default "
                            f"group), got {type(group).__name__}")
    try:
        rank = dist.get_rank(group)
    except (ValueError, RuntimeError) as e:  # a group torch does not know (destroyed, another world's)
        raise DeviceOpError(f"{what}: the process group cannot be used: {describe(e)}") from None
    if rank < 0:
        raise DeviceOpError(f"{what}: this process is not a member of the process group it was given")
    return rank, dist.get_world_size(group)


def group_rank(group: Any = None) -> int:
    """This process's rank in ``group`` (the default group when None)."""
    return _check_group(group, "group_rank")[0]


def group_size(group: Any = None) -> int:
    """The number of processes in ``group`` (the default group when None)."""
    return _check_group(group, "group_size")[1]


def _data(x: Tensor | Shared) -> Any:
    return x._tensor._data if isinstance(x, Shared) else x._data


def _torch_view(data: Any):
    """A torch tensor over the same memory (NumPy memory on the CPU is viewed, never copied)."""
    if not isinstance(data, np.ndarray):
        return data
    name = dt.as_dtype(data.dtype).name
    if name in ("bfloat16", "float8_e4m3fn", "float8_e5m2"):
        raw = torch.from_numpy(data.view(np.int16 if name == "bfloat16" else np.uint8))
        return raw.view(getattr(torch, name))
    return torch.from_numpy(data)


def _contiguous(data: Any) -> bool:
    return data.flags.c_contiguous if isinstance(data, np.ndarray) else data.is_contiguous()


class Collective(DeviceOp):
    """One torch.distributed collective over safetile tensors (see the module docstring).

    ``args`` are the tensors in the order the result gives them back; ``written`` flags the
    ones the collective writes (it owns them). ``call(views)`` runs the collective on torch
    views of ``args`` on the current stream.
    """

    def __init__(self, name: str, args: list[Any], written: list[bool], call: Callable[[list], None],
                 group: Any):
        self._state = "new"  # nothing to give back until the arguments are moved in
        self._name = name
        self._size = _check_group(group, name)[1]
        for i, (a, w) in enumerate(zip(args, written)):
            allowed = (Tensor,) if w else (Tensor, Shared)
            if not isinstance(a, allowed):
                kinds = "a Tensor" if w else "a Tensor or a Shared tensor"
                raise LaunchTypeError(f"{name}: argument {i} must be {kinds}, got {type(a).__name__}")
            a._check("passed to a collective")
        datas = [_data(a) for a in args]
        for a, d in zip(args, datas):
            if dt.as_dtype(d.dtype).name not in _COLLECTIVE_DTYPES:
                raise LaunchTypeError(f"{name}: {a.label} holds {dt.as_dtype(d.dtype).name} elements, which "
                                      "torch.distributed's backends do not all reduce or gather (use one of "
                                      f"{', '.join(sorted(_COLLECTIVE_DTYPES))})")
        devices = {("cpu" if isinstance(d, np.ndarray) else str(d.device)) for d in datas}
        if len(devices) != 1:
            raise LaunchTypeError(f"{name}: the tensors are on different devices ({', '.join(sorted(devices))})")
        self._device_name = devices.pop()
        backend = str(dist.get_backend(group))
        if self._device_name == "cpu" and backend == "nccl":
            raise LaunchTypeError(f"{name}: a CPU tensor needs a process group with a CPU backend (gloo); this "
                                  "group's backend is nccl")
        exts = [extent_of(d) for d in datas]
        for i, (a, d, e, w) in enumerate(zip(args, datas, exts, written)):
            if not _contiguous(d):  # dense: so a written tensor's elements are distinct too
                raise LaunchTypeError(f"{name}: {a.label} is not contiguous; collectives need dense memory "
                                      "(make a contiguous copy with .dup())")
            for j in range(i):
                if (w or written[j]) and overlaps(e, exts[j]):
                    raise AliasError(f"{name}: {a.label} overlaps {args[j].label} in memory, and "
                                     f"{'it' if w else 'the other'} is written by the collective")
        self.args = list(args)
        self._call = call
        self._writes = [e for e, w in zip(exts, written) if w]
        self._reads = [e for e, w in zip(exts, written) if not w]
        self._site = caller_site()
        self._claim = None
        with OWNERSHIP:  # usable, not shared memory, then moved: one step
            for a in args:
                a._check("passed to a collective")
            self._claim = CLAIMS.claim(self, WRITABLE, self._writes, self.label, f"{name} is refused")
            held = []
            try:
                for a in args:
                    if isinstance(a, Shared):
                        a._hold()
                    else:
                        a._move(f"{self.label} (created at {self._site}); it is given back by that operation's "
                                "result or by op.cancel()", holder=self)
                    held.append(a)
            except BaseException:
                self._give_back_args(held, None)
                CLAIMS.release(self._claim)
                raise
            self._state = "built"

    @property
    def label(self) -> str:
        return f"{self._name} over {self._size} ranks"

    def _device(self):
        return self._device_name

    @staticmethod
    def _give_back_args(args: list, ctx) -> None:
        for a in args:
            if isinstance(a, Shared):
                a._release()
            else:
                a._give_back(ctx)

    def _set_state(self, old: tuple, new: str) -> bool:
        with OWNERSHIP:
            if self._state not in old:
                return False
            self._state = new
        notify_all()
        return True

    def _release(self, ctx=None) -> None:
        with OWNERSHIP:
            self._give_back_args([a for a in self.args if isinstance(a, Shared) or a.holder is self], ctx)
            CLAIMS.release(self._claim)

    def cancel(self):
        """Give the arguments back without running."""
        if not self._set_state(("built",), "cancelled"):
            raise DeviceOpError(f"{self.label} cannot be cancelled: it is {self._state}")
        self._release()
        return self._value()

    def _abandon(self) -> None:
        if self._set_state(("built",), "abandoned"):
            self._release()

    def _wait_finished(self) -> None:
        wait_until(lambda: self._state != "running")

    def __del__(self):
        try:
            if self._state == "built" and self._set_state(("built",), "dropped"):
                self._release()
                warnings.warn(f"{self.label} was dropped without being run; its tensors were given back",
                              LaunchDroppedWarning, stacklevel=2)
        except Exception:  # noqa: BLE001 - interpreter shutdown
            pass

    def _value(self):
        return self.args[0] if len(self.args) == 1 else tuple(self.args)

    def _run(self, ctx):
        if not self._set_state(("built",), "running"):
            raise DeviceOpError(f"{self.label} is {self._state}; a collective runs once (record it into a "
                                "graph to replay it)")
        try:
            views = [_torch_view(_data(a)) for a in self.args]
            call = self._call

            def step(stream):
                with stream.context():  # NCCL orders itself on the current stream
                    call(views)

            ctx.submit(self, step, self._writes, self._reads, self._device_name, self.args)
        except BaseException:
            self._state = "failed"
            self._release(ctx)
            notify_all()
            raise
        self._state = "done"
        self._release(ctx)
        notify_all()
        return self._value()


def all_reduce(t: Tensor, op: str = "sum", group: Any = None) -> Collective:
    """``t`` = the element-wise ``op`` ("sum", "max", "min", "product") of ``t`` over the group's
    ranks, in place. The operation's result is ``t``."""
    if op not in _REDUCE_OPS:
        raise LaunchTypeError(f"all_reduce: op must be one of {', '.join(_REDUCE_OPS)}, got {op!r}")
    red = getattr(dist.ReduceOp, _REDUCE_OPS[op])
    return Collective("all_reduce", [t], [True], lambda v: dist.all_reduce(v[0], op=red, group=group), group)


_gather_into = getattr(dist, "all_gather_single", None) or dist.all_gather_into_tensor  # the newer name first


def all_gather(out: Tensor, part: Tensor | Shared, group: Any = None) -> Collective:
    """``out`` = the ranks' ``part`` tensors one after the other in memory (rank 0's first):
    ``out`` holds group size × ``part.size`` elements (e.g. parts ``(n, k)`` into ``(size·n, k)``,
    or ``(1, n)`` into ``(1, size·n)``). The operation's result is ``(out, part)``."""
    for a in (out, part):
        if not isinstance(a, (Tensor, Shared)):
            raise LaunchTypeError(f"all_gather: expected Tensors, got {type(a).__name__}")
    size = _check_group(group, "all_gather")[1]
    od, pd = _data(out), _data(part)
    n_out, n_part = int(np.prod(od.shape)), int(np.prod(pd.shape))
    if n_out != size * n_part:
        raise LaunchTypeError(f"all_gather: the output {out.label} has {n_out} elements; gathering parts of shape "
                              f"{tuple(pd.shape)} from {size} ranks needs {size * n_part}")
    if dt.as_dtype(od.dtype) is not dt.as_dtype(pd.dtype):
        raise LaunchTypeError(f"all_gather: element types differ: output {dt.as_dtype(od.dtype).name}, part "
                              f"{dt.as_dtype(pd.dtype).name}")
    return Collective("all_gather", [out, part], [True, False],
                      lambda v: _gather_into(v[0].view(-1), v[1].view(-1), group=group), group)
