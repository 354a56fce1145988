"""cuTile Python's language surface in safetile, on both backends: every public name, typing and
promotion rules, implicit casts, compile-time facts, Python features inside kernels (dataclasses,
with-statements, operator functions, divmod, static_iter comprehensions), tuple and dataclass
kernel arguments, 0-d arrays, matrix-multiply rules and the error class of each mistake."""
from __future__ import annotations

import contextlib
import dataclasses
import itertools
import operator
import re
from typing import Annotated

import numpy as np
import pytest

import safetile as ct
from compat_util import BACKENDS, backend, compile_error, launch, poison, rng

F32, I32 = np.float32, np.int32

# The 152 public names of cuda.tile 1.7 (its __all__).
CUTILE_NAMES = """
launch ByTarget MemoryOrder MemoryScope PaddingMode RoundingMode DType bfloat16 bool_ float4_e2m1fn
float8_e4m3fn float8_e5m2 float8_e8m0fnu float8_e5m3fnu float16 float32 float64 int8 int16 int32 int64
tfloat32 uint8 uint16 uint32 uint64 TileCompilerExecutionError TileCompilerTimeoutError TileError
TileInternalError TileRecursionError TileStaticAssertionError TileStaticEvalError TileSyntaxError
TileTypeError TileUnsupportedFeatureError TileValueError Array ArrayAnnotation Constant
ConstantAnnotation IndexedWithInt64 ListAnnotation Scalar ScalarInt64 Slice Tile TiledView abs add
arange argmax argmin assert_ assume_divisible_by astile astype atan2 atomic_add atomic_and atomic_cas
atomic_max atomic_min atomic_or atomic_xchg atomic_xor bitwise_and bitwise_lshift bitwise_not
bitwise_or bitwise_rshift bitwise_xor bid bitcast broadcast_to cat cdiv ceil cos cosh cumprod cumsum
divmod ensure_constant equal exp exp2 expand_dims extract floor floordiv full gather greater
greater_equal insert less less_equal load load_advanced_indexing log log2 matmul max maximum min
minimum mma mma_scaled mod mul negative isnan not_equal num_blocks num_tiles ones pack_to_bytes
permute pow printf print prod reduce reshape rsqrt scan scatter sin sinh sqrt static_assert
static_eval static_iter store store_advanced_indexing sub sum tan tanh transpose truediv
unpack_from_bytes where zeros grid_dependency_control_wait grid_dependency_control_launch_dependents
compiler_timeout tune function kernel compilation
""".split()


def test_every_public_name_of_cuda_tile_exists():
    assert len(CUTILE_NAMES) == 152
    assert [n for n in CUTILE_NAMES if not hasattr(ct, n)] == []
    assert issubclass(ct.TileCompilerExecutionError, ct.TileInternalError)
    assert issubclass(ct.TileCompilerTimeoutError, ct.TileInternalError)
    assert ct.Constant[int] == Annotated[int, ct.ConstantAnnotation()]
    for name in ("exhaustive_search", "TuningResult", "Measurement"):
        assert hasattr(ct.tune, name)


def test_docs_list_every_public_name():
    import pathlib
    text = (pathlib.Path(__file__).resolve().parent.parent / "docs" / "compatibility.md").read_text()
    listed = set(re.findall(r"^\| `([A-Za-z_0-9]+)`", text, re.M))
    assert [n for n in CUTILE_NAMES if n not in listed] == []


# ------------------------------------------------------------------------------ promotion and casts

@ct.kernel
def binop(x, y, out, OP: ct.Constant[str]):
    a = ct.load(x, (0,), (8,))
    b = ct.load(y, (0,), (8,))
    ct.store(out, (0,), getattr(operator, OP)(a, b))


