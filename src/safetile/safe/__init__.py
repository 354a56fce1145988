"""The safe style: ``@ct.entry`` kernels, host tensors and partitions, ownership, DeviceOps.

See docs/safe.md. Modules, one job each:

- ``types``        parameter annotations (``Mut``, ``Ref``, ``MappedMut``) and short dtype names
- ``tensor``       host ``Tensor`` over NumPy / torch memory, DLPack, views
- ``partition``    ``Partition``, ``MappedPartition``, ``Shared``, ``borrow_mut``
- ``ownership``    move semantics shared by host values
- ``memory``       byte extents, exact and self overlap, the in-flight registry
- ``claims``       shared memory has no writable alias (frozen and writable claims)
- ``device``       device-side values inside entry kernels (``z.store``, ``load_tile_like``...)
- ``verify``       the compiled-IR ownership check of entry kernels
- ``entry``        ``@ct.entry``, compilation and the kernel's caches
- ``facts``        what the launch checks read of each argument
- ``checks``       the launch checks: a pure function of the arguments' facts
- ``launch``       the launch boundary (``prepare``, atomic moves, ``LaunchOp``)
- ``preconditions`` declared launch preconditions
- ``deviceop``     lazy operations and combinators; ``streams``, ``graph``, ``factories``
- ``race``         the CPU race detector for unchecked kernels
- ``forking``      ``os.fork()``: locks and in-flight work across a fork
- ``picture``      ``p.show()``: pictures of partitions (text, or images with matplotlib)
"""
from .device import load_tile_like, load_tile_like_1d, load_tile_like_2d, load_tile_like_3d, num_tiles
from .deviceop import DeviceOp, empty, value, zip
from .entry import EntryKernel, entry
from .errors import (AliasError, AllocationError, BorrowError, DeviceOpError, ExportError, ForkError, GraphCaptureError,
                     GridError,
                     LaunchDroppedWarning, LaunchTypeError, NestedSyncError, OwnershipError, PartitionError,
                     PreconditionError, RaceError, TensorError, UseAfterMoveError)
from .factories import (arange, copy, from_numpy, full, memcpy, ones, rand, randn, tensor, to_device,
                        zeros)
from .graph import Graph, GraphScope, graph_scope
from . import forking  # noqa: F401,E402 - registers the os.fork() handlers
from .launch import LaunchOp
from .partition import MappedPartition, MutBorrow, Partition, Shared, borrow_mut, shared
from .race import RaceDetector, RaceReport, detect_races
from .streams import Stream, StreamPool, default_device, default_pool, set_default_device
from .tensor import Tensor, from_dlpack
from .types import (MappedMut, Mut, Ref, bf16, f16, f32, f64, i8, i16, i32, i64, tf32, u8, u16, u32,
                    u64)

__all__ = [
    "AliasError", "AllocationError", "BorrowError", "DeviceOp", "DeviceOpError", "EntryKernel", "ExportError",
    "ForkError", "Graph",
    "GraphCaptureError", "GraphScope", "GridError", "LaunchDroppedWarning", "LaunchOp", "LaunchTypeError",
    "TensorError", "MappedMut", "MappedPartition", "Mut",
    "MutBorrow", "NestedSyncError", "OwnershipError", "Partition", "PartitionError", "PreconditionError",
    "RaceDetector", "RaceError", "RaceReport", "Ref", "Shared", "Stream", "StreamPool", "Tensor",
    "UseAfterMoveError", "arange", "bf16", "borrow_mut", "copy", "default_device", "default_pool",
    "detect_races", "empty", "entry", "f16", "f32", "f64", "from_dlpack", "from_numpy", "full", "graph_scope",
    "i8", "i16", "i32", "i64", "load_tile_like", "load_tile_like_1d", "load_tile_like_2d", "load_tile_like_3d",
    "memcpy", "num_tiles", "ones", "rand", "randn", "set_default_device", "shared", "tensor", "tf32",
    "to_device", "u8", "u16", "u32", "u64", "value", "zeros", "zip",
]
