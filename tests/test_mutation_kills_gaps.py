"""Kill tests of the third mutation pass (bench/NOTES.md, "Mutation testing (issue 9), third
pass"): behaviours a sampled mutmut run showed no test pinned. Each asserts what a user sees
(a message, a result, a refusal), never the text of a mutant."""
from __future__ import annotations

import asyncio
import re
import threading

import numpy as np
import pytest

import safetile as ct

from attack_helpers import add, inc, poisoned, refused, rnd


@ct.entry
def ref_partition_of_three(z: ct.Mut[ct.f32, "B"], x: ct.Ref[ct.f32, -1]):
    z.store(x.partition((3,)).load((ct.bid(0),)))


@ct.entry
def mut_partition_of_three(z: ct.Mut[ct.f32, "B"], x: ct.Ref[ct.f32, -1]):
    z.partition((3,)).store(ct.full((3,), 1.0, ct.float32), (0,))


@pytest.mark.parametrize("kernel", [ref_partition_of_three, mut_partition_of_three], ids=["Ref", "Mut"])
def test_an_in_kernel_partition_shape_that_is_no_tile_shape_is_named(kernel):
    """A partition taken inside a kernel needs a tile shape (powers of two): the error says it is
    the partition shape that is wrong, at the user's line."""
    z, x = poisoned(16).partition(16), rnd(16, seed=1)
    e = refused([z, x], lambda: kernel(z, x), ct.TileTypeError,
                re.escape("tile dimensions must be powers of two, got partition shape (3,)"))
    assert e.loc is not None and e.loc.filename.endswith("test_mutation_kills_gaps.py")


WAIT = 10  # seconds: an upper bound for events that come at once; never reached when the code is right


class Pause:
    """A ``then`` closure that stops its chain until ``go`` is set (``entered``: it is stopped there)."""

    def __init__(self):
        self.entered, self.go = threading.Event(), threading.Event()

    def __call__(self, value):
        self.entered.set()
        assert self.go.wait(WAIT)
        return value


@pytest.mark.parametrize("how", [ct.copy, lambda x: ct.to_device(x, "cpu")], ids=["copy", "to_device"])
def test_a_copy_only_reads_its_source(how):
    """A copy reads its source: a terminal still running with the same memory as a read-only
    argument does not hold it up (readers never wait for readers). The copy is of a view taken
    before the launch (the launched tensor itself is lent to the terminal until it ends)."""
    z, x = ct.zeros(64).sync().partition(16), rnd(64, seed=5)
    view = x[:]
    pause = Pause()
    fut = ct.Stream("cpu").submit(add(z, x).then(pause).sync)
    assert pause.entered.wait(WAIT)
    copied = []
    copier = threading.Thread(target=lambda: copied.append(how(view).sync().to_numpy()), daemon=True)
    copier.start()
    copier.join(3)
    finished_beside_the_launch = not copier.is_alive()
    pause.go.set()
    fut.result(WAIT)
    copier.join(WAIT)
    assert finished_beside_the_launch, "a copy waited for a running launch that only reads its source"
    assert np.array_equal(copied[0], x.to_numpy())


def test_reshape_refuses_sizes_that_are_not_integers():
    t = ct.zeros(16).sync().named("r")
    for shape in ((2.0, 8), (2, "8"), (True, 16)):
        with pytest.raises(ct.TensorError, match=re.escape(f"reshape of tensor 'r': a shape is sizes (and at most "
                                                           f"one -1), got {shape!r}")):
            t.reshape(*shape)
    assert t.reshape(np.int64(2), 8).shape == (2, 8)


def test_await_inside_a_running_chain_is_refused_by_name():
    """``await op`` inside a ``then`` closure would wait for the chain it runs in: refused, naming
    ``await``, and the chain goes on."""
    z = ct.zeros(16).sync().partition(16)
    inner = ct.value(1)

    async def wait_for_inner():
        return await inner

    def nested(value):
        with pytest.raises(ct.NestedSyncError, match=r"^await called while a device operation is executing"):
            asyncio.run(wait_for_inner())
        return value
    (out,) = inc(z).then(nested).sync()
    assert np.array_equal(out.unpartition().to_numpy(), np.ones(16, np.float32))


def test_a_dtype_generic_bound_twice_names_both_element_types():
    @ct.entry
    def two(z: ct.Mut["T", "B"], x: ct.Ref["T", -1]):  # noqa: F821
        z.store(ct.load_tile_like(x, z))
    z, x = poisoned(16).partition(16), ct.zeros(16, dtype=ct.int32).sync()
    refused([z, x], lambda: two(z, x), ct.LaunchTypeError,
            re.escape("kernel 'two': generic 'T' is float32 from argument 'z' but int32 from argument 'x'"))
