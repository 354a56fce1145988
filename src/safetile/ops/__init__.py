"""The op catalogue, one module per family. Each module declares its IR ops (name, type
rule, documentation) and the public ``safetile`` functions that emit them."""
from . import (control, debug, elementwise, factories, grid, matmul, memory, meta, reduction,  # noqa: F401
               shape, values)
