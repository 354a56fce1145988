"""Precise tests of the safe style's parts, written against the mutants the corpus left alive
(docs/safety.md, "Tests that catch the next hole"): exact extents and byte sets, the facts a
launch reads, every refusal's exact wording where the wording is the interface, the state
machine of launches and copies, graphs, streams and the race report's regions."""
from __future__ import annotations

import gc
import re
import warnings

import numpy as np
import pytest

import safetile as ct
from safetile.safe.facts import facts_of
from safetile.safe.memory import Extent, InFlight, distinct_elements, extent_of, overlaps

from attack_helpers import poisoned, rnd


@ct.entry
def add(z: ct.Mut[ct.f32, "B"], x: ct.Ref[ct.f32, -1]):
    z.store(z.load() + ct.load_tile_like(x, z))


@ct.entry
def scal(z: ct.Mut[ct.f32, "B"], a: ct.f32):
    z.store(z.load() * a)


@ct.entry
def konst(z: ct.Mut[ct.f32, "B"], c: ct.Constant[int]):
    z.store(z.load() + float(c))


@ct.entry
def mapped(c: ct.MappedMut[ct.f32, ("B",)]):
    for idx in c.iter_indices():
        c.store(ct.full((B,), 1.0, ct.float32), idx)  # noqa: F821


# ----------------------------------------------------------------------------- extents and bytes

def base(a):
    return a.__array_interface__["data"][0]


def test_extent_of_a_reversed_view_starts_at_its_last_element():
    a = np.arange(16, dtype=np.float32)
    e = extent_of(a[12:3:-2])  # elements 12, 10, 8, 6, 4
    assert (e.lo, e.hi) == (base(a) + 4 * 4, base(a) + 13 * 4)
    assert e.ptr == base(a) + 12 * 4 and e.count == 5 and distinct_elements(e)
    assert e.shape == (5,) and e.strides == (-8,) and e.itemsize == 4 and e.device == "cpu"


def test_extent_of_2d_and_empty_views():
    a = np.zeros((4, 6), np.float64)
    e = extent_of(a[1:3, ::-2])  # rows 1-2, columns 5, 3, 1
    assert (e.lo, e.hi) == (base(a) + (6 + 1) * 8, base(a) + (2 * 6 + 5) * 8 + 8)
    empty = extent_of(a[2:2])
    assert empty.empty and empty.lo == empty.hi and not overlaps(empty, extent_of(a))
    assert not extent_of(a).empty and extent_of(a).count == 24


def test_extent_of_a_torch_tensor():
    torch = pytest.importorskip("torch")
    t = torch.zeros(3, 5, dtype=torch.float16)
    e = extent_of(t.t())
    assert e.strides == (2, 10) and e.itemsize == 2 and e.hi - e.lo == 30 and e.device == "cpu"


def test_byte_set_is_every_byte_once():
    a = np.zeros(8, np.int16)
    e = extent_of(a[::3])  # elements 0, 3, 6
    b = base(a)
    assert e.byte_set().tolist() == [b, b + 1, b + 6, b + 7, b + 12, b + 13]


def test_overlaps_compares_bytes_and_devices():
    buf = np.zeros(64, np.uint8)
    f = extent_of(buf[0:16].view(np.float32))
    assert overlaps(f, extent_of(buf[15:16])) and overlaps(extent_of(buf[15:16]), f)
    assert not overlaps(f, extent_of(buf[16:20])) and not overlaps(extent_of(buf[16:20]), f)
    even, odd = extent_of(buf.view(np.int16)[::2]), extent_of(buf.view(np.int16)[1::2])
    assert not overlaps(even, odd)  # interleaved, no shared byte
    assert overlaps(even, extent_of(buf[4:5]))  # byte 4 is the start of int16 element 2
    assert not overlaps(even, extent_of(buf[2:3]))  # byte 2 belongs to element 1 (odd)
    other = Extent("cuda:0", f.lo, f.hi, f.ptr, f.shape, f.strides, f.itemsize)
    assert not overlaps(f, other)  # the same numbers on another device are other memory
    assert overlaps(f, f)