@pytest.mark.parametrize("dx,dy,message", [
    (np.int32, np.uint32, "Implicit promotion of int32 and uint32"),
    (np.float16, "bfloat16", "Implicit promotion of float16 and bfloat16"),
])
def test_mixed_signedness_and_half_types_need_a_cast(dx, dy, message):
    import ml_dtypes
    dy = ml_dtypes.bfloat16 if dy == "bfloat16" else dy
    compile_error(binop, np.zeros(8, dx), np.zeros(8, dy), np.zeros(8, F32), "add", cls=ct.TileTypeError,
                  match=message)


@pytest.mark.parametrize("be", BACKENDS)
def test_integer_true_division_is_float32(be):
    g = rng()
    x = g.integers(-2**40, 2**40, 8)
    y = g.integers(1, 1000, 8)
    out = poison(8, F32)
    with backend(be):
        launch(binop, x, y, out, "truediv")
    np.testing.assert_allclose(out, (x / y).astype(F32), rtol=1e-6)


def test_bool_arithmetic_needs_a_cast():
    b = np.zeros(8, bool)
    compile_error(binop, b, b, np.zeros(8, I32), "add", cls=ct.TileTypeError, match="does not support bool")
    compile_error(binop, b, b, np.zeros(8, I32), "mod", cls=ct.TileTypeError, match="Modulo")


@ct.kernel
def implicit_store(x, wide, narrow, WHICH: ct.Constant[str]):
    t = ct.load(x, (0,), (8,))
    if WHICH == "widen":
        ct.store(wide, (0,), t)                     # float16 → float32: implicit
        ct.scatter(wide, ct.arange(8, dtype=ct.int32), t * 2)
        ct.store(narrow, (0,), 3)                   # an int constant into float16
    elif WHICH == "narrow":
        ct.store(narrow, (0,), t.astype(ct.float32))  # float32 → float16: needs astype
    else:
        ct.atomic_add(wide, ct.arange(8, dtype=ct.int32), t)


@pytest.mark.parametrize("be", BACKENDS)
def test_implicit_casts_on_store_scatter_and_atomics(be):
    x = rng().standard_normal(8).astype(np.float16)
    wide, narrow = poison(8, F32), poison(8, np.float16)
    with backend(be):
        launch(implicit_store, x, wide, narrow, "widen")
    np.testing.assert_array_equal(wide, x.astype(F32) * 2)
    assert narrow[0] == 3 and np.isnan(narrow[1:]).all()  # a scalar store writes one element
    compile_error(implicit_store, x, wide, narrow, "narrow", cls=ct.TileTypeError,
                  match="Stored tile is incompatible with array's dtype: cannot implicitly cast float32 to float16")
    acc = np.zeros(8, F32)
    with backend(be):
        launch(implicit_store, x, acc, narrow, "atomic")
    np.testing.assert_array_equal(acc, x.astype(F32))


@ct.kernel
def const_into(arr, C: ct.Constant):
    ct.store(arr, (0,), C)


def test_constants_stored_must_fit():
    compile_error(const_into, np.zeros(4, I32), 2.5, cls=ct.TileTypeError, match="cannot implicitly cast 2.5")
    compile_error(const_into, np.zeros(4, np.int8), 1000, cls=ct.TileValueError, match="out of range")


# ------------------------------------------------------------------------------ compile-time facts

@ct.kernel
def static_facts(x: Annotated[ct.Array, ct.ArrayAnnotation(static_shape_dims=(0,), static_stride_dims=(0,))],
                 out, N: ct.Constant[int]):
    ct.static_assert(x.shape[0] == N, f"shape {x.shape[0]}")
    ct.static_assert(ct.static_eval(x.strides[0]) == 1)
    s = x.slice(0, 2, N)
    ct.static_assert(s.shape[0] == N - 2)
    n = 4
    if ct.bid(0) == 0:
        n = 4  # the same constant on both paths stays a constant
    i = 0
    while i < ct.bid(0) + 2:
        i += 1
    q = ct.assume_divisible_by(x.shape[0], 2)
    ct.store(out, (0,), ct.full((n,), i + q, ct.float32))


