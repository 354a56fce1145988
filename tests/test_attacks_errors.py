"""Adversarial corpus, error side (issue 9, class 9): every refusal is a safetile error.

A bad call is refused early (when the op is built, the kernel decorated or compiled, before
any launch runs) with a safetile error class naming the argument or located at the kernel
line, and every argument stays byte-identical, unmoved and usable. Covers the red team's
attacks 93, 117 and 141-148: host factories and views, launch arguments, kernel
declarations, tile-code misuse, compile-time limits (tile size, constant folding),
asynchronous loops, and -0.0 on the Triton backend.
"""
from __future__ import annotations

import time

import numpy as np
import pytest

import safetile as ct

from attack_helpers import poisoned, refused, rnd
from triton_interp import triton_interpreter


# ------------------------------------------------------------------ host factories and views

@pytest.mark.parametrize("build, exc, message", [
    (lambda: ct.zeros(4, dtype="nope"), ct.DTypeError, r"zeros: dtype 'nope' is not an element type"),
    (lambda: ct.ones(4, dtype=np.complex64), ct.DTypeError, "complex64"),
    (lambda: ct.zeros("a"), ct.TensorError, "zeros: a tensor shape is a non-negative integer"),
    (lambda: ct.zeros((2, -3)), ct.TensorError, "non-negative"),
    (lambda: ct.zeros(2**62), ct.TensorError, r"more than 2\*\*62 bytes"),
    (lambda: ct.randn((2**31, 2**31)), ct.TensorError, r"more than 2\*\*62 bytes"),
    (lambda: ct.full(4, "x"), ct.TensorError, "fill_value must be a real number"),
    (lambda: ct.full(4, None), ct.TensorError, "fill_value must be a real number"),
    (lambda: ct.full(4, 10**30, dtype=ct.int8), ct.TensorError, "fill_value 10+ does not fit int8"),
    (lambda: ct.full(4, 2**80), ct.TensorError, "fits no element type"),
    (lambda: ct.full(4, float("nan"), dtype=ct.int32), ct.TensorError, "is not a int32"),
    (lambda: ct.rand(4, seed="x"), ct.TensorError, "seed must be None or an integer"),
    (lambda: ct.rand(4, seed=-1), ct.TensorError, "seed must be None or an integer"),
    (lambda: ct.arange(4, start="a"), ct.TensorError, "arange: start must be a number"),
    (lambda: ct.from_numpy("abc"), ct.DTypeError, "cannot hold <U3 elements"),
    (lambda: ct.from_numpy(np.array([object()])), ct.DTypeError, "cannot hold object elements"),
    (lambda: ct.from_numpy([1, 2], dtype="nope"), ct.DTypeError, "from_numpy: dtype 'nope'"),
    (lambda: ct.from_dlpack(np.zeros(4, np.complex64)), ct.DTypeError, "cannot hold complex64 elements"),
])
def test_bad_factory_arguments_are_refused_when_the_op_is_built(build, exc, message):
    e = refused([], build, exc, message)
    assert isinstance(e, ct.ArgumentError) and isinstance(e, TypeError) and isinstance(e, ValueError)


def test_an_allocation_the_host_cannot_make_is_an_allocation_error(monkeypatch):
    def no_memory(shape, dtype):
        raise MemoryError("simulated")
    monkeypatch.setattr(np, "zeros", no_memory)
    op = ct.zeros(16)
    with pytest.raises(ct.AllocationError, match=r"zeros\(\(16,\), float32\): could not allocate") as e:
        op.sync()
    assert isinstance(e.value, MemoryError)


@pytest.mark.parametrize("view", [
    lambda t: t.reshape("a"), lambda t: t.reshape(2.5, 2), lambda t: t.reshape(-2, -32), lambda t: t.reshape(True),
    lambda t: t[1.5], lambda t: t[::0], lambda t: t.slice(0, "a", 3),
])
def test_bad_views_are_tensor_errors_and_the_tensor_stays_usable(view):
    t = rnd((8, 8), seed=1)
    before = t.to_numpy()
    refused([t], lambda: view(t), ct.TensorError)
    assert np.array_equal(t.reshape(64).to_numpy(), before.reshape(64))


