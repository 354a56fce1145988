"""Adversarial corpus: raw arrays re-pointed after the checks read them (red team round 4: 403, 414).

A raw NumPy array or torch tensor passed as a ``ct.Ref`` stays in its owner's hands, who can
re-point it in place (``a.strides = ...``, ``a.shape = ...``, torch ``set_``, ``resize_``,
``as_strided_``) between building a launch and running it, or from code that runs inside the
checks (a precondition). Every case here is either refused with a safetile error and nothing
written, or computed on exactly the memory that was checked (never on the re-pointed memory).
Both backends: the CPU backend and the Triton backend in Triton's interpreter.
"""
from __future__ import annotations

import contextlib
import gc
import threading
import time

import numpy as np
import pytest

import safetile as ct

from attack_helpers import refused, spin_write
from triton_interp import triton_interpreter

torch = pytest.importorskip("torch")

HOOK: dict = {}


def _repoint(x):
    """A precondition that re-points the raw array stored in ``HOOK`` (after the aliasing check)."""
    f = HOOK.pop("f", None)
    if f is not None:
        f()
    return True


@ct.entry
def fill(z: ct.Mut[ct.f32, "B"], x: ct.Ref[ct.f32, -1]):
    z.store(ct.load_tile_like(x, z) + 1.0)


@ct.entry(preconditions=[_repoint])
def fill_pre(z: ct.Mut[ct.f32, "B"], x: ct.Ref[ct.f32, -1]):
    z.store(ct.load_tile_like(x, z) + 1.0)


@pytest.fixture(params=["cpu", "triton"])
def backend(request):
    with triton_interpreter() if request.param == "triton" else contextlib.nullcontext():
        yield request.param


def _numpy_case():
    """base[:64] is the output (poisoned), base[64:] the input 100..163, ``a`` a raw view of the input."""
    base = np.full(128, np.nan, np.float32)
    base[64:] = np.arange(64) + 100
    a = np.ndarray((64,), np.float32, buffer=base, offset=256)
    return base, a, ct.from_dlpack(base[:64]).partition(64)


def _torch_case():
    """``out`` is the output (poisoned), ``t`` a raw tensor of its own holding 100..163."""
    out = torch.full((64,), float("nan"))
    return out, torch.arange(64.0) + 100, ct.from_dlpack(out).partition(64)


EXPECTED = np.arange(64, dtype=np.float32) + 101  # the checked input, plus one


# ----------------------------------------------------------------------------- between build and run (403)

@pytest.mark.parametrize("change", ["strides", "shape"])
def test_numpy_ref_repointed_after_build_runs_on_the_checked_memory(backend, change):
    base, a, z = _numpy_case()
    op = fill(z, a)
    if change == "strides":
        a.strides = (-4,)  # now base[64], base[63], ...: over the output
    else:
        a.shape = (2, 32)
    z, x = op.sync()
    assert np.array_equal(base[:64], EXPECTED)
    assert np.array_equal(base[64:], EXPECTED - 1)  # the input is not written


@pytest.mark.parametrize("change", ["set_", "as_strided_", "resize_ smaller"])
def test_torch_ref_repointed_after_build_runs_on_the_checked_memory(backend, change):
    out, t, z = _torch_case()
    op = fill(z, t)
    if change == "set_":
        t.set_(out.untyped_storage(), 0, (64,), (1,))  # now exactly the output's memory
    elif change == "as_strided_":
        t.as_strided_((32,), (2,), 1)
    else:
        t.resize_(8)
    op.sync()
    assert np.array_equal(out.numpy(), EXPECTED)


def test_torch_ref_whose_storage_is_reallocated_after_build_is_refused(backend):
    out = torch.full((64,), float("nan"))
    z = ct.from_dlpack(out).partition(64)
    t = torch.arange(64.0) + 100
    op = fill(z, t)
    t.resize_(1 << 20)  # beyond the storage: torch moves the storage, under every tensor on it
    refused([z, out], op.sync, ct.AliasError, "reallocated")
    assert np.isnan(out.numpy()).all()
    z, _ = fill(z, t[:64]).sync()  # usable again, and a fresh launch is checked on the new memory
    assert np.array_equal(out.numpy(), EXPECTED)


