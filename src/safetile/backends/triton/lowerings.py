"""Imports every Triton lowering family so each registers its emitters."""
from . import control, debug, elementwise, factories, grid, matmul, memory, reduction, shape  # noqa: F401