@pytest.mark.parametrize("be", BACKENDS)
def test_static_shapes_strides_and_constants(be):
    x, out = np.zeros(16, F32), poison(4, F32)
    with backend(be):
        launch(static_facts, x, out, 16)
    np.testing.assert_array_equal(out, np.full(4, 18.0, F32))
    # another size compiles a new specialisation (the size is part of the key)
    with backend(be), pytest.raises(ct.TileStaticAssertionError, match="Static assertion failed: shape 8"):
        launch(static_facts, np.zeros(8, F32), out, 16)


@ct.kernel
def int64_indexed(x: ct.IndexedWithInt64, n: ct.ScalarInt64, out):
    ct.static_assert(x.shape[0].dtype == ct.int64 and n.dtype == ct.int64)
    ct.store(out, (0,), ct.load(x, (0,), (4,)) + n)


@pytest.mark.parametrize("be", BACKENDS)
def test_int64_indexing_and_int64_scalars(be):
    x, out = np.arange(4, dtype=np.int64), poison(4, np.int64)
    with backend(be):
        launch(int64_indexed, x, 2**40, out)
    np.testing.assert_array_equal(out, x + 2**40)


# ------------------------------------------------------------------------------ Python features

@dataclasses.dataclass(frozen=True)
class Pair:
    a: object
    b: object
    scale: float = 1.0

    def __post_init__(self):
        object.__setattr__(self, "scale", self.scale * 2)

    def total(self):
        return (self.a + self.b) * self.scale

    def __getitem__(self, i):
        return self.a if i == 0 else self.b


@dataclasses.dataclass(frozen=True)
class Args:
    x: object
    y: object
    k: ct.Constant[int]


@contextlib.contextmanager
def doubled(t):
    yield t * 2


@ct.kernel
def python_features(p, out, q, r):
    t = ct.load(p.x, (0,), (8,))
    u = ct.load(p.y, (0,), (8,)) * p.k
    pr = Pair(t, u)
    if ct.bid(0) == 0:
        pr = Pair(pr[1], pr[0], 0.5)  # merged field by field after the if
    with doubled(pr.total()) as v:
        ct.store(out, (0,), v)
    s = ct.reduce(t, 0, operator.add, 0.0)
    m = ct.reduce((t, ct.arange(8, dtype=ct.int32)), 0, lambda a, i, b, j: (ct.maximum(a, b),
                                                                          ct.where(a >= b, i, j)), (-np.inf, 0))
    d, rem = divmod(ct.load(q, (0,), (8,)), 3)
    parts = tuple(t * k for k in ct.static_iter(range(3)))
    ct.store(q, (0,), d * 10 + rem)
    for k, v in ct.static_iter(enumerate((s, m[0], m[1].astype(ct.float32), ct.sum(parts[2])))):
        ct.store(r, (k,), v)