def test_overlaps_is_conservative_beyond_the_exact_limit():
    from safetile.safe import memory
    big = np.zeros(memory.EXACT_LIMIT // 2 + 16, np.float32)  # each half: the limit's bytes + 32
    assert overlaps(extent_of(big[::2]), extent_of(big[1::2]))  # too big to compare exactly: refused
    small = np.zeros(64, np.float32)
    assert not overlaps(extent_of(small[::2]), extent_of(small[1::2]))


def test_distinct_elements_cases():
    a = np.zeros(32, np.float32)
    st = np.lib.stride_tricks.as_strided
    assert distinct_elements(extent_of(a.reshape(4, 8)))
    assert distinct_elements(extent_of(a.reshape(4, 8)[:, ::-1]))
    assert not distinct_elements(extent_of(st(a, (4, 8), (0, 4))))
    assert distinct_elements(extent_of(st(a, (1, 8), (0, 4))))  # a unit axis with stride 0 is fine
    assert not distinct_elements(extent_of(st(a, (8,), (2,))))  # half-overlapping elements
    assert distinct_elements(extent_of(st(a, (2, 4), (4, 8))))  # interleaved rows: exact count
    assert not distinct_elements(extent_of(st(a, (3, 4), (4, 8))))  # row 2 hits row 0's element 1
    assert distinct_elements(extent_of(a[:0]))


# ----------------------------------------------------------------------------- facts

def test_facts_of_each_kind():
    t = rnd((4, 8), seed=1)
    f = facts_of(t)
    assert (f.kind, f.dtype, f.shape, f.device, f.writeable, f.pshape) == ("tensor", ct.float32, (4, 8), "cpu", True, None)
    p = t.partition((2, 4))
    fp = facts_of(p)
    assert (fp.kind, fp.pshape, fp.sub_shape, fp.grid(), fp.grid3()) == \
        ("partition", (2, 4), (2, 4), (2, 2), (2, 2, 1))
    assert fp.extent == f.extent
    t = p.unpartition()
    pp = t.partition_prefix((2,))
    fpp = facts_of(pp)
    assert (fpp.pshape, fpp.sub_shape, fpp.grid3()) == ((2,), (2, 8), (2, 1, 1))
    m = pp.unpartition().partition((1, 8)).map(3)
    fm = facts_of(m)
    assert (fm.kind, fm.n, fm.grid3()) == ("mapped", 3, (3, 1, 1))
    s = m.unmap().unpartition().shared()
    assert facts_of(s).kind == "shared"
    ro = np.zeros(4, np.float32)
    ro.flags.writeable = False
    assert facts_of(ro).writeable is False and facts_of(ro).kind == "array"
    assert facts_of(3.0) is None and facts_of("x") is None
    assert facts_of(np.zeros(2, np.complex64)).dtype is None and "complex" in facts_of(np.zeros(2, np.complex64)).dtype_error


def test_equal_facts_are_one_object():
    a = np.zeros(8, np.float32)
    assert facts_of(a) is facts_of(a)
    assert facts_of(a) is not facts_of(a[1:])


# ----------------------------------------------------------------------------- refusals: exact words

def test_wrong_kinds_are_named_exactly():
    z = poisoned(64).partition(16)
    cases = [
        (lambda: add(poisoned(64), rnd(64)), "argument 'z' of kernel 'add' is mutable (ct.Mut): pass a partition, "
         "e.g. t.partition((1,)), got Tensor"),
        (lambda: add(np.zeros(64, np.float32), rnd(64)), "got ndarray"),
        (lambda: add(rnd(64).shared(), rnd(64)), "got Shared"),
        (lambda: add(poisoned(64).partition(16).map(2), rnd(64)),
         "argument 'z' of kernel 'add' is ct.Mut (one sub-tensor per block); a mapped partition needs a ct.MappedMut "
         "parameter"),
        (lambda: add(z, poisoned(64).partition(16)), "argument 'x' of kernel 'add' is read-only (ct.Ref): pass the "
         "tensor itself or ct.shared(t), not a partition"),
        (lambda: add(z, object()), "argument 'x' of kernel 'add' is a read-only tensor (ct.Ref): pass a Tensor, "
         "ct.shared(t), a NumPy array or a torch tensor, got object"),
        (lambda: scal(z, rnd(4)), "argument 'a' of kernel 'scal' is a scalar (float32), got Tensor"),
        (lambda: scal(z, "2"), "argument 'a' of kernel 'scal' is a scalar (float32), got str"),
        (lambda: konst(z, rnd(4)), "argument 'c' of kernel 'konst': ct.Constant arguments must be hashable values, "
         "got Tensor"),
        (lambda: mapped(poisoned(64).partition(16)), "argument 'c' of kernel 'mapped' is ct.MappedMut: pass "
         "t.partition(shape).map(num_tile_blocks), got Partition"),
    ]
    for action, message in cases:
        with pytest.raises(ct.LaunchTypeError) as info:
            action()
        assert message in str(info.value), str(info.value)
        gc.collect()
    assert not z.is_moved


def test_torch_tensor_named_in_a_kind_error():
    torch = pytest.importorskip("torch")
    with pytest.raises(ct.LaunchTypeError, match=r"pass a partition, e\.g\. t\.partition\(\(1,\)\), got Tensor \(torch\)"):
        add(torch.zeros(64), rnd(64))


def test_launch_state_messages():
    z, x = poisoned(64).partition(16), rnd(64, seed=2)
    op = add(z, x)
    z, x = op.sync()
    with pytest.raises(ct.DeviceOpError, match=r"cannot be cancelled: it has already run$"):
        op.cancel()
    with pytest.raises(ct.DeviceOpError, match=r"has already run; a launch runs once"):
        op.sync()
    op2 = add(z, x)
    op2.cancel()
    with pytest.raises(ct.DeviceOpError, match=r"has been cancelled; a launch runs once"):
        op2.sync()
    op3 = add(z, x)
    with pytest.raises(ct.GridError):
        op3.grid((3, 1, 1))
    with pytest.raises(ct.DeviceOpError, match=r"cannot be cancelled: it has been rejected$"):
        op3.cancel()
    with pytest.raises(ct.DeviceOpError, match=r"has been rejected; configure the kernel before launching"):
        op3.grid((4, 1, 1))
    holder = []
    op4 = add(ct.value(z).map(lambda v: (holder.append(_try_cancel(op4)), v)[1]), x)
    op4.sync()
    assert holder == ["it has started running"]
    failing = add(ct.value(z).map(lambda v: 1 / 0), x)
    with pytest.raises(ZeroDivisionError):
        failing.sync()
    with pytest.raises(ct.DeviceOpError, match=r"cannot be cancelled: it has already failed$"):
        failing.cancel()


def _try_cancel(op):
    try:
        op.cancel()
    except ct.DeviceOpError as e:
        return str(e).split(": ", 1)[1]
    return "cancelled"


def test_abandoned_launch_is_named():
    z, x = poisoned(64).partition(16), rnd(64, seed=3)
    op = add(z, x)
    bad = ct.value(0).then(lambda _: op.sync())  # a terminal inside a terminal: the op is abandoned
    with pytest.raises(ct.NestedSyncError):
        bad.sync()
    with pytest.raises(ct.DeviceOpError, match=r"it has been abandoned$"):
        op.cancel()
    assert not z.is_moved


def test_generic_and_configuration_errors_give_arguments_back():
    z, x = poisoned(64).partition(16), rnd(64, seed=4)
    op = add(z, x)
    with pytest.raises(TypeError, match="generics are integers or element types"):
        op.generics(B=1.5)
    assert not z.is_moved and not x.is_moved


def test_shapes_and_generics_messages():
    @ct.entry
    def two(z: ct.Mut[ct.f32, "B"], x: ct.Ref[ct.f32, ("N", 4)]):
        z.store(z.load())
    z = poisoned(64).partition(16)
    with pytest.raises(ct.LaunchTypeError, match=re.escape("argument 'x' of kernel 'two': the tensor shape is (8, 5) "
                                                          "but ct.Ref[float32, ('N', 4)] needs size 4 on axis 1")):
        two(z, rnd((8, 5)))
    with pytest.raises(ct.LaunchTypeError, match=re.escape("the sub-tensor shape (16,) has rank 1 but")):
        inc2d(z)
    with pytest.raises(ct.LaunchTypeError, match=re.escape("kernel 'two': generic 'B' is 8 from kernel.generics(...) "
                                                          "but 16 from the sub-tensor shape of 'z' (axis 0)")):
        two.generics(B=8)(z, rnd((8, 4)))
    with pytest.raises(ct.LaunchTypeError, match=re.escape("kernel 'two': argument 'x' has element type float64 but the "
                                                          "parameter is declared float32")):
        two(z, rnd((8, 4), dtype=ct.f64))


@ct.entry
def inc2d(z: ct.Mut[ct.f32, ("A", "B")]):
    z.store(z.load() + 1.0)


def test_undetermined_generic_and_devices():
    @ct.entry
    def needs_k(z: ct.Mut[ct.f32, "B"], x: ct.Ref[ct.f32, "K"]):
        z.store(z.load())

    @ct.entry
    def free(z: ct.Mut[ct.f32, "B"], x: ct.Ref["E", -1]):
        z.store(z.load())
    z = poisoned(64).partition(16)
    free(z, rnd(8, dtype=ct.f64)).sync()
    with pytest.raises(ct.LaunchTypeError, match=r"has rank 2 but ct\.Ref\[float32, \('K',\)\] has rank 1"):
        needs_k(z, rnd((2, 2)))


# ----------------------------------------------------------------------------- race report regions

def test_race_report_locates_2d_regions_exactly():
    @ct.kernel
    def rows(x, out, T: ct.Constant[int]):
        ct.store(out, index=(1, ct.bid(0)), tile=ct.load(x, index=(0, 0), shape=(T, T)))  # row block 1, any column
    out = np.full((4 * 4, 2 * 4), np.nan, np.float32)
    rep = ct.detect_races(rows, (2, 1, 1), (rnd((4, 4)).to_numpy(), out, 4), raise_on_race=False)
    assert not rep  # blocks write different column blocks
    @ct.kernel
    def same(x, out, T: ct.Constant[int]):
        ct.store(out, index=(1, 1), tile=ct.load(x, index=(0, 0), shape=(T, T)))
    rep = ct.detect_races(same, (3, 1, 1), (rnd((4, 4)).to_numpy(), out, 4), raise_on_race=False)
    assert rep.racy_elements == 16 and rep.written_elements == 16
    c = rep.conflicts[0]
    assert (c.array, c.lo, c.hi, c.count, c.kind) == ("out", (4, 4), (7, 7), 16, "write-write")
    assert c.describe() == "blocks (0, 0, 0) and (1, 0, 0) both write 16 element(s) of 'out' in region [4:8, 4:8]"
    assert rep.blocks == {(0, 0, 0), (1, 0, 0), (2, 0, 0)} and rep.kinds == {"write-write"}
    assert str(rep).startswith("data race in kernel 'same' over grid (3, 1, 1): 16 element(s) are accessed by more "
                               "than one tile block in a racing way (write-write; 16 element(s) written)")
    assert str(ct.detect_races(rows, (2, 1, 1), (rnd((4, 4)).to_numpy(), out, 4), raise_on_race=False)) == \
        "kernel 'rows' over grid (2, 1, 1): no data races"


def test_race_report_limits_its_listing():
    @ct.kernel
    def all_zero(x, out, T: ct.Constant[int]):
        ct.store(out, index=(0,), tile=ct.load(x, index=(ct.bid(0),), shape=(T,)))
    rep = ct.detect_races(all_zero, (12, 1, 1), (rnd(48).to_numpy(), np.zeros(48, np.float32), 4),
                          raise_on_race=False)
    text = rep.describe(limit=3)
    assert len(rep.conflicts) == 11 and text.count("both write") == 3
    assert text.endswith("  ... and 8 more pair(s) of blocks")


# ----------------------------------------------------------------------------- graphs, streams, copies

def test_graph_metadata_and_scope_errors():
    z, x = poisoned(64).partition(16), rnd(64, seed=5)
    g = add(z, x).then(lambda r: add(*r)).graph()
    assert g.num_ops == 2 and g.ops == [g.ops[0], g.ops[1]] and all(o.startswith("launch 'add'") for o in g.ops)
    assert repr(g) == "<safetile Graph: 2 op(s) on cpu>"
    assert g.replays == 0
    g.launch()
    g.launch()
    assert g.replays == 2
    g.close()
    s = ct.graph_scope()
    with pytest.raises(ct.GraphCaptureError, match=r"^record\(\) is only possible inside `with ct.graph_scope\(\) as g:`$"):
        s.record(add(*g.value))
    gc.collect()
    with pytest.raises(ct.GraphCaptureError, match="still open"):
        s.launch()
    with ct.graph_scope() as s2:
        with pytest.raises(TypeError, match="^record expects a DeviceOp, got int$"):
            s2.record(3)
        z2, x2 = s2.record(add(*g.value))
    assert s2.graph.num_ops == 1
    out = s2.launch()
    assert out[0][0] is z2


def test_stream_ordering_and_pools():
    s = ct.Stream("cpu")
    assert s.device == "cpu" and not s.is_cuda and s.handle == 0 and s.device_index == -1
    assert repr(s) == f"<safetile stream {s.id} on cpu>"
    order = []
    futs = [s.submit(lambda i=i: order.append(i)) for i in range(5)]
    assert s.run(lambda: "inline") == "inline"
    s.synchronize()
    assert order == [0, 1, 2, 3, 4] and all(f.done() for f in futs)
    with pytest.raises(ValueError, match="at least one stream"):
        ct.StreamPool("cpu", 0)
    pool = ct.StreamPool("cpu", 3)
    assert pool.device == "cpu" and all(st.device == "cpu" for st in pool.streams)
    picked = [pool.next() for _ in range(6)]
    assert picked[:3] == pool.streams and picked[3:] == pool.streams and len(set(map(id, picked))) == 3
    assert ct.default_pool("cpu") is ct.default_pool("cpu") and len(ct.default_pool("cpu").streams) == 4


def test_copies_wait_check_and_name_themselves():
    t = rnd(32, seed=6)
    c = ct.copy(t).sync()
    assert np.array_equal(c.to_numpy(), t.to_numpy()) and c._data is not t._data
    s = t.shared()
    assert np.array_equal(ct.copy(s).sync().to_numpy(), s.to_numpy())
    assert np.array_equal(ct.to_device(s, "cpu").sync().to_numpy(), s.to_numpy())
    p = s.try_unwrap().partition(8)
    assert np.array_equal(ct.copy(p).sync().to_numpy(), p.to_numpy())
    a = np.arange(5, dtype=np.int32)
    assert np.array_equal(ct.to_device(a).sync().to_numpy(), a) and ct.from_numpy([1, 2], dtype=ct.i16).sync().dtype is ct.int16
    with pytest.raises(ct.TensorError, match="^copy: cannot copy from list$"):
        ct.copy([1, 2])
    with pytest.raises(ct.TensorError, match="^to_device: cannot copy from str$"):
        ct.to_device("x")
    op = ct.copy(p)
    moved = p.map(2)
    with pytest.raises(ct.UseAfterMoveError, match="cannot be copied"):
        op.sync()
    moved.unmap()


def test_memcpy_refusals_are_exact():
    dst = poisoned(8)
    with pytest.raises(ct.LaunchTypeError, match=r"^memcpy: the destination must be a Tensor or a Partition, got ndarray$"):
        ct.memcpy(np.zeros(8, np.float32), dst)
    with pytest.raises(ct.LaunchTypeError, match=re.escape("memcpy: shapes differ: destination (8,), source (4,)")):
        ct.memcpy(dst, np.zeros(4, np.float32))
    with pytest.raises(ct.LaunchTypeError, match="memcpy: element types differ: destination float32, source int32"):
        ct.memcpy(dst, np.zeros(8, np.int32))
    with pytest.raises(ct.AliasError, match="overlaps the source"):
        ct.memcpy(dst, dst)
    assert not dst.is_moved
    p = dst.partition(4)
    out = ct.memcpy(p, np.arange(8, dtype=np.float32)).sync()
    assert out is p and np.array_equal(p.to_numpy(), np.arange(8, dtype=np.float32))
    op = ct.memcpy(p, np.zeros(8, np.float32))
    assert op.cancel() is p and not p.is_moved
    with pytest.raises(ct.DeviceOpError, match="cannot be cancelled: it is cancelled"):
        op.cancel()


def test_memcpy_from_torch_and_into_a_graph():
    torch = pytest.importorskip("torch")
    dst = poisoned(8)
    ct.memcpy(dst, torch.arange(8, dtype=torch.float32)).sync()
    assert np.array_equal(dst.to_numpy(), np.arange(8, dtype=np.float32))
    src = rnd(8, seed=7)
    g = ct.memcpy(dst, src).graph()
    assert g.num_ops == 1 and g.ops == [f"memcpy into {dst.label}"]
    ct.memcpy(src, np.full(8, 3.0, np.float32)).sync()
    g.launch()
    assert np.array_equal(dst.to_numpy(), np.full(8, 3.0, np.float32))
    g.close()


# ----------------------------------------------------------------------------- annotations, preconditions, reprs

def test_annotation_reprs():
    assert repr(ct.Mut[ct.f32, "B"]) == "ct.Mut[float32, ('B',)]"
    assert repr(ct.Ref["E", (-1, 4)]) == "ct.Ref[E, (-1, 4)]"
    assert repr(ct.MappedMut[ct.f16, ("BM", "BN")]) == "ct.MappedMut[float16, ('BM', 'BN')]"
    assert ct.Mut[ct.f32, (2, 3)].ndim == 2 and ct.Mut[ct.f32, 2].mutable and not ct.Ref[ct.f32, 2].mutable
    with pytest.raises(TypeError, match="is an annotation"):
        ct.Mut()


def test_precondition_text_of_a_lambda_is_its_source():
    @ct.entry(preconditions=[lambda x: x.shape[0] > 100])
    def k(z: ct.Mut[ct.f32, "B"], x: ct.Ref[ct.f32, -1]):
        z.store(z.load())
    z, x = poisoned(64).partition(16), rnd(64)
    with pytest.raises(ct.PreconditionError) as info:
        k(z, x)
    assert str(info.value) == ("kernel 'k': precondition `lambda x: x.shape[0] > 100` does not hold; the launch was "
                               "rejected before running")

    def named(x):
        return x.ndim == 2

    @ct.entry(preconditions=[named])
    def k2(z: ct.Mut[ct.f32, "B"], x: ct.Ref[ct.f32, -1]):
        z.store(z.load())
    with pytest.raises(ct.PreconditionError, match=r"^kernel 'k2': precondition `named` does not hold; the launch "
                       r"was rejected before running$"):
        k2(z, x)


# ----------------------------------------------------------------------------- borrows and drops

def test_borrow_waits_for_its_own_chains_end():
    t = ct.zeros(64).sync()
    with ct.borrow_mut(t) as b:
        p = b.partition(16)
        p, = inc(p).then(lambda r: inc(*r)).sync()
    assert np.array_equal(t.to_numpy(), np.full(64, 2.0, np.float32))
    with pytest.raises(ct.OwnershipError, match="it was released"):
        inc(p)
    with pytest.raises(ct.OwnershipError, match=r"owns its tensor; use \.unpartition\(\)"):
        t.partition(16).release()


@ct.entry
def inc(z: ct.Mut[ct.f32, "B"]):
    z.store(z.load() + 1.0)


def test_a_borrow_ended_without_leftovers_warns_nothing():
    t = ct.zeros(64).sync()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with ct.borrow_mut(t) as b:
            p = b.partition(16)
            p.release()
    t.to_numpy()


# ----------------------------------------------------------------------------- combinators, tensors, handles

def test_tuple_combinators_pick_and_refuse_exactly():
    op = ct.zip(ct.value(1), ct.value("b"), 3)
    assert op.arity == 3 and op.first().sync() == 1 and op.last().sync() == 3
    a, b, c = op.unzip()
    assert (a.sync(), b.sync(), c.sync()) == (1, "b", 3)
    assert [o.sync() for o in ct.value([4, 5]).unzip(2)] == [4, 5]
    with pytest.raises(ct.DeviceOpError, match=r"^unzip\(\): the number of outputs is not known; pass it: op\.unzip\(n\)$"):
        ct.value((1, 2)).unzip()
    for name in ("first", "last"):
        with pytest.raises(ct.DeviceOpError, match=rf"^{name}\(\) needs an operation producing a tuple, got int$"):
            getattr(ct.value(7), name)().sync()
    with pytest.raises(ct.DeviceOpError, match=r"^unzip\(\) needs an operation producing a tuple, got str$"):
        ct.value("ab").unzip(1)[0].sync()
    with pytest.raises(ct.DeviceOpError, match=r"^map\(\) closure returned a DeviceOp; use then\(\) to chain device work$"):
        ct.value(1).map(lambda v: ct.value(v)).sync()
    for name in ("first", "last"):
        with pytest.raises(ct.DeviceOpError, match=rf"^{name}\(\) closure returned a DeviceOp"):
            getattr(ct.value((ct.value(1),)), name)().sync()
    with pytest.raises(ct.DeviceOpError, match=r"^unzip\[0\]\(\) closure returned a DeviceOp"):
        ct.value((ct.value(1),)).unzip(1)[0].sync()
    assert ct.zip(ct.zeros(4, device="cpu"), 1)._device() == "cpu" and ct.zip(1, 2)._device() is None
    assert ct.empty().sync() is None and ct.value(5).inspect(lambda v: None).sync() == 5


def test_tensor_host_interfaces():
    t = ct.from_dlpack(np.arange(12, dtype=np.float32).reshape(3, 4)).named("w")
    assert repr(t) == "<safetile tensor 'w' on cpu>" and t.label == "tensor 'w'"
    assert t.strides == (4, 1) and t.nbytes == 48 and t.size == 12 and t.numel == 12 and len(t) == 3 and t.ndim == 2
    assert np.array_equal(np.asarray(t, dtype=np.int64), np.arange(12).reshape(3, 4))
    assert np.asarray(t).dtype == np.float32
    assert np.array_equal(t.slice(1, 1, 3).to_numpy(), np.arange(12, dtype=np.float32).reshape(3, 4)[:, 1:3])
    assert np.array_equal(t.slice(-2, 0, 2).to_numpy(), np.arange(8, dtype=np.float32).reshape(2, 4))
    assert np.array_equal(t.to_host().sync().to_numpy(), t.to_numpy())
    assert np.array_equal(np.from_dlpack(t), t.to_numpy()) and t.__dlpack_device__() == (1, 0)
    assert t.data_ptr == t._data.__array_interface__["data"][0]
    p = t.partition((1, 4))
    assert repr(t).startswith("<safetile tensor 'w' on cpu, moved into partition 'w'")
    for action, verb in ((lambda: t.__dlpack__(), "exported"), (lambda: t.__dlpack_device__(), "exported"),
                         (lambda: np.asarray(t), "read"), (lambda: t.slice(0, 0, 1), "sliced"),
                         (lambda: t.reshape(12), "reshaped"), (lambda: t.strides, "inspected")):
        with pytest.raises(ct.UseAfterMoveError, match=rf"^tensor 'w' cannot be {verb}: it was moved into"):
            action()
    p.unpartition()


def test_handle_metadata():
    t = ct.zeros((4, 6)).sync()
    p = t.partition((2, 4))
    assert (p.partition_shape, p.tile_shape, p.tensor_shape, p.shape, p.grid(), p.num_tiles, p.is_prefix) == \
        ((2, 4), (2, 4), (4, 6), (4, 6), (2, 2), 4, False)
    assert p.dtype is ct.float32 and p.device == "cpu"
    m = p.map(3)
    assert (m.grid(), m.tile_shape, m.num_tile_blocks, m.dtype) == ((3, 1, 1), (2, 4), 3, ct.float32)
    assert np.array_equal(m.to_numpy(), np.zeros((4, 6), np.float32))
    s = m.unpartition().shared()
    assert s.clone() is s and s.shared() is s and ct.shared(s) is s
    assert (s.shape, s.ndim, s.strides, s.dtype, s.device) == ((4, 6), 2, (6, 1), ct.float32, "cpu")
    assert repr(s) == f"<safetile {s.label}>" and s.label.startswith("shared tensor#")
    assert np.array_equal(np.asarray(s, dtype=np.int32), np.zeros((4, 6), np.int32))
    t2 = s.try_unwrap()
    for action, verb in ((lambda: s.clone(), "cloned"), (lambda: s.shape, "inspected"), (lambda: s.to_numpy(), "read"),
                         (lambda: s.try_unwrap(), "unwrapped"), (lambda: s.dtype, "inspected"),
                         (lambda: s.device, "inspected"), (lambda: s.strides, "inspected")):
        with pytest.raises(ct.OwnershipError, match=rf"^{re.escape(s.label)} cannot be {verb}: it was unwrapped at "
                           r"test_mutation_kills\.py:\d+$"):
            action()
    pp = t2.partition_prefix((2,))
    assert (pp.is_prefix, pp.tile_shape, pp.grid()) == (True, (2, 6), (2,))
    with pytest.raises(TypeError, match="^ct.shared expects a Tensor or a DeviceOp, got int$"):
        ct.shared(3)
    with pytest.raises(TypeError, match="^ct.borrow_mut expects a Tensor, got int$"):
        ct.borrow_mut(3)


@pytest.mark.threads
def test_host_access_waits_for_a_submitting_entry():
    import threading
    from safetile.safe.memory import REGISTRY
    t = ct.zeros(16).sync()
    ext = t._extent()
    entry = InFlight("a test launch", None)
    REGISTRY.claim(entry, entry, [ext], [])  # registered and marked as submitting
    done = []
    reader = threading.Thread(target=lambda: done.append(t.to_numpy()))
    reader.start()
    reader.join(0.3)
    assert not done, "a host read ran while a launch on its memory was being submitted"
    entry.set_enqueued()
    REGISTRY.remove(entry)
    reader.join(10)
    assert len(done) == 1 and not reader.is_alive()
    other = InFlight("elsewhere", None)
    REGISTRY.claim(other, other, [extent_of(np.zeros(4))], [])  # unrelated memory: no wait
    REGISTRY.wait_for_host(ext, True, "a test read")
    REGISTRY.remove(other)


def test_ref_loads_whole_or_by_index():
    @ct.entry
    def whole(z: ct.Mut[ct.f32, 8], x: ct.Ref[ct.f32, 8], y: ct.Ref[ct.f32, (-1,)]):
        z.store(x.load() + y.load((ct.bid(0),), (8,)))

    @ct.entry
    def dynamic(z: ct.Mut[ct.f32, 8], x: ct.Ref[ct.f32, -1]):
        z.store(x.load())
    x, y = rnd(8, seed=9), rnd(16, seed=10)
    z, x, y = whole(poisoned(16).partition(8), x, y).sync()
    out = z.unpartition().to_numpy()
    assert np.allclose(out, np.r_[x.to_numpy(), x.to_numpy()] + y.to_numpy())
    from safetile.errors import TileTypeError
    with pytest.raises(TileTypeError, match=r"x\.load\(\) needs a static shape; use x\.partition\(shape\)\.load\(index\)"):
        dynamic(poisoned(8).partition(8), rnd(8))


def test_map_refusals_are_exact():
    p = poisoned(64).partition(16)
    for bad, text in ((True, "True"), (2.0, "2.0"), ("2", "'2'")):
        with pytest.raises(ct.PartitionError, match=rf"^map: num_tile_blocks must be an integer, got {re.escape(text)}$"):
            p.map(bad)
    with pytest.raises(ct.PartitionError, match=re.escape(f"map of {p.label}: num_tile_blocks=5 is out of range; it "
                                                          "must be between 1 and the number of sub-tensors (4)")):
        p.map(5)
    m = p.map(np.int64(4))
    assert m.num_tile_blocks == 4 and isinstance(m.num_tile_blocks, int)


def test_claim_refusals_name_the_holder():
    t = ct.zeros(64).sync()
    v = t[:16]
    p = t.partition(16)
    with pytest.raises(ct.AliasError) as info:
        v.shared()
    assert str(info.value) == (f".shared() of {v.label} is refused: its memory overlaps memory held by {p.label}, and "
                               "it can still be written; a Shared value has no writable alias anywhere")
    t = p.unpartition()
    s = v.shared()
    with pytest.raises(ct.AliasError) as info:
        t.partition(8)
    assert str(info.value) == (f"partition of {t.label} is refused: its memory overlaps memory held by {s.label}, and "
                               "it is read-only shared memory; a Shared value has no writable alias anywhere")


def test_in_flight_conflicts_by_kind():
    keep = np.zeros(8, np.float32), np.zeros(8, np.float32), np.zeros(2)  # alive: distinct addresses
    a, b = extent_of(keep[0]), extent_of(keep[1])
    e = InFlight("x", None, writes=[a], reads=[b])
    assert e.conflicts(a, False) and e.conflicts(a, True)  # its writes conflict with any access
    assert e.conflicts(b, True) and not e.conflicts(b, False)  # its reads only with writes
    assert e.conflicts_any([b], []) and not e.conflicts_any([], [b]) and e.conflicts_any([], [a])
    assert not e.conflicts_any([], []) and not e.on_gpu and e.submitted() and not e.finished()
    e.add(e, [b], [a])
    assert e.writes == [a, b] and e.reads == [b, a]
    e.add(e, [extent_of(keep[2])], [])  # the same key again: nothing added
    assert len(e.writes) == 2
    e.set_done()
    assert e.finished() and e.done


def test_copies_of_raw_arrays_and_their_labels():
    a = np.arange(6, dtype=np.float32)
    op = ct.copy(a)
    assert op.label == "copy" and op._device() == "cpu"
    c = op.sync()
    a[0] = 99.0  # a copy, not a view
    assert c.to_numpy()[0] == 0.0 and c.to_numpy()[1] == 1.0
    to = ct.to_device(a, "cpu")
    assert to.label == "to_device(cpu)" and to._device() == "cpu"
    assert np.array_equal(to.sync().to_numpy(), a)
    torch = pytest.importorskip("torch")
    tt = torch.arange(4, dtype=torch.float32)
    assert np.array_equal(ct.copy(tt).sync().to_numpy(), np.arange(4, dtype=np.float32))
    assert np.array_equal(ct.to_device(tt).sync().to_numpy(), np.arange(4, dtype=np.float32))


def test_reshape_refusals_are_exact():
    t = ct.from_dlpack(np.arange(12, dtype=np.float32).reshape(3, 4)).named("r")
    assert t.reshape(4, 3).shape == (4, 3) and t.reshape((2, 6)).shape == (2, 6) and t.view(12).shape == (12,)
    with pytest.raises(ct.TensorError, match=re.escape("cannot reshape tensor 'r' to (5, 5): ")):
        t.reshape(5, 5)
    cols = t[:, 1:3]
    with pytest.raises(ct.TensorError, match=re.escape(f"reshape of {cols.label} to (6,) needs a copy (non-contiguous "
                                                       "layout); make one with .dup() first")):
        cols.reshape(6)
    torch = pytest.importorskip("torch")
    tt = ct.from_dlpack(torch.arange(12, dtype=torch.float32).reshape(3, 4))
    assert tt.reshape(2, 6).to_numpy().tolist()[1] == [6, 7, 8, 9, 10, 11]


def test_memo_replays_its_failure():
    calls = []

    def boom(v):
        calls.append(v)
        raise RuntimeError("first failure")
    op = ct.value(3).map(boom).shared()
    with pytest.raises(RuntimeError, match="first failure"):
        op.sync()
    with pytest.raises(ct.DeviceOpError, match=r"^value\(int\) followed by 1 step\(s\)\.shared\(\) failed earlier: "
                       r"first failure$"):
        op.sync()
    assert calls == [3]
    ok = ct.value(4).map(lambda v: v + 1)
    memo = ok.shared()
    assert memo.sync() == 5 and memo.sync() == 5 and memo.arity is None and memo._device() is None


def test_graph_capture_on_a_given_stream_and_its_device_check():
    s = ct.Stream("cpu")
    z, x = poisoned(16).partition(16), rnd(16, seed=11)
    g = add(z, x).graph(s)
    assert g.stream is s and g.value[0] is z
    g.close()
    from safetile.safe.graph import Recorder
    r = Recorder()
    r.record("a", lambda st: None, [], [], "cpu")
    with pytest.raises(ct.GraphCaptureError, match=r"^b: a graph runs on one device \(cpu\), not cuda:0$"):
        r.record("b", lambda st: None, [], [], "cuda:0")
    with pytest.raises(ct.GraphCaptureError, match=r"^c cannot be recorded into a graph: it allocates memory; allocate "
                       r"before capturing and refresh inputs with ct\.memcpy\(dst, src\)$"):
        r.reject("c")
    assert r.steps[0][0] == "a" and r.device == "cpu"


def test_race_report_regions_of_reversed_and_broadcast_outputs():
    @ct.kernel
    def first_tile(x, out, T: ct.Constant[int]):
        ct.store(out, index=(0,), tile=ct.load(x, index=(ct.bid(0),), shape=(T,)))
    rev = np.zeros(16, np.float32)[::-1]
    rep = ct.detect_races(first_tile, (2, 1, 1), (rnd(8).to_numpy(), rev, 4), raise_on_race=False)
    c = rep.conflicts[0]  # a reversed view: located by its own coordinates
    assert (c.array, c.lo, c.hi, c.count, rep.racy_elements) == ("out", (0,), (3,), 4, 4)
    one = np.lib.stride_tricks.as_strided(np.zeros(1, np.float32), (8,), (0,))  # eight elements, one address
    rep = ct.detect_races(first_tile, (2, 1, 1), (rnd(8).to_numpy(), one, 4), raise_on_race=False)
    assert (rep.conflicts[0].array, rep.conflicts[0].count, rep.racy_elements) == ("out", 1, 1)
    out2 = np.zeros((4, 8), np.float32)

    @ct.kernel
    def col(x, out, T: ct.Constant[int]):
        ct.store(out, index=(0, 1), tile=ct.load(x, index=(0, 0), shape=(T, T)))
    rep = ct.detect_races(col, (2, 1, 1), (rnd((4, 4)).to_numpy(), out2, 4), raise_on_race=False)
    c = rep.conflicts[0]
    assert (c.array, c.lo, c.hi, c.count) == ("out", (0, 4), (3, 7), 16)


def test_scatter_races_respect_masks():
    @ct.kernel
    def masked(x, out, T: ct.Constant[int]):
        i = ct.arange(T, dtype=ct.int32)
        ct.scatter(out, i, ct.gather(x, i), mask=i < ct.bid(0) * 2)  # block 0 writes nothing, block 1 two lanes
    assert not ct.detect_races(masked, (2, 1, 1), (rnd(8).to_numpy(), np.zeros(8, np.float32), 8))
    rep = ct.detect_races(masked, (3, 1, 1), (rnd(8).to_numpy(), np.zeros(8, np.float32), 8), raise_on_race=False)
    assert rep.racy_elements == 2 and rep.written_elements == 4  # blocks 1 and 2 share lanes 0 and 1


def test_preconditions_are_declared_as_strings_or_callables():
    from safetile.safe.preconditions import Precondition
    p = Precondition("dim(x, 0) > 1", "k")
    assert p.text == "dim(x, 0) > 1" and p.fn is None and p.kernel == "k"

    def check_me(x):
        return True
    q = Precondition(check_me, "k")
    assert q.text == "check_me" and q.tree is None and q.fn is check_me
    with pytest.raises(TypeError, match=r"^kernel 'k': a precondition is a string or a callable, got 3$"):
        Precondition(3, "k")
    with pytest.raises(ct.TileDeclarationError, match=r"^kernel 'k': precondition 'x >' is not an expression: "):
        Precondition("x >", "k")
    with pytest.raises(ct.TileDeclarationError, match=r"^kernel 'k': precondition `y > 1` names y, which is "
                                                      r"neither a parameter nor a generic \(x\)$"):
        Precondition("y > 1", "k", {"x"})
    Precondition("dim(x, 0) > max(1, abs(x.ndim))", "k", {"x"})  # function names are not parameters


@pytest.mark.threads
def test_borrow_end_waits_for_a_launch_running_in_another_thread():
    import threading
    t = ct.zeros(1 << 16).sync()
    started, release = threading.Event(), threading.Event()
    results = []

    def chain(b):
        def pause(r):
            started.set()
            release.wait(10)
            return inc(*r)
        results.append(inc(b).then(pause).sync())
    with ct.borrow_mut(t) as b:
        p = b.partition(1 << 12)
        th = threading.Thread(target=chain, args=(p,))
        th.start()
        started.wait(10)
        threading.Timer(0.2, release.set).start()
    # leaving the block waited for the chain (its partition was lent to that terminal)
    assert results and np.array_equal(t.to_numpy(), np.full(1 << 16, 2.0, np.float32))
    th.join()
