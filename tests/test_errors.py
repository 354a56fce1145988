"""Broken kernels and launches: the exact error class, a message naming the problem, and the
location of the offending line.

The offending line of each kernel carries a ``# ERR`` marker comment (``# CALL`` for the
call site of a failing helper); expected line numbers are found from the source, never
hard-coded.
"""
from __future__ import annotations

import inspect

import numpy as np
import pytest

import safetile as ct
from safetile import (TileError, TileRecursionError, TileStaticAssertionError, TileStaticEvalError,
                      TileSyntaxError, TileTypeError, TileUnsupportedFeatureError, TileValueError)


def marked_line(fn, marker: str = "# ERR") -> int:
    """The file line number of the line of ``fn`` that carries ``marker``."""
    fn = getattr(fn, "fn", fn)
    lines, first = inspect.getsourcelines(fn)
    hits = [first + i for i, text in enumerate(lines) if text.rstrip().endswith(marker)]
    assert len(hits) == 1, f"{fn.__name__} must have exactly one {marker!r} line"
    return hits[0]


def compile_error(kernel, *args, grid=(1,)) -> TileError:
    with pytest.raises(TileError) as info:
        ct.launch(None, grid, kernel, args)
    return info.value


def check(err: TileError, cls: type, kernel, *words: str, marker: str = "# ERR") -> None:
    """The error is exactly ``cls``, names every word, and points at the marked line."""
    assert type(err) is cls, f"expected {cls.__name__}, got {type(err).__name__}: {err}"
    text = str(err)
    for w in words:
        assert w in err.message, f"{w!r} not in message {err.message!r}"
    line = marked_line(kernel, marker)
    assert err.line == line, f"error at line {err.line}, expected {line}:\n{text}"
    # rendering: message first, then the location, the source line and a caret underline
    first, where, src, carets = text.splitlines()[:4] if len(err.locs) == 1 else text.splitlines()[-4:]
    if len(err.locs) == 1:
        assert first == err.message.splitlines()[0]
    assert where.strip().startswith('File "') and f"line {line}, column " in where
    assert src.strip() and src.strip() in open(err.filename).read().splitlines()[line - 1]
    assert set(carets.strip()) == {"^"}
    assert carets.index("^") >= src.index(src.strip())


F32 = np.float32


_rng = np.random.default_rng(7)


def vec(n=64, dtype=F32):
    return _rng.standard_normal(n).astype(dtype)


# ------------------------------------------------------------------------------- names & branches

@ct.kernel
def undefined_name(x, y):
    t = ct.load(x, index=(0,), shape=(16,))
    ct.store(y, index=(0,), tile=t + offsett)  # ERR


def test_undefined_name():
    err = compile_error(undefined_name, vec(), vec())
    check(err, TileSyntaxError, undefined_name, "offsett", "not defined")


@ct.kernel
def one_branch_only(x, y):
    t = ct.load(x, index=(0,), shape=(16,))
    if ct.sum(t) > 0.0:
        scale = 2.0
    ct.store(y, index=(0,), tile=t * scale)  # ERR


def test_variable_defined_in_one_branch():
    err = compile_error(one_branch_only, vec(), vec())
    check(err, TileSyntaxError, one_branch_only, "scale", "only in the if branch",
          f"line {marked_line(one_branch_only) - 2}")


@ct.kernel
def used_after_loop(x, y, n):
    for i in range(n):
        last = ct.load(x, index=(i,), shape=(16,))
    ct.store(y, index=(0,), tile=last)  # ERR


def test_variable_defined_only_in_loop():
    err = compile_error(used_after_loop, vec(), vec(), 3)
    check(err, TileSyntaxError, used_after_loop, "last", "only inside the loop")


@ct.kernel
def tile_as_bool(x, y):
    t = ct.load(x, index=(0,), shape=(16,))
    if t > 0.0:  # ERR
        t = -t
    ct.store(y, index=(0,), tile=t)


def test_tile_used_as_python_bool():
    err = compile_error(tile_as_bool, vec(), vec())
    check(err, TileTypeError, tile_as_bool, "tile<16xbool_>", "condition", "ct.where")


@ct.kernel
def branch_shapes_differ(x, y):
    t = ct.load(x, index=(0,), shape=(16,))
    if ct.bid(0) == 0:
        t = ct.load(x, index=(0,), shape=(32,))  # ERR
    ct.store(y, index=(0,), tile=t)


