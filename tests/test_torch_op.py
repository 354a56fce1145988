"""safetile kernels as torch custom ops on the CPU: eager calls, ``torch.compile(fullgraph=True)``,
``torch.library.opcheck`` (which checks the derived fake kernel against the real one), the
safe style's ownership across the boundary, and the refusals at registration and at calls."""
from __future__ import annotations

import threading

import numpy as np
import pytest

import safetile as ct

torch = pytest.importorskip("torch")
from safetile.integrations.torch import Out, torch_op  # noqa: E402

_names = iter(range(10**6))


def unique(base: str) -> str:
    """torch op names are process-wide: one per registration."""
    return f"safetile_test::{base}_{next(_names)}"


@ct.entry
def add(z: ct.Mut[ct.f32, "B"], x: ct.Ref[ct.f32, -1], y: ct.Ref[ct.f32, -1]):
    z.store(ct.load_tile_like(x, z) + ct.load_tile_like(y, z))


@ct.entry(preconditions=["dim(a, 1) == dim(b, 0)"])
def gemm(c: ct.Mut[ct.f32, ("BM", "BN")], a: ct.Ref[ct.f32, (-1, -1)], b: ct.Ref[ct.f32, (-1, -1)]):
    pa = a.partition((BM, BK))  # noqa: F821 - generics
    pb = b.partition((BK, BN))  # noqa: F821
    acc = ct.zeros((BM, BN), ct.float32)  # noqa: F821
    for k in range(pa.num_tiles(1)):
        acc = ct.mma(pa.load((ct.bid(0), k)), pb.load((k, ct.bid(1))), acc)
    c.store(acc)


@ct.entry
def persistent_scale(c: ct.MappedMut[ct.f32, ("BM", "BN")], a: ct.Ref[ct.f32, (-1, -1)], s: ct.f32):
    pa = a.partition((BM, BN))  # noqa: F821
    for idx in c.iter_indices():
        c.store(pa.load(tuple(idx)) * s, idx)


@ct.entry
def sum_and_diff(s: ct.Mut["E", 64], d: ct.Mut["E", 64], x: ct.Ref["E", -1], y: ct.Ref["E", -1]):
    a, b = ct.load_tile_like(x, s), ct.load_tile_like(y, s)
    s.store(a + b)
    d.store(a - b)


@ct.kernel
def axpy(a, b, c, alpha: float, TILE: ct.Constant[int]):
    i = ct.bid(0)
    t = ct.load(a, index=(i,), shape=(TILE,)) * alpha + ct.load(b, index=(i,), shape=(TILE,))
    ct.store(c, index=(i,), tile=t)


ADD = torch_op(unique("add"), add, outputs={"z": Out("x")}, generics={"B": 128})
GEMM = torch_op(unique("gemm"), gemm, outputs={"c": Out(lambda a, b: (a.shape[0], b.shape[1]))},
                generics={"BM": 32, "BN": 16, "BK": 16})
AXPY = torch_op(unique("axpy"), axpy, outputs={"c": Out("a")}, constants={"TILE": 64},
                grid=lambda c, TILE: (ct.cdiv(c.shape[0], TILE),))


def rand(*shape, seed=0):
    return torch.from_numpy(np.random.default_rng(seed).standard_normal(shape).astype(np.float32))


def test_entry_op_eager_owns_its_outputs_and_leaves_inputs_untouched():
    x, y = rand(1000, seed=1), rand(1000, seed=2)
    x0, y0 = x.clone(), y.clone()
    z1, z2 = ADD(x, y), ADD(x, y)
    torch.testing.assert_close(z1, x + y, rtol=0, atol=0)
    assert torch.equal(x, x0) and torch.equal(y, y0)  # borrowed read-only
    ptrs = {x.data_ptr(), y.data_ptr()}
    assert z1.data_ptr() not in ptrs and z2.data_ptr() not in ptrs and z1.data_ptr() != z2.data_ptr()
    assert z1.dtype == torch.float32 and z1.shape == (1000,)


