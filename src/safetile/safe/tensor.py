"""Host tensors: ``Tensor`` over NumPy (CPU) or torch (GPU) memory, with move semantics.

A ``Tensor`` owns (or views) device memory and knows its shape, strides, element type
and device. It converts to and from DLPack without copying, makes zero-copy views
(``reshape``, slicing), and copies to the host (``to_numpy``). Safe-style launches take
tensors through ``partition`` (mutable outputs, the tensor moves in), ``shared`` (read-only,
any number of readers) or by value (read-only, moved into the launch and given back).
"""
from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import numpy as np

from .. import dtypes as dt
from ..errors import DTypeError, describe
from ..runtime.args import torch_kind_problem
from .errors import AliasError, BorrowError, ExportError, TensorError
from .claims import CLAIMS, EXPORTED
from .memory import REGISTRY, untraced
from .ownership import OWNERSHIP, LazyText, Owned, caller_site

if TYPE_CHECKING:  # partition.py and facts.py import this module
    from .facts import ArgFacts
    from .partition import Partition, Shared


def _is_torch(x: Any) -> bool:
    return type(x).__module__.startswith("torch")


def check_torch_kind(x: Any, what: str) -> None:
    """Refuse the torch tensors that are not plain strided memory (DLPack and NumPy cannot carry
    them): sparse, nested, quantized, meta, conjugate / negative views (a lazy bit, not the values),
    and views reaching past their storage."""
    problem = torch_kind_problem(x)
    if problem is not None:
        raise TensorError(f"{what}: {problem}")
    if x.numel():  # a storage shrunk in place leaves views reaching past its end (torch does not check)
        reach = sum((n - 1) * s for n, s in zip(x.shape, x.stride()))
        end = (x.storage_offset() + reach + 1) * x.element_size()
        if end > x.untyped_storage().nbytes():
            raise TensorError(f"{what}: the torch tensor reaches {end} bytes into its storage, which holds "
                              f"{x.untyped_storage().nbytes()} (resized in place?): it names memory it does not have")


@untraced
def torch_alias(x: Any, what: str) -> Any:
    """safetile's own alias of a torch tensor (``detach()``), refused unless plain strided memory.
    The alias is checked, not ``x``: ``detach()`` racing another thread's ``set_`` can copy one
    state's pointer with another's strides (red team round 8, attack 815); and both are read with
    torch functions off, so a TorchFunctionMode cannot answer for the tensor (812, 813)."""
    al = x.detach()
    check_torch_kind(al, what)
    return al


def numpy_protocol(host_copy: Callable[[], np.ndarray], dtype: Any, copy: bool | None, label: Any) -> np.ndarray:
    """NumPy's ``__array__(dtype, copy)`` for a safetile value: a host copy with the element type
    asked for (refused with a ``TensorError`` when it names none). ``copy=False`` asks for the
    memory itself, which a safetile value never hands out (launches may be using it): refused
    before copying, as the protocol says, with a ValueError (a ``TensorError``), never a silent copy
    whose writes would be lost."""
    if copy is False:
        raise TensorError(f"NumPy asked {label} for its memory without a copy (copy=False): safetile hands NumPy "
                          "only a host copy (.to_numpy()); to write the memory, launch a kernel, or unwrap it")
    a = host_copy()
    if dtype is None:
        return a
    try:
        return a.astype(dtype)
    except (TypeError, ValueError) as e:
        raise TensorError(f"a NumPy array of {label} with dtype={dtype!r}: {e}") from None


def torch_to_numpy(x) -> np.ndarray:
    """A NumPy copy of a torch tensor on any device (bfloat16/float8 included)."""
    import torch
    x = x.detach()
    name = str(x.dtype).rsplit(".", 1)[-1]
    if name in ("bfloat16", "float8_e4m3fn", "float8_e5m2"):
        raw = x.view(torch.int16 if name == "bfloat16" else torch.uint8).cpu().numpy()
        return raw.view(dt.as_dtype(name).np_dtype).copy()
    return x.cpu().numpy().copy()


def numpy_to_torch(a: np.ndarray, device: str):
    """A torch tensor on ``device`` holding a copy of ``a``."""
    import torch
    d = dt.as_dtype(a.dtype)
    if d.name in ("bfloat16", "float8_e4m3fn", "float8_e5m2"):
        raw = torch.from_numpy(np.ascontiguousarray(a).view(np.int16 if d.name == "bfloat16" else np.uint8))
        return raw.to(device).view(getattr(torch, d.name))
    return torch.from_numpy(np.ascontiguousarray(a)).to(device)


def torch_dtype(d: dt.DType):
    import torch
    name = {"bool_": "bool", "tfloat32": "float32"}.get(d.name, d.name)
    return getattr(torch, name)


