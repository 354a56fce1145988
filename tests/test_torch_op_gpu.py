"""safetile kernels as torch custom ops on a CUDA GPU: eager calls on torch's current stream,
``torch.compile(fullgraph=True)`` with inductor, capture in a CUDA graph (by hand and through
``mode="reduce-overhead"``). Skipped without CUDA."""
from __future__ import annotations

import itertools

import pytest

import safetile as ct

torch = pytest.importorskip("torch")
pytest.importorskip("triton")
from safetile.integrations.torch import Out, torch_op  # noqa: E402

pytestmark = [pytest.mark.gpu,
              pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")]

_ids = itertools.count()


@pytest.fixture(autouse=True)
def _compiled_mode(monkeypatch):
    monkeypatch.delenv("TRITON_INTERPRET", raising=False)
    monkeypatch.delenv("SAFETILE_BACKEND", raising=False)


@ct.entry
def add(z: ct.Mut["E", "B"], x: ct.Ref["E", -1], y: ct.Ref["E", -1]):
    z.store(ct.load_tile_like(x, z) + ct.load_tile_like(y, z))


@ct.entry
def gemm(c: ct.Mut[ct.f32, ("BM", "BN")], a: ct.Ref[ct.f16, (-1, -1)], b: ct.Ref[ct.f16, (-1, -1)]):
    pa = a.partition((BM, BK))  # noqa: F821 - generics
    pb = b.partition((BK, BN))  # noqa: F821
    acc = ct.zeros((BM, BN), ct.float32)  # noqa: F821
    for k in range(pa.num_tiles(1)):
        acc = ct.mma(pa.load((ct.bid(0), k)), pb.load((k, ct.bid(1))), acc)
    c.store(acc)


@ct.kernel
def axpy(a, b, c, alpha: float, TILE: ct.Constant[int]):
    i = ct.bid(0)
    t = ct.load(a, index=(i,), shape=(TILE,)) * alpha + ct.load(b, index=(i,), shape=(TILE,))
    ct.store(c, index=(i,), tile=t)


def _name(base):
    return f"safetile_gpu_test::{base}_{next(_ids)}"


ADD = torch_op(_name("add"), add, outputs={"z": Out("x")}, generics={"B": 1024})
GEMM = torch_op(_name("gemm"), gemm, outputs={"c": Out(lambda a, b: (a.shape[0], b.shape[1]))},
                generics={"BM": 64, "BN": 64, "BK": 32})
AXPY = torch_op(_name("axpy"), axpy, outputs={"c": Out("a")}, constants={"TILE": 1024},
                grid=lambda a, TILE: (ct.cdiv(a.shape[0], TILE),))


def model(x, y, a, b):
    z = ADD(torch.sin(x), y)
    return GEMM(a, b).sum() + AXPY(z, y, 2.0)


def _inputs(seed=0, n=100_000):
    g = torch.Generator(device="cuda").manual_seed(seed)
    x = torch.randn(n, device="cuda", generator=g)
    y = torch.randn(n, device="cuda", generator=g)
    a = torch.randn(300, 200, device="cuda", generator=g, dtype=torch.float16)
    b = torch.randn(200, 130, device="cuda", generator=g, dtype=torch.float16)
    return x, y, a, b


def _reference(x, y, a, b):
    return (a.float() @ b.float()).sum() + 2.0 * (torch.sin(x) + y) + y


def test_eager_on_cuda_and_on_a_side_stream():
    x, y, a, b = _inputs(1)
    torch.testing.assert_close(model(x, y, a, b), _reference(x, y, a, b), rtol=1e-3, atol=1e-2)
    torch.testing.assert_close(ADD(x.half(), y.half()), x.half() + y.half())  # generic element type
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        z = ADD(x, y)  # enqueued on the current (side) stream, after the work it waits for
        w = z * 3
    torch.cuda.current_stream().wait_stream(s)
    torch.testing.assert_close(w, (x + y) * 3)


def test_torch_compile_fullgraph_inductor():
    x, y, a, b = _inputs(2)
    compiled = torch.compile(model, fullgraph=True)
    torch.testing.assert_close(compiled(x, y, a, b), _reference(x, y, a, b), rtol=1e-3, atol=1e-2)


def test_cuda_graph_capture_and_replay():
    x, y, a, b = _inputs(3)
    for _ in range(2):  # warm-up compiles the kernels (never during capture)
        model(x, y, a, b)
    torch.cuda.synchronize()
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        out = model(x, y, a, b)
    for seed in (4, 5):
        nx, ny, na, nb = _inputs(seed)
        for dst, src in ((x, nx), (y, ny), (a, na), (b, nb)):
            dst.copy_(src)
        g.replay()
        torch.testing.assert_close(out, _reference(nx, ny, na, nb), rtol=1e-3, atol=1e-2)


def test_torch_compile_reduce_overhead_uses_cuda_graphs():
    compiled = torch.compile(model, fullgraph=True, mode="reduce-overhead")
    for seed in (7, 8, 9):
        nx, ny, na, nb = _inputs(seed)
        got = compiled(nx, ny, na, nb).clone()
        torch.testing.assert_close(got, _reference(nx, ny, na, nb), rtol=1e-3, atol=1e-2)
