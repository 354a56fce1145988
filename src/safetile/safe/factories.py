"""Lazy tensor factories and copies (DeviceOps), usable on the host and in tile code.

On the host, ``ct.zeros(1024)`` is a DeviceOp producing a new ``Tensor`` (run it with
``.sync()``, ``await``, or chain it). Inside a kernel the same names build tiles
(``ct.zeros((64,), ct.float32)``): the call is forwarded to the tile factory unchanged.
Factories and copies allocate, so they cannot be recorded into a graph; ``memcpy`` does
not allocate and can (it is how graph inputs are refreshed).
"""
from __future__ import annotations

import math
import warnings
from typing import Any, cast
from collections.abc import Callable

import numpy as np

from .. import dtypes as dt
from ..errors import DTypeError, TileValueError
from ..ir.builder import active as _in_tile_code
from ..ops import factories as _tile
from .deviceop import DeviceOp
from .claims import CLAIMS, WRITABLE
from .errors import AliasError, AllocationError, DeviceOpError, LaunchDroppedWarning, LaunchTypeError, TensorError
from .memory import REGISTRY, distinct_elements, extent_of, moved_message, notify_all, overlaps, own_alias, wait_until
from .ownership import OWNERSHIP, Unique, caller_site
from .tile_api import tile_api
from .tensor import (Tensor, check_torch_kind, normalize_device, numpy_to_torch, torch_alias, torch_dtype,
                     torch_to_numpy)


# No device addresses more bytes than this; larger requests are refused when the op is built
# (NumPy and torch would fail with their own errors, or try to allocate).
MAX_TENSOR_BYTES = 2**62


def _shape(shape: Any, label: str = "a tensor", dtype: dt.DType = dt.float32) -> tuple[int, ...]:
    """The checked shape of a new tensor: non-negative sizes, at most ``MAX_TENSOR_BYTES`` bytes."""
    if isinstance(shape, (int, np.integer)) and not isinstance(shape, bool):
        shape = (int(shape),)
    if not isinstance(shape, (tuple, list)) or any(isinstance(n, bool) or not isinstance(n, (int, np.integer))
                                                   or int(n) < 0 for n in shape):
        raise TensorError(f"{label}: a tensor shape is a non-negative integer or a tuple of them, got {shape!r}")
    shp = tuple(int(n) for n in shape)
    if math.prod(shp) * max(dtype.bits, 8) // 8 > MAX_TENSOR_BYTES:
        raise TensorError(f"{label}: a {dtype.name} tensor of shape {shp} would take more than 2**62 bytes")
    return shp


def _dtype(dtype: Any, label: str) -> dt.DType:
    try:
        return dt.as_dtype(dtype)
    except DTypeError as e:
        raise DTypeError(f"{label}: dtype {dtype!r} is not an element type ({e})") from None


def _fill(value: Any, dtype: Any, label: str) -> tuple[Any, dt.DType]:
    """The fill value of ``full`` and its element type, checked to be a number that fits."""
    if not isinstance(value, (bool, int, float, np.bool_, np.integer, np.floating)):
        raise TensorError(f"{label}: fill_value must be a real number or a bool, got {value!r}")
    if dtype is None:
        try:
            return value, dt.scalar_dtype(value)
        except TileValueError:
            raise TensorError(f"{label}: fill_value {value} fits no element type") from None
    d = _dtype(dtype, label)
    if isinstance(value, (int, np.integer)) and not isinstance(value, (bool, np.bool_)) and d.is_int \
            and not dt.representable(value, d):
        raise TensorError(f"{label}: fill_value {value} does not fit {d.name}")
    if isinstance(value, (float, np.floating)) and (d.is_int or d.is_bool) and not math.isfinite(value):
        raise TensorError(f"{label}: fill_value {value} is not a {d.name}")
    return value, d


class Alloc(DeviceOp):
    """An operation that allocates a new tensor (not recordable into a graph)."""

    def __init__(self, label: str, device: str, make: Callable[[str], Any]):
        self._label, self.device, self.make = label, device, make

    @property
    def label(self) -> str:
        return self._label

    def _device(self):
        return self.device

    def _run(self, ctx):
        if ctx.capturing:
            ctx.recorder.reject(self._label)
        if self.device != ctx.stream.device:
            ctx.switch(self.device, self._label)  # e.g. the first GPU work of a chain begun with ct.empty()
        try:
            data = self.make(self.device)
        except MemoryError as e:
            raise AllocationError(f"{self._label}: could not allocate the tensor on {self.device}: {e}") from None
        except RuntimeError as e:
            if type(e).__name__ != "OutOfMemoryError":  # torch's CUDA allocator
                raise
            raise AllocationError(f"{self._label}: could not allocate the tensor on {self.device}: {e}") from None
        return Tensor(data)


