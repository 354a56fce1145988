"""CPU lowerings of the debug family (ops/debug.py). Printed text comes from the launch's
``Printer``: a many-block launch buffers each block's prints and renders them in block
order when the launch ends (or fails); a single-block launch (e.g. a classic BASIC
program) prints as it runs."""
from __future__ import annotations

from .executor import lowers


@lowers("print")
def print_(run, op, args):
    bs = run.blockset
    nb = run.nb
    ids = bs.flatten(bs.ids)
    flat = [bs.flatten(a, a.ndim - nb) for a in args]
    for k, bid in enumerate(ids):
        values = [f[k] for f in flat]
        if run.grid == (1, 1, 1):  # one block: nothing to order, so print as it happens
            run.printer.write(run.printer.text(op.attrs, values))
        else:
            run.prints.setdefault(int(bid), []).append((op.attrs, values))


@lowers("assert")
def assert_(run, op, args):
    (cond,) = args
    bs = run.blockset
    ok = bs.flatten(cond)
    if not ok.all():
        run.fail(op, f"assertion failed: {op.attrs['message']}", bs.flatten(bs.ids)[~ok])