def test_original_storage_freed_after_repointing_stays_alive_for_the_launch(backend):
    out = torch.full((64,), float("nan"))
    z = ct.from_dlpack(out).partition(64)
    t = torch.arange(64.0) + 100
    op = fill(z, t)
    t.set_(torch.zeros(16))  # the user's tensor lets go of the checked storage
    gc.collect()
    junk = [torch.full((64,), -1.0) for _ in range(64)]  # memory freed now would be handed out again
    op.sync()
    assert np.array_equal(out.numpy(), EXPECTED)
    del junk
    zn = ct.from_dlpack(np.full(64, np.nan, np.float32))
    nz = zn[:].partition(64)
    op = fill(nz, np.arange(64, dtype=np.float32) + 100)  # the only reference to this input is the launch's
    gc.collect()
    op.sync()
    assert np.array_equal(zn.to_numpy(), EXPECTED)


@pytest.mark.parametrize("how", ["set_", ".data =", "as_strided_ then set_"])
def test_a_wrapped_cpu_torch_tensor_repointed_in_place_keeps_safetiles_memory(how):
    """ct.from_dlpack of a CPU torch tensor views its storage through NumPy: the view must hold the
    storage (through an alias of its own), not the caller's tensor, whose storage set_() or a .data
    assignment replaces. Else the old storage is freed and the next launch writes whatever torch's
    allocator handed that memory to (red team round 6, 617)."""
    rng = np.random.default_rng(11)
    start = rng.standard_normal(1 << 14).astype(np.float32)
    t = torch.from_numpy(start.copy())
    p = ct.from_dlpack(t).partition(1024)
    x = ct.from_dlpack(rng.standard_normal(1 << 14).astype(np.float32)).shared()
    if how == "set_":
        t.set_(torch.zeros(16))
    elif how == ".data =":
        t.data = torch.zeros(16)
    else:
        t.as_strided_((8,), (2,))
        t.set_(torch.empty(0))
    gc.collect()
    junk = [torch.full((1 << 14,), 7.0) for _ in range(64)]  # memory freed now would be handed out again
    (p, x) = fill(p, x).sync()
    assert all(bool((j == 7.0).all()) for j in junk)  # no fresh tensor was written
    np.testing.assert_array_equal(p.unpartition().to_numpy(), x.to_numpy() + 1.0)


# ----------------------------------------------------------------------------- from inside the checks (414)

@pytest.mark.parametrize("how", ["numpy strides", "torch set_", "torch as_strided_", "torch resize_ smaller"])
def test_precondition_repointing_the_ref_changes_nothing_of_what_runs(backend, how):
    if how.startswith("numpy"):
        base, a, z = _numpy_case()
        HOOK["f"] = lambda: setattr(a, "strides", (-4,))
        fill_pre(z, a).sync()
        got = base[:64]
    else:
        out, t, z = _torch_case()
        HOOK["f"] = {"torch set_": lambda: t.set_(out.untyped_storage(), 0, (64,), (1,)),
                     "torch as_strided_": lambda: t.as_strided_((32,), (2,), 1),
                     "torch resize_ smaller": lambda: t.resize_(4)}[how]
        fill_pre(z, t).sync()
        got = out.numpy()
    assert "f" not in HOOK  # the precondition ran
    assert np.array_equal(got, EXPECTED)


def test_precondition_reallocating_the_refs_storage_is_refused(backend):
    out = torch.full((64,), float("nan"))
    z = ct.from_dlpack(out).partition(64)
    t = torch.arange(64.0) + 100
    HOOK["f"] = lambda: t.resize_(1 << 20)
    refused([z, out], lambda: fill_pre(z, t).sync(), ct.AliasError, "reallocated")
    assert "f" not in HOOK


class _Repointing:
    """A ``ct.Constant`` value whose ``__hash__`` (run while the launch's key is looked up) moves
    the raw Ref in ``HOOK`` away from the output."""

    def __hash__(self):
        f = HOOK.pop("f", None)
        if f is not None:
            f()
        return 7

    def __eq__(self, other):
        return isinstance(other, _Repointing)