def _filled(label, shape, dtype, device, np_fill, torch_fill) -> DeviceOp:
    d = _dtype(dtype, label)
    shp, dev = _shape(shape, label, d), normalize_device(device)

    def make(device):
        if device == "cpu":
            return np_fill(shp, d.np_dtype)
        return torch_fill(shp, torch_dtype(d), device)
    return Alloc(f"{label}({shp}, {d.name})", dev, make)


@tile_api
def zeros(shape, dtype=dt.float32, *args, device=None, **kwargs):
    """Host: a DeviceOp making a zero-filled Tensor. Tile code: a tile of zeros."""
    if _in_tile_code():
        return _tile.zeros(shape, dtype, *args, **kwargs)
    return _filled("zeros", shape, dtype, device, np.zeros,
                   lambda s, d, dev: __import__("torch").zeros(s, dtype=d, device=dev))


@tile_api
def ones(shape, dtype=dt.float32, *args, device=None, **kwargs):
    """Host: a DeviceOp making a Tensor of ones. Tile code: a tile of ones."""
    if _in_tile_code():
        return _tile.ones(shape, dtype, *args, **kwargs)
    return _filled("ones", shape, dtype, device, np.ones,
                   lambda s, d, dev: __import__("torch").ones(s, dtype=d, device=dev))


@tile_api
def full(shape, fill_value, dtype=None, *args, device=None, **kwargs):
    """Host: a DeviceOp making a Tensor filled with ``fill_value``. Tile code: a filled tile."""
    if _in_tile_code():
        return _tile.full(shape, fill_value, dtype, *args, **kwargs)
    fill_value, d = _fill(fill_value, dtype, "full")
    return _filled("full", shape, d, device, lambda s, npd: np.full(s, fill_value, dtype=npd),
                   lambda s, td, dev: __import__("torch").full(s, fill_value, dtype=td, device=dev))


@tile_api
def arange(size, *, dtype=dt.int32, start=0, step=1, device=None):
    """``start + step * [0, 1, ..., size-1]``: a DeviceOp on the host, a tile in tile code."""
    if _in_tile_code():
        return _tile.arange(size, dtype=dtype, start=start, step=step)
    d = _dtype(dtype, "arange")
    (n,) = _shape((size,), "arange", d)
    for name, v in (("start", start), ("step", step)):
        if isinstance(v, bool) or not isinstance(v, (int, float, np.integer, np.floating)):
            raise TensorError(f"arange: {name} must be a number, got {v!r}")

    def make(device):
        a = (start + step * np.arange(n, dtype=np.float64 if d.is_float else np.int64)).astype(d.np_dtype)
        return a if device == "cpu" else numpy_to_torch(a, device)
    return Alloc(f"arange({n}, {d.name})", normalize_device(device), make)


def _random(kind: str, shape, seed, dtype, device) -> DeviceOp:
    d = _dtype(dtype, kind)
    shp, dev = _shape(shape, kind, d), normalize_device(device)
    if not d.is_float:
        raise TensorError(f"{kind}: random tensors are floating point, got {d.name}")
    if seed is not None and (isinstance(seed, bool) or not isinstance(seed, (int, np.integer))
                             or not 0 <= seed < 2**64):
        raise TensorError(f"{kind}: seed must be None or an integer in [0, 2**64), got {seed!r}")

    def make(device):
        if device == "cpu":
            rng = np.random.default_rng(seed)
            a = rng.random(shp, dtype=np.float64) if kind == "rand" else rng.standard_normal(shp)
            return a.astype(d.np_dtype)
        import torch
        g = torch.Generator(device=device)
        # a SeedSequence made without entropy draws an int (numpy types .entropy for every way of making one)
        g.manual_seed(int(seed) if seed is not None else int(cast(int, np.random.SeedSequence().entropy) % 2**63))
        fn = torch.rand if kind == "rand" else torch.randn
        return fn(shp, generator=g, device=device, dtype=torch.float32).to(torch_dtype(d))
    return Alloc(f"{kind}({shp}, seed={seed})", dev, make)


def rand(shape, *, seed=None, dtype=dt.float32, device=None) -> DeviceOp:
    """A DeviceOp making a Tensor of uniform [0, 1) samples (reproducible with ``seed``)."""
    return _random("rand", shape, seed, dtype, device)


def randn(shape, *, seed=None, dtype=dt.float32, device=None) -> DeviceOp:
    """A DeviceOp making a Tensor of standard normal samples (reproducible with ``seed``)."""
    return _random("randn", shape, seed, dtype, device)


