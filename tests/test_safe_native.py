"""The safe launch's common case in C (safe/native.py): it takes exactly the launches it claims,
declines everything else before changing anything, and behaves as the Python path does.

Each test runs on both paths where the difference matters (``path`` fixture: the C twin loaded,
or turned off). The C ``run`` needs a bound GPU plan; on the CPU a plan is bound by hand to a
recording stub of the launcher (``launcher.Bound``, as a GPU plan holds the lean launcher), on the
CPU stream (device index -1), so the submission path runs as on a GPU host.
"""
from __future__ import annotations

import gc
import sys
import threading
import warnings

import numpy as np
import pytest

import safetile as ct
from safetile.backends.triton import launcher
from safetile.safe import memory
from safetile.safe.errors import AliasError, DeviceOpError, OwnershipError, PreconditionError
from safetile.safe.launch import LaunchOp, prepare
from safetile.runtime import torch_facts
from safetile.safe.native import FAST

torch = pytest.importorskip("torch")

SCALE = 2.0


@ct.entry
def add(z: ct.Mut[ct.f32, "B"], x: ct.Ref[ct.f32, -1], y: ct.Ref[ct.f32, -1]):
    z.store(ct.load_tile_like(x, z) + ct.load_tile_like(y, z))


@ct.entry
def axpy(z: ct.Mut[ct.f32, "B"], x: ct.Ref[ct.f32, -1], a: float):
    z.store(z.load() + ct.load_tile_like(x, z) * a)


@ct.entry
def scaled(z: ct.Mut[ct.f32, "B"], x: ct.Ref[ct.f32, -1]):
    z.store(ct.load_tile_like(x, z) * SCALE)


class Counting:
    """Wraps the C entry points and counts the launches each took (non-None answers)."""

    def __init__(self):
        self.built = self.ran = 0
        self._build, self._run = FAST.build, FAST.run

    def build(self, k, a):
        op = self._build(k, a)
        self.built += op is not None
        return op

    def run(self, op, ctx):
        r = self._run(op, ctx)
        self.ran += r is not None
        return r


@pytest.fixture(params=["torch-methods", "cxx-facts"])
def native(request):
    """The C twin loaded and counted (restored afterwards), reading torch tensors' facts through
    torch's Python methods or through the C++ reader (runtime/torch_facts.py)."""
    if not FAST.load(build=True):
        pytest.skip("the C twin is off (SAFETILE_SAFE_NATIVE=0) or cannot be built here (no C compiler)")
    capsule = None
    if request.param == "cxx-facts":
        capsule = request.getfixturevalue("cxx_facts").read
    FAST.use_facts(capsule)
    c = Counting()
    FAST.build, FAST.run = c.build, c.run
    yield c
    FAST.build, FAST.run = c._build, c._run
    FAST.use_facts(torch_facts.capsule())


@pytest.fixture(params=["c", "python"])
def path(request):
    """Both paths: the C twin loaded, or off (every launch on the Python path)."""
    loaded = FAST.load(build=True)
    saved = FAST.build, FAST.run
    if request.param == "python":
        FAST.off()
    elif not loaded:
        pytest.skip("the C twin is off (SAFETILE_SAFE_NATIVE=0) or cannot be built here (no C compiler)")
    yield request.param
    if loaded:  # the C entry points and the C methods back (off() put the Python methods back)
        FAST.load(build=False)
    FAST.build, FAST.run = saved


def data(n=256, seed=0):
    rng = np.random.default_rng(seed)
    return rng.standard_normal(n).astype(np.float32), rng.standard_normal(n).astype(np.float32)


def test_a_repeated_launch_is_built_in_c_and_matches_numpy(native):
    xn, yn = data()
    x, y = ct.from_dlpack(xn).shared(), ct.from_dlpack(yn).shared()
    z = ct.from_dlpack(np.full(256, np.nan, np.float32)).partition(64)
    for _ in range(5):
        z, x, y = add(z, x, y).sync()
    assert native.built == 4  # the first launch makes the plan (Python), the rest reuse it
    np.testing.assert_array_equal(z.unpartition().to_numpy(), xn + yn)


