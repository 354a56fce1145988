"""Compile state: owned by one compilation, safe under threads, keyed on what it read.

- Threads compiling different kernels and specialisations at once, and host calls made
  while another thread compiles, each get exactly what they would alone.
- Compiled code folds Python state (module globals, closure variables, attributes of user
  objects, helper functions); changing any of it recompiles on the next launch.
- A failure inside safetile is a ``TileInternalError`` carrying its cause, never a user error
  located at the user's line; the user's own mistakes keep their classes.
- Kernel code sees only the documented surface of safetile objects.
"""
from __future__ import annotations

import threading
import types

import numpy as np
import pytest

import safetile as ct
from safetile import TileInternalError, TileTypeError, TileUnsupportedFeatureError, TileValueError

RNG = np.random.default_rng(20261124)


def _affine_kernel(mul: float, add: float):
    """A fresh kernel object per call: every one compiles on its first launch."""
    @ct.kernel
    def affine(x, y, T: ct.Constant[int]):
        b = ct.bid(0)
        t = ct.load(x, index=(b,), shape=(T,), padding_mode=ct.PaddingMode.ZERO)
        for _ in range(2):
            t = t * mul + add
        ct.store(y, index=(b,), tile=t)
    return affine


def test_threads_compile_and_launch_distinct_kernels_at_once():
    errors: list = []
    start = threading.Barrier(8)

    def worker(w: int) -> None:
        rng = np.random.default_rng(w)
        start.wait()
        for _ in range(25):
            mul, add = float(rng.integers(1, 5)), float(rng.integers(-3, 4))
            tile = int(2 ** rng.integers(2, 7))
            n = int(rng.integers(1, 300))
            x = rng.standard_normal(n).astype(np.float32)
            y = np.full(n, np.nan, np.float32)
            try:
                ct.launch(None, (ct.cdiv(n, tile),), _affine_kernel(mul, add), (x, y, tile))
                ref = (x * mul + add) * mul + add
                if not np.allclose(y, ref, rtol=1e-6, atol=1e-6):
                    errors.append(("wrong result", w, mul, add, tile))
                if not isinstance(ct.zeros(4), ct.DeviceOp):
                    errors.append(("a host factory returned a tile", w))
            except Exception as e:  # noqa: BLE001 - collected and reported below
                errors.append((type(e).__name__, str(e)[:200]))

    threads = [threading.Thread(target=worker, args=(w,)) for w in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors[:5]


def test_one_kernel_many_specialisations_from_threads():
    k = _affine_kernel(2.0, 1.0)
    errors: list = []

    def worker(w: int) -> None:
        for i in range(30):
            tile = 2 ** ((w + i) % 6 + 1)
            dtype = (np.float32, np.float64)[(w + i) % 2]
            x = np.arange(50, dtype=dtype) * (w + 1)
            y = np.full(50, np.nan, dtype)
            ct.launch(None, (ct.cdiv(50, tile),), k, (x, y, tile))
            if not np.allclose(y, (x * 2 + 1) * 2 + 1):
                errors.append((w, i, tile, dtype))

    threads = [threading.Thread(target=worker, args=(w,)) for w in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors


def test_host_call_while_another_thread_is_compiling():
    """A host factory called in the middle of another thread's compilation is a host call."""
    compiling, release = threading.Event(), threading.Event()

    def pause_compilation() -> int:
        compiling.set()
        assert release.wait(10)
        return 1

    @ct.kernel
    def paused(x):
        ct.store(x, index=(0,), tile=ct.full((4,), ct.static_eval(pause_compilation()), ct.float32))

    x = np.zeros(4, np.float32)
    t = threading.Thread(target=ct.launch, args=(None, (1,), paused, (x,)))
    t.start()
    try:
        assert compiling.wait(10)
        op = ct.zeros(16)  # the other thread is inside its compilation right now
        assert isinstance(op, ct.DeviceOp)
        assert op.sync().to_numpy().shape == (16,)
        with pytest.raises(TypeError, match="inside a kernel"):
            ct.bid(0)
    finally:
        release.set()
        t.join()
    np.testing.assert_array_equal(x, np.ones(4, np.float32))


# ----------------------------------------------------------------------------- captured Python state

SCALE = 2.0


def _helper(t):
    return t + 1.0


@ct.kernel
def uses_global_and_helper(x, y):
    t = ct.load(x, index=(0,), shape=(8,))
    ct.store(y, index=(0,), tile=_helper(t * SCALE))


def _run(kernel, x):
    y = np.full_like(x, np.nan)
    ct.launch(None, (1,), kernel, (x, y))
    return y


def test_a_changed_global_recompiles():
    global SCALE
    x = RNG.standard_normal(8).astype(np.float32)
    try:
        np.testing.assert_allclose(_run(uses_global_and_helper, x), x * 2.0 + 1.0, rtol=1e-6)
        SCALE = 3.0
        np.testing.assert_allclose(_run(uses_global_and_helper, x), x * 3.0 + 1.0, rtol=1e-6)
    finally:
        SCALE = 2.0
    np.testing.assert_allclose(_run(uses_global_and_helper, x), x * 2.0 + 1.0, rtol=1e-6)


TORN_SCALE = 2.0
_TORN_FLIPS = [0]


def _flip_torn_scale():
    """Run by ct.static_eval between the kernel's two reads of TORN_SCALE: changes it while the
    kernel compiles, once per arming."""
    global TORN_SCALE
    if _TORN_FLIPS[0]:
        _TORN_FLIPS[0] = 0
        TORN_SCALE = 3.0
    return 0


@ct.kernel
def reads_twice(x, y):
    t = ct.load(x, (0,), (8,))
    a = t * TORN_SCALE
    ct.static_eval(_flip_torn_scale())
    ct.store(y, (0,), a + t * 10.0 * TORN_SCALE)


def test_code_compiled_while_a_global_changed_under_it_is_compiled_again():
    """A compile whose two reads of one global saw two values (red team round 6, 628) mixes them;
    that code must not be reused once the global settles (it was: the first read was recorded, so
    resetting the global to it made the mixed code current again)."""
    global TORN_SCALE
    x = RNG.standard_normal(8).astype(np.float32)
    try:
        _TORN_FLIPS[0] = 1
        np.testing.assert_allclose(_run(reads_twice, x), x * 2.0 + x * 30.0, rtol=1e-6)  # the reads in order
        TORN_SCALE = 2.0  # back to what the first read saw
        np.testing.assert_allclose(_run(reads_twice, x), x * 2.0 + x * 20.0, rtol=1e-6)
        TORN_SCALE = 3.0
        np.testing.assert_allclose(_run(reads_twice, x), x * 3.0 + x * 30.0, rtol=1e-6)
    finally:
        TORN_SCALE = 2.0
        _TORN_FLIPS[0] = 0


def test_a_redefined_helper_recompiles():
    global _helper
    x = RNG.standard_normal(8).astype(np.float32)
    original = _helper
    np.testing.assert_allclose(_run(uses_global_and_helper, x), x * SCALE + 1.0, rtol=1e-6)
    try:
        def _helper(t):  # noqa: F811 - the point of the test
            return t - 5.0
        np.testing.assert_allclose(_run(uses_global_and_helper, x), x * SCALE - 5.0, rtol=1e-6)
    finally:
        _helper = original


def test_an_equal_constant_does_not_recompile():
    global SCALE
    x = RNG.standard_normal(8).astype(np.float32)
    _run(uses_global_and_helper, x)
    compiled = dict(uses_global_and_helper._cache)
    try:
        SCALE = float("2.0")  # another float object, the same value
        _run(uses_global_and_helper, x)
        assert uses_global_and_helper._cache == compiled
    finally:
        SCALE = 2.0


def test_closure_variables_and_object_attributes_are_tracked():
    class Config:
        offset = 1.0

    cfg = Config()
    cfg.scale = 2.0
    factor = 10.0

    @ct.kernel
    def k(x, y):
        t = ct.load(x, index=(0,), shape=(8,))
        ct.store(y, index=(0,), tile=t * cfg.scale * factor + Config.offset)

    x = RNG.standard_normal(8).astype(np.float32)
    np.testing.assert_allclose(_run(k, x), x * 20.0 + 1.0, rtol=1e-6)
    cfg.scale = 3.0  # an instance attribute
    np.testing.assert_allclose(_run(k, x), x * 30.0 + 1.0, rtol=1e-6)
    Config.offset = -1.0  # a class attribute
    np.testing.assert_allclose(_run(k, x), x * 30.0 - 1.0, rtol=1e-6)
    factor = 100.0  # a closure cell  # noqa: F841 - read by the kernel through its closure
    np.testing.assert_allclose(_run(k, x), x * 300.0 - 1.0, rtol=1e-6)


def test_module_attributes_and_static_eval_globals_are_tracked():
    global BIAS
    k = ct.kernel(_module_kernel)
    x = RNG.standard_normal(16).astype(np.float32)
    try:
        y = _run(k, x)
        np.testing.assert_allclose(y[:8], x[:8] + 2.0, rtol=1e-6)
        assert np.isnan(y[8:]).all()
        _module_cfg.WIDTH = 16  # an attribute of a user module
        np.testing.assert_allclose(_run(k, x), x + 2.0, rtol=1e-6)
        BIAS = 5.0  # a global read inside ct.static_eval
        np.testing.assert_allclose(_run(k, x), x + 10.0, rtol=1e-6)
    finally:
        _module_cfg.WIDTH, BIAS = 8, 1.0


_module_cfg = types.ModuleType("user_config")
_module_cfg.WIDTH = 8
BIAS = 1.0


def _module_kernel(x, y):
    t = ct.load(x, index=(0,), shape=(_module_cfg.WIDTH,))
    ct.store(y, index=(0,), tile=t + ct.static_eval(BIAS * 2))


def test_a_later_global_shadowing_a_builtin_recompiles():
    g = {"ct": ct}
    src = ("def k(x, y):\n"
           "    t = ct.load(x, index=(0,), shape=(4,))\n"
           "    ct.store(y, index=(0,), tile=t * abs(-3))\n")
    path = _write_module(src)
    exec(compile(src, path, "exec"), g)
    k = ct.kernel(g["k"])
    x = RNG.standard_normal(4).astype(np.float32)
    np.testing.assert_allclose(_run(k, x), x * 3, rtol=1e-6)
    g["abs"] = lambda v: 7
    np.testing.assert_allclose(_run(k, x), x * 7, rtol=1e-6)


def _write_module(src: str) -> str:
    import linecache
    import tempfile
    f = tempfile.NamedTemporaryFile("w", suffix=".py", delete=False)
    f.write(src)
    f.close()
    linecache.checkcache(f.name)
    return f.name


# ----------------------------------------------------------------------------- internal vs user errors

def test_a_bug_inside_safetile_is_an_internal_error(monkeypatch):
    """An exception raised by safetile's own code is a TileInternalError with the cause kept,
    even when it is a TypeError/IndexError that used to pass for the user's mistake."""
    import safetile.ops.grid as grid_ops
    ns: dict = {}
    # a function whose code lives in the package (as a real bug would)
    exec(compile("def buggy_bid(axis):\n    return [][axis]\n", grid_ops.__file__, "exec"), ns)
    ns["buggy_bid"].__module__ = grid_ops.__name__
    monkeypatch.setattr(ct, "bid", ns["buggy_bid"])

    @ct.kernel
    def k(x):
        b = ct.bid(0)
        ct.store(x, index=(b,), tile=ct.full((4,), 1.0, ct.float32))

    x = np.zeros(4, np.float32)
    with pytest.raises(TileInternalError) as info:
        ct.launch(None, (1,), k, (x,))
    assert isinstance(info.value.__cause__, IndexError)
    assert "a bug in safetile" in str(info.value)
    assert not x.any()


@pytest.mark.parametrize("body, cls, words", [
    ("t = ct.full((4,), 1 // 0, ct.float32)", TileValueError, "division"),
    ("t = ct.full((4,), 1.0, ct.float32); u = t.no_such_method()", TileTypeError, "no_such_method"),
    ("t = ct.bid()", TileTypeError, "missing"),
    ("a, b = (1, 2, 3)", TileValueError, "unpack"),
    ("t = int('x')", TileValueError, "invalid literal"),
    ("t = [1, 2][5]", TileValueError, "index"),
])
def test_the_users_mistakes_keep_their_classes(body, cls, words):
    src = f"import safetile as ct\ndef k(x):\n    {body}\n"
    g: dict = {}
    exec(compile(src, _write_module(src), "exec"), g)
    with pytest.raises(cls) as info:
        ct.launch(None, (1,), ct.kernel(g["k"]), (np.zeros(4, np.float32),))
    assert words in str(info.value)
    assert info.value.line == 3


# ----------------------------------------------------------------------------- the documented surface

@pytest.mark.parametrize("expr, cls", [
    ("t.value", TileTypeError),
    ("x.value", TileTypeError),
    ("x.name", TileTypeError),
    ("getattr(t, 'value')", TileTypeError),
    ("t.__class__", TileUnsupportedFeatureError),
    ("ct._private_thing", TileTypeError),
    ("type(t)", TileUnsupportedFeatureError),
    ("vars(x)", TileUnsupportedFeatureError),
])
def test_kernel_code_cannot_reach_internals(expr, cls):
    src = f"import safetile as ct\ndef k(x):\n    t = ct.load(x, index=(0,), shape=(4,))\n    v = {expr}\n"
    g: dict = {}
    exec(compile(src, _write_module(src), "exec"), g)
    x = RNG.standard_normal(4).astype(np.float32)
    before = x.copy()
    with pytest.raises(cls):
        ct.launch(None, (1,), ct.kernel(g["k"]), (x,))
    np.testing.assert_array_equal(x, before)


def test_hasattr_sees_the_surface_only():
    @ct.kernel
    def k(x, y):
        t = ct.load(x, index=(0,), shape=(4,))
        ok = hasattr(t, "shape") and not hasattr(t, "value") and not hasattr(x, "_cache")
        ct.store(y, index=(0,), tile=ct.full((4,), 1.0 if ok else 0.0, ct.float32))

    y = np.zeros(4, np.float32)
    ct.launch(None, (1,), k, (np.ones(4, np.float32), y))
    np.testing.assert_array_equal(y, 1.0)


# ----------------------------------------------------------------------------- gaps a red team found

def test_an_instance_attribute_shadowing_a_class_attribute_recompiles():
    class Cfg:
        W = 2.0

    cfg = Cfg()

    @ct.kernel
    def k(x, y):
        t = ct.load(x, index=(0,), shape=(8,))
        ct.store(y, index=(0,), tile=t * cfg.W)

    x = RNG.standard_normal(8).astype(np.float32)
    np.testing.assert_allclose(_run(k, x), x * 2.0, rtol=1e-6)
    cfg.W = 6.0  # now found on the instance, before the class
    np.testing.assert_allclose(_run(k, x), x * 6.0, rtol=1e-6)


def test_negative_zero_is_a_different_constant():
    global SIGN
    x = np.abs(RNG.standard_normal(8).astype(np.float32)) + 1
    k = ct.kernel(_signed_zero_kernel)
    try:
        SIGN = 0.0
        assert not np.signbit(_run(k, x)).any()
        SIGN = -0.0
        assert np.signbit(_run(k, x)).all()
    finally:
        SIGN = 0.0


SIGN = 0.0


def _signed_zero_kernel(x, y):
    t = ct.load(x, index=(0,), shape=(8,))
    ct.store(y, index=(0,), tile=t * SIGN)


def test_a_helpers_code_or_defaults_changed_in_place_recompiles():
    def add_bias(t, bias=1.0):
        return t + bias

    def sub_bias(t, bias=1.0):
        return t - bias

    @ct.kernel
    def k(x, y):
        ct.store(y, index=(0,), tile=add_bias(ct.load(x, index=(0,), shape=(8,))))

    x = RNG.standard_normal(8).astype(np.float32)
    np.testing.assert_allclose(_run(k, x), x + 1.0, rtol=1e-6)
    add_bias.__defaults__ = (5.0,)
    np.testing.assert_allclose(_run(k, x), x + 5.0, rtol=1e-6)
    add_bias.__code__ = sub_bias.__code__
    np.testing.assert_allclose(_run(k, x), x - 5.0, rtol=1e-6)


ENTRY_SCALE = 2.0


@ct.entry
def _scaled_entry(z: ct.Mut[ct.f32, "B"], x: ct.Ref[ct.f32, -1]):
    z.store(ct.load_tile_like(x, z) * ENTRY_SCALE)


def test_entry_kernels_recompile_when_python_state_changes():
    global ENTRY_SCALE
    x = ct.rand(64, seed=4).sync()
    z = ct.zeros(64).sync().partition(16)
    try:
        z, x = _scaled_entry(z, x).sync()
        np.testing.assert_allclose(z.to_numpy(), 2.0 * x.to_numpy(), rtol=1e-6)
        ENTRY_SCALE = 3.0  # the same argument objects: the cached plan must not run stale code
        z, x = _scaled_entry(z, x).sync()
        np.testing.assert_allclose(z.to_numpy(), 3.0 * x.to_numpy(), rtol=1e-6)
    finally:
        ENTRY_SCALE = 2.0