# ------------------------------------------------------------------------------ copies

def _source_data(src: Any, what: str) -> Any:
    """The array behind a copy source (checked usable); host reads wait for writers."""
    from .partition import Partition, Shared
    if isinstance(src, Tensor):
        src._check("copied")
        return src._data
    if isinstance(src, Shared):
        src._check("copied")
        return src._tensor._data
    if isinstance(src, Partition):
        src._check("copied")
        return src._tensor._data
    if isinstance(src, np.ndarray) or type(src).__module__.startswith("torch"):
        # re-pointing ``src`` afterwards changes nothing of what is copied
        al = own_alias(src) if isinstance(src, np.ndarray) else torch_alias(src, what)
        if al is not None:
            return al
    raise TensorError(f"{what}: cannot copy from {type(src).__name__}")


def _to(data: Any, device: str):
    if device == "cpu":
        if isinstance(data, np.ndarray):
            return np.copy(data)
        return torch_to_numpy(data)
    if isinstance(data, np.ndarray):
        return numpy_to_torch(data, device)
    return data.detach().to(device, copy=True)


def copy(src: Any) -> DeviceOp:
    """A DeviceOp making a new Tensor with a copy of ``src`` (same device)."""
    _source_data(src, "copy")
    dev = "cpu" if isinstance(src, np.ndarray) else src.device  # a checked Tensor, Shared or Partition, or torch

    def make(device):
        data = _source_data(src, "copy")  # pragma: no mutate (checked when built: its label names a foreign type)
        with REGISTRY.host_access(extent_of(data), False, "a copy"):
            return _to(data, device)
    return Alloc("copy", normalize_device(str(dev)), make)


def to_device(src: Any, device: Any = None) -> DeviceOp:
    """A DeviceOp copying ``src`` (Tensor, Shared, NumPy array, torch tensor) onto ``device``."""
    _source_data(src, "to_device")
    dev = normalize_device(device)

    def make(device):
        data = _source_data(src, "to_device")  # pragma: no mutate (as in copy)
        with REGISTRY.host_access(extent_of(data), False, "a copy"):
            return _to(data, device)
    return Alloc(f"to_device({dev})", dev, make)


def from_numpy(a: Any, device: Any = None, dtype: Any = None) -> DeviceOp:
    """A DeviceOp copying host data (array-like) into a new Tensor on ``device``."""
    if type(a).__module__.startswith("torch"):
        check_torch_kind(a, "from_numpy")
        a = torch_to_numpy(a)
    try:
        arr = np.asarray(a)
        if dtype is not None:
            arr = arr.astype(_dtype(dtype, "from_numpy").np_dtype)
    except (TypeError, ValueError, OverflowError) as e:
        if isinstance(e, DTypeError):
            raise
        raise TensorError(f"from_numpy: cannot read {type(a).__name__} as an array: {e}") from None
    try:
        dt.as_dtype(arr.dtype)
    except DTypeError:
        raise DTypeError(f"from_numpy: a safetile Tensor cannot hold {arr.dtype} elements (it holds booleans, "
                         "integers and floating-point numbers)") from None
    return to_device(np.copy(arr), device)  # the caller may change its array once this returns


tensor = from_numpy


