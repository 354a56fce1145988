"""CPU lowerings of the debug family (ops/debug.py): output of a many-block launch is
buffered per block and flushed in block order when the launch ends (or fails); a
single-block launch (e.g. a classic BASIC program) prints as it runs."""
from __future__ import annotations

import sys

import numpy as np

from .executor import lowers


def _format(value: np.ndarray, spec: str) -> str:
    if value.ndim == 0:
        v = value.item()
        if spec.startswith("%"):
            if spec[-1] in "diouxXc" and isinstance(v, float):
                v = int(v)
            return spec % v
        return format(v, spec)
    return np.array2string(value, separator=", ", threshold=64)


@lowers("print")
def print_(run, op, args):
    bs = run.blockset
    nb = run.nb
    ids = bs.flatten(bs.ids)
    flat = [bs.flatten(a, a.ndim - nb) for a in args]
    parts, end = op.attrs["parts"], op.attrs["end"]
    for k, bid in enumerate(ids):
        text = []
        for p in parts:
            if isinstance(p, str):
                text.append(p)
            else:
                i, spec = p
                text.append(_format(flat[i][k], spec))
        line = "".join(text) + end
        if run.grid == (1, 1, 1):  # one block: nothing to order, so print as it happens
            sys.stdout.write(line)
        else:
            run.prints.setdefault(int(bid), []).append(line)


@lowers("assert")
def assert_(run, op, args):
    (cond,) = args
    bs = run.blockset
    ok = bs.flatten(cond)
    if not ok.all():
        run.fail(op, f"assertion failed: {op.attrs['message']}", bs.flatten(bs.ids)[~ok])
