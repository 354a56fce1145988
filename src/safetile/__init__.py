"""safetile: safe, fast tile-based GPU kernels in Python.

``import safetile as ct``. Kernels are written with ``@ct.kernel`` (cuTile Python style)
and launched with ``ct.launch``; they run on NumPy (the CPU backend) or on NVIDIA GPUs.
"""
from . import dtypes
from .dtypes import (DType, bfloat16, bool_, float8_e4m3fn, float8_e5m2, float16, float32, float64,
                     int8, int16, int32, int64, tfloat32, uint8, uint16, uint32, uint64)
from .errors import (LaunchError, TileError, TileInternalError, TileRecursionError, TileRuntimeError,
                     TileSafetyError, TileStaticAssertionError, TileStaticEvalError, TileSyntaxError,
                     TileTypeError, TileUnsupportedFeatureError, TileValueError)
from .frontend.kernel import ByTarget, Constant, Kernel, function, kernel
from .ops.debug import assert_, print, printf
from .ops.elementwise import (abs, add, astype, atan2, bitcast, bitwise_and, bitwise_lshift, bitwise_not,
                              bitwise_or, bitwise_rshift, bitwise_xor, ceil, cos, cosh, divmod, equal, exp,
                              exp2, floor, floordiv, greater, greater_equal, isnan, less, less_equal, log,
                              log2, maximum, minimum, mod, mul, negative, not_equal, pow, rsqrt, sin, sinh,
                              sqrt, sub, tan, tanh, truediv, where)
from .ops.factories import arange, astile, full, ones, zeros
from .ops.grid import bid, cdiv, num_blocks
from .ops.matmul import matmul, mma
from .ops.memory import (MemoryOrder, MemoryScope, PaddingMode, TiledView, atomic_add, atomic_and,
                         atomic_cas, atomic_max, atomic_min, atomic_or, atomic_xchg, atomic_xor, gather,
                         load, num_tiles, scatter, store)
from .ops.memory import Slice, load_advanced_indexing, store_advanced_indexing
from .ops.meta import ensure_constant, static_assert, static_eval, static_iter
from .ops.reduction import argmax, argmin, cumprod, cumsum, max, min, prod, reduce, scan, sum
from .ops.shape import (broadcast_to, cat, expand_dims, extract, insert, item, permute, reshape, take,
                        transpose)
from .ops.values import Array, Tile
from .runtime.launch import launch
from . import tune  # ct.tune.exhaustive_search: autotuning (docs/autotune.md)

bool = bool_  # noqa: A001 - cuTile spells it ct.bool_; allow ct.bool as well

__version__ = "0.1.0"

# The safe style (@ct.entry, host tensors, partitions, DeviceOps); see docs/safe.md.
# Host factories (zeros, ones, full, arange) are lazy DeviceOps on the host and forward to the
# tile factories inside kernels; num_tiles also accepts device-side partitions.
from .safe import *  # noqa: E402,F401,F403
from .safe import __all__ as _safe_all  # noqa: E402
