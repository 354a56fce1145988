"""The C++ fact reader (runtime/torch_facts.py) answers exactly what torch's own methods answer, or
declines, for every kind of tensor a launch may meet; launches through it behave as without it."""
from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")
from safetile.runtime import torch_facts  # noqa: E402


@pytest.fixture(scope="module")
def facts_module():
    m = torch_facts.module(build=True)
    if m is None:
        pytest.skip("the C++ fact reader cannot be built here (no C++ compiler or torch headers)")
    return m


def _torch_answer(t):
    return (t.data_ptr(), t.dtype, tuple(t.shape), t.stride(), t.get_device(), t.is_neg())


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
    yield "meta", torch.empty(5, 6, device="meta")
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