class Memcpy(DeviceOp, Unique):
    """``ct.memcpy(dst, src)``: copy into existing memory (no allocation; recordable). Like a
    launch it holds ``dst`` from construction until it runs, is cancelled or is dropped."""

    def __init__(self, dst: Any, src: Any):
        from .partition import Partition, Shared
        self._state = "new"  # pragma: no mutate (read only as "not built": nothing to give back yet)
        if not isinstance(dst, (Tensor, Partition)):
            raise LaunchTypeError(f"memcpy: the destination must be a Tensor or a Partition, got "
                                  f"{type(dst).__name__}")
        sdata = _source_data(src, "memcpy")
        ddata = dst._tensor._data if isinstance(dst, Partition) else dst._data
        if tuple(sdata.shape) != tuple(ddata.shape):
            raise LaunchTypeError(f"memcpy: shapes differ: destination {tuple(ddata.shape)}, source "
                                  f"{tuple(sdata.shape)}")
        if dt.as_dtype(sdata.dtype) is not dt.as_dtype(ddata.dtype):
            raise LaunchTypeError(f"memcpy: element types differ: destination {dt.as_dtype(ddata.dtype).name}, "
                                  f"source {dt.as_dtype(sdata.dtype).name}")
        dext = extent_of(ddata)
        if overlaps(extent_of(sdata), dext):
            raise AliasError(f"memcpy: the destination {dst.label} overlaps the source in memory")
        if not distinct_elements(dext):
            raise AliasError(f"memcpy: the destination {dst.label} overlaps itself (several elements share "
                             "memory: zero or overlapping strides); a written tensor needs distinct elements")
        self.dst, self.src = dst, src
        # a raw source is read through the alias checked here (its owner may re-point ``src`` before
        # the copy runs); its pointer, for torch memory whose storage may be reallocated meanwhile
        self._raw = (sdata, extent_of(sdata).ptr) if not isinstance(src, (Tensor, Partition, Shared)) else None
        self._site = caller_site()
        with OWNERSHIP:  # usable, not shared memory, then moved: one step
            dst._check("copied into")
            # a partition holds its own writable claim
            self._claim = None if isinstance(dst, Partition) else CLAIMS.claim(
                self, WRITABLE, [dext], f"memcpy into {dst.label}", f"memcpy into {dst.label} is refused")
            dst._move(f"{self.label} (created at {self._site}); it is given back by that operation's result "
                      "or by op.cancel()", holder=self)
            self._state = "built"

    @property
    def label(self) -> str:
        return f"memcpy into {self.dst.label}"

    def _device(self):
        from .partition import Partition
        d = self.dst._tensor if isinstance(self.dst, Partition) else self.dst
        return d._device

    def _set_state(self, old: tuple, new: str) -> bool:
        with OWNERSHIP:
            if self._state not in old:
                return False
            self._state = new
        notify_all()
        return True

    def _release(self, ctx=None) -> None:
        with OWNERSHIP:
            if self.dst.holder is self:
                self.dst._give_back(ctx)
            CLAIMS.release(self._claim)

    def cancel_unrun(self) -> bool:
        if not self._set_state(("built",), "cancelled"):
            return False
        self._release()
        return True

    def cancel(self):
        """Give the destination back without copying."""
        if not self.cancel_unrun():
            raise DeviceOpError(f"{self.label} cannot be cancelled: it is {self._state}")
        return self.dst

    def _wait_finished(self) -> None:
        wait_until(lambda: self._state != "running")

    def __del__(self):  # pragma: no mutate block (a finalizer: mutmut cannot trace inside one)
        try:
            if self._state == "built" and self._set_state(("built",), "dropped"):
                self._release()
                warnings.warn(f"{self.label} was dropped without being run; its destination was given back",
                              LaunchDroppedWarning, stacklevel=2)
        except Exception:  # noqa: BLE001 - interpreter shutdown
            pass

    def _abandon(self) -> None:
        if self._set_state(("built",), "abandoned"):
            self._release()

    def _run(self, ctx):
        from .partition import Partition
        if not self._set_state(("built",), "running"):
            raise DeviceOpError(f"{self.label} is {self._state}; a copy runs once")
        try:
            dt_ = self.dst._tensor if isinstance(self.dst, Partition) else self.dst
            ddata = dt_._data
            pins = []
            if self._raw is None:  # a safetile source, checked usable again (its label names only foreign types)
                sdata = _source_data(self.src, "memcpy")  # pragma: no mutate
            else:
                sdata, ptr = self._raw
                if not isinstance(sdata, np.ndarray):
                    if sdata.data_ptr() != ptr:
                        raise AliasError(f"memcpy: {moved_message('src', 'the copy was built')}")
                    pins.append(("src", sdata, ptr))
            dev = dt_._device

            def step(stream):
                if dev == "cpu":
                    if not isinstance(sdata, np.ndarray):
                        np.copyto(ddata, torch_to_numpy(sdata))
                    else:
                        np.copyto(ddata, sdata)
                else:
                    import torch
                    src = sdata if not isinstance(sdata, np.ndarray) else \
                        torch.from_numpy(np.ascontiguousarray(sdata))
                    ddata.copy_(src, non_blocking=True)

            if ctx.capturing and dev != "cpu" and isinstance(sdata, np.ndarray):
                ctx.recorder.reject(self.label, "a GPU graph cannot copy from pageable host memory; copy from "
                                    "a device tensor")
            ctx.submit(self, step, [extent_of(ddata)], [extent_of(sdata)], dev, (self.dst, self.src),
                       [("src", self.src)], pins)
        except BaseException:
            self._state = "failed"
            self._release(ctx)
            notify_all()
            raise
        self._state = "done"
        self._release(ctx)
        notify_all()
        return self.dst


def memcpy(dst: Any, src: Any) -> DeviceOp:
    """A DeviceOp copying ``src`` into ``dst`` (same shape and element type); gives ``dst`` back."""
    return Memcpy(dst, src)
