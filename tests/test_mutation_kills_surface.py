"""Kill tests for the host surface of the safe style, written against the mutants a sampled
mutmut run left alive (bench/NOTES.md, "Mutation testing"): what a refusal names, NumPy
conversions with a dtype, mapped partitions after a move, explicit generics on a launch,
torch's narrow float types and terminals nested in a running chain."""
from __future__ import annotations

import re

import numpy as np
import pytest

import safetile as ct
from safetile.safe.tensor import torch_to_numpy

from attack_helpers import poisoned, rnd


@ct.entry
def add(z: ct.Mut[ct.f32, "B"], x: ct.Ref[ct.f32, -1]):
    z.store(z.load() + ct.load_tile_like(x, z))


@ct.entry
def mapped_ones(c: ct.MappedMut[ct.f32, ("B",)]):
    for idx in c.iter_indices():
        c.store(ct.full((B,), 1.0, ct.float32), idx)  # noqa: F821


def test_a_moved_mapped_partition_names_what_was_refused():
    m = poisoned(64).partition(16).map(2)
    op = mapped_ones(m)
    for action, verb in ((m.grid, "inspected"), (m.to_numpy, "read")):
        with pytest.raises(ct.UseAfterMoveError, match=rf"^{re.escape(m.label)} cannot be {verb}: it was moved into"):
            action()
    m2, = op.sync()
    assert m2.grid() == (2, 1, 1)
    assert np.array_equal(m2.to_numpy(), np.ones(64, np.float32))


@pytest.mark.parametrize("make", [lambda t: t, lambda t: t.shared()], ids=["Tensor", "Shared"])
def test_numpy_conversion_honours_the_requested_dtype(make):
    data = np.arange(8, dtype=np.float32) + 0.5
    v = make(ct.from_dlpack(data.copy()))
    as_f64 = np.asarray(v, dtype=np.float64)
    assert as_f64.dtype == np.float64 and np.array_equal(as_f64, data.astype(np.float64))
    plain = np.asarray(v)
    assert plain.dtype == np.float32 and np.array_equal(plain, data)


def test_generics_of_a_launch_take_a_mapping_as_well_as_keywords():
    z, x = ct.zeros(64).sync().partition(16), rnd(64, seed=3)
    with pytest.raises(ct.LaunchTypeError, match=re.escape("kernel 'add': generic 'B' is 8 from kernel.generics(...) "
                                                          "but 16 from the sub-tensor shape of 'z'")):
        add(z, x).generics({"B": 8}).sync()
    assert not z.is_moved and not x.is_moved  # the refusal gave them back
    z2, _ = add(z, x).generics({"B": 16}).sync()
    assert np.array_equal(z2.to_numpy(), x.to_numpy())


@pytest.mark.parametrize("name", ["bfloat16", "float8_e4m3fn", "float8_e5m2"])
def test_torch_narrow_floats_convert_bit_exactly(name):
    torch = pytest.importorskip("torch")
    ml_dtypes = pytest.importorskip("ml_dtypes")
    values = np.array([0.5, -1.25, 2.0, 0.0, -0.0, 1.5], np.float32)
    t = torch.tensor(values).to(getattr(torch, name))
    got = torch_to_numpy(t)
    assert got.dtype == np.dtype(getattr(ml_dtypes, name))
    assert np.array_equal(got.astype(np.float32), values)
    assert got.view(np.uint8).tobytes() == t.view(torch.uint8).numpy().tobytes()


def test_sync_on_inside_a_running_chain_is_refused_by_name():
    z = poisoned(64).partition(16)
    inner = []

    def nested(r):
        op = add(r[0], r[1])
        inner.append(op)
        return op.sync_on(ct.Stream("cpu"))

    with pytest.raises(ct.NestedSyncError, match=r"^sync_on\(\) called while a device operation is executing"):
        add(z, rnd(64, seed=5)).then(nested).sync()
    with pytest.raises(ct.DeviceOpError, match="abandoned"):
        inner[0].sync()  # the refused inner launch was abandoned, not left to run later
    assert not z.is_moved


def test_sync_on_runs_pinned_to_the_given_stream():
    s = ct.Stream("cpu")
    with pytest.raises(ct.LaunchTypeError, match=r"^sync_on expects a ct\.Stream, got str$"):
        ct.ones(8).sync_on("cpu")
    t = ct.ones(8).sync_on(s)
    assert np.array_equal(t.to_numpy(), np.ones(8, np.float32))


def test_declaration_errors_point_at_the_declaration():
    with pytest.raises(ct.TileDeclarationError) as info:
        ct.Mut[ct.f32, 0]
    text = str(info.value)
    assert "static sizes must be positive" in text
    # located: a source line and caret follow the message (the declaring line; mutmut's trampoline
    # frame under mutation testing, which caller_loc does not skip)
    assert re.search(r'\n  File ".+", line \d+', text) and info.value.loc is not None


