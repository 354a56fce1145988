"""Errors of the safe style: ownership, launch validation, device operations, races.

Launch-time rejections are ``LaunchError`` subclasses (a ``ValueError``) raised before
anything runs, so a rejected launch writes nothing and moves nothing (``LaunchTypeError``
and ``GridError`` live in ``safetile.errors``, shared with ``ct.launch``; re-exported here).
Using a value that was moved (into a partition, a launch, a shared handle) raises
``UseAfterMoveError`` naming what moved it.
"""
from __future__ import annotations

from ..errors import ArgumentError, GridError, LaunchError, LaunchTypeError, SafetileError  # noqa: F401 - re-exported


class OwnershipError(SafetileError, RuntimeError):
    """A host value was used while something else owns or borrows it."""


class UseAfterMoveError(OwnershipError):
    """The value was moved (into a partition, a launch, a shared handle...) and not given back."""


class BorrowError(OwnershipError):
    """The tensor is mutably borrowed by a partition; release the partition first."""


class AliasError(LaunchError):
    """A mutable argument overlaps another argument in memory."""

    conflict: str | None = None  # a refused claim: the kind of claim in the way (claims.py)


class PartitionError(LaunchError):
    """A partition request is invalid (rank, shape, mapping)."""


class PreconditionError(LaunchError):
    """A declared ``preconditions=[...]`` condition of an entry kernel does not hold."""


class DeviceOpError(SafetileError, RuntimeError):
    """A device operation was driven the wrong way."""


class AllocationError(DeviceOpError, MemoryError):
    """The device (or host) could not allocate a factory's tensor; nothing else ran. Also a
    ``MemoryError``."""


class NestedSyncError(DeviceOpError):
    """``sync()`` (or another terminal) was called while a device operation is executing."""


class ForkError(DeviceOpError):
    """In a process made by ``os.fork()``: the memory was being written by work of the parent
    process when it forked (that work does not exist in the child; the contents are undefined)."""


class GraphCaptureError(DeviceOpError):
    """An operation cannot be recorded into a graph (it allocates memory)."""


class RaceError(SafetileError, RuntimeError):
    """The race detector found elements written by two different tile blocks."""

    def __init__(self, report):
        self.report = report
        super().__init__(report.describe())


class LaunchDroppedWarning(RuntimeWarning):
    """A launch was dropped (or cancelled by leaving a borrow) without being run; its arguments were
    given back."""


class TensorError(ArgumentError):
    """A host tensor operation was refused (a view, a reshape, a shape or device argument)."""


class ExportError(TensorError, BufferError):
    """A DLPack export (``t.__dlpack__``) could not be made as asked: also a ``BufferError``, which
    DLPack consumers catch to try another way."""
