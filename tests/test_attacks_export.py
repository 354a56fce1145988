"""Adversarial corpus, DLPack exports (red team round 3, attacks 300 and 302).

300: an export taken *before* ``.shared()`` (``a = np.from_dlpack(t); s = t.shared()``) would
be a writable alias of the Shared. An export claims its memory (``safe/claims.py``) through a
fresh alias object that the consumer keeps alive, so ``.shared()`` (by any route) is refused
while an overlapping export lives, and allowed once it is gone.

302: read-only NumPy memory reached through torch is outside (torch has no read-only flag);
what safetile can see, it refuses.
"""
from __future__ import annotations

import gc
import threading
import warnings
import weakref

import numpy as np
import pytest

import safetile as ct
from safetile.safe import claims

from attack_helpers import refused, rnd
from triton_interp import triton_interpreter

torch = pytest.importorskip("torch")

EXPORTED = "DLPack export"


class Producer:
    """A bare DLPack producer handing out one given capsule (a consumer of a raw capsule)."""

    def __init__(self, capsule, device=(1, 0)):
        self.capsule, self.device = capsule, device

    def __dlpack__(self, **kw):
        return self.capsule

    def __dlpack_device__(self):
        return self.device


CONSUMERS = {
    "np.from_dlpack": np.from_dlpack,
    "torch.from_dlpack": torch.from_dlpack,
    "legacy capsule, unconsumed": lambda t: t.__dlpack__(),
    "versioned capsule, unconsumed": lambda t: t.__dlpack__(max_version=(1, 0)),
    "legacy capsule, consumed by NumPy": lambda t: np.from_dlpack(Producer(t.__dlpack__())),
    "versioned capsule, consumed by torch": lambda t: torch.from_dlpack(t.__dlpack__(max_version=(1, 0))),
}


def share_all_ways(t):
    """The routes that freeze a tensor's memory (op.shared(): see the test below)."""
    return [lambda: t.shared(), lambda: ct.shared(t), lambda: ct.Shared(t)]


@pytest.mark.parametrize("consumer", list(CONSUMERS))
def test_an_export_taken_before_shared_refuses_shared_until_it_is_dropped(consumer):
    t = rnd(64, seed=1)
    a = CONSUMERS[consumer](t)
    for share in share_all_ways(t):
        refused([t], share, ct.AliasError, f"{EXPORTED} of tensor#.*copy=True")
    assert isinstance(ct.copy(t).shared().sync(), ct.Shared)  # a copy is other memory: unaffected
    writable = type(a).__name__ != "PyCapsule" and (not isinstance(a, np.ndarray) or a.flags.writeable)
    if writable:  # (NumPy imports a legacy capsule read-only)
        a[1] = 5  # still an ordinary writable alias of a tensor that is not shared
        assert t.to_numpy()[1] == 5
    del a  # the export is gone: the memory can be frozen, and nothing writes it any more
    s = t.shared()
    assert s.to_numpy()[1] == (5 if writable else rnd(64, seed=1).to_numpy()[1])


@ct.entry
def inc(z: ct.Mut[ct.f32, "B"]):
    z.store(z.load() + 1.0)


def test_op_shared_is_refused_while_an_export_of_its_result_lives():
    t = rnd(64, seed=10)
    a = torch.from_dlpack(t[60:])
    with pytest.raises(ct.AliasError, match=EXPORTED):
        inc(t.partition(16)).shared().sync()
    a[:] = 0  # the launch ran; its result was given back (not shared), and the export still writes it
    assert np.array_equal(t.to_numpy(), np.r_[rnd(64, seed=10).to_numpy()[:60] + 1, np.zeros(4, np.float32)])
    del a
    s, = inc(t.partition(16)).shared().sync()
    assert isinstance(s, ct.Shared)


def test_views_of_an_export_keep_it_alive():
    t = rnd(64, seed=2)
    a = np.from_dlpack(t)
    b = a[8:40].reshape(4, 8)[1:]
    y = torch.from_dlpack(t)[4:].view(4, 15)
    del a
    refused([t], t.shared, ct.AliasError, EXPORTED)
    del b
    refused([t], t.shared, ct.AliasError, EXPORTED)
    del y
    t.shared()


def test_a_view_of_a_view_exported_refuses_sharing_what_it_overlaps_only():
    t = rnd(64, seed=3)
    a = torch.from_dlpack(t[16:48][8:16])  # bytes 24..32 of t
    refused([t], lambda: t[20:30].shared(), ct.AliasError, EXPORTED)
    refused([t], lambda: t[31:33].shared(), ct.AliasError, EXPORTED)
    left, right = t[:24].shared(), t[32:].shared()  # disjoint: fine
    refused([t], t.shared, ct.AliasError, "(read-only shared memory|DLPack export)")
    del a, left, right
    t.shared()