def test_branches_with_different_shapes():
    err = compile_error(branch_shapes_differ, vec(), vec())
    check(err, TileTypeError, branch_shapes_differ, "'t'", "tile<16xfloat32>", "tile<32xfloat32>")


# ------------------------------------------------------------------------------- shapes & dtypes

@ct.kernel
def not_pow2(x, y):
    t = ct.load(x, index=(0,), shape=(12,))  # ERR
    ct.store(y, index=(0,), tile=t)


def test_shape_not_power_of_two():
    err = compile_error(not_pow2, vec(), vec())
    check(err, TileTypeError, not_pow2, "powers of two", "(12,)")


@ct.kernel
def mma_mismatch(a, b, c):
    ta = ct.load(a, index=(0, 0), shape=(16, 32))
    tb = ct.load(b, index=(0, 0), shape=(16, 16))
    acc = ct.zeros((16, 16), dtype=ct.float32)
    acc = ct.mma(ta, tb, acc)  # ERR
    ct.store(c, index=(0, 0), tile=acc)


def test_mma_inner_dimension_mismatch():
    m = np.zeros((32, 32), F32)
    err = compile_error(mma_mismatch, m, m.copy(), m.copy())
    check(err, TileTypeError, mma_mismatch, "Incompatible shapes", "(16, 32)", "(16, 16)")


@ct.kernel
def store_wrong_dtype(x, y):
    t = ct.load(x, index=(0,), shape=(16,))
    ct.store(y, index=(0,), tile=t)  # ERR


def test_store_with_wrong_dtype():
    err = compile_error(store_wrong_dtype, vec(), vec(dtype=np.float16))
    check(err, TileTypeError, store_wrong_dtype, "float32", "float16")


@ct.kernel
def load_wrong_rank(x, y):
    t = ct.load(x, index=(0,), shape=(16, 16))  # ERR
    ct.store(y, index=(0,), tile=t)


def test_load_with_wrong_index_rank():
    err = compile_error(load_wrong_rank, np.zeros((32, 32), F32), np.zeros((32, 32), F32))
    check(err, TileTypeError, load_wrong_rank, "index", "rank 2")


@ct.kernel
def runtime_shape(x, y, n):
    t = ct.load(x, index=(0,), shape=(n,))  # ERR
    ct.store(y, index=(0,), tile=t)


def test_non_constant_shape_argument():
    """The message names the parameter and the annotation that fixes it."""
    err = compile_error(runtime_shape, vec(), vec(), 16)
    check(err, TileTypeError, runtime_shape, "compile-time constant", "tile<int32>",
          "parameter 'n'", "annotate it as `n: ct.Constant[int]`")


@ct.kernel
def derived_runtime_shape(x, y, n, scale):
    k = n * 2 + 1
    t = ct.load(x, index=(0,), shape=(k - 1,))  # ERR
    ct.store(y, index=(0,), tile=t * scale)


@ct.kernel
def loaded_runtime_shape(x, y):
    n = ct.load(x, index=(0,), shape=(1,)).astype(ct.int32).item()
    t = ct.load(x, index=(0,), shape=(n,))  # ERR
    ct.store(y, index=(0,), tile=t)


@ct.entry
def entry_runtime_shape(z: ct.Mut[ct.f32, "B"], x: ct.Ref[ct.f32, -1], n: int):
    z.store(ct.reshape(ct.load(x, index=(0,), shape=(n,)), (8,)))  # ERR


def test_non_constant_shape_names_the_parameter_it_comes_from():
    err = compile_error(derived_runtime_shape, vec(), vec(), 16, 2.0)
    check(err, TileTypeError, derived_runtime_shape, "parameter 'n'", "`n: ct.Constant[int]`")
    assert "scale" not in err.message
    err = compile_error(loaded_runtime_shape, vec(), vec())  # no parameter to blame: no advice
    check(err, TileTypeError, loaded_runtime_shape, "compile-time constant")
    assert "ct.Constant" not in err.message
    with pytest.raises(TileTypeError) as info:
        entry_runtime_shape(ct.zeros(16).sync().partition(8), ct.zeros(16).sync(), 8)
    check(info.value, TileTypeError, entry_runtime_shape, "parameter 'n'", "`n: ct.Constant[int]`")