@pytest.mark.parametrize("be", BACKENDS)
def test_dataclasses_with_contextmanagers_operator_functions_divmod_static_iter(be):
    g = rng()
    x, y = g.standard_normal(8).astype(F32), g.standard_normal(8).astype(F32)
    q0 = g.integers(-50, 50, 8).astype(I32)
    q = q0.copy()
    out, r = poison(8, F32), poison(4, F32)
    with backend(be):
        launch(python_features, Args(x, y, 3), out, q, r)
    # block 0 swaps the pair and its scale becomes 0.5 * 2 (__post_init__); the with doubles
    np.testing.assert_allclose(out, 2 * (y * 3 + x), rtol=1e-6)
    np.testing.assert_array_equal(q, (q0 // 3) * 10 + q0 % 3)
    np.testing.assert_allclose(r, [x.astype(np.float64).sum(), x.max(), x.argmax(), 2 * x.astype(np.float64).sum()],
                               rtol=1e-5)


def test_python_feature_errors():
    @contextlib.contextmanager
    def two_yields():
        yield 1
        yield 2

    @ct.kernel
    def bad_with(x):
        with two_yields():
            pass

    @ct.kernel
    def with_open(x):
        with open("never-opened"):
            pass

    @ct.kernel
    def endless(x):
        for _ in ct.static_iter(itertools.count()):
            pass

    @dataclasses.dataclass
    class Mutable:
        a: object

    @dataclasses.dataclass(frozen=True)
    class Factory:
        a: list = dataclasses.field(default_factory=list)

    @ct.kernel
    def make_mutable(x):
        Mutable(ct.load(x, (0,), (1,)))

    @ct.kernel
    def make_factory(x):
        Factory()

    @ct.kernel
    def assign_field(x):
        p = Pair(ct.load(x, (0,), (1,)), 1.0)
        p.a = 2.0

    compile_error(make_mutable, np.zeros(1), cls=ct.TileTypeError, match="Only frozen dataclasses are supported")
    compile_error(make_factory, np.zeros(1), cls=ct.TileTypeError, match="default_factory fields are not supported")
    compile_error(assign_field, np.zeros(1), cls=ct.TileTypeError, match="frozen dataclass Pair")
    with pytest.raises(ct.TileTypeError, match="Only frozen dataclasses are supported"):
        ct.launch(None, (1,), python_features, (Mutable(np.zeros(8)), poison(8, F32), np.zeros(8, I32),
                                                 poison(4, F32)))
    compile_error(bad_with, np.zeros(1), cls=ct.TileTypeError, match="one `yield`")
    compile_error(with_open, np.zeros(1), cls=ct.TileUnsupportedFeatureError, match="contextmanager")
    compile_error(endless, np.zeros(1), cls=ct.TileStaticEvalError, match=r"Maximum number of iterations \(1000\)")


def test_compiler_timeout_stops_a_long_compilation():
    @ct.kernel
    def long(x):
        for _ in ct.static_iter(range(1000)):
            for _ in ct.static_iter(range(1000)):
                pass

    with ct.compiler_timeout(0.05):
        compile_error(long, np.zeros(1), cls=ct.TileCompilerTimeoutError, match="compiler timeout")
    with pytest.raises(ValueError):
        with ct.compiler_timeout(0):
            pass


@ct.kernel
def tuple_args(arrs, scales: tuple[ct.Constant[int], float], out):
    a, b = arrs
    k, f = scales
    ct.static_assert(k == 3)
    ct.store(out, (0,), (ct.load(a, (0,), (8,)) + ct.load(b, (0,), (8,))) * f + k)


@pytest.mark.parametrize("be", BACKENDS)
def test_tuple_and_list_kernel_arguments(be):
    g = rng()
    a, b = g.standard_normal(8).astype(F32), g.standard_normal(8).astype(F32)
    out = poison(8, F32)
    with backend(be):
        launch(tuple_args, [a, b], (3, 0.5), out)
    np.testing.assert_allclose(out, (a + b) * 0.5 + 3, rtol=1e-6)
    with pytest.raises(ct.LaunchTypeError, match="annotation has 2 elements"):
        launch(tuple_args, (a, b), (3, 0.5, 1), out)


# ------------------------------------------------------------------------------ shapes, 0-d, mma

@ct.kernel
def zero_d(x, y, z, w):
    v = ct.gather(x, ())
    ct.scatter(y, (), v + 1)
    ct.store(z, (), ct.load(x, (), ()) * 2)
    w.tiled_view(()).store((), ct.extract(x.tiled_view(()).load(()), (), ()) + 5)


@pytest.mark.parametrize("be", BACKENDS)
def test_zero_dimensional_arrays_and_tiles(be):
    x = np.array(rng().standard_normal(), F32)
    y, z, w = (np.array(np.nan, F32) for _ in range(3))
    with backend(be):
        launch(zero_d, x, y, z, w)
    assert y == x + 1 and z == x * 2 and w == x + 5


@ct.kernel
def tile_methods(x, out, cnt):
    t = ct.load(x, (0,), (8,))
    u = t.reshape(shape=(2, -1)).insert((1, 0), ct.full((1, 4), 9.0, ct.float32)).reshape((8,))
    ct.store(out, (0,), u + ct.int32(2.9) + ct.float32(ct.bfloat16(1.5)))
    tv = cnt.tiled_view((4,))
    tv.atomic_store_add(1, ct.full((4,), 2, ct.int32))
    tv.atomic_store_max(0, ct.arange(4, dtype=ct.int32))


@pytest.mark.parametrize("be", BACKENDS)
def test_tile_methods_dtype_calls_and_tiled_view_atomics(be):
    x = rng().standard_normal(8).astype(F32)
    out, cnt = poison(8, F32), np.zeros(8, I32)
    with backend(be):
        launch(tile_methods, x, out, cnt)
    exp = x.copy()
    exp[4:] = 9.0
    np.testing.assert_array_equal(out, exp + 2 + 1.5)
    np.testing.assert_array_equal(cnt, [0, 1, 2, 3, 2, 2, 2, 2])


@ct.kernel
def mma_forms(x, y, i8, u8, out, outi, outv):
    a = ct.load(x, (0, 0, 0), (2, 16, 16))
    b = ct.load(y, (0, 0), (16, 16))
    acc = ct.zeros((2, 16, 16), ct.float32)
    ct.store(out, (0, 0, 0), ct.mma(a, b, acc=acc))           # 3-d x 2-d, keyword acc
    ct.store(outi, (0, 0), ct.mma(ct.load(i8, (0, 0), (16, 16)), ct.load(u8, (0, 0), (16, 16)),
                                  ct.zeros((16, 16), ct.int32)))  # int8 with uint8
    v = ct.load(y, (0, 0), (1, 16)).reshape((16,))
    ct.store(outv, (0,), ct.reshape(v @ v, (1,)))             # 1-d @ 1-d: a dot product


@pytest.mark.parametrize("be", BACKENDS)
def test_mma_and_matmul_forms(be):
    g = rng()
    x = g.standard_normal((2, 16, 16)).astype(np.float16)
    y = g.standard_normal((16, 16)).astype(np.float16)
    i8 = g.integers(-128, 128, (16, 16)).astype(np.int8)
    u8 = g.integers(0, 256, (16, 16)).astype(np.uint8)
    out, outi, outv = poison((2, 16, 16), F32), poison((16, 16), I32), poison(1, np.float16)
    with backend(be):
        launch(mma_forms, x, y, i8, u8, out, outi, outv)
    np.testing.assert_allclose(out, x.astype(F32) @ y.astype(F32), rtol=1e-3, atol=1e-3)
    np.testing.assert_array_equal(outi, i8.astype(I32) @ u8.astype(I32))
    np.testing.assert_allclose(outv, [np.dot(y[0].astype(F32), y[0].astype(F32))], rtol=1e-2)


def test_mma_rules():
    @ct.kernel
    def fast_acc_f16(x):
        t = ct.load(x, (0, 0), (16, 16))
        ct.mma(t, t, ct.zeros((16, 16), ct.float32), use_fast_acc=True)

    @ct.kernel
    def int32_operands(x):
        t = ct.load(x, (0, 0), (16, 16))
        ct.mma(t, t, ct.zeros((16, 16), ct.int32))

    compile_error(fast_acc_f16, np.zeros((16, 16), np.float16), cls=ct.TileTypeError, match="use_fast_acc")
    compile_error(int32_operands, np.zeros((16, 16), I32), cls=ct.TileTypeError, match="Unsupported input dtype")


# ------------------------------------------------------------------------------ errors: cuTile's classes

def _k(body: str):
    """A kernel compiled from source (each error case is one statement)."""
    import linecache
    import textwrap
    src = f"import safetile as ct\n@ct.kernel\ndef k(x, y):\n{textwrap.indent(body, '    ')}\n"
    name = f"<compat-error-{abs(hash(body))}>"
    linecache.cache[name] = (len(src), None, src.splitlines(True), name)
    ns: dict = {}
    exec(compile(src, name, "exec"), ns)  # noqa: S102 - test source
    return ns["k"]


@pytest.mark.parametrize("body,cls,match", [
    ("ct.load(x, (0,), (3,))", ct.TileTypeError, "power"),
    ("ct.bid(3)", ct.TileTypeError, "axis"),
    ("ct.sum(ct.load(x, (0,), (4,)), axis=2)", ct.TileTypeError, "out of range"),
    ("t = ct.load(x, (0,), (4,))\nt[0] = 1", ct.TileTypeError, "immutable"),
    ("for i in range(0, 4, 0):\n    pass", ct.TileTypeError, "Step must be positive"),
    ("ct.load(y, (0,), (4,)) + ct.load(y, (0,), (4,)).astype(ct.int32)", ct.TileTypeError, "Implicit promotion"),
    ("ct.load(x, (0,), (4,)) & 1.5", ct.TileTypeError, "Bitwise operations require integers"),
    ("ct.floor(ct.load(y, (0,), (4,)))", ct.TileTypeError, "Integer inputs are not supported"),
    ("ct.static_assert(False, 'no')", ct.TileStaticAssertionError, "Static assertion failed: no"),
    ("ct.ensure_constant(ct.bid(0))", ct.TileStaticAssertionError, "not a compile-time constant"),
    ("ct.add(ct.load(x, (0,), (4,)), 1, rounding_mode=ct.RoundingMode.RZI)", ct.TileTypeError,
     "Rounding mode nearest_int_to_zero is not supported for add"),
    ("ct.exp2(ct.load(y, (0,), (4,)).astype(ct.float64), flush_to_zero=True)", ct.TileTypeError,
     "Flush to zero can only be used for float32"),
    ("ct.argmax(ct.load(x, (0,), (4,)), axis=(0,))", ct.TileTypeError, "tuple of axes"),
    ("ct.load(y, (0,), (4,)) + 2**40", ct.TileValueError, "out of range"),
    ("ct.reshape(ct.load(x, (0,), (4,)), (-1, -1))", ct.TileTypeError, "Only one dimension can be -1"),
    ("x.slice(0, -1, 4)", ct.TileTypeError, "Slice start must be non-negative"),
    ("x.slice(0, 4, 2)", ct.TileTypeError, "Slice stop must be greater than or equal to start"),
    ("ct.insert(ct.load(x, (0,), (4,)), (0,), ct.full((2,), 1, ct.int32))", ct.TileTypeError,
     "Cannot insert a tile of dtype int32 into a tile of dtype float32"),
    ("a = int(ct.bid(0))", ct.TileTypeError, r"int\(\) expects a constant argument"),
    ("return 1", ct.TileTypeError, "Tile kernels cannot return values"),
    ("f = ct.static_eval\na = f(1)", ct.TileSyntaxError, r"static_eval\(\) must be used directly by name"),
    ("ct.full((4,), -1.0, ct.float8_e8m0fnu)", ct.TileValueError, "negative values cannot be represented"),
    ("ct.full((4,), float('nan'), ct.float4_e2m1fn)", ct.TileValueError, "NaN cannot be represented"),
    ("for i in ct.static_iter(range(2)):\n    break", ct.TileSyntaxError,
     r"Break in a for loop with static_iter\(\) is not supported"),
    ("for i in ct.static_iter(range(2)):\n    if i == 0:\n        continue", ct.TileSyntaxError,
     r"Continue in a for loop with static_iter\(\) is not supported"),
    ("try:\n    pass\nexcept Exception:\n    pass", ct.TileSyntaxError, "Unsupported syntax"),
    ("i = 0\nwhile i < 2:\n    i += 1\nelse:\n    pass", ct.TileSyntaxError, "'while-else' is not supported"),
    ("a = ~True", ct.TileTypeError, "`~` on boolean constant is not supported"),
    ("ct.PaddingMode(ct.bid(0))", ct.TileTypeError, "Enum constructor argument must be a constant"),
    ("ct.reduce(ct.load(x, (0,), (4,)), 0, lambda a, b: ct.sum(ct.full((2,), a, ct.float32)) + b, 0.0)",
     ct.TileSyntaxError, "Nested scan/reduction is not supported"),
    ("ct.reduce(ct.load(x, (0,), (4,)), 0, lambda a, b: a + ct.load(x, (0,), ()), 0.0)", ct.TileSyntaxError,
     "Operations with memory effects are not supported inside reduction body"),
    ("def f(a, b):\n    if a > b:\n        return a\n    return b\nct.scan(ct.load(x, (0,), (4,)), 0, f, 0.0)",
     ct.TileSyntaxError,
     "Branching inside scan body is not supported"),
    ("ct.scatter(x, ct.arange(4, dtype=ct.int32), ct.full((8,), 1.0, ct.float32))", ct.TileTypeError,
     r"Value shape \(8,\) is not broadcastable to the index shape \(4,\)"),
    ("ct.gather(x, ct.arange(4, dtype=ct.int32), mask=ct.full((8,), True, ct.bool_))", ct.TileTypeError,
     "Custom mask shape"),
    ("ct.atomic_add(y, ct.arange(4, dtype=ct.int32), ct.full((8,), 1, ct.uint32))", ct.TileTypeError,
     "Update shape"),
    ("ct.astile(((1, 2), (3,)), dtype=ct.int32)", ct.TileTypeError, "Tuple has non-uniform inner shapes"),
    ("ct.astile((1, 2, 3), dtype=ct.int32)", ct.TileTypeError, "Tuple length 3 at value is not a power of 2"),
    ("ct.atomic_max(x, ct.arange(4, dtype=ct.int32), 1.0)", ct.TileTypeError, "Unsupported array dtype: float32"),
    ("ct.atomic_xor(y, ct.arange(4, dtype=ct.int32), ct.full((4,), 1, ct.int32))", ct.TileTypeError,
     "Bitwise atomic read-modify-write operations require the update dtype"),
    ("ct.load(x, (0,), (4,), memory_order=ct.MemoryOrder.RELEASE, memory_scope=ct.MemoryScope.DEVICE)",
     ct.TileTypeError, "Invalid memory order for tile_load"),
    ("ct.store(x, (0,), ct.zeros((4,), ct.float32), memory_order=ct.MemoryOrder.WEAK, "
     "memory_scope=ct.MemoryScope.BLOCK)", ct.TileTypeError, "WEAK memory ordering cannot specify a memory scope"),
    ("ct.atomic_add(x, ct.arange(4, dtype=ct.int32), 1.0, memory_scope=ct.MemoryScope.NONE)", ct.TileTypeError,
     "requires a memory scope"),
    ("ct.atomic_cas(x, ct.arange(4, dtype=ct.int32), 0.0, 1.0, memory_order=ct.MemoryOrder.WEAK)", ct.TileTypeError,
     "Invalid memory order for tile_atomic_cas"),
])
def test_mistakes_raise_cutiles_error_class(body, cls, match):
    err = compile_error(_k(body), np.zeros(8, F32), np.zeros(8, np.uint32), cls=cls, match=match)
    assert type(err) is cls and err.loc is not None  # located


@ct.kernel
def astile_nested(x, out, out2):
    t = ct.load(x, (0,), (4,))
    ct.store(out, (0, 0), ct.astile(((1, 2), (3, -4)), dtype=ct.int32))
    ct.store(out2, (0,), ct.astile((ct.sum(t), 2.5, ct.max(t), 1), dtype=ct.float32))


@pytest.mark.parametrize("be", BACKENDS)
def test_astile_of_nested_tuples(be):
    x = rng().standard_normal(4).astype(F32)
    out, out2 = poison((2, 2), I32), poison(4, F32)
    with backend(be):
        launch(astile_nested, x, out, out2)
    np.testing.assert_array_equal(out, [[1, 2], [3, -4]])
    np.testing.assert_allclose(out2, [x.sum(), 2.5, x.max(), 1], rtol=1e-6)