@ct.entry
def fill_const(z: ct.Mut[ct.f32, "B"], x: ct.Ref[ct.f32, -1], c: ct.Constant[object]):
    z.store(ct.load_tile_like(x, z) + 1.0)


def test_plan_is_checked_on_the_facts_it_is_cached_under(backend):
    """The Ref overlaps the output when its facts are read; user code run while the key is looked
    up moves it away. The checks must judge the memory that runs (refused), and must not cache a
    plan that passed on other facts under the overlapping ones (a later launch would reuse it)."""
    out = torch.full((128,), float("nan"))
    z = ct.from_dlpack(out[:64]).partition(64)
    for _ in range(2):
        t = out[32:96]  # overlaps the output
        HOOK["f"] = lambda t=t: t.set_(torch.zeros(64))  # now memory of its own
        refused([z, out], lambda t=t: fill_const(z, t, _Repointing()), ct.AliasError, "overlaps")
        assert "f" not in HOOK


# ----------------------------------------------------------------------------- copies and graphs

def test_memcpy_source_repointed_after_build_copies_the_checked_memory():
    base = np.full(128, np.nan, np.float32)
    base[64:] = np.arange(64) + 100
    a = np.ndarray((64,), np.float32, buffer=base, offset=256)
    dst = ct.from_dlpack(base[:64])
    op = ct.memcpy(dst, a)
    a.strides = (-4,)  # now overlapping the destination
    op.sync()
    assert np.array_equal(base[:64], EXPECTED - 1)
    out = torch.full((64,), float("nan"))
    t = torch.arange(64.0) + 100
    op = ct.memcpy(ct.from_dlpack(out), t)
    t.resize_(1 << 20)
    with pytest.raises(ct.AliasError, match="reallocated"):
        op.sync()
    assert np.isnan(out.numpy()).all()


def test_graph_replays_run_on_the_captured_memory_and_refuse_reallocated_storage():
    out = torch.full((64,), float("nan"))
    z = ct.from_dlpack(out).partition(64)
    t = torch.arange(64.0) + 100
    g = fill(z, t).graph()
    g.launch()
    assert np.array_equal(out.numpy(), EXPECTED)
    keep = t[:]  # another tensor on the same storage
    t.set_(torch.zeros(64))  # the argument itself changed: refused (round 2, 214)
    with pytest.raises(ct.GraphCaptureError, match="changed since the capture"):
        g.launch()
    g.close()
    t = keep
    g = fill(z, t).graph()
    t.resize_(1 << 20)  # the storage moved under the capture's alias
    out.fill_(float("nan"))
    with pytest.raises(ct.GraphCaptureError):
        g.launch()
    assert np.isnan(out.numpy()).all()
    g.close()


# ----------------------------------------------------------------------------- racing launches (403, part 2)

def test_ref_repointed_onto_a_running_launchs_output_does_not_read_it():
    """Launch A writes base[:N] slowly in another thread; B's Ref, checked over base[N:], is
    re-pointed into A's output before B runs: B reads its checked memory, never A's output."""
    n = 1024
    base = np.zeros(2 * n, np.float32)
    base[n:] = 5.0
    za = ct.from_dlpack(base[:n]).partition(64)
    a = np.ndarray((n,), np.float32, buffer=base, offset=4 * n)
    zb = ct.from_dlpack(np.full(n, np.nan, np.float32))
    opb = fill(zb[:].partition(64), a)
    started = threading.Event()

    def run_a():
        started.set()
        spin_write(za, 7.0, 3000).sync()
    th = threading.Thread(target=run_a)
    th.start()
    started.wait()
    time.sleep(0.01)
    a.strides = (-4,)  # now base[n], base[n-1], ...: A's output
    opb.sync()
    th.join()
    assert np.array_equal(zb.to_numpy(), np.full(n, 6.0, np.float32))
    assert np.array_equal(base[:n], np.full(n, 7.0, np.float32))