def test_an_export_of_a_slice_refuses_sharing_the_whole_and_the_reverse():
    t = rnd(64, seed=4)
    v = t[:]
    a = np.from_dlpack(t[40:41])
    refused([t], t.shared, ct.AliasError, EXPORTED)
    del a
    s = t.shared()
    assert isinstance(s, ct.Shared)
    refused([v], lambda: np.from_dlpack(v[40:41]), ct.AliasError, "read-only shared memory")  # round 2


def test_copies_are_not_tracked():
    t = rnd(64, seed=5)
    c1 = np.from_dlpack(t, copy=True)
    c2 = torch.from_dlpack(t.__dlpack__(copy=True))
    c3 = t.to_numpy()
    s = t.shared()
    c1[:], c3[:] = 9, 9
    c2[:] = 9
    assert np.array_equal(s.to_numpy(), rnd(64, seed=5).to_numpy())


def test_an_export_is_refused_after_sharing_and_the_error_names_it():
    t = rnd(64, seed=6)
    a = np.from_dlpack(t[3:9])
    e = refused([t], t.shared, ct.AliasError)
    msg = str(e)
    assert "tensor#" in msg and "test_attacks_export.py" in msg, msg  # which export, made where
    assert "t.to_numpy()" in msg and "copy=True" in msg, msg  # and what to do instead
    del a


def test_exports_end_when_their_holders_are_collected_no_leak():
    gc.collect()  # the baseline without garbage of earlier tests (.shared() below collects it)
    before = claims.CLAIMS.holders(claims.WRITABLE)
    t = rnd(64, seed=7)
    for _ in range(50):
        np.from_dlpack(t)
        torch.from_dlpack(t)[3] = 1.0
        t.__dlpack__(max_version=(1, 0))
    assert claims.CLAIMS.holders(claims.EXPORTED) == 0
    a = torch.from_dlpack(t)
    cycle = [a]
    cycle.append(cycle)  # kept alive only by a reference cycle: .shared() collects it
    del a, cycle
    assert isinstance(t.shared(), ct.Shared)
    assert claims.CLAIMS.holders(claims.EXPORTED) == 0 and claims.CLAIMS.holders(claims.WRITABLE) == before


def test_a_failed_export_claims_nothing_even_while_its_error_is_kept():
    t = ct.zeros(64, dtype=ct.bfloat16).sync()  # DLPack has no bfloat16 in NumPy's exporter
    kept = []
    for make in (np.from_dlpack, lambda t: t.__dlpack__(dl_device=(2, 0))):
        try:
            make(t)
        except BufferError as e:  # DLPack's own refusal, as consumers expect
            kept.append(e)  # its traceback keeps the export's frame alive
    assert len(kept) == 2 and claims.CLAIMS.holders(claims.EXPORTED) == 0
    assert isinstance(t.shared(), ct.Shared)


@ct.kernel
def fill_blocks(a, v: float):
    ct.store(a, (ct.bid(0),), ct.full((16,), 1.0, ct.float32) * v)


@pytest.mark.parametrize("backend", ["cpu", "triton"])
def test_unchecked_launches_export_only_for_the_launch(backend):
    """ct.launch takes a safetile tensor by DLPack: its transient export must not refuse a
    later .shared(); an export the caller keeps and passes in does (G6-Outside: a raw array)."""
    import contextlib
    ctx = triton_interpreter() if backend == "triton" else contextlib.nullcontext()
    with ctx:
        t = rnd(64, seed=8)
        ct.launch(None, (4, 1, 1), fill_blocks, (t, 3.0))
        ct.launch(None, (4, 1, 1), fill_blocks, (t[16:], 2.0))  # and a view of it
        with pytest.raises(ct.LaunchTypeError):
            ct.launch(None, (4, 1, 1), fill_blocks, (t, "x"))  # a refused one
        s = t.shared()
        assert np.array_equal(s.to_numpy(), np.r_[np.full(16, 3.0), np.full(48, 2.0)].astype(np.float32))
        t = s.try_unwrap()
        a = np.from_dlpack(t) if backend == "cpu" else torch.from_dlpack(t)
        ct.launch(None, (4, 1, 1), fill_blocks, (a, 4.0))
        refused([t], t.shared, ct.AliasError, EXPORTED)  # attack 300's last step cannot happen
        del a
        assert np.all(t.shared().to_numpy() == 4.0)


@pytest.mark.parametrize("backend", ["cpu", "triton"])
def test_attack_300_replayed(backend):
    """attacks/round3/300_export_before_shared.py step by step: the Shared is never made while the
    export lives, so nothing the export writes is shared memory (the attack itself stops at the
    refused .shared(), which it does not expect to raise)."""
    import contextlib
    ctx = triton_interpreter() if backend == "triton" else contextlib.nullcontext()
    with ctx:
        for exp in (np.from_dlpack, torch.from_dlpack):
            t = ct.zeros(64).sync()
            a = exp(t)
            refused([t], t.shared, ct.AliasError, EXPORTED)
            a[1] = 5  # a plain write of a tensor nobody shares
            del a
            s = t.shared()
            assert s.to_numpy()[1] == 5
        t = ct.zeros(64).sync()
        a = np.from_dlpack(t) if backend == "cpu" else torch.from_dlpack(t)
        refused([t], t.shared, ct.AliasError, EXPORTED)
        ct.launch(None, (4, 1, 1), fill_blocks, (a, 3.0))
        del a
        assert np.all(t.shared().to_numpy() == 3.0)


