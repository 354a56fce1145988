"""The C++ fact reader (runtime/torch_facts.py) answers exactly what torch's own methods answer, or
declines, for every kind of tensor a launch may meet; launches through it behave as without it."""
from __future__ import annotations

import pytest

import safetile as ct

torch = pytest.importorskip("torch")
from safetile.runtime import torch_facts  # noqa: E402


@pytest.fixture(scope="module")
def facts_module(cxx_facts):
    return cxx_facts


def _torch_answer(t):
    return (t.data_ptr(), t.dtype, tuple(t.shape), t.stride(), t.get_device(), t.is_neg() or t.is_conj())


def _tensors():
    g = torch.Generator().manual_seed(3)
    base = torch.randn(6, 8, 10, generator=g)
    yield "contiguous", base
    yield "0-d", torch.tensor(2.5)
    yield "empty", torch.empty(0, 4)
    yield "transposed", base.transpose(0, 2)
    yield "sliced with steps", base[1:, ::3, 2:9:2]
    yield "reversed through a flip copy", base.flip(0)
    yield "expanded (stride 0)", torch.randn(1, 5, generator=g).expand(7, 5)
    yield "as_strided overlapping", torch.arange(20.0).as_strided((4, 4), (2, 1))
    yield "offset view", base.view(-1)[37:]
    yield "negative view", base._neg_view()
    yield "conjugate view", torch.randn(3, 3, dtype=torch.complex64, generator=g).conj()
    yield "16 dimensions", torch.zeros((1,) * 15 + (3,))
    for dt in (torch.float16, torch.bfloat16, torch.float64, torch.int8, torch.uint8, torch.int32, torch.int64,
               torch.bool):
        yield f"{dt}", torch.zeros(9, dtype=dt)
    yield "int8 viewed as uint8", torch.zeros(8, dtype=torch.int8).view(torch.uint8)
    yield "channels_last", torch.randn(2, 3, 4, 5, generator=g).to(memory_format=torch.channels_last)
    yield "requires grad", torch.randn(4, requires_grad=True, generator=g)
    yield "non-leaf", torch.randn(4, requires_grad=True, generator=g) * 2


@pytest.mark.parametrize("name,t", list(_tensors()), ids=[n for n, _ in _tensors()])
def test_every_fact_is_what_torch_answers(facts_module, name, t):
    assert facts_module.facts(t) == _torch_answer(t)


@pytest.mark.filterwarnings("ignore:.*(beta|prototype).*:UserWarning")
def test_tensors_without_plain_strided_memory_are_declined(facts_module):
    """None: the caller reads through torch's methods, which raise or refuse in words."""
    assert facts_module.facts(torch.zeros((1,) * 17)) is None  # more dimensions than the reader holds
    assert facts_module.facts(torch.eye(3).to_sparse()) is None
    assert facts_module.facts(torch.eye(3).to_sparse_csr()) is None
    nested = torch.nested.nested_tensor([torch.zeros(2), torch.zeros(3)])
    assert facts_module.facts(nested) is None
    assert facts_module.facts(torch.empty(5, 6, device="meta")) is None  # no memory
    q = torch.quantize_per_tensor(torch.zeros(4), 0.1, 0, torch.qint8)
    assert facts_module.facts(q) is None


def test_a_view_longer_than_its_storage_is_declined(facts_module):
    """A storage shrunk in place leaves views that reach past its end (torch does not check when it
    reads them); the reader declines them, so a launch takes the path that refuses them in words."""
    x = torch.ones(4096)
    view = x[100:200]
    assert facts_module.facts(view) == _torch_answer(view)
    x.untyped_storage().resize_(16)
    assert facts_module.facts(x) is None and facts_module.facts(view) is None
    assert facts_module.facts(x[:4]) == _torch_answer(x[:4])  # 16 bytes: four floats still fit
    y = torch.zeros(0)
    assert facts_module.facts(y) == _torch_answer(y)  # no elements: nothing to reach


def test_a_tensor_changed_in_place_reads_its_new_facts(facts_module):
    t = torch.zeros(8)
    before = facts_module.facts(t)
    t.set_(torch.ones(4, 2))
    assert facts_module.facts(t) == _torch_answer(t) != before
    t.data = torch.zeros(3, dtype=torch.float64)
    assert facts_module.facts(t) == _torch_answer(t)
    t.resize_(50)
    assert facts_module.facts(t) == _torch_answer(t)


def test_only_tensors_are_read(facts_module):
    with pytest.raises(TypeError):
        facts_module.facts([1, 2])

    class Sub(torch.Tensor):
        pass
    with pytest.raises(TypeError):  # a subclass may answer differently through its own methods
        facts_module.facts(torch.zeros(2).as_subclass(Sub))


def test_off_means_no_reader(monkeypatch, facts_module):
    monkeypatch.setenv("SAFETILE_TORCH_FACTS", "0")
    assert torch_facts.module() is None and torch_facts.capsule() is None
    monkeypatch.setenv("SAFETILE_TORCH_FACTS", "1")
    assert torch_facts.capsule() is facts_module.read


def test_the_capsule_is_what_the_c_modules_take(facts_module):
    cap = torch_facts.capsule()
    assert type(cap).__name__ == "PyCapsule" and "safetile_torch_facts.read" in repr(cap)