def normalize_device(device: Any, usable: bool = True) -> str:
    """The canonical name of a device ('cpu', 'cuda:N'); with ``usable``, refused with a
    ``TensorError`` before anything is made when this process cannot use it."""
    if device is None:
        from .streams import default_device
        return default_device()
    s = str(device) if isinstance(device, str) or _is_torch(device) else None
    if s == "cpu":
        return s
    if s == "cuda":
        s = "cuda:0"
    if s is not None and s.startswith("cuda:") and s[5:].isdigit():
        if usable:
            _check_cuda(s)
        return s
    raise TensorError(f"unknown device {device!r}; use 'cpu' or 'cuda' / 'cuda:N'")


def _check_cuda(name: str) -> None:
    """Refuse a CUDA device this process cannot use (no torch, no GPU, no such index, a forked child)."""
    try:
        import torch
    except ImportError:
        raise TensorError(f"device {name!r} needs torch with CUDA support, which is not installed; use 'cpu'") from None
    if torch.cuda._is_in_bad_fork():
        raise TensorError(f"device {name!r} cannot be used in this process: it was made by os.fork() after its parent "
                          "used CUDA, and CUDA cannot be initialised again in a forked child (torch refuses); start "
                          "worker processes with multiprocessing's 'spawn' or 'forkserver' method")
    count = torch.cuda.device_count() if torch.cuda.is_available() else 0
    if int(name[5:]) >= count:
        raise TensorError(f"device {name!r} is not available: this process sees {count} CUDA GPU(s)"
                          + ("" if count else " (no GPU, or torch built without CUDA)") + "; use 'cpu'"
                          + (f" or 'cuda:0'..'cuda:{count - 1}'" if count else ""))