def test_the_race_detector_exports_only_for_its_run():
    t = rnd(64, seed=11)
    assert not ct.detect_races(fill_blocks, (4, 1, 1), (t, 2.0), raise_on_race=False)
    assert np.all(t.shared().to_numpy() == 2.0)


def test_export_racing_shared_in_two_threads_never_both_succeed(racy):
    """One thread exports a view while another shares the tensor: at most one of them wins, and
    a winning export is never a live writable alias of a Shared."""
    wins = {"export": 0, "shared": 0}
    for i in range(150):
        t = ct.zeros(64).sync()
        v = t[i % 48:]
        got: dict = {}
        barrier = threading.Barrier(2)

        def export():
            barrier.wait()
            try:
                got["a"] = (np.from_dlpack if i % 2 else torch.from_dlpack)(v)
            except ct.AliasError:
                pass

        def share():
            barrier.wait()
            try:
                got["s"] = t.shared()
            except ct.AliasError:
                pass
        # started in either order: with the GIL the thread that reaches the barrier last tends to run
        # on and win, so alternating the order exercises both outcomes however loaded the machine is
        threads = [threading.Thread(target=f) for f in ((export, share) if i % 4 < 2 else (share, export))]
        for th in threads:
            th.start()
        for th in threads:
            th.join(30)
        assert ("a" in got) != ("s" in got), f"iteration {i}: {sorted(got)}"
        wins["export" if "a" in got else "shared"] += 1
    assert min(wins.values()) > 0, wins  # both orders happened


def test_the_claim_lives_exactly_as_long_as_a_torch_consumer_of_a_torch_alias():
    """The premise of torch-backed (CUDA) exports, checked on CPU torch: a capsule of a fresh
    alias (``detach()``) keeps that alias's Python object alive until the consumer lets go."""
    for kw in ({}, {"max_version": (1, 0)}):
        for consume in (torch.from_dlpack, lambda c: np.from_dlpack(Producer(c)), None):
            alias = torch.zeros(8).detach()
            r = weakref.ref(alias)
            c = alias.__dlpack__(**kw)
            del alias
            y = consume(c) if consume is not None else None
            z = y[2:] if y is not None else c
            del c, y
            assert r() is not None, (kw, consume)
            del z
            assert r() is None, (kw, consume)


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA GPU")
def test_cuda_tensor_export_before_shared_is_refused_until_dropped():
    t = ct.rand(1024, seed=9, device="cuda").sync()
    y = torch.from_dlpack(t)
    with pytest.raises(ct.AliasError, match=EXPORTED):
        t.shared()
    y2 = y[5:]
    del y
    with pytest.raises(ct.AliasError, match=EXPORTED):
        t.shared()
    del y2
    v = t[:]
    s = t.shared()
    with pytest.raises(ct.AliasError, match="read-only shared memory"):
        torch.from_dlpack(v)
    assert np.array_equal(s.to_numpy(), ct.rand(1024, seed=9, device="cuda").sync().to_numpy())


# ----------------------------------------------------------------------------- 302: read-only memory

@ct.entry
def fill(z: ct.Mut[ct.f32, "B"], x: ct.Ref[ct.f32, -1]):
    z.store(ct.load_tile_like(x, z) + 1.0)


def test_read_only_numpy_memory_is_refused_as_a_mutable_argument_where_safetile_sees_it():
    xs = ct.ones(256).sync().shared()
    ro = np.zeros(256, np.float32)
    ro.setflags(write=False)
    wrappers = [ro, ro[:], np.asarray(ro).view(np.float32),
                Producer(ro.__dlpack__(max_version=(1, 0)))]  # a versioned capsule carries the flag
    for w in wrappers:
        p = ct.from_dlpack(w).partition(64)
        refused([p], lambda: fill(p, xs).sync(), ct.LaunchTypeError, "read-only")
    assert not ro.any()


def test_torch_drops_the_read_only_flag():
    """Why 302 is outside (docs/safety.md, G3): torch keeps no read-only flag, not even the one a
    versioned DLPack capsule carries, so a tensor over read-only memory looks writable."""
    ro = np.zeros(8, np.float32)
    ro.setflags(write=False)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # torch.from_numpy warns (once per process) that writing is undefined
        for x in (torch.from_dlpack(ro), torch.from_numpy(ro)):
            assert np.from_dlpack(x).flags.writeable
            assert ct.from_dlpack(x)._data.flags.writeable
