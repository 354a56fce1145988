"""Kill tests of the eighth mutation pass (bench/NOTES.md, "Mutation testing (issue 9), eighth
pass"): mutants of src/safetile/safe/ that survived pass 7's held-out sample (mut9-final), and the
GPU-side survivors a CPU test reaches honestly (a recording stand-in for the GPU runner). Each test
asserts behaviour (a result against NumPy, a refusal's wording, what a replay holds), not the
mutant's text.
"""
# ruff: noqa: F821, UP037 - strings in kernel annotations are the shape language, not forward references
from __future__ import annotations

import re
import sys
import threading

import numpy as np
import pytest

import safetile as ct
from safetile.safe.deviceop import ExecContext

from attack_helpers import WAIT, add, inc
from test_constant_keys import PAIRS, _value, safe


def _here() -> int:
    """The line of the caller's next line (where the call a refusal locates is made)."""
    return sys._getframe(1).f_lineno + 1


# ----------------------------------------------------------------------------------------------
# partition.py


def test_try_partition_of_a_handle_no_launch_holds_moves_its_tensor_into_a_partition():
    xs = np.arange(64, dtype=np.float32)
    s = ct.from_numpy(xs).sync().shared()
    line = _here()
    p = s.try_partition(16)
    assert isinstance(p, ct.Partition) and p.grid() == (4,) and p.tile_shape == (16,)
    (p,) = inc(p).sync()  # the partition is the tensor's only owner now: a launch may write it
    with pytest.raises(ct.OwnershipError, match="^" + re.escape(f"{s.label} cannot be read: it was unwrapped at "
                                                                f"test_mutation_kills_eighth.py:{line}") + "$"):
        s.to_numpy()
    np.testing.assert_array_equal(p.unpartition().to_numpy(), xs + 1)


def test_a_mapped_partition_records_where_map_was_called():
    p = ct.zeros(64).sync().partition(16)
    line = _here()
    m = p.map(2)
    with pytest.raises(ct.UseAfterMoveError, match="^" + re.escape(
            f"{p.label} cannot be inspected: it was moved into {m.label} (by .map() at "
            f"test_mutation_kills_eighth.py:{line}); get it back with .unmap()") + "$"):
        p.grid()
    assert m.unmap() is p and p.grid() == (4,)


def test_borrowing_a_moved_tensor_is_refused_by_name():
    t = ct.zeros(16).sync()
    line = _here()
    s = t.shared()
    with pytest.raises(ct.UseAfterMoveError, match="^" + re.escape(
            f"{t.label} cannot be borrowed: it was moved into {s.label} (by .shared() at "
            f"test_mutation_kills_eighth.py:{line}); get it back with .try_unwrap()") + "$"):
        ct.borrow_mut(t)
    assert s.try_unwrap() is t


@ct.entry
def fill_mapped(c: ct.MappedMut[ct.f32, ("B",)]):
    for idx in c.iter_indices():
        c.store(c.load(idx) + 1.0, idx)


def test_leaving_a_borrow_keeps_a_mapped_partition_lent_to_a_running_chain_until_the_chain_ends(monkeypatch):
    """A borrowed partition mapped and lent to a running terminal (a chain using it) is released when
    that terminal has ended, not when the block ends: the chain's later launches of it still run."""
    waiting, entered = threading.Event(), threading.Event()
    wait_ended = ExecContext.wait_ended

    def watched(self):
        waiting.set()
        wait_ended(self)
    monkeypatch.setattr(ExecContext, "wait_ended", watched)

    def later(r):
        entered.set()
        assert waiting.wait(WAIT)  # the borrow's exit has looked at the partition and waits for this chain
        return fill_mapped(*r)
    t = ct.zeros(64).sync()
    worker = ct.Stream("cpu")  # the runtime's own worker thread drives the terminal
    with ct.borrow_mut(t) as b:
        m = b.partition(16).map(2)
        fut = worker.submit(fill_mapped(m).then(later).sync)
        assert entered.wait(WAIT)
    (out,) = fut.result(WAIT)  # the second launch ran: the partition was not released under it
    assert out is m
    np.testing.assert_array_equal(t.to_numpy(), np.full(64, 2.0, np.float32))
    with pytest.raises(ct.OwnershipError, match="its partition was released"):
        m.grid()


# ----------------------------------------------------------------------------------------------
# launch.py: a Constant's part of the plan key