def test_copy_into_a_moved_destination_names_the_copy():
    dst = poisoned(64).partition(16)
    op = add(dst, rnd(64, seed=6))
    with pytest.raises(ct.UseAfterMoveError, match=rf"^{re.escape(dst.label)} cannot be copied into: it was moved"):
        ct.memcpy(dst, rnd(64, seed=7))
    op.sync()


def test_a_stream_pool_of_one_stream_is_allowed_and_of_none_refused():
    pool = ct.StreamPool("cpu", 1)
    assert len(pool.streams) == 1 and pool.next() is pool.next()
    with pytest.raises(ct.ArgumentError, match="at least one stream"):
        ct.StreamPool("cpu", 0)


def test_a_rejected_configuration_leaves_the_launch_rejected():
    z, x = poisoned(64).partition(16), rnd(64, seed=8)
    op = add(z, x)
    with pytest.raises(ct.GridError, match="grid must be a tuple of 1 to 3 positive integers, got 'bad'"):
        op.grid("bad")
    with pytest.raises(ct.DeviceOpError, match=r"\) has been rejected; a launch runs once"):
        op.sync()
    assert not z.is_moved and not x.is_moved


def test_reshape_accepts_minus_one_and_refuses_less():
    t = ct.from_dlpack(np.arange(12, dtype=np.float32))
    assert t.reshape(-1).shape == (12,) and t.reshape(3, -1).shape == (3, 4)
    with pytest.raises(ct.TensorError, match=r"a shape is sizes \(and at most one -1\), got \(-2, -6\)"):
        t.reshape(-2, -6)


def test_unzip_of_zero_outputs_and_first_and_last_of_none():
    assert ct.empty().map(lambda _: ()).unzip(0) == ()
    a, b = ct.empty().map(lambda _: (1, 2)).unzip(2)
    assert (a.sync(), b.sync()) == (1, 2)
    for end in ("first", "last"):  # of no values: a safetile error, not an IndexError
        with pytest.raises(ct.DeviceOpError, match=rf"^{end}\(\): the operation produced 0 values$"):
            getattr(ct.empty().map(lambda _: ()), end)().sync()


def test_only_safetile_modules_may_subclass_owned_values():
    inside = type("Inside", (ct.Partition,), {"__module__": "safetile.extension"})
    assert issubclass(inside, ct.Partition)
    with pytest.raises(ct.OwnershipError, match="cannot be subclassed"):
        type("Outside", (ct.Partition,), {"__module__": "not_safetile.safetile"})


@ct.entry
def window(z: ct.Mut[ct.f32, (8,)], x: ct.Ref[ct.f32, -1]):
    z.store(x.load((1,), (8,)))


def test_a_ref_load_past_the_edge_reads_zeros():
    z, x = poisoned(8).partition(8), rnd(10, seed=9)
    z2, _ = window(z, x).sync()
    assert np.array_equal(z2.to_numpy(), np.r_[x.to_numpy()[8:10], np.zeros(6, np.float32)])


def test_moved_values_name_the_refused_host_action():
    t = poisoned(64)
    p = t.partition(16)
    with pytest.raises(ct.UseAfterMoveError, match=rf"^{re.escape(t.label)} cannot be sliced: it was moved into"):
        t[0:8]
    op = add(p, rnd(64, seed=10))
    with pytest.raises(ct.UseAfterMoveError, match=rf"^{re.escape(p.label)} cannot be read: it was moved into"):
        p.to_numpy()
    op.sync()
    with pytest.raises(ct.TensorError, match=r"^tensor views take integers, slices and \.\.\., got 'a'$"):
        p.unpartition()["a"]


def test_an_unmapped_partition_names_where_it_went():
    m = poisoned(64).partition(16).map(2)
    p = m.unmap()
    line = test_an_unmapped_partition_names_where_it_went.__code__.co_firstlineno + 2
    with pytest.raises(ct.UseAfterMoveError, match=re.escape(
            f"cannot be inspected: it was moved into the partition returned by .unmap() at "
            f"test_mutation_kills_surface.py:{line}")):
        m.grid()
    assert p.grid() == (4,)


@ct.kernel
def masked_then_racy(x, out, T: ct.Constant[int]):
    i = ct.arange(T, dtype=ct.int32)
    ct.scatter(out, i, ct.gather(x, i), mask=i < 0)  # no lane stores: an access with no bytes
    ct.store(out, index=(0,), tile=ct.load(x, index=(ct.bid(0),), shape=(T,)))  # every block: tile 0