def test_unzip_with_the_wrong_arity_is_refused_when_built():
    op = ct.zip(ct.value(1), ct.value(2))
    for n, message in [(3, r"produces 2 values, not 3"), (-1, "an integer >= 0"), ("2", "an integer >= 0")]:
        with pytest.raises(ct.DeviceOpError, match=message):
            op.unzip(n)
    with pytest.raises(ct.DeviceOpError, match="produced 1 values, not 2"):  # arity known only when it runs
        ct.value((1,)).unzip(2)[1].sync()
    with pytest.raises(ct.DeviceOpError, match="produced 0 values"):
        ct.value(()).first().sync()
    assert [o.sync() for o in op.unzip(2)] == [1, 2]


def test_device_op_combinators_refuse_what_they_cannot_call():
    op = ct.value(1)
    for build, what in [(lambda: op.then(3), "then"), (lambda: op.map(None), "map"),
                        (lambda: op.inspect("f"), "inspect")]:
        with pytest.raises(ct.DeviceOpError, match=f"{what}\\(\\) takes a function of the value"):
            build()
    with pytest.raises(ct.LaunchTypeError, match="graph\\(\\) expects a ct.Stream or None, got int"):
        op.graph(3)
    assert op.then(lambda v: v + 1).sync() == 2


# ------------------------------------------------------------------ launch arguments

@ct.entry
def scaled(z: ct.Mut[ct.f32, "B"], x: ct.Ref[ct.f32, -1], a: ct.f32, n: int, s: ct.i8):
    z.store(ct.load_tile_like(x, z) * a + n + s)


@pytest.mark.parametrize("args, message", [
    (lambda z, x: ((z, x, 1.0, 1.5, 1), {}), r"argument 'n' .* 1\.5 is not a int32 value"),
    (lambda z, x: ((z, x, 1.0, 2**80, 1), {}), r"argument 'n' .* is not a int32 value"),
    (lambda z, x: ((z, x, 1.0, 2**40, 1), {}), r"argument 'n' .* is not a int32 value"),
    (lambda z, x: ((z, x, 1.0, 1, 200), {}), r"argument 's' .* 200 is not a int8 value"),
    (lambda z, x: ((z, x, 1.0, 1, 1.0), {}), r"argument 's' .* 1\.0 is not a int8 value"),
    (lambda z, x: ((z, x, 1e39, 1, 1), {}), r"argument 'a' .* float32; 1e\+39 overflows it"),  # round 6, 622
    (lambda z, x: ((z, x, -(2**200), 1, 1), {}), r"argument 'a' .* float32; -\d+ overflows it"),
    (lambda z, x: ((), dict(z=z, x=x, a=1.0, n=1, s=1)),
     r"by position \(z, x, a, n, s\); got keyword argument\(s\) z, x, a, n, s"),
    (lambda z, x: ((z, x, 1.0, 1), dict(s=1)), "got keyword argument"),
    (lambda z, x: ((z, x), dict(a=1.0, n=1, s=1, compile=True)), "got keyword argument"),  # via compile()
])
def test_bad_launch_arguments_are_refused_naming_them(args, message):
    z, x = poisoned(64).partition(16), rnd(64, seed=2)
    scaled(z, x, 1.0, 1, 1).sync()  # the type-level checks are cached now: the values are checked still
    z, x = poisoned(64).partition(16), rnd(64, seed=2)
    pos, kw = args(z, x)
    call = scaled.compile if kw.pop("compile", False) else scaled
    refused([z, x], lambda: call(*pos, **kw), ct.LaunchTypeError, message)
    z, x = scaled(z, x, 2.0, 3, -4).sync()[:2]  # untouched and usable
    assert np.array_equal(z.unpartition().to_numpy(), (x.to_numpy() * np.float32(2.0) + np.float32(3)) - np.float32(4))


