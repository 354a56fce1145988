"""CPU lowerings of the factories family (ops/factories.py)."""
from __future__ import annotations

import numpy as np

from .executor import lowers


@lowers("arange")
def arange(run, op, args):
    a = op.attrs
    vals = (np.arange(a["size"], dtype=np.float64 if isinstance(a["step"], float) or isinstance(a["start"], float)
                      else np.int64) * a["step"] + a["start"])
    return vals.astype(a["dtype"].np_dtype).reshape((1,) * run.nb + (a["size"],))


@lowers("broadcast")
def broadcast(run, op, args):
    (x,) = args
    shape = op.attrs["shape"]
    return np.broadcast_to(x.reshape(x.shape + (1,) * len(shape)), x.shape + shape)
