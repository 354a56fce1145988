"""Triton backend on a real GPU: the differential cases of test_triton_backend.py on CUDA
tensors (compiled, not interpreted), plus launch-path checks (streams, CuPy-style arrays,
non-contiguous views, recompilation rules, CUDA graphs). Skipped without CUDA."""
from __future__ import annotations

import importlib.util
import os
import sys
from pathlib import Path

import numpy as np
import pytest

import safetile as ct

torch = pytest.importorskip("torch")
pytest.importorskip("triton")

pytestmark = [pytest.mark.gpu,
              pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")]


def _shared():
    spec = importlib.util.spec_from_file_location("_triton_cases", Path(__file__).with_name("test_triton_backend.py"))
    mod = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = mod  # dataclasses look their module up
    spec.loader.exec_module(mod)
    return mod


cases = _shared()


@pytest.fixture(autouse=True)
def _compiled_mode(monkeypatch):
    monkeypatch.delenv("TRITON_INTERPRET", raising=False)
    monkeypatch.delenv("SAFETILE_BACKEND", raising=False)


@pytest.mark.parametrize("case", cases.CASES, ids=[c.name for c in cases.CASES])
def test_differential_cuda(case):
    cases.check_case(case, "cuda")


@pytest.mark.parametrize("tma", ["1", "0"])
def test_gemm_large_tiles(tma, monkeypatch):
    """Tensor-core GEMM with 128x128x64 tiles, edge tiles on every side, with and without TMA."""
    monkeypatch.setenv("SAFETILE_TMA", tma)
    k = cases.gemm.replace_hints(num_warps=8, num_stages=3)
    for dtype in (torch.float16, torch.bfloat16):
        a = torch.randn(300, 200, device="cuda", dtype=dtype)
        b = torch.randn(200, 260, device="cuda", dtype=dtype)
        c = torch.full((300, 260), -7.0, device="cuda", dtype=dtype)
        ct.launch(None, (ct.cdiv(300, 128), ct.cdiv(260, 128)), k, (a, b, c, 128, 128, 64))
        ref = (a.float() @ b.float()).to(dtype)
        torch.testing.assert_close(c.float(), ref.float(), rtol=2e-2, atol=2e-1)


def test_streams_views_and_recompilation():
    from safetile.backends.triton.launcher import specialization
    from safetile.runtime.args import arg_specs

    @ct.kernel
    def axpy(x, y, out, alpha, TILE: ct.Constant[int]):
        i = ct.bid(0)
        ct.store(out, (i,), ct.load(x, (i,), (TILE,)) * alpha + ct.load(y, (i,), (TILE,)))

    s = torch.cuda.Stream()
    for n in (1000, 4096, 77):
        x, y = torch.randn(n, device="cuda"), torch.randn(n, device="cuda")
        out = torch.zeros(n, device="cuda")
        with torch.cuda.stream(s):
            ct.launch(s, (ct.cdiv(n, 256),), axpy, (x, y, out, 2.0, 256))
        s.synchronize()
        torch.testing.assert_close(out, x * 2 + y)
    # raw int stream handle and strided views
    x = torch.randn(2000, device="cuda")
    out = torch.zeros(1000, device="cuda")
    ct.launch(torch.cuda.current_stream().cuda_stream, (4,), axpy, (x[::2], x[1::2], out, -1.0, 256))
    torch.cuda.synchronize()
    torch.testing.assert_close(out, -x[::2] + x[1::2])
    spec = specialization(axpy, axpy.specialize(arg_specs(axpy, (x, x, out, 1.0, 256))),
                          arg_specs(axpy, (x, x, out, 1.0, 256)))
    # sizes 1000/4096/77 differ only in divisibility facts: at most two sources, plus the strided one
    assert len({v.gen.source for v in spec.variants.values()}) == 2


def test_cuda_array_interface_and_dlpack():
    class CAI:
        def __init__(self, t):
            self._t = t
            self.dtype = np.dtype("float32")
            self.shape = tuple(t.shape)

        @property
        def __cuda_array_interface__(self):
            return {"shape": tuple(self._t.shape), "typestr": "<f4", "data": (self._t.data_ptr(), False),
                    "version": 3, "strides": None}

    x = torch.randn(512, device="cuda")
    out = torch.zeros(512, device="cuda")
    ct.launch(None, (4,), cases.vec_add, (CAI(x), x, CAI(out), 128))
    torch.cuda.synchronize()
    torch.testing.assert_close(out, 2 * x)


def test_cuda_graph_replay():
    x = torch.zeros(1024, device="cuda")
    one = torch.ones(1024, device="cuda")
    ct.launch(None, (8,), cases.vec_add, (x, one, x, 128))  # compile outside the capture
    torch.cuda.synchronize()
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        for _ in range(5):
            ct.launch(None, (8,), cases.vec_add, (x, one, x, 128))
    for _ in range(3):
        g.replay()
    torch.cuda.synchronize()
    assert torch.all(x == 1 + 15)


def test_disk_cache_warm_start(tmp_path):
    """A second process finds the generated source and the binary on disk, and launches without
    importing Triton (direct.py); a kernel whose blocks make tensor descriptors (per-launch
    scratch memory) too."""
    import subprocess
    code = ("import sys, torch, safetile as ct\n"
            "@ct.kernel\n"
            "def k(x, T: ct.Constant[int]):\n"
            "    ct.store(x, (ct.bid(0),), ct.load(x, (ct.bid(0),), (T,)) + 1.0)\n"
            "@ct.kernel\n"
            "def t(a, c, T: ct.Constant[int]):\n"
            "    ct.store(c, (0, 0), ct.load(a, (0, 0), (T, T), allow_tma=True) * 2.0, allow_tma=True)\n"
            "x = torch.zeros(256, device='cuda')\n"
            "ct.launch(None, (2,), k, (x, 128)); torch.cuda.synchronize(); assert float(x.sum()) == 256\n"
            "a = torch.randn(64, 64, device='cuda'); c = torch.full_like(a, float('nan'))\n"
            "ct.launch(None, (1,), t, (a, c, 64)); torch.cuda.synchronize(); assert torch.equal(c, 2 * a)\n"
            "print('TRITON_IMPORTED', 'triton' in sys.modules)\n")
    script = tmp_path / "warm.py"  # kernels need a source file
    script.write_text(code)
    env = dict(os.environ, SAFETILE_CACHE_DIR=str(tmp_path / "st"), TRITON_CACHE_DIR=str(tmp_path / "tr"),
               PYTHONPATH=os.pathsep.join(sys.path))
    runs = [subprocess.run([sys.executable, str(script)], env=env, check=True, capture_output=True, text=True).stdout
            for _ in range(2)]
    assert "TRITON_IMPORTED True" in runs[0] and "TRITON_IMPORTED False" in runs[1], runs
    assert len(list((tmp_path / "st").rglob("st_*.py"))) == 2


def test_cupy_arrays_and_stream():
    cp = pytest.importorskip("cupy")
    x = cp.arange(1000, dtype=cp.float32)
    out = cp.zeros(1000, dtype=cp.float32)
    s = cp.cuda.Stream(non_blocking=True)
    ct.launch(s, (8,), cases.vec_add, (x, x, out, 128))
    s.synchronize()
    assert cp.allclose(out, 2 * x)


def test_device_print_and_passing_assert(capfd):
    x = torch.arange(8, dtype=torch.float32, device="cuda") + 0.5
    ct.launch(None, (2,), cases.printer, (x,))
    ct.launch(None, (2,), cases.asserting, (x, 100.0))  # holds: no failure record
    torch.cuda.synchronize()
    out = capfd.readouterr().out
    assert "row" in out and "7.5" in out


def test_launches_from_several_threads_at_once():
    """Each thread launches on its own stream and tensors; the dispatch caches are shared."""
    import threading

    @ct.kernel
    def scale_add(z, x, a, TILE: ct.Constant[int]):
        i = ct.bid(0)
        ct.store(z, (i,), ct.load(z, (i,), (TILE,)) * a + ct.load(x, (i,), (TILE,)))

    errors = []
    results = {}

    def work(seed: int):
        try:
            g = torch.Generator(device="cuda").manual_seed(seed)
            n = 4096 * (1 + seed % 3)  # threads share some keys and differ in others
            x = torch.rand(n, device="cuda", generator=g)
            z = torch.zeros(n, device="cuda")
            s = torch.cuda.Stream()
            with torch.cuda.stream(s):
                for _ in range(200):
                    ct.launch(s, (n // 256,), scale_add, (z, x, 0.5, 256))
            s.synchronize()
            results[seed] = (z, x)
        except BaseException as e:  # noqa: BLE001 - reported by the main thread
            errors.append(e)

    threads = [threading.Thread(target=work, args=(i,)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors
    for z, x in results.values():
        torch.testing.assert_close(z, 2 * x)  # z = z/2 + x, 200 times from 0: 2x to float precision


def test_dependent_launches_interleaved_with_torch_ops():
    """Generated kernels use programmatic dependent launch on sm_90+: each waits for its
    predecessor before touching memory, whichever launched it (torch or safetile)."""
    @ct.kernel
    def bump(z, TILE: ct.Constant[int]):
        i = ct.bid(0)
        ct.store(z, (i,), ct.load(z, (i,), (TILE,)) * 2.0 + 1.0)

    n = 1 << 24  # big enough that a kernel starting early would read stale data
    z = torch.rand(n, device="cuda")
    ref = z.double()
    for k in range(6):
        ct.launch(None, (n // 1024,), bump, (z, 1024))
        ct.launch(None, (n // 1024,), bump, (z, 1024))
        z.mul_(0.25)
        ref = (ref * 2 + 1) * 2 + 1
        ref = ref * 0.25
    torch.cuda.synchronize()
    torch.testing.assert_close(z.double(), ref, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("name,shape,grid", [("scores_kt", (256, 64), (4, 4)), ("scores_kt4", (2, 2, 256, 64), (4, 4, 4))])
def test_tiles_read_transposed_through_descriptors_match_torch(name, shape, grid):
    """A product operand read in another axis order (an attention kernel's Kᵀ tile) goes through a
    tensor descriptor and a register permute on sm_90+: checked against torch in float16."""
    spec = importlib.util.spec_from_file_location("_codegen_cases", Path(__file__).with_name("test_triton_codegen.py"))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    kernel = getattr(mod, name)
    q = torch.randn(shape, device="cuda", dtype=torch.float16)
    k = torch.randn(shape, device="cuda", dtype=torch.float16)
    s = torch.full((*shape[:-1], shape[-2]), float("nan"), device="cuda")
    ct.launch(None, grid, kernel, (q, k, s, 64, 64))
    torch.testing.assert_close(s, q.float() @ k.float().transpose(-1, -2), rtol=2e-3, atol=2e-3)


@ct.kernel
def _exp2_ftz(x, out, T: ct.Constant[int]):
    ct.store(out, (ct.bid(0),), ct.exp2(ct.load(x, (ct.bid(0),), (T,)), flush_to_zero=True))


def test_exp2_flush_to_zero_flushes_inputs_and_results_on_the_gpu():
    """float32 exp2 with flush_to_zero is the .ftz instruction alone (no compare-and-select around
    it): results below the normal range are +0, subnormal inputs count as zero (2 ** 0 = 1), the
    rest within the instruction's accuracy."""
    tiny = np.finfo(np.float32).tiny
    x = np.concatenate([np.linspace(-200, 100, 1000), [tiny / 3, -tiny / 5, 0.0, -0.0] * 6]).astype(np.float32)
    x = np.resize(x, 1024).astype(np.float32)
    xt = torch.from_numpy(x).cuda()
    out = torch.full((1024,), float("nan"), device="cuda")
    ct.launch(None, (8,), _exp2_ftz, (xt, out, 128))
    got = out.cpu().numpy()
    want = np.exp2(np.where(np.abs(x) < tiny, 0.0, x).astype(np.float64))
    want = np.where(want < tiny, 0.0, want)
    np.testing.assert_allclose(got, want, rtol=4e-7, atol=0)
    assert not np.any((got > 0) & (got < tiny))