@ct.kernel
def axpb(z, x, b):
    ct.store(z, index=(0,), tile=ct.load(x, index=(0,), shape=(64,)) + b)


def test_unchecked_launch_refuses_integers_beyond_64_bits():
    z, x = np.full(64, np.nan, np.float32), np.ones(64, np.float32)
    ct.launch(None, (1,), axpb, (z, x, 2**40))  # an int64 specialisation, now in the dispatch cache
    assert np.all(z == 1 + 2**40)
    z[:] = np.nan
    for b in (2**80, -(2**63) - 1, 2**63):
        refused([z, x], lambda b=b: ct.launch(None, (1,), axpb, (z, x, b)), ct.LaunchTypeError,
                r"argument 'b': the integer -?\d+ does not fit in 64 bits")
    ct.launch(None, (1,), axpb, (z, x, 2**63 - 1))
    assert np.all(z == np.float32(2**63))


# ------------------------------------------------------------------ kernel declarations

DECLARATIONS = {
    "missing annotation": ("def k(z: ct.Mut[ct.f32, 'B'], w):", "parameter 'w': @ct.entry parameters need"),
    "ct.Array annotation": ("def k(z: ct.Mut[ct.f32, 'B'], w: ct.Array):", "parameter 'w': unsupported annotation"),
    "bare ct.Ref": ("def k(z: ct.Mut[ct.f32, 'B'], w: ct.Ref):", "not a bare ct.Ref"),
    "bare ct.Mut": ("def k(z: ct.Mut):", "not a bare ct.Mut"),
    "Mut rank 0": ("def k(z: ct.Mut[ct.f32, ()]):", "shape must be a size"),
    "Mut negative size": ("def k(z: ct.Mut[ct.f32, -5]):", "static sizes must be positive"),
    "Ref bad dtype": ("def k(z: ct.Mut[ct.f32, 'B'], x: ct.Ref['nope!', 3]):", "neither a dtype nor a generic"),
    "Ref one item": ("def k(z: ct.Mut[ct.f32, 'B'], x: ct.Ref[ct.f32]):", r"ct.Ref\[element_type, shape\]"),
    "string annotation": ("def k(z: 'ct.Mut[ct.f32, 1/0]'):", "does not evaluate: ZeroDivisionError"),
}


@pytest.mark.parametrize("name", list(DECLARATIONS))
def test_bad_declarations_are_located_declaration_errors(name, tmp_path):
    line, message = DECLARATIONS[name]
    path = tmp_path / "decl.py"
    path.write_text(f"import safetile as ct\n\n\n@ct.entry\n{line}\n    pass\n")
    namespace: dict = {}
    with pytest.raises(ct.TileDeclarationError, match=message) as e:
        exec(compile(path.read_text(), str(path), "exec", dont_inherit=True), namespace)  # noqa: S102 - the test's own source
    assert isinstance(e.value, TypeError)
    assert e.value.filename == str(path) and e.value.line == 5, str(e.value)  # the def line, at the parameter


@pytest.mark.parametrize("conditions, message", [
    (["dim(z, 0) ==="], "is not an expression"),
    ([42], "a string or a callable, got 42"),
    (["dim(q, 0) == 1"], r"names q, which is neither a parameter nor a generic \(B, z\)"),
    ([lambda q: True], "names q"),
])
def test_bad_preconditions_are_refused_when_decorated(conditions, message):
    with pytest.raises(ct.TileDeclarationError, match=message) as e:
        @ct.entry(preconditions=conditions)
        def k(z: ct.Mut[ct.f32, "B"]):
            z.store(z.load())
    assert "preconditions=" in e.value.loc.source_line


def test_decorator_misuse_is_a_declaration_error():
    with pytest.raises(ct.TileDeclarationError, match="must be positional"):
        @ct.entry
        def k(z: ct.Mut[ct.f32, "B"], *rest):
            pass
    with pytest.raises(ct.TileDeclarationError, match="preconditions belong to safe entry kernels"):
        ct.entry(preconditions=["1 == 1"], unchecked=True)(lambda z: None)
    with pytest.raises(ct.ArgumentError, match="unknown kernel hint 'warps'"):
        ct.kernel(warps=4)(lambda z: None)