_cuda = torch.cuda.is_available()


@ct.kernel
def _axpy(x, y, out, a: float, TILE: ct.Constant[int]):
    b = ct.bid(0)
    ct.store(out, (b,), ct.load(x, (b,), (TILE,)) * a + ct.load(y, (b,), (TILE,)))


@pytest.mark.parametrize("make", [
    lambda: torch.randn(64, 48, device="cuda"),
    lambda: torch.randn(64, 48, device="cuda", dtype=torch.float16)[3:, ::2],
    lambda: torch.randn(5, 7, device="cuda").t(),
    lambda: torch.randn(9, device="cuda")._neg_view(),
    lambda: torch.zeros(4, 1, device="cuda").expand(4, 6),
], ids=["plain", "f16 strided view", "transposed", "negative view", "expanded"])
@pytest.mark.gpu
@pytest.mark.skipif(not _cuda, reason="needs a CUDA GPU")
def test_cuda_tensors_read_as_torch_answers(facts_module, make):
    t = make()
    assert facts_module.facts(t) == _torch_answer(t)
    assert facts_module.facts(t)[4] == torch.cuda.current_device()


@pytest.mark.gpu
@pytest.mark.skipif(not _cuda, reason="needs a CUDA GPU")
@pytest.mark.parametrize("facts", [False, True], ids=["torch-methods", "cxx-facts"])
def test_ct_launch_on_the_one_pass_path_reads_each_tensor_as_it_is_now(monkeypatch, facts_module, facts):
    """ct.launch's C reader with and without the C++ reader: the same kernel launched on other
    tensors, views and a re-pointed tensor computes on the memory each names at that launch."""
    from safetile.backends.triton import lean
    monkeypatch.setattr(torch_facts, "capsule", lambda: facts_module.read if facts else None)
    axpy = _axpy.replace_hints()  # a kernel of its own: learns its one-pass path in this test

    n = 1024
    x, y = torch.randn(n, device="cuda"), torch.randn(n, device="cuda")
    out = torch.full((n,), float("nan"), device="cuda")
    for _ in range(3):  # compile, learn the one-pass path, then run on it
        ct.launch(None, (n // 256,), axpy, (x, y, out, 2.0, 256))
    if lean._loader.loaded() is not None:
        assert type(axpy.gpu_fast).__name__ == "Reader"
    torch.testing.assert_close(out, x * 2.0 + y)
    x2, y2 = torch.randn(n, device="cuda"), torch.randn(n, device="cuda")
    out.fill_(float("nan"))
    ct.launch(None, (n // 256,), axpy, (x2, y2, out, -1.0, 256))
    torch.testing.assert_close(out, -x2 + y2)
    x.set_(torch.randn(n, device="cuda"))  # re-pointed in place: the launch reads its new memory
    out.fill_(float("nan"))
    ct.launch(None, (n // 256,), axpy, (x, y, out, 0.5, 256))
    torch.testing.assert_close(out, x * 0.5 + y)
    big = torch.randn(2 * n, device="cuda")
    out.fill_(float("nan"))
    ct.launch(None, (n // 256,), axpy, (big[::2], big[1::2], out, 3.0, 256))  # strided views: another key
    torch.testing.assert_close(out, big[::2] * 3.0 + big[1::2])


def test_the_background_build_finishes_in_a_process_of_its_own(monkeypatch, tmp_path, facts_module):
    """The build outlives the script that starts it (a build thread would die with a short script and
    never write the cache): prebuild() starts one detached process, once, which writes the module
    into the cache for later loads."""
    monkeypatch.setenv("SAFETILE_CACHE_DIR", str(tmp_path))
    loader = torch_facts._Loader()
    monkeypatch.setattr(torch_facts, "_loader", loader)
    builder = torch_facts.prebuild()
    assert builder is not None and torch_facts.prebuild() is builder  # one per process
    assert builder.wait(timeout=600) == 0
    assert loader.native().path().exists()
    assert torch_facts.module() is not None  # loaded from the cache, not built here
    assert torch_facts._Loader().start_build() is None  # built: nothing to start


def test_a_build_that_cannot_succeed_is_not_tried_again(monkeypatch, tmp_path):
    """Where no C++ compiler is at hand, the background build leaves a marker, and later processes
    read through torch's methods without starting another build."""
    monkeypatch.setenv("SAFETILE_CACHE_DIR", str(tmp_path))
    monkeypatch.setenv("CXX", "/nonexistent/c++")
    loader = torch_facts._Loader()
    monkeypatch.setattr(torch_facts, "_loader", loader)
    builder = torch_facts.prebuild()
    assert builder is not None and builder.wait(timeout=300) == 0
    assert not loader.native().path().exists()
    monkeypatch.setattr(torch_facts, "_loader", torch_facts._Loader())  # a later process
    assert torch_facts.prebuild() is None and torch_facts.module() is None


def test_no_background_build_without_a_cache(monkeypatch):
    """With the cache off a build could not be found by any later process: none is started."""
    monkeypatch.setenv("SAFETILE_CACHE_DIR", "off")
    monkeypatch.setattr(torch_facts, "_loader", torch_facts._Loader())
    assert torch_facts.prebuild() is None