def test_the_race_detector_reads_past_an_access_with_no_bytes():
    x, out = np.random.default_rng(1).standard_normal(64).astype(np.float32), np.full(64, np.nan, np.float32)
    with pytest.raises(ct.RaceError) as info:
        ct.detect_races(masked_then_racy, (4, 1, 1), (x, out, 16))
    assert info.value.report.racy_elements == 16 and "write-write" in str(info.value)


def test_a_reused_plan_checks_callable_preconditions_again():
    state = {"allowed": True}

    @ct.entry(preconditions=[lambda x: state["allowed"]])
    def guarded(z: ct.Mut[ct.f32, "B"], x: ct.Ref[ct.f32, -1]):
        z.store(ct.load_tile_like(x, z))

    z, x = poisoned(64).partition(16), rnd(64, seed=11)
    z, x = guarded(z, x).sync()
    state["allowed"] = False  # the same facts: the cached plan is reused, the callable must run again
    with pytest.raises(ct.PreconditionError, match="does not hold"):
        guarded(z, x).sync()
    assert not z.is_moved and not x.is_moved


def test_entry_kernels_wrap_their_function_and_need_its_source():
    assert add.__wrapped__.__name__ == "add" and add.__wrapped__.__code__.co_filename == __file__
    namespace = {"ct": ct}
    exec(compile("def nosrc(z: ct.Mut[ct.f32, 'B']):\n    z.store(z.load())\n", "<no file>", "exec"), namespace)
    with pytest.raises(ct.TileSyntaxError, match="cannot read the source of 'nosrc'"):
        ct.entry(namespace["nosrc"])  # refused when declared, not at its first launch


@ct.entry
def add_ref_first(x: ct.Ref[ct.f32, -1], z: ct.Mut[ct.f32, "B"]):
    z.store(z.load() + ct.load_tile_like(x, z))


def test_one_partition_as_a_mutable_and_a_read_argument_is_an_alias_of_a_mutable():
    z = poisoned(64).partition(16)
    for kernel, args, first, second in ((add, (z, z), "z", "x"), (add_ref_first, (z, z), "x", "z")):
        with pytest.raises(ct.AliasError, match=re.escape(
                f"kernel {kernel.__name__!r}: the same {z.label} is passed as argument {first!r} and argument "
                f"{second!r}; a mutable argument must not alias any other argument")):
            kernel(*args)
    assert not z.is_moved


@ct.entry
def add_int(z: ct.Mut[ct.i32, "B"], n: ct.i32):
    z.store(z.load() + n)


def test_a_scalar_must_be_a_value_of_its_declared_type():
    z = ct.from_dlpack(np.zeros(16, np.int32)).partition(16)
    with pytest.raises(ct.LaunchTypeError, match=re.escape(
            "argument 'n' of kernel 'add_int' is a scalar of type int32; 4294967296 is not a int32 value")):
        add_int(z, 2 ** 32)
    z, _ = add_int(z, 7).sync()
    assert np.array_equal(z.to_numpy(), np.full(16, 7, np.int32))


def test_device_names_are_normalised_or_refused():
    from safetile.safe.tensor import normalize_device
    assert normalize_device("cpu") == "cpu" and normalize_device("cuda", usable=False) == "cuda:0"
    assert normalize_device("cuda:1", usable=False) == "cuda:1"
    with pytest.raises(ct.TensorError, match=r"^unknown device 'cuda:x'"):
        normalize_device("cuda:x", usable=False)
    with pytest.raises(ct.TensorError, match=r"^unknown device 'tpu'; use 'cpu' or 'cuda' / 'cuda:N'$"):
        normalize_device("tpu")


def test_partitioning_a_moved_tensor_names_the_action():
    t = poisoned(64)
    t.partition(16)
    with pytest.raises(ct.UseAfterMoveError, match=rf"^{re.escape(t.label)} cannot be partitioned: it was moved"):
        t.partition(8)


def test_mutable_partitions_of_the_highest_rank_are_accepted():
    from safetile.safe.partition import MAX_MUT_RANK
    p = poisoned((4,) * MAX_MUT_RANK).partition((2,) * MAX_MUT_RANK)
    assert p.grid() == (2,) * MAX_MUT_RANK


def test_a_borrow_scope_ends_every_partition_after_one_released_early():
    t = ct.zeros(64).sync()
    with pytest.warns(ct.LaunchDroppedWarning, match="had not run; it was cancelled"):
        with ct.borrow_mut(t) as b:
            b.partition(16).release()  # the first part ends early
            p = b.partition(32)
            op = add(p, rnd(64, seed=12))  # built on the second part, never run
    with pytest.raises(ct.DeviceOpError, match="cancelled"):
        op.sync()
    with pytest.raises(ct.OwnershipError, match="released"):
        p.grid()
    assert np.array_equal(t.to_numpy(), np.zeros(64, np.float32))  # usable again, never written
