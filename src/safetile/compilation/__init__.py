"""``ct.compilation``: cuTile Python's ahead-of-time export API, as far as safetile has it.

safetile compiles when a kernel is launched (and caches the result), generating Triton code
for the GPU; it has no TileIR bytecode and no separate ahead-of-time step. The signature
classes exist so code that builds signatures runs; ``export_kernel`` and the symbol-name
mangling raise ``TileUnsupportedFeatureError`` saying so. docs/compatibility.md lists this.
"""
from __future__ import annotations

import enum
from dataclasses import dataclass, field
from typing import Any, NoReturn
from collections.abc import Sequence

from ..dtypes import DType, int32
from ..errors import TileUnsupportedFeatureError


class CallingConvention(enum.Enum):
    """cuTile Python's kernel calling conventions (recorded in signatures only)."""

    cutile_python_v1 = "cutile_python_v1"
    cutile_python_v2 = "cutile_python_v2"
    cutile_python_v3 = "cutile_python_v3"


@dataclass(frozen=True)
class ScalarConstraint:
    """A scalar parameter of a kernel signature."""

    dtype: DType


@dataclass(frozen=True)
class ArrayConstraint:
    """An array parameter of a kernel signature and the facts assumed about it."""

    dtype: DType
    ndim: int
    index_dtype: DType = int32
    stride_lower_bound_incl: Any = None
    alias_groups: Sequence[str] = ()
    may_alias_internally: bool = False
    stride_constant: Any = None
    shape_constant: Any = None
    stride_divisible_by: Any = 1
    shape_divisible_by: Any = 1
    base_addr_divisible_by: int = 1


@dataclass(frozen=True)
class ListConstraint:
    """A list-of-arrays parameter of a kernel signature."""

    element: ArrayConstraint
    alias_groups: Sequence[str] = ()
    may_alias_internally: bool = False


@dataclass(frozen=True)
class TupleConstraint:
    """A tuple parameter of a kernel signature."""

    items: Sequence[Any]


@dataclass(frozen=True)
class ConstantConstraint:
    """A compile-time constant parameter of a kernel signature."""

    value: Any


ParameterConstraint = ScalarConstraint | ArrayConstraint | ListConstraint | TupleConstraint | ConstantConstraint
ConstantValue = Any


@dataclass(frozen=True)
class KernelSignature:
    """The parameters a kernel is compiled for."""

    parameters: Sequence[Any]
    calling_convention: CallingConvention = CallingConvention.cutile_python_v1
    symbol: str | None = None
    extra: dict = field(default_factory=dict)


def _unsupported(what: str) -> NoReturn:
    raise TileUnsupportedFeatureError(f"{what} is not available in safetile: kernels compile when they are "
                                      "launched (to Triton for the GPU), with no TileIR bytecode or ahead-of-time "
                                      "export step")


def export_kernel(kernel, signatures, output_file, *, gpu_code=None, output_format="cubin", bytecode_version=None):
    """cuTile Python's ahead-of-time export (not available: see the module docstring)."""
    _unsupported("ct.compilation.export_kernel")


def mangle_kernel_name(function_name: str, signature: KernelSignature, *args, **kwargs) -> str:
    """cuTile Python's kernel symbol mangling (not available: see the module docstring)."""
    _unsupported("ct.compilation.mangle_kernel_name")


def demangle_kernel_name(symbol: str):
    """cuTile Python's kernel symbol demangling (not available: see the module docstring)."""
    _unsupported("ct.compilation.demangle_kernel_name")


__all__ = ["ScalarConstraint", "ArrayConstraint", "ListConstraint", "TupleConstraint", "ConstantConstraint",
           "ParameterConstraint", "ConstantValue", "KernelSignature", "CallingConvention", "export_kernel",
           "mangle_kernel_name", "demangle_kernel_name"]