@ct.kernel
def bad_padding(x, y):
    t = ct.load(x, index=(0,), shape=(16,), padding_mode="zero")  # ERR
    ct.store(y, index=(0,), tile=t)


@ct.kernel
def nan_padding_on_ints(x, y):
    t = ct.load(x, index=(0,), shape=(16,), padding_mode=ct.PaddingMode.NAN)  # ERR
    ct.store(y, index=(0,), tile=t)


def test_bad_padding_mode():
    err = compile_error(bad_padding, vec(), vec())
    check(err, TileTypeError, bad_padding, "padding_mode", "'zero'")
    ints = np.arange(32, dtype=np.int32)
    err = compile_error(nan_padding_on_ints, ints, ints.copy())
    check(err, TileTypeError, nan_padding_on_ints, "NAN", "int32")


@ct.kernel
def store_to_readonly(x, y):
    ct.store(x, index=(0,), tile=ct.load(y, index=(0,), shape=(16,)))  # ERR


def test_store_to_read_only_numpy_array():
    x = vec()
    x.flags.writeable = False
    err = compile_error(store_to_readonly, x, vec())
    check(err, TileTypeError, store_to_readonly, "read-only")


# ------------------------------------------------------------------------------- loops

@ct.kernel
def carried_type_changes(x, y, n):
    acc = ct.zeros((16,), dtype=ct.float16)
    for i in range(n):
        t = ct.load(x, index=(i,), shape=(16,))
        acc = acc + t  # ERR
    ct.store(y, index=(0,), tile=acc)


def test_loop_carried_variable_changes_type():
    err = compile_error(carried_type_changes, vec(), vec(dtype=np.float16), 2)
    check(err, TileTypeError, carried_type_changes, "'acc'", "tile<16xfloat16>", "tile<16xfloat32>")


@ct.kernel
def carried_shape_changes(x, y, n):
    acc = ct.sum(ct.load(x, index=(0,), shape=(16,)))
    for i in range(n):
        acc = acc + ct.load(x, index=(i,), shape=(16,))  # ERR
    ct.store(y, index=(0,), tile=acc)


def test_loop_carried_tile_changes_shape():
    err = compile_error(carried_shape_changes, vec(), vec(), 2)
    check(err, TileTypeError, carried_shape_changes, "'acc'", "tile<float32>", "tile<16xfloat32>")


@ct.kernel
def return_in_loop(x, y, n):
    for i in range(n):
        if i > 2:
            return  # ERR
    ct.store(y, index=(0,), tile=ct.load(x, index=(0,), shape=(16,)))


def test_return_inside_loop():
    err = compile_error(return_in_loop, vec(), vec(), 4)
    check(err, TileSyntaxError, return_in_loop, "Returning from a loop is not supported")


@ct.kernel
def for_else(x, y, n):
    for i in range(n):
        pass
    else:
        pass  # ERR


def test_for_else():
    err = compile_error(for_else, vec(), vec(), 4)
    check(err, TileSyntaxError, for_else, "'for-else' is not supported")


@ct.kernel
def zero_step(x, y, n):
    for i in range(0, n, 0):  # ERR
        pass


def test_range_step_must_be_positive():
    err = compile_error(zero_step, vec(), vec(), 4)
    check(err, TileTypeError, zero_step, "Step", "positive")


@ct.kernel
def iterate_tile(x, y):
    t = ct.load(x, index=(0,), shape=(16,))
    for v in t:  # ERR
        pass


def test_iterating_over_a_tile():
    err = compile_error(iterate_tile, vec(), vec())
    check(err, TileUnsupportedFeatureError, iterate_tile, "tile<16xfloat32>", "range")


@ct.kernel
def runtime_comprehension(x, y, n):
    parts = [ct.load(x, index=(i,), shape=(16,)) for i in range(n)]  # ERR


def test_comprehension_over_run_time_values():
    err = compile_error(runtime_comprehension, vec(), vec(), 4)
    check(err, TileUnsupportedFeatureError, runtime_comprehension, "comprehension")


# ------------------------------------------------------------------------------- unsupported syntax

@ct.kernel
def uses_try(x, y):
    try:  # ERR
        t = ct.load(x, index=(0,), shape=(16,))
    except Exception:
        pass


@ct.kernel
def uses_with(x, y):
    with open("f"):  # ERR
        pass