# ------------------------------------------------------------------ tile code and compile-time limits

@pytest.mark.parametrize("body, exc, message", [
    ("u = ct.Array(None)", ct.TileTypeError, "ct.Array is the type of kernel values"),
    ("u = ct.Tile(None)", ct.TileTypeError, "ct.Tile is the type of kernel values"),
    ("u = ct.sum(ct.full((2**40,), 1.0, ct.float32))", ct.TileValueError, r"a tile holds at most 16777216 \(2\*\*24\)"),
    ("u = ct.full((4096, 8192), 1.0, ct.float32)", ct.TileValueError, r"a tile of shape \(4096, 8192\)"),
    ("u = ct.arange(2**25, dtype=ct.int32)", ct.TileValueError, "a tile holds at most"),
    ("u = 9**9**9", ct.TileValueError, "more than 65536 bits; compile-time constants are bounded"),
    ("u = 3 << 10**9", ct.TileValueError, "more than 65536 bits"),
    ("u = (2**40000) * (2**40000)", ct.TileValueError, "more than 65536 bits"),
    ("u = 'a' * 10**10", ct.TileValueError, "gives more than 16777216 items"),
    ("u = ct.static_eval(9**9**9)", ct.TileStaticEvalError, "more than 65536 bits"),
])
def test_tile_code_misuse_and_limits_are_quick_located_errors(body, exc, message, tmp_path):
    path = tmp_path / "bad.py"
    path.write_text("import safetile as ct\n\n\n@ct.entry\ndef k(z: ct.Mut[ct.f32, 'B'], x: ct.Ref[ct.f32, -1]):\n"
                    f"    {body}\n    z.store(ct.load_tile_like(x, z))\n")
    namespace: dict = {}
    exec(compile(path.read_text(), str(path), "exec", dont_inherit=True), namespace)  # noqa: S102 - the test's own source
    z, x = poisoned(64).partition(64), rnd(64, seed=3)
    t0 = time.perf_counter()
    e = refused([z, x], lambda: namespace["k"](z, x).sync(), exc, message)
    assert time.perf_counter() - t0 < 5.0, "the refusal must be quick"
    assert e.filename == str(path) and e.line == 6, str(e)
    assert not isinstance(e, ct.TileInternalError), str(e)


def test_the_largest_tile_and_large_constants_still_compile():
    @ct.entry
    def big(z: ct.Mut[ct.f32, "B"]):
        u = ct.full((4096, 4096), 1.0, ct.float32)  # 2**24 elements: the limit itself
        c = (2**4000 * 2**4000) % 7 + len((0,) * 1000)  # big but bounded constants fold
        z.store(z.load() + ct.sum(u) / 2**24 + c)
    z = ct.zeros(64).sync().partition(64)
    (z,) = big(z).sync()
    assert np.all(z.unpartition().to_numpy() == 1 + (2**8000) % 7 + 1000)


# ------------------------------------------------------------------ long asynchronous loops

@ct.entry
def bump(z: ct.Mut[ct.f32, "B"]):
    z.store(z.load() + 1.0)


def test_an_asynchronous_loop_of_thousands_of_steps_runs_iteratively():
    import sys
    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(1000)
    try:
        def step(p, i, n):  # each then closure returns the next step's op
            if i == n:
                return ct.value(p)
            return bump(p).then(lambda r: step(r[0], i + 1, n))
        p = step(ct.zeros(64).sync().partition(64), 0, 3000).sync()
    finally:
        sys.setrecursionlimit(limit)
    assert np.all(p.unpartition().to_numpy() == 3000)