@pytest.mark.parametrize("pair", PAIRS, ids=lambda p: f"{p[0]!r}-{p[1]!r}")
def test_equal_constants_launched_on_the_same_partition_do_not_share_a_plan(pair):
    """The same partition (the same facts) with a Constant equal under == but computing differently:
    the plan of the first must not run for the second, in either order (tests/test_constant_keys.py
    launches each on a fresh partition, whose facts alone make the plan keys differ)."""
    for order in (pair, pair[::-1]):
        kernel = ct.entry(safe.fn)  # caches of its own
        part = ct.from_numpy(np.full(16, np.nan, np.float32)).sync().partition(16)
        for c in order + order:
            part, _ = kernel(part, c).sync()
            np.testing.assert_array_equal(part.to_numpy(), np.full(16, _value(c), np.float32),
                                          err_msg=f"{c!r} after {order!r}")


# ----------------------------------------------------------------------------------------------
# graph.py: the values a replay holds


def test_a_replay_holds_a_partition_a_host_closure_made_during_the_capture():
    """A host closure may consume what the capture's launches gave back and return something new
    (here a partition of another shape, inside a tuple): a replay writes that memory, so it holds
    the new partition as it holds its launches' arguments, and refuses while it is moved elsewhere."""
    t = ct.zeros(64).sync()
    op = inc(t.partition(16)).then(lambda r: (r[0].unpartition().partition(32),))
    g = op.graph()
    (q,) = g.value
    before = q.to_numpy()
    line = _here()
    m = q.map(1)
    with pytest.raises(ct.UseAfterMoveError, match="^" + re.escape(
            f"{q.label} cannot be used by a replay of {g.label}: it was moved into {m.label} (by .map() at "
            f"test_mutation_kills_eighth.py:{line}); get it back with .unmap()") + "$"):
        g.launch()
    assert m.unmap() is q
    np.testing.assert_array_equal(q.to_numpy(), before)  # nothing ran
    g.launch()
    np.testing.assert_array_equal(q.to_numpy(), before + 1)
    g.close()


# ----------------------------------------------------------------------------------------------
# types.py


def test_an_unsupported_annotation_is_refused_saying_what_is_supported():
    def k(z: ct.Mut[ct.f32, "B"], w: ct.Array):
        pass
    with pytest.raises(ct.TileDeclarationError, match="^" + re.escape(
            f"kernel 'k', parameter 'w': unsupported annotation {ct.Array!r}; use ct.Mut[...], ct.Ref[...], "
            "ct.MappedMut[...], a scalar type (ct.f32, int, float) or ct.Constant[int]\n") + "  File "):
        ct.entry(k)


# ----------------------------------------------------------------------------------------------
# memory.py: raw torch arguments


def test_an_empty_torch_argument_launches_like_a_non_empty_one():
    """An empty torch tensor's extent still points at its data: the launch's pin (the pointer it was
    checked on) holds, so the launch runs instead of being refused as a reallocated storage."""
    torch = pytest.importorskip("torch")

    @ct.entry
    def fill_and_count(z: ct.Mut[ct.f32, "B"], x: ct.Ref[ct.f32, -1]):
        z.store(ct.full((B,), 1.0, ct.float32) * x.shape[0] + 2.0)
    for x in (torch.empty(0), ct.from_dlpack(torch.empty(0)).shared()):
        z = ct.zeros(8).sync().partition(8)
        z, _ = fill_and_count(z, x).sync()
        np.testing.assert_array_equal(z.unpartition().to_numpy(), np.full(8, 2.0, np.float32))


def test_a_torch_parameter_passed_raw_is_checked_on_its_current_data():
    """A raw ``nn.Parameter`` (a torch tensor subclass) gets safetile's own plain alias, read again on
    every launch: after ``param.data = ...`` points it at other memory the next launch reads that
    memory (keyed on the parameter object itself, the first plan would be refused as moved)."""
    torch = pytest.importorskip("torch")
    w = torch.nn.Parameter(torch.arange(16, dtype=torch.float32), requires_grad=False)
    z = ct.zeros(16).sync().partition(16)
    z, _ = add(z, w).sync()
    w.data = torch.full((16,), 10.0)
    z, _ = add(z, w).sync()
    np.testing.assert_array_equal(z.unpartition().to_numpy(), np.arange(16, dtype=np.float32) + 10)