@ct.kernel
def uses_raise(x, y):
    raise ValueError("no")  # ERR


@ct.kernel
def uses_import(x, y):
    import math  # ERR


@ct.kernel
def uses_global(x, y):
    global COUNTER  # ERR


@ct.kernel
def uses_del(x, y):
    t = ct.load(x, index=(0,), shape=(16,))
    del t  # ERR


@ct.kernel
def uses_class(x, y):
    class Point:  # ERR
        pass


@ct.kernel
def uses_yield(x, y):
    yield ct.bid(0)  # ERR


@ct.kernel
def uses_lambda_nonlocal(x, y):
    n = 0

    def bump():
        nonlocal n  # ERR
        n = n + 1
    bump()


@ct.kernel
def uses_async_def(x, y):
    async def later():  # ERR
        pass


@ct.kernel
def uses_match(x, y):
    match ct.bid(0):  # ERR
        case 0:
            pass


@ct.kernel
async def async_kernel(x, y):  # ERR
    pass


@ct.kernel
def runtime_generator(x, y):
    t = ct.load(x, index=(0,), shape=(4,))
    s = tuple(v * 2 for v in t)  # ERR


@ct.kernel
def store_to_subscript(x, y):
    t = ct.load(x, index=(0,), shape=(16,))
    t[0] = 1.0  # ERR


@ct.kernel
def store_to_attribute(x, y):
    t = ct.load(x, index=(0,), shape=(16,))
    t.dtype = ct.float16  # ERR


def test_item_assignment_is_a_type_error():
    err = compile_error(store_to_subscript, vec(), vec())
    check(err, TileTypeError, store_to_subscript, "immutable")


@pytest.mark.parametrize("kernel,words", [
    (uses_try, ["'try'"]), (uses_raise, ["'raise'"]), (uses_import, ["import"]),
    (uses_global, ["'global'"]), (uses_del, ["'del'"]), (uses_class, ["class"]), (uses_yield, ["yield"]),
    (uses_lambda_nonlocal, ["'nonlocal'"]), (uses_async_def, ["async"]), (uses_match, ["'match'"]),
    (async_kernel, ["async"]),
], ids=lambda v: getattr(v, "__name__", ""))
def test_unsupported_syntax(kernel, words):
    """Python syntax tile code has no use for is a TileSyntaxError, as in cuTile ("Unsupported syntax")."""
    err = compile_error(kernel, vec(), vec())
    check(err, TileSyntaxError, kernel, "Unsupported syntax", *words)


@pytest.mark.parametrize("kernel,words", [
    (uses_with, ["'with'"]), (store_to_attribute, ["'dtype'"]),
    (runtime_generator, ["comprehension", "tile<4xfloat32>"]),
], ids=lambda v: getattr(v, "__name__", ""))
def test_unsupported_features(kernel, words):
    err = compile_error(kernel, vec(), vec())
    check(err, TileUnsupportedFeatureError, kernel, *words)


@ct.kernel
def kernel_returns_value(x, y):
    return ct.bid(0)  # ERR


def test_kernel_cannot_return_a_value():
    err = compile_error(kernel_returns_value, vec(), vec())
    check(err, TileTypeError, kernel_returns_value, "Tile kernels cannot return values")


@ct.kernel
def numpy_on_tiles(x, y):
    t = ct.load(x, index=(0,), shape=(16,))
    ct.store(y, index=(0,), tile=np.sqrt(t))  # ERR


def test_calling_python_function_with_tiles():
    err = compile_error(numpy_on_tiles, vec(), vec())
    check(err, TileUnsupportedFeatureError, numpy_on_tiles, "sqrt", "run-time")


# ------------------------------------------------------------------------------- helpers & recursion

def normalize(t):
    return t / ct.sum(t, axis=2)  # ERR


@ct.kernel
def calls_bad_helper(x, y):
    t = ct.load(x, index=(0,), shape=(16,))
    ct.store(y, index=(0,), tile=normalize(t))  # CALL


def test_error_inside_helper_has_two_frames():
    err = compile_error(calls_bad_helper, vec(), vec())
    check(err, TileTypeError, normalize, "axis 2", "rank 1")
    assert len(err.locs) == 2
    outer, inner = err.locs
    assert outer.line == marked_line(calls_bad_helper, "# CALL") and outer.function == "calls_bad_helper"
    assert inner.line == marked_line(normalize) and inner.function == "normalize"
    text = str(err)
    assert text.index("in calls_bad_helper") < text.index("in normalize")
    assert "normalize(t)" in text and "ct.sum(t, axis=2)" in text