def test_an_op_returned_mid_chain_runs_before_the_remaining_steps():
    order = []
    op = ct.value(1).then(lambda v: ct.value(v + 1).map(lambda w: order.append(("inner", w)) or w * 10))
    op = op.map(lambda v: order.append(("outer", v)) or v + 5)
    assert op.sync() == 25 and order == [("inner", 2), ("outer", 20)]
    with pytest.raises(ct.DeviceOpError, match="use then"):
        ct.value(1).map(lambda v: ct.value(v)).sync()


# ------------------------------------------------------------------ -0.0 on both backends

SIGN = 0.0


@ct.kernel
def signs(z, x):
    t = ct.load(x, index=(0,), shape=(8,))
    ct.store(z, index=(0,), tile=t * SIGN)
    ct.store(z, index=(1,), tile=-t)
    ct.store(z, index=(2,), tile=ct.full((8,), SIGN, ct.float32))
    ct.store(z, index=(3,), tile=ct.full((8,), SIGN, ct.float16).astype(ct.float32))


def test_negative_zero_constants_and_negation_agree_on_both_backends():
    global SIGN
    x = np.array([0.0, -0.0, 1.0, -1.0, np.inf, -np.inf, 2.5, 0.0], np.float32)
    results = {}
    for backend in ("cpu", "triton"):
        for SIGN in (0.0, -0.0):
            z = np.full(32, np.nan, np.float32)
            if backend == "cpu":
                ct.launch(None, (1,), signs, (z, x))
            else:
                with triton_interpreter():
                    ct.launch(None, (1,), signs, (z, x))
            results[backend, repr(SIGN)] = z  # repr: 0.0 and -0.0 are equal dict keys
    SIGN = 0.0
    for s in (0.0, -0.0):
        with np.errstate(invalid="ignore"):  # inf * 0
            want = np.concatenate([x * np.float32(s), -x, np.full(8, s, np.float32), np.full(8, s, np.float32)])
        for backend in ("cpu", "triton"):
            got = results[backend, repr(s)]
            assert np.array_equal(got, want, equal_nan=True), (backend, s, got)
            assert np.array_equal(np.signbit(got), np.signbit(want)), (backend, s, got)


def test_identical_kernels_in_two_files_keep_their_own_source(tmp_path):
    """Code objects compare equal across files: the source index keys on the file too, so an
    error in one file's kernel is located in that file."""
    found = []
    for sub in ("a", "b"):
        (tmp_path / sub).mkdir()
        path = tmp_path / sub / "same.py"
        path.write_text("import safetile as ct\n\n\n@ct.entry\ndef k(z: ct.Mut[ct.f32, 'B'], w):\n    pass\n")
        with pytest.raises(ct.TileDeclarationError) as e:
            exec(compile(path.read_text(), str(path), "exec", dont_inherit=True), {})  # noqa: S102
        found.append(e.value.filename)
    assert found == [str(tmp_path / "a" / "same.py"), str(tmp_path / "b" / "same.py")]


def test_a_refused_try_partition_leaves_the_shared_handle_as_it_was():
    t = rnd(256, seed=5)
    before = t.to_numpy()
    s = t.shared()
    for shape in ("a", (0,), (3, 3), (2**25,)):
        with pytest.raises(ct.PartitionError):
            s.try_partition(shape)
    assert np.array_equal(s.try_unwrap().to_numpy(), before)  # still shared until here, then unwrapped once


def test_graph_update_refuses_what_is_not_an_op():
    g = ct.value(1).graph()
    for junk in (42, lambda: 1):
        with pytest.raises(ct.DeviceOpError, match="a graph captures a DeviceOp"):
            g.update(junk)
    assert g.launch() == 1


class _StrRaises(Exception):
    def __str__(self):
        raise RuntimeError("no str for you")


def test_a_precondition_raising_an_unprintable_exception_is_a_precondition_error():
    """Red team round 6, 608: the exception's own __str__ raising escaped as a raw RuntimeError."""
    def pre(x):
        raise _StrRaises()

    @ct.entry(preconditions=[pre])
    def inc(z: ct.Mut[ct.f32, "B"], x: ct.Ref[ct.f32, -1]):
        z.store(ct.load_tile_like(x, z) + 1.0)
    z, x = poisoned(64).partition(16), rnd(64, seed=4)
    refused([z, x], lambda: inc(z, x), ct.PreconditionError,
            r"could not be evaluated: _StrRaises: <its message could not be formatted>")