@pytest.mark.parametrize("first,second", [(0.0, -0.0), (2, 2.0), (True, 1)])
def test_scalars_key_as_python_compares_them_and_run_with_their_own_value(path, first, second):
    xn = np.arange(1, 65, dtype=np.float32)
    x = ct.from_dlpack(xn).shared()
    got = []
    for a in (first, second):
        z = ct.from_dlpack(np.full(64, -0.0, np.float32)).partition(64)  # -0.0 + x * -0.0 keeps the sign
        try:
            z, x = axpy(z, x, a).sync()[:2]
        except ct.TileError as e:  # the same refusal on both paths (a bool is no float)
            got.append(type(e).__name__)
            continue
        got.append(z.unpartition().to_numpy().tobytes())
    want = [(np.float32(-0.0) + xn * np.float32(a)).tobytes() if not isinstance(a, bool) else None
            for a in (first, second)]
    for g, w in zip(got, want):
        if w is not None:
            assert g == w  # -0.0 keeps its sign although it keys like 0.0


@pytest.mark.parametrize("misuse", ["moved", "twice", "borrowed", "released", "unwrapped"])
def test_each_refusal_is_declined_by_c_and_worded_by_python(native, misuse):
    xn, yn = data()
    t = ct.from_dlpack(np.zeros(256, np.float32))
    x = ct.from_dlpack(xn).shared()
    y = ct.from_dlpack(yn).shared()
    z = t.partition(64)
    z, x, y = add(z, x, y).sync()
    z, x, y = add(z, x, y).sync()  # the plan is the latest: the C path's case
    assert native.built == 1
    before = native.built
    if misuse == "moved":
        op = add(z, x, y)
        with pytest.raises(OwnershipError, match="moved"):
            add(z, x, y)
        z, x, y = op.sync()
    elif misuse == "twice":
        with pytest.raises(AliasError):
            add(z, x, z)  # the partition as output and input
    elif misuse == "borrowed":  # a tensor passed as the input, the latest plan's case, then borrowed
        tb = ct.from_dlpack(xn.copy())
        z, tb, y = add(z, tb, y).sync()
        z, tb, y = add(z, tb, y).sync()
        before = native.built
        with ct.borrow_mut(tb) as b:
            b.partition(64)  # tb is partitioned in place: unusable until the borrow ends
            with pytest.raises(OwnershipError):
                add(z, tb, y)
    elif misuse == "released":
        t2 = z.unpartition()
        with pytest.raises(OwnershipError):
            add(z, x, y)
        z = t2.partition(64)
    else:
        xt = x.try_unwrap()
        with pytest.raises(OwnershipError):
            add(z, x, y)
        x = xt.shared()
    assert native.built == before + (misuse == "moved")  # refusals are never built in C
    z, x, y = add(z, x, y).sync()  # and nothing was left moved or held
    np.testing.assert_array_equal(z.unpartition().to_numpy(), xn + yn)


def test_launch_numbers_are_the_same_on_both_paths(path):
    """Red team round 5 (517): a launch the C path declines is numbered once, by the Python path
    that words its refusal, so op numbers (in every message) agree with the C twin on and off."""
    xn, yn = data()
    x, y = ct.from_dlpack(xn).shared(), ct.from_dlpack(yn).shared()
    z = ct.from_dlpack(np.zeros(256, np.float32)).partition(64)
    z, x, y = add(z, x, y).sync()  # the plan is made: the C path's case from here on
    first = add(z, x, y)
    with pytest.raises(OwnershipError, match="moved"):
        add(z, x, y)  # refused: numbered by the Python path, once
    z, x, y = first.sync()
    second = add(z, x, y)
    assert second.id - first.id == 2
    second.sync()


def test_a_changed_global_recompiles_on_the_c_path(native):
    global SCALE
    xn = np.arange(64, dtype=np.float32)
    x = ct.from_dlpack(xn).shared()
    z = ct.from_dlpack(np.zeros(64, np.float32)).partition(64)
    z, x = scaled(z, x).sync()
    z, x = scaled(z, x).sync()
    assert native.built == 1
    SCALE = 3.0
    try:
        z, x = scaled(z, x).sync()  # the captured global changed: the Python path refreshes
        np.testing.assert_array_equal(z.unpartition().to_numpy(), xn * 3.0)
    finally:
        SCALE = 2.0
    assert native.built == 1


