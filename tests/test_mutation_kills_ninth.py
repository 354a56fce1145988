"""Kill tests of the ninth mutation pass (bench/NOTES.md, "Mutation testing (issue 9), ninth
pass"): the real gaps among the survivors of pass 8's held-out sample (mut10-final, rebased run).
Each test asserts behaviour (a refusal's wording, a name kept, arguments given back, what a plan
orders), not the mutant's text. The last three reach functions whose results are cached per kernel
(type checks, plans): each defines its own kernel, so that the function runs inside the test and
mutmut's stats pass records the test as calling it, whatever ran before.
"""
# ruff: noqa: F821, UP037 - strings in kernel annotations are the shape language, not forward references
from __future__ import annotations

import numpy as np
import pytest

import safetile as ct
from safetile.ir.types import MAX_TILE_ELEMENTS

from attack_helpers import inc

torch = pytest.importorskip("torch")


# ----------------------------------------------------------------------------------------------
# factories.py: Memcpy._run


def test_a_memcpy_whose_torch_source_was_reallocated_says_since_the_copy_was_built():
    """The refusal of a memcpy whose raw torch source moved between building the copy and running
    it says when it moved: "since the copy was built"."""
    dst = ct.zeros(8).sync()
    src = torch.arange(8, dtype=torch.float32)
    op = ct.memcpy(dst, src)
    src.resize_(1 << 20)  # beyond the storage: torch moves it
    with pytest.raises(ct.AliasError) as e:
        op.sync()
    assert str(e.value).startswith("memcpy: argument 'src': its torch storage was reallocated (resize_) since the "
                                   "copy was built, so the memory")
    assert not dst.to_numpy().any()


# ----------------------------------------------------------------------------------------------
# graph.py: _record


@pytest.mark.parametrize("thing, name", [(3, "int"), (np.zeros(4, np.float32), "ndarray"), (None, "NoneType")])
def test_a_graph_of_something_that_is_not_a_device_op_names_its_type(thing, name):
    with pytest.raises(ct.DeviceOpError) as e:
        ct.Graph.capture(thing)
    assert str(e.value) == f"a graph captures a DeviceOp, got {name}"
    g = inc(ct.zeros(64).sync().partition(16)).graph()  # and a graph's update() with one
    with pytest.raises(ct.DeviceOpError) as e:
        g.update(thing)
    assert str(e.value) == f"a graph captures a DeviceOp, got {name}"
    g.close()


# ----------------------------------------------------------------------------------------------
# race.py: detect_races of an entry kernel


def test_the_race_report_of_an_entry_launch_names_its_kernel():
    @ct.entry
    def ninth_pass_fill(z: ct.Mut[ct.f32, "B"]):
        z.store(ct.full((B,), 2.0, ct.float32))

    z = ct.zeros(64).sync().partition(16)
    report = ct.detect_races(ninth_pass_fill, None, (z,))
    assert report.kernel == "ninth_pass_fill"
    assert str(report) == "kernel 'ninth_pass_fill' over grid (4, 1, 1): no data races"
    assert np.array_equal(z.unpartition().to_numpy(), np.full(64, 2.0, np.float32))


# ----------------------------------------------------------------------------------------------
# tensor.py: from_dlpack of a foreign CPU object


class ForeignCPU:
    """An object speaking only DLPack (neither an ndarray nor a torch tensor), on the CPU."""

    def __init__(self, array):
        self.array = array

    def __dlpack__(self, **kwargs):
        return self.array.__dlpack__(**kwargs)

    def __dlpack_device__(self):
        return self.array.__dlpack_device__()


def test_from_dlpack_of_a_foreign_cpu_object_keeps_its_name_and_memory():
    a = np.arange(8, dtype=np.float32)
    t = ct.from_dlpack(ForeignCPU(a), name="foreign")
    assert t.label == "tensor 'foreign'"
    assert np.array_equal(t.to_numpy(), a)
    a[3] = 42.0  # zero copy: the tensor is the foreign object's memory
    assert t.to_numpy()[3] == 42.0
    unnamed = ct.from_dlpack(ForeignCPU(a))
    assert "foreign" not in unnamed.label


# ----------------------------------------------------------------------------------------------
# launch.py: LaunchOp._resolve keeps the resolved arguments


def test_a_failing_launch_of_produced_values_gives_them_back_and_raises_its_own_error(monkeypatch):
    """A launch whose argument is a DeviceOp resolves it when it runs; if the launch then fails
    while running, the failure is the error raised (not another one) and the produced partition is
    given back usable (its tensor comes back whole)."""
    import safetile.safe.launch as launch_mod

    class Simulated(RuntimeError):
        pass

    def failing(plan, runtime, stream):
        raise Simulated("simulated: the kernel failed while running")
    monkeypatch.setattr(launch_mod, "run_plan", failing)
    t = ct.from_numpy(np.arange(64, dtype=np.float32)).sync()
    p = t.partition(16)
    op = inc(ct.value(p))
    with pytest.raises(Simulated, match="^simulated: the kernel failed while running$"):
        op.sync()
    assert op.args == (p,)  # the resolved arguments
    monkeypatch.undo()
    (p2,) = inc(p).sync()  # given back: usable by the next launch
    assert np.array_equal(p2.unpartition().to_numpy(), np.arange(64, dtype=np.float32) + 1)


# ----------------------------------------------------------------------------------------------
# checks.py: check_memory's plan reads; check_types' sub-tensor limit (fresh kernels: no cached plan)


def test_a_plan_records_the_memory_the_launch_reads():
    @ct.entry
    def ninth_pass_add(z: ct.Mut[ct.f32, "B"], x: ct.Ref[ct.f32, -1]):
        z.store(z.load() + ct.load_tile_like(x, z))

    z, x = ct.zeros(64).sync(), ct.from_numpy(np.arange(64, dtype=np.float32)).sync()
    op = ninth_pass_add(z.partition(16), x)
    plan = op._plan
    assert plan is not None and len(plan.writes) == 1 and len(plan.reads) == 1
    assert plan.reads[0] == x._extent() and plan.writes[0] == z._extent()
    (zp, x2) = op.sync()
    assert np.array_equal(zp.unpartition().to_numpy(), np.arange(64, dtype=np.float32))


def test_the_largest_tile_is_a_sub_tensor_of_exactly_2_to_the_24_elements():
    """A sub-tensor of MAX_TILE_ELEMENTS (2**24) elements is accepted by a launch's type checks
    (a larger one is refused already by ``partition``)."""
    assert MAX_TILE_ELEMENTS == 1 << 24

    @ct.entry
    def ninth_pass_touch(z: ct.Mut[ct.uint8, "B"]):
        z.store(z.load())

    t = ct.zeros(1 << 25, ct.uint8).sync()
    p = t.partition(1 << 24)
    op = ninth_pass_touch(p)  # checked when built: the type checks ran
    assert op.cancel() == (p,)
    assert p.unpartition().shape == (1 << 25,)


# ----------------------------------------------------------------------------------------------
# entry.py: KernelCaches.store's limit


def test_a_kernel_cache_table_starts_over_once_it_holds_its_limit():
    from safetile.safe.entry import KernelCaches
    caches = KernelCaches()
    table: dict = {}
    for i in range(KernelCaches.LIMIT):
        assert caches.store(table, (i,), i) == i
    assert len(table) == KernelCaches.LIMIT
    assert caches.store(table, ("new",), "x") == "x"
    assert table == {("new",): "x"}  # at the limit the table starts over before the new entry