@pytest.mark.parametrize("kwargs, err", [
    (dict(stream=-1), ct.TensorError), (dict(max_version=-1), ct.TensorError), (dict(dl_device=-1), ct.TensorError),
    (dict(copy="x"), ct.TensorError), (dict(dl_device=(2, 0)), ct.ExportError),
])
def test_a_dlpack_export_with_odd_arguments_is_a_safetile_error_and_claims_nothing(kwargs, err):
    """Red team round 6, 600: NumPy's own errors escaped raw. The error keeps the protocol's classes
    (TypeError/ValueError; BufferError for "cannot export"), and the memory stays unclaimed."""
    data = np.random.default_rng(5).standard_normal(8).astype(np.float32)
    t = ct.from_dlpack(data.copy())
    with pytest.raises(err, match="cannot be exported by DLPack with") as info:
        t.__dlpack__(**kwargs)
    assert isinstance(info.value, (TypeError, ValueError))
    if err is ct.ExportError:
        assert isinstance(info.value, BufferError)
    s = t.shared()  # no export claim was left behind
    np.testing.assert_array_equal(s.to_numpy(), data)


def test_streams_copy_as_themselves_and_refuse_pickling():
    import copy
    import pickle
    s, pool = ct.Stream("cpu"), ct.default_pool()
    assert copy.copy(s) is s and copy.deepcopy(s) is s and copy.deepcopy(pool) is pool
    for q in (s, pool):
        with pytest.raises(ct.ArgumentError, match="cannot be pickled: it names device queues"):
            pickle.dumps(q)


# ------------------------------------------------------------------ red team round 7

@ct.entry
def _copy_in(z: ct.Mut[ct.f32, "B"], x: ct.Ref[ct.f32, -1]):
    z.store(ct.load_tile_like(x, z))


def _odd_torch_tensors():
    torch = pytest.importorskip("torch")
    base = torch.arange(64, dtype=torch.float32)
    return {"negative view": torch._neg_view(base), "sparse COO": base.to_sparse(),
            "sparse CSR": base.reshape(8, 8).to_sparse_csr(), "nested": torch.nested.nested_tensor([base[:3], base[:5]])}


@pytest.mark.parametrize("kind", ["negative view", "sparse COO", "sparse CSR", "nested"])
def test_a_raw_torch_ref_that_is_not_plain_memory_is_refused_on_every_launch(kind):
    """Round 7, 702/703: a negative view was read as its un-negated memory (its facts are its
    base's, so a plan made for the base was reused); sparse and nested tensors escaped raw."""
    torch = pytest.importorskip("torch")
    base = torch.arange(64, dtype=torch.float32)
    z = poisoned(64).partition(16)
    z = _copy_in(z, base).sync()[0]  # a plan for plain memory with the same facts exists now
    z = poisoned(64).partition(16)
    odd = _odd_torch_tensors()[kind]
    refused([z], lambda: _copy_in(z, odd), ct.TensorError, "not plain strided memory|lazy negative bit")
    z = _copy_in(z, base).sync()[0]
    np.testing.assert_array_equal(z.unpartition().to_numpy(), np.arange(64, dtype=np.float32))


def test_a_quantized_torch_tensor_is_refused_by_from_dlpack():
    torch = pytest.importorskip("torch")
    q = torch.quantize_per_tensor(torch.arange(64.0), 0.1, 0, torch.qint8)
    with pytest.raises(ct.TensorError, match="quantized is not plain strided memory"):
        ct.from_dlpack(q)


def test_a_dlpack_version_too_large_for_c_is_a_safetile_error():
    t = ct.from_dlpack(np.zeros(8, np.float32))
    with pytest.raises(ct.TensorError, match="OverflowError"):
        t.__dlpack__(max_version=(2**70, 0))
    t.shared()  # nothing left claimed
