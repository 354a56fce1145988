"""safetile: safe, fast tile-based GPU kernels in Python.

``import safetile as ct``. Kernels are written with ``@ct.kernel`` (cuTile Python style)
and launched with ``ct.launch``; they run on NumPy (the CPU backend) or on NVIDIA GPUs.
"""
from . import dtypes
from .dtypes import (DType, bfloat16, bool_, float4_e2m1fn, float8_e4m3fn, float8_e5m2, float8_e5m3fnu,
                     float8_e8m0fnu, float16, float32, float64, int8, int16, int32, int64, tfloat32, uint8,
                     uint16, uint32, uint64)
from .errors import (ArgumentError, DTypeError, LaunchError, SafetileError, TileCompilerExecutionError,
                     TileCompilerTimeoutError, TileDeclarationError, TileError, TileInternalError, TileRecursionError,
                     TileRuntimeError, TileSafetyError, TileStaticAssertionError, TileStaticEvalError, TileSyntaxError,
                     TileTypeError, TileUnsupportedFeatureError, TileValueError)
from .frontend.annotations import (ArrayAnnotation, Constant, ConstantAnnotation, IndexedWithInt64,
                                   ListAnnotation, Scalar, ScalarAnnotation, ScalarInt64)
from .frontend.budget import compiler_timeout
from .frontend.kernel import ByTarget, function
from .ops.debug import assert_, print, printf
from .ops.rounding import RoundingMode
from .ops.elementwise import (abs, add, astype, atan2, bitcast, bitwise_and, bitwise_lshift, bitwise_not,
                              bitwise_or, bitwise_rshift, bitwise_xor, ceil, cos, cosh, divmod, equal, exp,
                              exp2, floor, floordiv, greater, greater_equal, isnan, less, less_equal, log,
                              log2, maximum, minimum, mod, mul, negative, not_equal, pow, rsqrt, sin, sinh,
                              sqrt, sub, tan, tanh, truediv, where)
from .ops.factories import astile  # arange, full, ones, zeros: the safe style's (below) forward to ops.factories
from .ops.grid import (bid, cdiv, grid_dependency_control_launch_dependents, grid_dependency_control_wait,
                       num_blocks)
from .ops.matmul import matmul, mma, mma_scaled
# num_tiles: the safe style's (below), which also takes device-side partitions, forwards to ops.memory's
from .ops.memory import (MemoryOrder, MemoryScope, PaddingMode, TiledView, atomic_add, atomic_and,
                         atomic_cas, atomic_max, atomic_min, atomic_or, atomic_xchg, atomic_xor, gather,
                         load, scatter, store)
from .ops.memory import Slice, load_advanced_indexing, store_advanced_indexing
from .ops.meta import assume_divisible_by, ensure_constant, static_assert, static_eval, static_iter
from .ops.reduction import argmax, argmin, cumprod, cumsum, max, min, prod, reduce, scan, sum
from .ops.shape import (broadcast_to, cat, expand_dims, extract, insert, item, pack_to_bytes, permute, reshape,
                        take, transpose, unpack_from_bytes)
from .ops.values import Array, Tile
from .runtime.kernel import Kernel, kernel
from .runtime.launch import launch
from . import tune  # ct.tune.exhaustive_search: autotuning (docs/autotune.md)
from . import compilation  # cuTile Python's ahead-of-time API (not available: see the module)

bool = bool_  # noqa: A001 - cuTile spells it ct.bool_; allow ct.bool as well

__version__ = "0.1.0"

# The safe style (@ct.entry, host tensors, partitions, DeviceOps); see docs/safe.md.
# Host factories (zeros, ones, full, arange) are lazy DeviceOps on the host and forward to the
# tile factories inside kernels; num_tiles also accepts device-side partitions.
from .safe import *  # noqa: E402,F401,F403
from .safe import __all__ as _safe_all  # noqa: E402
from .runtime.interrupts import GATE as _GATE  # noqa: E402

_GATE.install()  # Ctrl-C is held back while safetile changes shared state (runtime/interrupts.py)