def test_a_callable_precondition_runs_on_every_launch(native):
    allow = {"ok": True}

    @ct.entry(preconditions=[lambda z: allow["ok"]])
    def bump(z: ct.Mut[ct.f32, "B"]):
        z.store(z.load() + 1.0)

    z = ct.from_dlpack(np.zeros(64, np.float32)).partition(64)
    for _ in range(3):
        (z,) = bump(z).sync()
    allow["ok"] = False
    with pytest.raises(PreconditionError):
        bump(z)
    assert native.built == 0  # callables may read any state: never the C path
    allow["ok"] = True
    (z,) = bump(z).sync()
    np.testing.assert_array_equal(z.unpartition().to_numpy(), np.full(64, 4, np.float32))


def test_switching_the_backend_variable_is_a_new_key(native, monkeypatch):
    xn, yn = data()
    x, y = ct.from_dlpack(xn).shared(), ct.from_dlpack(yn).shared()
    z = ct.from_dlpack(np.zeros(256, np.float32)).partition(64)
    z, x, y = add(z, x, y).sync()
    z, x, y = add(z, x, y).sync()
    built = native.built
    monkeypatch.setenv("SAFETILE_BACKEND", "cpu")
    op = add(z, x, y)
    assert native.built == built  # the latest plan's key held no override: declined
    assert op._plan.checked.backend == "cpu"
    z, x, y = op.sync()
    z, x, y = add(z, x, y).sync()
    assert native.built == built + 1  # and the new key's plan is the C path's again
    np.testing.assert_array_equal(z.unpartition().to_numpy(), xn + yn)


def test_a_moved_torch_pointer_is_declined(native):
    xt = torch.arange(256, dtype=torch.float32)
    x = ct.from_dlpack(xt).shared()
    y = ct.from_dlpack(np.ones(256, np.float32)).shared()
    z = ct.from_dlpack(np.zeros(256, np.float32)).partition(64)
    z, x, y = add(z, x, y).sync()
    z, x, y = add(z, x, y).sync()
    built = native.built
    facts = x._facts
    x._facts = type(facts).__new__(type(facts))  # stands for facts of other memory: never identical
    for slot in type(facts).__slots__:
        if slot != "__weakref__":
            setattr(x._facts, slot, getattr(facts, slot))
    op = add(z, x, y)
    assert native.built == built
    z, x, y = op.sync()
    np.testing.assert_array_equal(z.unpartition().to_numpy(), np.arange(256, dtype=np.float32) + 1)


def test_thousands_of_launches_leave_every_reference_count_as_it_was(native):
    xn, yn = data()
    x, y = ct.from_dlpack(xn).shared(), ct.from_dlpack(yn).shared()
    z = ct.from_dlpack(np.zeros(256, np.float32)).partition(64)
    z, x, y = add(z, x, y).sync()
    z, x, y = add(z, x, y).sync()
    plan = add.caches.last[1]
    gc.collect()
    counts = [sys.getrefcount(o) for o in (z, x, y, plan, add, z._facts, x._facts)]
    for _ in range(2000):
        z, x, y = add(z, x, y).sync()
    gc.collect()
    assert [sys.getrefcount(o) for o in (z, x, y, plan, add, z._facts, x._facts)] == counts
    assert native.built >= 2000


