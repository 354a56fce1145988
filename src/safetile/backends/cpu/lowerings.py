"""Imports every CPU lowering family so each registers its ops."""
from . import debug, elementwise, factories, grid, matmul, memory, reduction, shape  # noqa: F401