def innermost(t):
    return ct.exp(t, fast=True)  # ERR


def middle(t):
    return innermost(t) * 2.0  # MID


@ct.kernel
def three_frames(x, y):
    ct.store(y, index=(0,), tile=middle(ct.load(x, index=(0,), shape=(16,))))  # CALL


def test_one_frame_per_inlined_call_outermost_first():
    err = compile_error(three_frames, vec(), vec())
    check(err, TileTypeError, innermost, "fast")
    assert [loc.function for loc in err.locs] == ["three_frames", "middle", "innermost"]
    assert [loc.line for loc in err.locs] == [marked_line(three_frames, "# CALL"), marked_line(middle, "# MID"),
                                             marked_line(innermost)]


def countdown(t, n):
    if n == 0:
        return t
    return countdown(t + 1.0, n - 1)  # ERR


@ct.kernel
def recursive(x, y):
    t = ct.load(x, index=(0,), shape=(16,))
    ct.store(y, index=(0,), tile=countdown(t, 3))  # CALL


def test_recursion():
    err = compile_error(recursive, vec(), vec())
    check(err, TileRecursionError, countdown, "countdown", "recursion")
    assert err.locs[0].line == marked_line(recursive, "# CALL")


def sometimes_returns(t):
    if ct.sum(t) > 0.0:  # ERR
        return t


@ct.kernel
def missing_return(x, y):
    ct.store(y, index=(0,), tile=sometimes_returns(ct.load(x, index=(0,), shape=(16,))))


def test_helper_without_return_on_every_path():
    err = compile_error(missing_return, vec(), vec())
    assert type(err) is TileTypeError and "sometimes_returns" in err.message and "every path" in err.message
    assert err.locs[-1].function == "sometimes_returns"
    assert err.line == marked_line(sometimes_returns) - 1  # the def line of the helper


def two_args(a, b):
    return a + b


@ct.kernel
def wrong_helper_arguments(x, y):
    t = ct.load(x, index=(0,), shape=(16,))
    ct.store(y, index=(0,), tile=two_args(t, t, t))  # ERR


def test_helper_called_with_wrong_arguments():
    err = compile_error(wrong_helper_arguments, vec(), vec())
    check(err, TileTypeError, wrong_helper_arguments, "two_args", "3 positional", "(a, b)")


# ------------------------------------------------------------------------------- static helpers

@ct.kernel
def static_assert_fails(x, y, T: ct.Constant[int]):
    ct.static_assert(T % 32 == 0, f"T={T} must be a multiple of 32")  # ERR


def test_static_assert_failure():
    err = compile_error(static_assert_fails, vec(), vec(), 16)
    check(err, TileStaticAssertionError, static_assert_fails, "T=16 must be a multiple of 32")


@ct.kernel
def static_eval_fails(x, y):
    t = ct.load(x, index=(0,), shape=(16,))
    n = ct.static_eval(t.shape[3])  # ERR


def test_static_eval_failure():
    err = compile_error(static_eval_fails, vec(), vec())
    check(err, TileStaticEvalError, static_eval_fails, "IndexError")


# ------------------------------------------------------------------------------- launches

@ct.kernel
def copy(x, y, T: ct.Constant[int]):
    bid = ct.bid(0)
    ct.store(y, index=(bid,), tile=ct.load(x, index=(bid,), shape=(T,)))


def test_calling_a_kernel_directly():
    with pytest.raises(TypeError, match="cannot be called directly"):
        copy(vec(), vec(), 16)


def test_wrong_argument_count():
    """Unchecked launches raise the safe style's classes (which still subclass the builtins)."""
    with pytest.raises(ct.LaunchTypeError, match=r"takes 3 argument\(s\) \(x, y, T\), got 2") as info:
        ct.launch(None, (1,), copy, (vec(), vec()))
    assert isinstance(info.value, TypeError) and isinstance(info.value, ct.LaunchError)