class Tensor(Owned):
    """A host handle on device memory: shape, strides (in elements), dtype and device.

    Make tensors with the lazy factories (``ct.zeros(...).sync()``), from host data
    (``ct.from_numpy``) or from foreign memory (``ct.from_dlpack``, zero-copy).
    """

    __slots__ = ("_data", "_device", "_torch", "_dtype", "_borrow", "_facts")
    _data: Any  # a NumPy array (CPU memory) or a torch tensor (CUDA memory; torch is typed Any here)

    _kind = "tensor"

    def __init__(self, data: Any, name: str | None = None):
        super().__init__(name)
        # the tensor keeps a private view of the memory: whoever handed the array in cannot reset
        # its shape or strides under the tensor (its facts, launch.prepare, rely on that)
        if isinstance(data, np.ndarray):
            self._data = np.ndarray.view(data, np.ndarray)  # plain, whatever subclass came in (memory.plain)
            self._device = "cpu"
        elif _is_torch(data):
            alias = torch_alias(data, "Tensor")
            if alias.device.type == "cuda":
                self._data = alias
                self._device = str(alias.device)
            else:  # CPU torch memory is viewed through NumPy (zero copy), made from a detached alias:
                # the view then holds the storage itself, not the caller's tensor, whose storage
                # set_() or a .data assignment replaces (freeing the memory under the view)
                from ..runtime.args import as_numpy
                self._data = as_numpy(alias).view()
                self._device = "cpu"
        else:
            raise TensorError(f"Tensor wraps a NumPy array or a torch tensor, got {type(data).__name__}")
        self._torch = not isinstance(self._data, np.ndarray)
        try:
            self._dtype = dt.as_dtype(self._data.dtype)
        except DTypeError:
            raise DTypeError(f"a safetile Tensor cannot hold {self._data.dtype} elements (it holds booleans, "
                             "integers and floating-point numbers)") from None
        self._borrow: Partition | None = None  # the partition mutably borrowing this tensor, if any
        self._facts: ArgFacts | None = None  # what launch checks read of it (facts.tensor_facts), made on first use

    # ------------------------------------------------------------------ state

    def _brief(self) -> str:
        dims = "x".join(str(n) for n in self._data.shape)
        return f"[{self._dtype.name} {dims}]"

    def _check(self, action: str | LazyText) -> None:
        super()._check(action)
        if self._borrow is not None:
            raise BorrowError(f"{self.label} cannot be {action}: it is mutably borrowed by "
                              f"{self._borrow.label}; call .release() on that partition (or leave the "
                              "`with ct.borrow_mut(...)` block) first")

    def named(self, name: str) -> Tensor:
        """Give the tensor a name used in error messages; returns the tensor."""
        self._name = name
        return self

    # ------------------------------------------------------------------ metadata

    @property
    def shape(self) -> tuple[int, ...]:
        self._check("inspected")
        return tuple(int(n) for n in self._data.shape)

    @property
    def ndim(self) -> int:
        self._check("inspected")
        return self._data.ndim

    @property
    def dtype(self) -> dt.DType:
        self._check("inspected")
        return self._dtype

    @property
    def device(self) -> str:
        self._check("inspected")
        return self._device

    @property
    def strides(self) -> tuple[int, ...]:
        """Strides in elements."""
        self._check("inspected")
        return _strides(self._data)

    @property
    def size(self) -> int:
        self._check("inspected")
        return int(np.prod(self._data.shape, dtype=np.int64))

    numel = size

    @property
    def nbytes(self) -> int:
        return self.size * self._dtype.bits // 8 if self._dtype.bits >= 8 else self.size

    @property
    def data_ptr(self) -> int:
        self._check("inspected")
        return self._extent().ptr

    def __len__(self) -> int:
        shape = self.shape
        if not shape:
            raise TensorError(f"len() of {self.label}: a 0-d tensor has no length (and cannot be iterated); "
                              "read its value with .to_numpy()")
        return shape[0]

    def __repr__(self) -> str:
        state = f", moved into {self._moved}" if self._moved else ""
        return f"<safetile {self.label} on {self._device}{state}>"

    # ------------------------------------------------------------------ host access

    def _extent(self):
        from .facts import tensor_facts
        return tensor_facts(self).extent

    def _host_copy(self) -> np.ndarray:
        """A NumPy copy, taken while no launch writes this memory (launches wait for the copy)."""
        with REGISTRY.host_access(self._extent(), False, "a host read"):
            if isinstance(self._data, np.ndarray):
                return np.array(self._data, copy=True)
            return torch_to_numpy(self._data)

    def to_numpy(self) -> np.ndarray:
        """A NumPy copy of the contents (waits for unfinished launches writing this memory)."""
        self._check("read")
        return self._host_copy()

    numpy = to_numpy

    def __array__(self, dtype=None, copy=None):
        return numpy_protocol(self.to_numpy, dtype, copy, self.label)

    def to_host(self):
        """A lazy copy of this tensor into host (CPU) memory: a DeviceOp producing a Tensor."""
        from .factories import to_device
        return to_device(self, "cpu")

    def to(self, device):
        """A lazy copy of this tensor onto ``device``."""
        from .factories import to_device
        return to_device(self, device)

    def dup(self):
        """A lazy copy of this tensor (same device): a DeviceOp producing a new Tensor."""
        from .factories import copy
        return copy(self)

    # ------------------------------------------------------------------ DLPack

    def __dlpack__(self, *args, **kwargs):
        """Export the memory (zero-copy) to a DLPack consumer, which may write it (DLPack cannot make
        every consumer honour read-only: torch ignores the flag), so the export claims the memory
        (claims.py) for as long as it lives: refused while the memory is frozen by a live ``Shared``,
        and ``.shared()`` of that memory is refused while the export lives. ``copy=True`` exports a
        copy (not claimed). Waits for unfinished launches writing the memory."""
        if kwargs.get("copy") is True:
            self._check("exported")
            return self._export(self._host_copy(), args, kwargs)
        # The claim's holder is a fresh alias that only this export references: the capsule holds it
        # (NumPy: the capsule's context holds the view; torch: the capsule holds the alias's C++
        # tensor, which keeps its Python object alive), then the consumer, until it lets go.
        alias = self._data.view() if isinstance(self._data, np.ndarray) else self._data.detach()
        with OWNERSHIP:  # usable, and claimed: one step (as partition and shared)
            self._check("exported")
            ext = self._extent()
            try:
                token = CLAIMS.claim(alias, EXPORTED, [ext], LazyText(_export_label, self.label, caller_site()),
                                     f"{self.label} cannot be exported by DLPack (to np.from_dlpack, "
                                     "torch.from_dlpack, or ct.launch of an unchecked kernel: the consumer may "
                                     "write it)")
            except AliasError as e:
                raise AliasError(f"{e}; take a copy instead: t.to_numpy() or np.from_dlpack(t, copy=True)") from None
        try:
            REGISTRY.wait_for_host(ext, True, "a DLPack export")
            return self._export(alias, args, kwargs)
        except BaseException:
            CLAIMS.release(token)  # no export came out (e.g. a dtype DLPack cannot describe)
            raise

    def _export(self, arr: Any, args: tuple, kwargs: dict) -> Any:
        """``arr.__dlpack__(*args, **kwargs)``; the array library's refusal of the arguments said as
        safetile says it (still a TypeError and a ValueError, and a BufferError where the library
        meant "cannot export this way")."""
        try:
            return arr.__dlpack__(*args, **kwargs)
        except (TypeError, ValueError, RuntimeError, BufferError, OverflowError) as e:
            raise (ExportError if isinstance(e, BufferError) else TensorError)(
                f"{self.label} cannot be exported by DLPack with {_dlpack_args(args, kwargs)}: "
                f"{describe(e)}") from None

    def __dlpack_device__(self):
        self._check("exported")
        return self._data.__dlpack_device__()

    @classmethod
    def from_dlpack(cls, x: Any, name: str | None = None) -> Tensor:
        """Wrap foreign memory without copying (NumPy, torch, anything with ``__dlpack__``).

        This is the interop boundary: the caller must not use ``x`` while safetile launches
        use the tensor (safetile cannot see writes made through ``x``).
        """
        if isinstance(x, Tensor):
            x._check("wrapped")
            return cls(x._data, name)
        if isinstance(x, np.ndarray) or _is_torch(x):
            return cls(x, name)
        if hasattr(x, "__dlpack_device__") and x.__dlpack_device__()[0] in (2, 3, 13):
            import torch
            return cls(torch.from_dlpack(x), name)
        if hasattr(x, "__dlpack__"):
            return cls(np.from_dlpack(x), name)
        raise TensorError(f"from_dlpack: {type(x).__name__} does not support DLPack")

    # ------------------------------------------------------------------ views

    def reshape(self, *shape) -> Tensor:
        """A zero-copy view with another shape (raises if the layout needs a copy)."""
        self._check("reshaped")
        if len(shape) == 1 and isinstance(shape[0], (tuple, list)):
            shape = tuple(shape[0])
        if any(isinstance(n, bool) or not isinstance(n, (int, np.integer)) or n < -1 for n in shape):
            raise TensorError(f"reshape of {self.label}: a shape is sizes (and at most one -1), got {shape!r}")
        shape = tuple(int(n) for n in shape)
        if isinstance(self._data, np.ndarray):
            v = self._data.view()
            try:
                v.shape = shape
            except AttributeError:
                raise TensorError(f"reshape of {self.label} to {shape} needs a copy (non-contiguous "
                                 "layout); make one with .dup() first") from None
            except ValueError as e:
                raise TensorError(f"cannot reshape {self.label} to {shape}: {e}") from None
        else:
            try:
                v = self._data.view(shape)
            except RuntimeError as e:
                raise TensorError(f"cannot reshape {self.label} to {shape} without a copy: {e}") from None
        return Tensor(v)

    view = reshape

    def __getitem__(self, key) -> Tensor:
        """A zero-copy slice (integers, slices with positive steps, ``...``)."""
        self._check("sliced")
        keys = key if isinstance(key, tuple) else (key,)
        for k in keys:
            if isinstance(k, slice):
                if k.step is not None and k.step <= 0:
                    raise TensorError("tensor slices need a positive step")
            elif not (k is Ellipsis or (isinstance(k, (int, np.integer)) and not isinstance(k, bool))):
                raise TensorError(f"tensor views take integers, slices and ..., got {k!r}")
        try:
            return Tensor(self._data[key])
        except (IndexError, ValueError, TypeError, RuntimeError) as e:
            raise TensorError(f"cannot take the view {key!r} of {self.label}: {e}") from None

    def slice(self, axis: int, start: int, stop: int) -> Tensor:
        """The zero-copy view ``[start:stop]`` along ``axis``."""
        self._check("sliced")
        if isinstance(axis, bool) or not isinstance(axis, (int, np.integer)) or not -self.ndim <= axis < self.ndim:
            raise TensorError(f"slice of {self.label}: axis {axis!r} is not an axis of a rank-{self.ndim} tensor")
        key = [slice(None)] * self.ndim
        key[axis] = slice(start, stop)
        return self[tuple(key)]

    # ------------------------------------------------------------------ ownership transfers

    def partition(self, shape) -> Partition:
        """Move this tensor into a partition of disjoint ``shape`` sub-tensors (one per block)."""
        from .partition import Partition
        return Partition._take(self, shape, prefix=False)

    def partition_prefix(self, shape) -> Partition:
        """Partition the leading ``len(shape)`` axes; each sub-tensor keeps the trailing axes whole."""
        from .partition import Partition
        return Partition._take(self, shape, prefix=True)

    def shared(self) -> Shared:
        """Move this tensor into a read-only shared handle (any number of readers)."""
        from .partition import Shared
        return Shared._take(self)


def _export_label(tensor_label: str, site: str) -> str:
    return (f"a DLPack export of {tensor_label} made at {site} (it lives as long as the array or capsule made "
            "from it: drop that, or export a copy instead: np.from_dlpack(t, copy=True), t.to_numpy())")


def _strides(data: Any) -> tuple[int, ...]:
    if isinstance(data, np.ndarray):
        return tuple(s // data.itemsize for s in data.strides)
    return tuple(int(s) for s in data.stride())


def from_dlpack(x: Any, name: str | None = None) -> Tensor:
    """Wrap foreign memory (NumPy, torch, DLPack) as a Tensor without copying."""
    return Tensor.from_dlpack(x, name)


def _dlpack_args(args: tuple, kwargs: dict) -> str:
    given = [repr(a) for a in args] + [f"{k}={v!r}" for k, v in kwargs.items()]
    return ", ".join(given) if given else "no arguments"
