"""safetile's lean C launcher (backends/triton/lean.py): built with Triton's build helper, it
refuses every malformed launch before touching the driver (CPU), and launches compiled kernels
with every scalar parameter type the front end produces, as Triton's launcher does (GPU)."""
from __future__ import annotations

import pathlib
import shutil
import sysconfig

import numpy as np
import pytest

import safetile as ct

torch = pytest.importorskip("torch")
pytest.importorskip("triton")
from safetile.backends.triton import launcher as L  # noqa: E402
from safetile.backends.triton import lean  # noqa: E402

_cuda = torch.cuda.is_available()


def built_loader(tmp_path_factory) -> lean.NativeModule:
    """A loader holding the lean module, built into this test process's own cache (one file per
    worker, so every test module of the worker loads the same one)."""
    if shutil.which("gcc") is None and shutil.which("clang") is None:
        pytest.skip("no C compiler (Triton builds its own launchers with one too)")
    if not (pathlib.Path(sysconfig.get_paths()["include"]) / "Python.h").exists():
        pytest.skip("no Python headers to build a C extension with (e.g. Debian's python3-dev)")
    mp = pytest.MonkeyPatch()
    mp.setenv("SAFETILE_CACHE_DIR", str(tmp_path_factory.getbasetemp() / "lean-cache"))
    try:
        loader = lean.new_loader()
        assert loader.get(build=True) is not None, "the lean launcher did not build"
        assert loader.path().exists()  # built into safetile's cache: a later process loads it without Triton
        return loader
    finally:
        mp.undo()


@pytest.fixture(scope="module")
def module(tmp_path_factory):
    return built_loader(tmp_path_factory).loaded()


def test_type_codes_cover_the_generators_signatures():
    assert lean.type_codes({"x": "*fp32", "n": "i32", "s": "i64", "a": "fp16", "b": "bf16", "f": "i1"}) == \
        bytes([0, 4, 5, 10, 11, 1])
    assert lean.type_codes({"x": "*u8", "d": "fp8e4nv"}) is None  # unknown: the variant keeps Triton's launcher


def test_spec_refuses_what_it_cannot_launch(module):
    with pytest.raises(ValueError):
        module.Spec(0, 4, 1, 0, True, False, b"\0")  # no function
    with pytest.raises(ValueError):
        module.Spec(1, 4, 16, 0, True, False, b"\0")  # 16-CTA clusters: Triton's launcher sets an extra attribute
    with pytest.raises(ValueError):
        module.Spec(1, 4, 1, 0, True, False, bytes([99]))
    with pytest.raises(ValueError):
        module.Spec(1, 4, 1, 0, True, False, bytes(600))
    assert module.Spec(1, 4, 1, 0, True, False, bytes([0, 4, 12])).params == 3


@pytest.mark.skipif(_cuda, reason="checks the errors raised where no CUDA driver can be loaded")
def test_every_argument_is_checked_before_the_driver(module):
    """Malformed launches fail on their arguments (TypeError/OverflowError/ValueError naming the
    argument); a well-formed one reaches the driver, absent here."""
    spec = module.Spec(1234, 4, 1, 0, True, False, bytes([0, 4, 5, 12, 10, 1, 2, 6]))
    good = [1 << 20, 7, 1 << 40, 0.5, 1.5, True, -3, 200]

    def launch(*kernel_args, grid=(1, 1, 1), stream=0, s=spec):
        module.launch(*grid, stream, s, *kernel_args)
    with pytest.raises(RuntimeError, match="CUDA driver"):
        launch(*good)
    cases = [
        (good[:-1], TypeError, "takes 8 arguments, got 7"),
        ([1.0, *good[1:]], TypeError, "argument 0: expected a pointer"),
        ([-1, *good[1:]], OverflowError, "argument 0"),
        ([good[0], 2**31, *good[2:]], OverflowError, "argument 1: 2147483648 does not fit int32"),
        ([good[0], 2.0, *good[2:]], TypeError, "argument 1: expected an integer"),
        ([*good[:2], 2**63, *good[3:]], OverflowError, "argument 2"),
        ([*good[:3], "x", *good[4:]], TypeError, "argument 3: expected a float"),
        ([*good[:4], 1e6, *good[5:]], OverflowError, "argument 4"),  # beyond float16's range
        ([*good[:6], 128, good[7]], OverflowError, "argument 6: 128 does not fit int8"),
        ([*good[:7], -1], OverflowError, "argument 7: -1 does not fit uint8"),
    ]
    for args, error, text in cases:
        with pytest.raises(error, match=text):
            launch(*args)
    for grid in ((0, 1, 1), (1, -1, 1), (2**31, 1, 1)):
        with pytest.raises(ValueError, match="grid dimension"):
            launch(*good, grid=grid)
    with pytest.raises(TypeError):
        launch(*good, stream="default")
    with pytest.raises(TypeError, match="launch\\(gx, gy, gz, stream, spec"):
        launch(*good, s=(1234,))