def test_outputs_are_torchs_after_the_call():
    """The op's partitions end with the call: safetile holds nothing on the outputs' memory, so
    they can be inputs again, or be partitioned by a safe launch of the user's."""
    x, y = rand(512, seed=26), rand(512, seed=27)
    z = ADD(x, y)
    z2 = ADD(z, z)
    torch.testing.assert_close(z2, 2 * (x + y), rtol=0, atol=0)
    part = ct.from_dlpack(z).partition(128)
    part, _, _ = add(part, ct.from_dlpack(x), ct.from_dlpack(y)).sync()
    part.unpartition()
    torch.testing.assert_close(z, x + y, rtol=0, atol=0)


def test_inputs_may_alias_each_other():
    x = rand(300, seed=3)
    torch.testing.assert_close(ADD(x, x), 2 * x, rtol=0, atol=0)
    v = rand(600, seed=4)
    torch.testing.assert_close(ADD(v[:300], v[100:400]), v[:300] + v[100:400], rtol=0, atol=0)
    t = rand(40, 30, seed=5).t()  # a non-contiguous input
    torch.testing.assert_close(GEMM(t, t.t().contiguous()), t @ t.t(), rtol=1e-4, atol=1e-4)


def test_output_shapes_from_callables_and_partitions():
    a, b = rand(70, 48, seed=6), rand(48, 50, seed=7)
    c = GEMM(a, b)
    assert c.shape == (70, 50)
    torch.testing.assert_close(c, a @ b, rtol=1e-4, atol=1e-4)


def test_unchecked_kernel_with_scalar_constant_and_grid():
    a, b = rand(1000, seed=8), rand(1000, seed=9)
    torch.testing.assert_close(AXPY(a, b, 2.5), 2.5 * a + b, rtol=1e-6, atol=1e-6)
    assert "float alpha" in str(AXPY._opoverload._schema) and "TILE" not in str(AXPY._opoverload._schema)


def test_mapped_partition_and_several_outputs():
    op = torch_op(unique("pscale"), persistent_scale, generics={"BM": 16, "BN": 16},
                  outputs={"c": Out("a", blocks=lambda a: 3)})
    a = rand(50, 40, seed=10)
    torch.testing.assert_close(op(a, 0.5), a * 0.5, rtol=0, atol=0)
    two = torch_op(unique("sumdiff"), sum_and_diff, outputs={"s": Out("x"), "d": Out("x")})
    x, y = rand(200, seed=11).double(), rand(200, seed=12).double()
    s, d = two(x, y)
    assert s.dtype == d.dtype == torch.float64  # a generic element type follows the input
    torch.testing.assert_close(s, x + y, rtol=0, atol=0)
    torch.testing.assert_close(d, x - y, rtol=0, atol=0)


def test_opcheck_validates_the_derived_fake_kernel():
    x, y = rand(257, seed=13), rand(257, seed=14)
    torch.library.opcheck(ADD, (x, y))
    torch.library.opcheck(GEMM, (rand(33, 20, seed=15), rand(20, 17, seed=16)))
    torch.library.opcheck(AXPY, (x, y, -1.5))


def model(x, y, w):
    h = torch.tanh(x) * 2
    z = ADD(h, y)
    return GEMM(z.reshape(-1, 64), w).relu() + AXPY(x, y, 3.0).sum()


def test_torch_compile_fullgraph():
    x, y, w = rand(1024, seed=17), rand(1024, seed=18), rand(64, 24, seed=19)
    ref = model(x, y, w)
    compiled = torch.compile(model, fullgraph=True, backend="aot_eager", dynamic=True)
    torch.testing.assert_close(compiled(x, y, w), ref, rtol=1e-4, atol=1e-4)
    x2, y2 = rand(512, seed=20), rand(512, seed=21)  # another size: no new trace needed to be right
    torch.testing.assert_close(compiled(x2, y2, w), model(x2, y2, w), rtol=1e-4, atol=1e-4)