def test_wrong_argument_kind():
    y = vec()
    y_before = y.copy()
    with pytest.raises(ct.LaunchTypeError, match=r"argument 'x': expected an array, a number, a tuple or a Constant, got str"):
        ct.launch(None, (1,), copy, ("x", y, 16))
    with pytest.raises(ct.LaunchTypeError, match="expects a @ct.kernel"):
        ct.launch(None, (1,), copy.fn, (vec(), y, 16))
    assert np.array_equal(y, y_before)


@pytest.mark.parametrize("stream", ["cuda", 1.5, (1,), object()])
def test_a_stream_that_is_not_a_stream_is_refused_on_the_cpu(stream):
    x, y = vec(), vec()
    y_before = y.copy()
    for _ in range(2):  # the first launch (checked path) and a repeated one (dispatch cache)
        with pytest.raises(ct.LaunchTypeError, match="must be None or a stream"):
            ct.launch(stream, (4,), copy, (x, y, 16))
        assert np.array_equal(y, y_before)
    ct.launch(None, (4,), copy, (x, y, 16))
    assert np.array_equal(y, x)


def test_streams_are_accepted_on_the_cpu():
    x = vec()
    for stream in (0, ct.Stream("cpu")):
        y = np.full_like(x, np.nan)
        ct.launch(stream, (4,), copy, (x, y, 16))
        assert np.array_equal(y, x)


@pytest.mark.parametrize("grid,words", [
    ((2**24,), "between 1 and"), ((0,), "between 1 and"), ((1, 0, 1), "axis 1"), ((1, 1, 1, 1), "1 to 3"),
    ((), "1 to 3"), ((2.0,), "integer"),
])
def test_bad_grid(grid, words):
    x, y = vec(), vec()
    y_before = y.copy()
    with pytest.raises(ct.GridError, match=words) as info:
        ct.launch(None, grid, copy, (x, y, 16))
    assert isinstance(info.value, ValueError)
    assert np.array_equal(y, y_before)


def test_constant_parameter_type_is_checked():
    with pytest.raises(ct.LaunchTypeError, match=r"'T' is a ct.Constant\[int\]"):
        ct.launch(None, (1,), copy, (vec(), vec(), 16.0))


@ct.kernel
def writes_then_fails(x, y, T: ct.Constant[int]):
    bid = ct.bid(0)
    ct.store(y, index=(bid,), tile=ct.load(x, index=(bid,), shape=(T,)))
    ct.store(x, index=(bid,), tile=ct.load(y, index=(bid,), shape=(T,)) * 2.0)
    if T > 4:
        ct.store(y, index=(bid,), tile=ct.load(x, index=(bid,), shape=(T,)).astype(ct.float64))  # ERR


def test_failed_compilation_writes_nothing():
    x, y = vec(), vec()
    x_bytes, y_bytes = x.tobytes(), y.tobytes()
    err = compile_error(writes_then_fails, x, y, 16, grid=(4,))
    check(err, TileTypeError, writes_then_fails, "float64", "float32")
    assert x.tobytes() == x_bytes and y.tobytes() == y_bytes
    ct.launch(None, (4,), writes_then_fails, (x, y, 4))  # T=4 compiles (and runs) fine
    assert not np.array_equal(y.tobytes(), y_bytes)


def test_bad_hints_fail_at_decoration():
    def body(x):
        pass

    with pytest.raises(ValueError, match="num_ctas=3"):
        ct.kernel(num_ctas=3)
    with pytest.raises(ValueError, match="occupancy=0"):
        ct.kernel(occupancy=0)(body)
    with pytest.raises(ValueError, match="occupancy=33"):
        ct.kernel(body, occupancy=33)
    with pytest.raises(TypeError, match="unknown kernel hint 'num_warpz'"):
        ct.kernel(num_warpz=4)
    with pytest.raises(ValueError, match="num_ctas=5"):
        ct.kernel(num_ctas=ct.ByTarget(sm_90=4, default=5))
    with pytest.raises(ValueError, match="occupancy=64"):
        copy.replace_hints(occupancy=64)
    assert ct.kernel(num_ctas=2, occupancy=4)(body).hints == {"num_ctas": 2, "occupancy": 4}


def test_decorating_something_that_is_not_a_def():
    with pytest.raises(TypeError, match="function defined with def"):
        ct.kernel(lambda x: None)
    with pytest.raises(TypeError, match="must decorate a function"):
        ct.function(3)
