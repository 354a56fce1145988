"""The launch-time capture check (``CaptureSet.check``, generated identity tests) answers as
``captures.current`` does for every kind of recorded read and every kind of change; and a
kernel launched again after the Python state it folded in changed recompiles."""
from __future__ import annotations

import types

import numpy as np

import safetile as ct
from safetile.frontend.captures import ABSENT, FUNCTION_STATE, CaptureSet, current, identity_check


def _entries():
    ns = {"SCALE": 2.0, "NAME": "a", "T": (1, 2)}

    def helper(x, k=1):
        return x * k
    cell = types.CellType(3)
    klass = type("K", (), {"attr": 5})
    return ns, helper, cell, klass, (
        (ns, "SCALE", 2.0), (ns, "NAME", "a"), (ns, "T", ns["T"]), (ns, "MISSING", ABSENT),
        (helper, FUNCTION_STATE, (helper.__code__, helper.__defaults__, helper.__kwdefaults__, helper.__closure__)),
        (cell, None, 3), (klass.__dict__, "attr", 5))


def test_check_agrees_with_current_on_every_change():
    def other(x, k=1):
        return x - k
    changes = {
        "nothing": lambda ns, f, c, k: None,
        "equal constant re-assigned": lambda ns, f, c, k: ns.__setitem__("SCALE", float("2.0")),
        "equal tuple re-assigned": lambda ns, f, c, k: ns.__setitem__("T", (1, 2)),
        "constant changed": lambda ns, f, c, k: ns.__setitem__("SCALE", 3.0),
        "-0.0 for 0.0 style change": lambda ns, f, c, k: ns.__setitem__("SCALE", -2.0),
        "name deleted": lambda ns, f, c, k: ns.pop("NAME"),
        "absent name defined": lambda ns, f, c, k: ns.__setitem__("MISSING", 1),
        "code replaced": lambda ns, f, c, k: setattr(f, "__code__", other.__code__),
        "defaults replaced": lambda ns, f, c, k: setattr(f, "__defaults__", (2,)),
        "kwdefaults set": lambda ns, f, c, k: setattr(f, "__kwdefaults__", {"z": 1}),
        "cell changed": lambda ns, f, c, k: setattr(c, "cell_contents", 4),
        "cell emptied": lambda ns, f, c, k: delattr(c, "cell_contents"),
        "class attribute changed": lambda ns, f, c, k: setattr(k, "attr", 6),
    }
    for name, change in changes.items():
        ns, helper, cell, klass, entries = _entries()
        check = identity_check(entries)
        assert check() and current(entries), name
        change(ns, helper, cell, klass)
        assert check() == current(entries), name
        assert check() == (name in ("nothing", "equal constant re-assigned", "equal tuple re-assigned")), name


def test_capture_set_keeps_check_with_entries():
    s = CaptureSet()
    assert s.check()
    ns, helper, cell, klass, entries = _entries()
    s.add(entries[:2])
    s.add(entries)
    assert len(s.entries) == len(entries) and s.check()
    ns["SCALE"] = 9.0
    assert not s.check()
    s.clear()
    assert s.check() and s.entries == ()


SCALE = 2.0


@ct.kernel
def scaled(x, z, TILE: ct.Constant[int]):
    b = ct.bid(0)
    ct.store(z, (b,), ct.load(x, (b,), (TILE,)) * SCALE)


def test_launch_recompiles_after_a_folded_global_changes():
    global SCALE
    x = np.arange(8, dtype=np.float32)
    z = np.full(8, np.nan, dtype=np.float32)
    try:
        ct.launch(None, (1,), scaled, (x, z, 8))
        assert np.array_equal(z, 2 * x)
        SCALE = 2.0 + 0.0  # an equal constant: no recompilation needed, same result
        ct.launch(None, (1,), scaled, (x, z, 8))
        assert np.array_equal(z, 2 * x)
        SCALE = 3.0
        ct.launch(None, (1,), scaled, (x, z, 8))
        assert np.array_equal(z, 3 * x)
    finally:
        SCALE = 2.0