def test_torch_compile_with_inductor():
    x, y, w = rand(2048, seed=22), rand(2048, seed=23), rand(64, 8, seed=24)
    compiled = torch.compile(model, fullgraph=True)
    torch.testing.assert_close(compiled(x, y, w), model(x, y, w), rtol=1e-4, atol=1e-4)


def test_bad_calls_are_refused_before_anything_runs():
    x = rand(256, seed=25)
    with pytest.raises(ct.LaunchTypeError, match="argument 'x' of kernel 'add' has element type float16 but "
                                                  "the parameter is declared float32"):
        ADD(x.half(), x)
    with pytest.raises(ct.LaunchTypeError, match="rank 2 but"):
        ADD(x.reshape(16, 16), x.reshape(16, 16))
    with pytest.raises(ct.PreconditionError, match=r"dim\(a, 1\) == dim\(b, 0\)"):
        GEMM(rand(32, 16), rand(32, 16))
    compiled = torch.compile(lambda a, b: ADD(a, b) * 2, fullgraph=True, backend="aot_eager")
    with pytest.raises(Exception, match="element type float64 but the parameter is declared float32"):
        compiled(x.double(), x.double())  # refused while tracing, by the derived fake kernel


def test_calls_from_threads():
    xs = [rand(4096, seed=30 + i) for i in range(8)]
    results: dict[int, torch.Tensor] = {}

    def work(i):
        for _ in range(5):
            results[i] = ADD(xs[i], xs[(i + 1) % 8])
    threads = [threading.Thread(target=work, args=(i,)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for i in range(8):
        torch.testing.assert_close(results[i], xs[i] + xs[(i + 1) % 8], rtol=0, atol=0)


@pytest.mark.parametrize("kwargs,words", [
    ({"outputs": {"z": Out("x")}}, "partition size 'B' is a generic"),
    ({"outputs": {"z": Out("x"), "y": Out("x")}, "generics": {"B": 8}}, "output 'y' must be a ct.Mut"),
    ({"outputs": {}, "generics": {"B": 8}}, "'z' is mutable"),
    ({"outputs": {"q": Out("x")}}, "output 'q' is not an array parameter"),
    ({"outputs": {"z": Out("nope")}, "generics": {"B": 8}}, "names no tensor input"),
    ({"outputs": {"z": Out(lambda w: w.shape)}, "generics": {"B": 8}}, "asks for w"),
    ({"outputs": {"z": Out("x")}, "generics": {"B": 8}, "grid": (1,)}, "grid follows from its partitions"),
    ({"outputs": {"z": Out("x")}, "generics": {"B": 8}, "constants": {"T": 1}}, "not constants: T"),
    ({"outputs": {"z": Out("x", dtype="bogus")}, "generics": {"B": 8}}, "neither an element type"),
])
def test_registration_errors_name_the_problem(kwargs, words):
    with pytest.raises((TypeError, ValueError), match=words):
        torch_op(unique("bad"), add, **kwargs)


def test_unchecked_registration_errors():
    with pytest.raises(TypeError, match="needs grid="):
        torch_op(unique("bad"), axpy, outputs={"c": Out("a")}, constants={"TILE": 64})
    with pytest.raises(TypeError, match="missing TILE"):
        torch_op(unique("bad"), axpy, outputs={"c": Out("a")}, grid=(1,))
    with pytest.raises(TypeError, match="partition= and blocks= belong to entry kernels"):
        torch_op(unique("bad"), axpy, outputs={"c": Out("a", partition=(64,))}, constants={"TILE": 64}, grid=(1,))
    with pytest.raises(TypeError, match="scalars= names 'zeta'"):
        torch_op(unique("bad"), axpy, outputs={"c": Out("a")}, constants={"TILE": 64}, grid=(1,),
                 scalars={"zeta": float})
    op = torch_op(unique("axpy_scalars"), axpy, outputs={"c": Out("a")}, constants={"TILE": 64},
                  grid=lambda a, TILE: (ct.cdiv(a.shape[0], TILE),), scalars={"alpha": int})
    assert "int alpha" in str(op._opoverload._schema)
    with pytest.raises(TypeError, match="expects an @ct.entry or @ct.kernel"):
        torch_op(unique("bad"), lambda x: x, outputs={})
    for bad in ("plain", "ns::123", "a::b::c", "::x"):  # torch would raise its own parse error
        with pytest.raises(ct.ArgumentError, match="namespace::name"):
            torch_op(bad, add, outputs={"z": Out("x")}, generics={"B": 8})


def test_decorator_form():
    @torch_op(unique("neg"), outputs={"y": Out("x")}, constants={"T": 32}, grid=lambda x, T: (ct.cdiv(x.shape[0], T),))
    @ct.kernel
    def neg(x, y, T: ct.Constant[int]):
        ct.store(y, index=(ct.bid(0),), tile=-ct.load(x, index=(ct.bid(0),), shape=(T,)))
    x = rand(100, seed=40)
    torch.testing.assert_close(neg(x), -x, rtol=0, atol=0)


def test_ops_run_on_the_triton_backend(monkeypatch):
    """The GPU launch path of both styles (Triton backend, torch's current stream), here in
    Triton's interpreter on host memory; tests/test_torch_op_gpu.py runs it on a GPU."""
    from triton_interp import triton_interpreter

    from safetile.backends.cpu import executor

    def not_here(*a, **k):
        raise AssertionError("the CPU backend ran")
    x, y = rand(1000, seed=50), rand(1000, seed=51)
    with triton_interpreter():
        monkeypatch.setattr(executor, "execute", not_here)
        z = ADD(x, y)
        c = AXPY(x, y, 0.25)
        g = GEMM(rand(40, 24, seed=52), rand(24, 20, seed=53))
    torch.testing.assert_close(z, x + y, rtol=0, atol=0)
    torch.testing.assert_close(c, 0.25 * x + y, rtol=1e-6, atol=1e-6)
    torch.testing.assert_close(g, rand(40, 24, seed=52) @ rand(24, 20, seed=53), rtol=1e-4, atol=1e-4)


def test_unchecked_kernel_writing_an_input_is_refused_before_it_runs():
    """Round-2 attack 212: the op's schema says inputs are not mutated (torch.compile reuses their
    buffers on that promise), so an unchecked kernel storing into an input is refused, located."""
    @torch_op(unique("evil"), outputs={"z": Out("x")}, grid=lambda x: (x.shape[0] // 16,))
    @ct.kernel
    def evil(z, x):
        t = ct.load(x, (ct.bid(0),), (16,))
        ct.store(x, (ct.bid(0),), t * 0.0 + 99.0)
        ct.store(z, (ct.bid(0),), t + 1.0)
    x = torch.ones(64)
    with pytest.raises(ct.TileTypeError, match=r"writes one of its inputs \(x\)") as info:
        evil(x)
    assert "ct.store(x" in str(info.value)  # located at the store
    assert torch.equal(x, torch.ones(64))


WRITE_INPUT = False


def _helper_reads(x, b):
    return ct.load(x, (b,), (16,))


def test_an_input_write_that_appears_after_a_recompile_is_refused():
    """The read-only check belongs to the code that runs: when a global (or a helper) the kernel
    read changes, the kernel compiles again and the new code is checked again (red team round 6,
    611: the check ran once per argument signature, and the recompiled code wrote an input)."""
    global WRITE_INPUT, _helper_reads
    WRITE_INPUT = False

    @torch_op(unique("flip"), outputs={"z": Out("x")}, grid=lambda x: (x.shape[0] // 16,))
    @ct.kernel
    def flip(z, x):
        t = _helper_reads(x, ct.bid(0))
        ct.store(z, (ct.bid(0),), t + 1.0)
        if WRITE_INPUT:
            ct.store(x, (ct.bid(0),), t * 0.0 - 5.0)
    x0 = torch.from_numpy(np.random.default_rng(21).standard_normal(64).astype(np.float32))
    x = x0.clone()
    torch.testing.assert_close(flip(x), x0 + 1.0, rtol=0, atol=0)
    try:
        WRITE_INPUT = True
        with pytest.raises(ct.TileTypeError, match=r"writes one of its inputs \(x\)"):
            flip(x)
        assert torch.equal(x, x0)
        WRITE_INPUT = False
        saved = _helper_reads

        def _helper_reads(x, b):  # noqa: F811 - redefined between calls on purpose
            t = ct.load(x, (b,), (16,))
            ct.store(x, (b,), t * 2.0)
            return t
        with pytest.raises(ct.TileTypeError, match=r"writes one of its inputs \(x\)"):
            flip(x)
        assert torch.equal(x, x0)
        _helper_reads = saved
        torch.testing.assert_close(flip(x), x0 + 1.0, rtol=0, atol=0)
    finally:
        WRITE_INPUT = False


class _BadIndex:
    def __index__(self):
        raise RuntimeError("no index")  # round 6, 624: escaped raw


class _BadStr(Exception):
    def __str__(self):
        raise RuntimeError("no str")


def _raise(e):
    raise e


@pytest.mark.parametrize("shape, exc, words", [
    (lambda x: (-5,), ct.LaunchTypeError,
     r"output 'z': the shape callable must return a tuple of sizes >= 0, got \(-5,\)"),
    (lambda x: "abc", ct.LaunchTypeError, "output 'z': the shape callable must return a tuple of sizes"),
    (lambda x: 1 // 0, ct.LaunchTypeError, "output 'z': the shape callable raised ZeroDivisionError"),
    (lambda x: (2**40,), ct.AllocationError, "output 'z' of shape .* could not be allocated"),
    (lambda x: (_BadIndex(),), ct.LaunchTypeError, "output 'z': the shape callable must return a tuple of sizes"),
    (lambda x: _raise(_BadStr()), ct.LaunchTypeError,
     "output 'z': the shape callable raised _BadStr: <its message could not be formatted>"),
])
def test_output_shape_callables_failing_at_call_time_are_safetile_errors(shape, exc, words):
    name = f"errs::shape{abs(hash(words)) % 10**8}"

    @torch_op(name, outputs={"z": Out(shape)}, generics={"B": 64})
    @ct.entry
    def k(z: ct.Mut[ct.f32, "B"], x: ct.Ref[ct.f32, -1]):
        z.store(ct.load_tile_like(x, z))
    x = torch.arange(256, dtype=torch.float32)
    with pytest.raises(exc, match=words):
        k(x)
    assert torch.equal(x, torch.arange(256, dtype=torch.float32))


def test_impure_output_shape_is_refused_against_what_torch_traced():
    """Round-2 attack 219: a shape callable giving torch's tracer one size and the call another."""
    calls = [0]

    def impure(x):
        calls[0] += 1
        return (x.shape[0] + 64 * (calls[0] % 2),)

    @torch_op(unique("impure"), outputs={"z": Out(impure)}, generics={"B": 64})
    @ct.entry
    def k(z: ct.Mut[ct.f32, "B"], x: ct.Ref[ct.f32, -1]):
        z.store(ct.load_tile_like(x, z))
    f = torch.compile(lambda x: k(x) * 2.0, fullgraph=True, backend="aot_eager")
    with pytest.raises(ct.LaunchTypeError, match="output 'z' has shape .* when torch traced the op"):
        for _ in range(2):
            f(torch.ones(256))