def test_threads_racing_one_partition_through_the_c_path(native, racy):
    """8 threads launch from one partition held in a shared slot: exactly one owns it at a time,
    every refusal names the move, and no increment is lost."""

    @ct.entry
    def bump(z: ct.Mut[ct.f32, "B"]):
        z.store(z.load() + 1.0)

    slot = {"z": ct.from_dlpack(np.zeros(64, np.float32)).partition(64)}
    lock = threading.Lock()
    done = [0] * 8
    errors: list = []

    def worker(k):
        for _ in range(150):
            with lock:
                z = slot.pop("z", None)
            if z is None:
                continue
            try:
                (z,) = bump(z).sync()
                done[k] += 1
            except Exception as e:  # noqa: BLE001 - recorded and asserted below
                errors.append(e)
            finally:
                with lock:
                    slot["z"] = z

    ts = [threading.Thread(target=worker, args=(k,)) for k in range(8)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    assert not errors
    np.testing.assert_array_equal(slot["z"].unpartition().to_numpy(), np.full(64, sum(done), np.float32))
    assert native.built > 0


def test_threads_stealing_a_partition_race_the_c_take(native, racy):
    """Threads launch the very same partition object at once: exactly one launch holds it, every
    other is refused with nothing moved."""

    @ct.entry
    def bump(z: ct.Mut[ct.f32, "B"]):
        z.store(z.load() + 1.0)

    z = ct.from_dlpack(np.zeros(64, np.float32)).partition(64)
    (z,) = bump(z).sync()
    (z,) = bump(z).sync()
    for _ in range(50):
        ops, refused = [], []
        barrier = threading.Barrier(8)

        def grab():
            barrier.wait()
            try:
                ops.append(bump(z))
            except OwnershipError:
                refused.append(1)

        ts = [threading.Thread(target=grab) for _ in range(8)]
        for t in ts:
            t.start()
        for t in ts:
            t.join()
        assert len(ops) == 1 and len(refused) == 7
        (z,) = ops[0].sync()
    np.testing.assert_array_equal(z.unpartition().to_numpy(), np.full(64, 52, np.float32))


# ------------------------------------------------------------------ the C run, with a stub launcher

class Recorder:
    """A stand-in for the lean launcher: records each submission's stream handle and arguments."""

    def __init__(self, fail_at: int | None = None):
        self.calls: list = []
        self.fail_at = fail_at

    def __call__(self, gx, gy, gz, stream, *tail):
        self.calls.append((gx, gy, gz, stream, tail))
        if self.fail_at is not None and len(self.calls) == self.fail_at:
            raise RuntimeError("the launcher failed")


def bind_stub(kernel, args, rec: Recorder):
    plan = prepare(kernel, args)
    variant = type("V", (), {"call": staticmethod(rec), "prefix": ("spec",)})()
    plan.bound = launcher.Bound(variant, (4, 1, 1), (1, 2, 3), -1)  # the CPU stream's device index
    return plan


def chain(kernel, z, x, y, n):
    op = kernel(z, x, y)
    for _ in range(n - 1):
        op = op.then(lambda v: kernel(*v))
    return op


def test_a_chain_of_a_bound_plan_is_submitted_in_c(path):
    rec = Recorder()
    xn, yn = data()
    x, y = ct.from_dlpack(xn).shared(), ct.from_dlpack(yn).shared()
    z = ct.from_dlpack(np.zeros(256, np.float32)).partition(64)
    plan = bind_stub(add, (z, x, y), rec)
    counter = Counting() if path == "c" else None
    if counter:
        FAST.build, FAST.run = counter.build, counter.run
    z, x, y = chain(add, z, x, y, 50).sync()
    assert len(rec.calls) == 50 and rec.calls[0] == (4, 1, 1, 0, ("spec", 1, 2, 3))
    if counter:
        assert counter.ran == 49  # the first launch claims the memory (Python), the rest reuse the entry
    assert add.caches.last[1] is plan
    assert not memory.REGISTRY._entries  # the terminal finished: nothing in flight
    assert x._holders == 0 and y._holders == 0
    z, x, y = add(z, x, y).sync()  # every argument given back usable (the stub computed nothing)


def test_a_chain_on_the_same_memory_keeps_its_arguments_once(native):
    """The C run keeps each launch's runtime arguments with the terminal (ExecContext.keep), but
    not again when the last kept are the same objects: a chain of 50 keeps one tuple."""
    from safetile.safe.streams import current_context
    kept: list = []

    class Peek(Recorder):
        def __call__(self, *a):
            super().__call__(*a)
            kept.append(len(current_context().keep))

    rec = Peek()
    xn, yn = data()
    x, y = ct.from_dlpack(xn).shared(), ct.from_dlpack(yn).shared()
    z = ct.from_dlpack(np.zeros(256, np.float32)).partition(64)
    bind_stub(add, (z, x, y), rec)
    z, x, y = chain(add, z, x, y, 50).sync()
    assert native.ran == 49 and len(rec.calls) == 50
    assert kept[1:] == [1] * 49  # the first launch took the Python path (which keeps GPU work's only)


def test_keep_runtime_skips_only_the_same_objects_again():
    from safetile.safe.deviceop import ExecContext
    from safetile.safe.streams import default_pool
    ctx = ExecContext(default_pool(None).next(), label="test")
    a, b = object(), object()
    first = (a, b)
    for runtime in (first, first, (a, b)):
        ctx.keep_runtime(runtime)
    assert ctx.keep == [first]
    ctx.keep_runtime((b, a))
    ctx.keep_runtime((a, b, a))
    ctx.keep_runtime((a,))
    assert ctx.keep == [first, (b, a), (a, b, a), (a,)]


def test_a_failing_submission_gives_the_arguments_back(path):
    rec = Recorder(fail_at=5)
    xn, yn = data()
    x, y = ct.from_dlpack(xn).shared(), ct.from_dlpack(yn).shared()
    z = ct.from_dlpack(np.zeros(256, np.float32)).partition(64)
    bind_stub(add, (z, x, y), rec)
    ops = []
    op = add(z, x, y)
    for _ in range(9):
        op = op.then(lambda v: ops.append(add(*v)) or ops[-1])
    with pytest.raises(RuntimeError, match="launcher failed"):
        op.sync()
    assert len(rec.calls) == 5
    assert ops[3]._state == "failed"
    assert x._holders == 0 and y._holders == 0 and z._moved is None
    assert not memory.REGISTRY._entries


def test_torch_memory_reallocated_between_check_and_submit_is_refused(path):
    """A callable precondition reallocates a raw torch input after the key was read: the plan's
    pins no longer hold, so the submission is refused with the arguments given back."""
    rec = Recorder()
    state = {"grow": False}
    xt = torch.ones(256)

    def maybe_grow(z, x, y):
        if state["grow"]:
            state["grow"] = False
            xt.resize_(1 << 20)  # a new, larger storage: every tensor on it (the launch's alias too) moves
        return True

    @ct.entry(preconditions=[maybe_grow])
    def add_pre(z: ct.Mut[ct.f32, "B"], x: ct.Ref[ct.f32, -1], y: ct.Ref[ct.f32, -1]):
        z.store(ct.load_tile_like(x, z) + ct.load_tile_like(y, z))

    y = ct.from_dlpack(np.ones(256, np.float32)).shared()
    z = ct.from_dlpack(np.zeros(256, np.float32)).partition(64)
    bind_stub(add_pre, (z, xt, y), rec)
    op = add_pre(z, xt, y).then(lambda v: (state.__setitem__("grow", True), add_pre(v[0], xt, v[2]))[1])
    with pytest.raises(AliasError, match="reallocated"):
        op.sync()
    assert len(rec.calls) == 1  # the second submission was refused
    assert z._moved is None and y._holders == 0


def test_a_lost_registry_race_continues_on_the_python_path(native, monkeypatch):
    """Another claim lands between the C path's look at the registry and its lock: the launch
    finishes through ``LaunchOp._execute`` (a full claim) instead of reusing the entry blindly."""
    rec = Recorder()
    xn, yn = data()
    x, y = ct.from_dlpack(xn).shared(), ct.from_dlpack(yn).shared()
    z = ct.from_dlpack(np.zeros(256, np.float32)).partition(64)
    bind_stub(add, (z, x, y), rec)
    reg = memory.REGISTRY
    real = reg._lock
    raced = {"n": 0}

    class RacingLock:
        def acquire(self, *a):
            if reg._entries and raced["n"] < 3:  # a new tuple with the same entries: "changed meanwhile"
                raced["n"] += 1
                reg._entries = tuple(reg._entries)
            return real.acquire(*a)

        def release(self):
            real.release()

        __enter__ = acquire

        def __exit__(self, *e):
            real.release()

    monkeypatch.setattr(reg, "_lock", RacingLock())
    z, x, y = chain(add, z, x, y, 10).sync()
    assert len(rec.calls) == 10 and raced["n"] == 3
    assert not reg._entries and x._holders == 0


def test_the_c_run_declines_an_op_that_already_ran(native):
    xn, yn = data()
    x, y = ct.from_dlpack(xn).shared(), ct.from_dlpack(yn).shared()
    z = ct.from_dlpack(np.zeros(256, np.float32)).partition(64)
    op = add(z, x, y)
    z, x, y = op.sync()
    with pytest.raises(DeviceOpError, match="runs once"):
        op.sync()
    assert isinstance(op, LaunchOp) and op._state == "done"


def test_raw_torch_inputs_are_aliased_in_c_and_a_repointed_one_is_a_new_key(native):
    xt, yt = torch.arange(256, dtype=torch.float32), torch.ones(256)
    z = ct.from_dlpack(np.zeros(256, np.float32)).partition(64)
    z, _, _ = add(z, xt, yt).sync()
    z, _, _ = add(z, xt, yt).sync()
    assert native.built == 1
    op = add(z, xt, yt)
    assert op._runtime[1] is not xt and op._runtime[1].data_ptr() == xt.data_ptr()  # safetile's own alias
    z, _, _ = op.sync()
    built = native.built
    other = torch.full((256,), 5.0)
    xt.set_(other)  # re-pointed in place: its facts differ from the latest key, so the Python path decides
    op = add(z, xt, yt)
    assert native.built == built
    z, _, _ = op.sync()
    np.testing.assert_array_equal(z.unpartition().to_numpy(), np.full(256, 6, np.float32))


def test_a_bound_launch_keeps_its_memory_until_the_terminal_has_waited(native):
    """A chained launch's arguments may be dropped by the next step while the GPU still runs it
    (torch's allocator would hand that memory to work on another stream): the terminal holds each
    submitted launch's runtime arguments, raw tensors' aliases included, until it has waited."""
    import weakref
    rec = Recorder()
    y = ct.from_dlpack(np.ones(256, np.float32)).shared()
    z = ct.from_dlpack(np.zeros(256, np.float32)).partition(64)
    xt = torch.ones(256)
    bind_stub(add, (z, xt, y), rec)
    probe: dict = {}

    def second(v):
        op = add(v[0], xt, v[2])
        probe["alias"] = weakref.ref(op._runtime[1])  # safetile's alias of xt for this launch
        return op

    def third(v):
        probe["alive while running"] = probe["alias"]() is not None  # the second launch is gone by now
        return add(v[0], xt, v[2])

    z, _, y = add(z, xt, y).then(second).then(third).sync()
    gc.collect()
    assert native.ran == 2 and len(rec.calls) == 3
    assert probe["alive while running"]
    assert probe["alias"]() is None  # and let go once the terminal has waited


def test_the_hot_methods_are_c_while_loaded_and_python_when_off(native):
    """The C twin puts method descriptors of the same names on the classes; off() puts the
    Python definitions back, and loading again puts the C ones back."""
    from safetile.safe.deviceop import DeviceOp
    from safetile.safe.entry import EntryKernel
    hot = [(EntryKernel, "__call__"), (LaunchOp, "_run"), (LaunchOp, "__del__"), (DeviceOp, "then")]
    assert all(type(vars(cls)[name]).__name__ == "method_descriptor" for cls, name in hot)
    saved = FAST.build, FAST.run
    FAST.off()
    try:
        assert all(type(vars(cls)[name]).__name__ == "function" for cls, name in hot)
        xn, yn = data(seed=3)
        x, y = ct.from_dlpack(xn).shared(), ct.from_dlpack(yn).shared()
        z = ct.from_dlpack(np.full(256, np.nan, np.float32)).partition(64)
        z, x, y = add(z, x, y).then(lambda v: add(*v)).sync()  # the Python path end to end
        np.testing.assert_array_equal(z.unpartition().to_numpy(), xn + yn)
    finally:
        assert FAST.load(build=False)
        FAST.build, FAST.run = saved
    assert all(type(vars(cls)[name]).__name__ == "method_descriptor" for cls, name in hot)


def test_then_in_c_makes_the_op_python_makes(native):
    from safetile.safe.deviceop import DeviceOp, Then
    base = ct.value(5)
    f = lambda v: v + 1  # noqa: E731
    c_made = base.then(f)
    assert type(vars(DeviceOp)["then"]).__name__ == "method_descriptor"
    py_made = Then(base, f)
    assert type(c_made) is Then and vars(c_made) == vars(py_made) == {"op": base, "f": f}
    assert c_made.sync() == 6
    with pytest.raises(DeviceOpError, match=r"^then\(\) takes a function of the value, got int$"):
        base.then(3)  # the Python definition words the refusal


def test_keywords_and_a_first_launch_take_the_python_call(native):
    xn, yn = data(seed=4)
    x, y = ct.from_dlpack(xn).shared(), ct.from_dlpack(yn).shared()
    z = ct.from_dlpack(np.full(256, np.nan, np.float32)).partition(64)
    with pytest.raises(ct.LaunchTypeError, match="takes its arguments by position"):
        add(z, x, y=y)
    assert not z.is_moved and x._holders == 0 and y._holders == 0
    z, x, y = add(z, x, y).sync()
    np.testing.assert_array_equal(z.unpartition().to_numpy(), xn + yn)


def test_a_dropped_unrun_launch_is_given_back_by_the_c_finalizer(native):
    xn, yn = data(seed=5)
    x, y = ct.from_dlpack(xn).shared(), ct.from_dlpack(yn).shared()
    z = ct.from_dlpack(np.full(256, np.nan, np.float32)).partition(64)
    z, x, y = add(z, x, y).sync()  # the plan exists: the next launch is built in C
    built = native.built
    op = add(z, x, y)
    assert native.built == built + 1 and x._holders == 1
    with pytest.warns(ct.LaunchDroppedWarning, match="dropped without being run"):
        del op
        gc.collect()
    assert x._holders == 0 and y._holders == 0
    z, x, y = add(z, x, y).sync()  # usable again
    ran = add(z, x, y)
    z, x, y = ran.sync()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        del ran  # a launch that ran: the C finalizer returns at once, no warning
        gc.collect()


def test_a_raw_torch_input_is_aliased_once_per_terminal_while_its_facts_hold(native):
    """In a chain, a raw torch tensor's alias is made once and reused while the tensor shows the same
    facts; re-pointed between two launches (here by a closure), the next launch aliases the new
    memory (no stale alias), and the terminal lets go of its aliases when its work is over."""
    xt = torch.from_numpy(np.random.default_rng(8).standard_normal(256).astype(np.float32))
    yt = torch.ones(256)
    z = ct.from_dlpack(np.zeros(256, np.float32)).partition(64)
    z, _, _ = add(z, xt, yt).sync()  # the plan exists: the chain below is built in C
    ops, other = [], torch.full((256,), 5.0)

    def step(v, repoint=False):
        if repoint:
            xt.set_(other)
        ops.append(add(v[0], xt, yt))
        return ops[-1]
    op = add(z, xt, yt)
    for i in range(4):
        op = op.then(lambda v, i=i: step(v, repoint=(i == 2)))
    z, _, _ = op.sync()
    aliases = [o._runtime[1] for o in ops]
    assert aliases[0] is aliases[1] and aliases[1] is not aliases[2]  # made once, then anew after set_
    assert aliases[0].data_ptr() != xt.data_ptr() == aliases[2].data_ptr() == aliases[3].data_ptr()
    np.testing.assert_array_equal(z.unpartition().to_numpy(), np.full(256, 6.0, np.float32))  # the new x + y
    import weakref
    first = weakref.ref(aliases[0])
    del aliases, ops[:]
    gc.collect()
    assert first() is None  # the ended terminal holds no alias


def test_the_c_methods_take_any_call_the_python_ones_take(native):
    """Round 7, 700: a keyword argument is the Python definition's to answer, not a TypeError of the
    C descriptor's."""
    assert ct.value(1).then(f=lambda v: v + 1).sync() == 2
    with pytest.raises(TypeError, match="missing 1 required positional argument: 'f'"):
        ct.value(1).then()
    xn, yn = data(seed=12)
    x, y = ct.from_dlpack(xn).shared(), ct.from_dlpack(yn).shared()
    z = ct.from_dlpack(np.zeros(256, np.float32)).partition(64)
    op = add(z, x, y)
    with pytest.raises(TypeError):
        op.__del__(1)  # the Python definition's own complaint
    z, x, y = op.sync()
    np.testing.assert_array_equal(z.unpartition().to_numpy(), xn + yn)