# ----------------------------------------------------------------------------------------------
# GPU-side code reached on the CPU with a stand-in for what only CUDA has (a CUDA stream's torch
# stream, a CUDA event, work declared on a CUDA device): what is checked is safetile's own logic
# around it (which stream the runner is given, what the host waits on, what a terminal refuses)


def test_a_launch_hands_the_gpu_runner_the_torch_stream_of_its_terminals_stream(monkeypatch):
    """The Triton backend's runner gets the torch stream of the stream the terminal drives (here a
    marker on a CPU stream stands for a CUDA stream's torch stream; the runner records it)."""
    torch = pytest.importorskip("torch")
    from triton_interp import triton_interpreter
    kernel = ct.entry(inc.fn)  # caches of its own
    with triton_interpreter():
        (z,) = kernel(ct.from_dlpack(torch.zeros(64)).partition(16)).sync()  # compiled, run by the interpreter
        plan = kernel.caches.last[1]
        assert plan.backend == "triton" and plan.compiled.gpu is not None
        given = []
        monkeypatch.setattr(plan.compiled, "gpu", lambda ts, grid, runtime: given.append((ts, grid)))
        s = ct.Stream("cpu")
        marker = object()
        monkeypatch.setattr(s, "torch_stream", marker)
        (z,) = kernel(z).sync_on(s)
    assert given == [(marker, (4, 1, 1))]
    np.testing.assert_array_equal(z.unpartition().to_numpy(), np.ones(64, np.float32))  # the stub ran nothing


class _Event:
    """Stands for the CUDA event recorded after an entry's submitted GPU work (never complete here)."""

    def __init__(self):
        self.waited = 0

    def query(self) -> bool:
        return False

    def synchronize(self) -> None:
        self.waited += 1


def test_a_host_claim_after_submitted_gpu_work_waits_for_its_event_on_the_host():
    """A host access (or CPU work) conflicting with GPU work already submitted is not a blocker (it is
    submitted) but must not touch the memory before that work has run: it waits on the work's event."""
    from types import SimpleNamespace

    from safetile.safe.memory import InFlight, Registry, extent_of
    reg = Registry()
    buf = np.zeros(8, np.float32)
    gpu = InFlight("GPU work", SimpleNamespace(is_cuda=True, torch_stream=None))  # a CUDA stream's entry
    reg.claim(gpu, gpu, [extent_of(buf)], [])
    gpu.set_enqueued()
    gpu._event = ev = _Event()
    host = InFlight("a host read", None)
    reg.claim(host, host, [], [extent_of(buf[2:4])])
    assert ev.waited == 1 and reg._entries == (gpu, host)
    other = InFlight("a read elsewhere", None)
    reg.claim(other, other, [], [extent_of(np.zeros(8, np.float32))])  # no conflict: no wait
    assert ev.waited == 1


def _on_another_device(s) -> str:
    return re.escape(f"a test op runs on cuda:0, but this terminal drives {s!r} (the stream given to it); drive it on "
                     "a stream of cuda:0 (ct.Stream('cuda:0'))")


class _Op:
    label = "a test op"

    def __str__(self) -> str:
        return self.label


def test_a_terminal_given_a_cpu_stream_refuses_work_declared_on_a_gpu_device():
    """One terminal never drives GPU work from a CPU stream it was given (``sync_on``): a launch's claim
    (``begin``) and a copy's or collective's step (``submit``) of work on cuda:0 are refused before
    anything is claimed or run."""
    s = ct.Stream("cpu")
    ctx = ExecContext(s, label="a test terminal")  # pinned: the caller chose the stream
    buf = np.zeros(8, np.float32)
    from safetile.safe.memory import extent_of
    op = _Op()
    with pytest.raises(ct.DeviceOpError, match="^" + _on_another_device(s) + "$"):
        ctx.begin(op, op, [extent_of(buf)], [], "cuda:0")
    assert ctx.entry is None and ctx.stream is s
    ran = []
    with pytest.raises(ct.DeviceOpError, match="^" + _on_another_device(s) + "$"):
        ctx.submit(op, ran.append, [extent_of(buf)], [], "cuda:0")
    assert ran == [] and ctx.entry is None
    ctx.submit(op, ran.append, [extent_of(buf)], [], "cpu")  # the same step on the stream's device runs
    assert ran == [s]
    ctx.finish(True)