def test_off_switch_and_unknown_types_keep_tritons_launcher(monkeypatch):
    raw = object()
    prefix = (5, False, True, None, None, (4, 1, 0), None, None, None)
    monkeypatch.setenv("SAFETILE_LEAN_LAUNCH", "0")
    assert L.leaner(raw, prefix, {"x": "*fp32"}, build=True) == (raw, prefix)
    monkeypatch.delenv("SAFETILE_LEAN_LAUNCH")
    assert L.leaner(raw, prefix, {"x": "*fp32", "d": "fp8e5"}, build=True) == (raw, prefix)
    scratch = (5, False, True, 1234, None, (4, 1, 0), None, None, None)  # scratch memory: Triton's wrapper
    assert L.leaner(raw, scratch, {"x": "*fp32"}, build=True) == (raw, scratch)


# ------------------------------------------------------------------------------ on a GPU

@ct.kernel
def scalars(x, z, i, f, h, flag, TILE: ct.Constant[int]):
    b = ct.bid(0)
    t = ct.load(x, (b,), (TILE,)) * f + i + h
    ct.store(z, (b,), ct.astype(ct.where(flag, t, -t), ct.float32))  # a float64 scalar promotes t


@pytest.mark.gpu
@pytest.mark.skipif(not _cuda, reason="needs a CUDA GPU")
@pytest.mark.parametrize("lean_on", ["1", "0"])
@pytest.mark.parametrize("i, f, h, flag", [(3, 0.5, np.float16(1.5), True), (-(2**40), -2.25, np.float64(0.125), False),
                                           (7, 1.0, np.float32(-4.0), False)])
def test_scalar_types_launch_as_tritons_launcher_does(lean_on, i, f, h, flag, monkeypatch):
    monkeypatch.delenv("TRITON_INTERPRET", raising=False)
    monkeypatch.delenv("SAFETILE_BACKEND", raising=False)
    monkeypatch.setenv("SAFETILE_LEAN_LAUNCH", lean_on)
    k = scalars.replace_hints()  # its own variants: built with this setting
    x = torch.randn(1000, device="cuda")
    for _ in range(2):  # the checked path, then the one-pass path where it applies
        z = torch.full_like(x, float("nan"))
        ct.launch(None, (ct.cdiv(1000, 256),), k, (x, z, i, f, h, flag, 256))
        t = x.double() * f + i + float(h)
        ref = t if flag else -t
        torch.testing.assert_close(z.double(), ref, rtol=1e-5, atol=1e-5 * max(1.0, abs(float(i))))
    calls = {v.call for spec in k.backend_cache.values() for v in spec.by_facts.values()}
    lean_launch = lean._loader.get(build=False)
    assert (calls == {lean_launch.launch}) == (lean_on == "1" and lean_launch is not None)


@pytest.mark.gpu
@pytest.mark.skipif(not _cuda, reason="needs a CUDA GPU")
def test_lean_launch_of_many_argument_patterns(monkeypatch):
    """The README's kernel through ct.launch (a tensor passed twice, a Constant) on the lean
    launcher: results, bad launches refused with the checked path's errors before running."""
    monkeypatch.delenv("TRITON_INTERPRET", raising=False)
    monkeypatch.delenv("SAFETILE_BACKEND", raising=False)

    @ct.kernel
    def add4(x, y, z, TILE: ct.Constant[int]):
        b = ct.bid(0)
        ct.store(z, (b,), ct.load(x, (b,), (TILE,)) + ct.load(y, (b,), (TILE,)))
    x = torch.randn(4096, device="cuda")
    for _ in range(3):
        z = torch.full_like(x, float("nan"))
        ct.launch(None, (4,), add4, (x, x, z, 1024))
        torch.testing.assert_close(z, 2 * x)
    hit = next(iter(add4.gpu_learned.table.values()))
    assert hit[0] is lean._loader.get(build=False).launch
    z = torch.full_like(x, float("nan"))
    with pytest.raises(ct.GridError):
        ct.launch(None, (0,), add4, (x, x, z, 1024))
    with pytest.raises(ct.GridError):
        ct.launch(None, (4, 1, 1, 1), add4, (x, x, z, 1024))
    with pytest.raises(ct.TileError):
        ct.launch(None, (4,), add4, (x, x.double(), z, 1024))
    assert torch.isnan(z).all()  # nothing ran
    s = torch.cuda.Stream()
    with torch.cuda.stream(s):
        ct.launch(None, (4,), add4, (x, x, z, 1024))  # the current stream, read per launch
    s.synchronize()
    torch.testing.assert_close(z, 2 * x)
