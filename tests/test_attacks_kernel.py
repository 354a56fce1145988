"""Adversarial corpus, kernel side: tile code reaching past the documented surface.

Class 1 of issue 9: kernel code must see only the documented surface of device objects,
and whatever Python it runs at compile time, the compiled kernel may touch a mutable
parameter only at the block's own sub-tensor (the IR check, safe/verify.py). Every attack
here is refused at compile time with a located safetile error, and the launch writes and
moves nothing.
"""
from __future__ import annotations

import operator

import numpy as np
import pytest

import safetile as ct
import safetile.ir.builder as ir_builder
from safetile.errors import TileError, TileSafetyError, TileTypeError
from safetile.ops.values import Array
from safetile.safe.device import PartitionIndex

from attack_helpers import poisoned, refused, rnd

N, T = 256, 64
get_array = operator.attrgetter("_array")


def launch_mut(kernel):
    z = poisoned(N).partition(T)
    x = rnd(N, seed=1)
    return [z, x], lambda: kernel(z, x)


def launch_mapped(kernel, n=2):
    c = poisoned(N).partition(T).map(n)
    x = rnd(N, seed=2)
    return [c, x], lambda: kernel(c, x)


def compile_refused(kernel, pattern, mapped=False, exc=TileError):
    objs, action = (launch_mapped if mapped else launch_mut)(kernel)
    e = refused(objs, action, exc, pattern)
    assert e.loc is not None and e.loc.filename.endswith("test_attacks_kernel.py"), str(e)
    return e


# ----------------------------------------------------------------------------- private attributes

@ct.entry
def private_array(z: ct.Mut[ct.f32, "B"], x: ct.Ref[ct.f32, -1]):
    ct.store(z._array, index=(0,), tile=ct.load_tile_like(x, z))


@ct.entry
def getattr_array(z: ct.Mut[ct.f32, "B"], x: ct.Ref[ct.f32, -1]):
    ct.store(getattr(z, "_array"), index=(0,), tile=ct.load_tile_like(x, z))


@ct.entry
def hasattr_probe(z: ct.Mut[ct.f32, "B"], x: ct.Ref[ct.f32, -1]):
    hidden = hasattr(z, "_array") or hasattr(z, "_index") or getattr(z, "_array", None) is not None
    z.store(ct.load_tile_like(x, z) * (2.0 if hidden else 1.0))


@ct.entry
def vars_of_device_object(z: ct.Mut[ct.f32, "B"], x: ct.Ref[ct.f32, -1]):
    ct.store(vars(z)["_array"], index=(0,), tile=ct.load_tile_like(x, z))


@ct.entry
def attrgetter_array(z: ct.Mut[ct.f32, "B"], x: ct.Ref[ct.f32, -1]):
    ct.store(get_array(z), index=(0,), tile=ct.load_tile_like(x, z))


@ct.entry
def private_index_method(z: ct.Mut[ct.f32, "B"], x: ct.Ref[ct.f32, -1]):
    ct.store(x, index=z._index(), tile=z.load())


@ct.entry
def dunder_class(z: ct.Mut[ct.f32, "B"], x: ct.Ref[ct.f32, -1]):
    k = z.__class__
    z.store(ct.load_tile_like(x, z))


@ct.entry
def undocumented_ref_value(z: ct.Mut[ct.f32, "B"], x: ct.Ref[ct.f32, -1]):
    a = Array(x.value, "x")
    z.store(ct.load(a, index=(ct.bid(0),), shape=(B,)))  # noqa: F821


@ct.entry
def type_of_device_object(z: ct.Mut[ct.f32, "B"], x: ct.Ref[ct.f32, -1]):
    k = type(z)
    z.store(ct.load_tile_like(x, z))


def reach_in(t):
    return t._array


@ct.entry
def private_through_helper(z: ct.Mut[ct.f32, "B"], x: ct.Ref[ct.f32, -1]):
    ct.store(reach_in(z), index=(0,), tile=ct.load_tile_like(x, z))


@ct.entry
def private_in_default_argument(z: ct.Mut[ct.f32, "B"], x: ct.Ref[ct.f32, -1]):
    f = lambda t, a=z._array: ct.store(a, index=(0,), tile=t)  # noqa: E731
    f(ct.load_tile_like(x, z))


@ct.entry
def private_of_partition_index(c: ct.MappedMut[ct.f32, ("B",)], x: ct.Ref[ct.f32, -1]):
    for idx in c.iter_indices():
        c.store(x.partition((B,)).load(idx), idx._owner and idx)  # noqa: F821


@pytest.mark.parametrize("kernel, pattern", [
    (private_array, "no attribute '_array'"),
    (getattr_array, "no attribute '_array'"),
    (vars_of_device_object, r"vars\(\) cannot be called with run-time values"),
    (attrgetter_array, "cannot be called with run-time values"),
    (private_index_method, "no attribute '_index'"),
    (dunder_class, "__class__ is not supported"),
    (undocumented_ref_value, "has no attribute 'value' in tile code"),
    (type_of_device_object, r"type\(\) cannot be called with run-time values"),
    (private_through_helper, "no attribute '_array'"),
    (private_in_default_argument, "no attribute '_array'"),
], ids=lambda v: getattr(v, "__name__", None))
def test_tile_code_sees_only_the_documented_surface(kernel, pattern):
    compile_refused(kernel, pattern)


def test_hasattr_and_getattr_do_not_see_private_state():
    z = poisoned(N).partition(T)
    x = rnd(N, seed=6)
    z, x = hasattr_probe(z, x).sync()
    assert np.array_equal(z.unpartition().to_numpy(), x.to_numpy())


def test_partition_index_private_owner_is_not_readable():
    compile_refused(private_of_partition_index, "no attribute '_owner'", mapped=True)


# ----------------------------------------------------------------------------- the IR check


@ct.entry
def static_eval_store(z: ct.Mut[ct.f32, "B"], x: ct.Ref[ct.f32, -1]):
    t = ct.load_tile_like(x, z)
    ct.static_eval(ct.store(z._array, index=(0,), tile=t))
    z.store(t)


def store_through_the_builder(t):
    """Python run at compile time can reach the compiler's own objects through module globals:
    the parameter's IR value, found without touching any device object."""
    b = ir_builder.current()
    ct.store(Array(b.blocks[0].args[0], "z"), index=(0,), tile=t)


@ct.entry
def builder_reach(z: ct.Mut[ct.f32, "B"], x: ct.Ref[ct.f32, -1]):
    t = ct.load_tile_like(x, z)
    ct.static_eval(store_through_the_builder(t))
    z.store(t)


def through_the_builder():
    return Array(ir_builder.current().blocks[0].args[0], "z")


@ct.entry
def builder_reach_in_tile_code(z: ct.Mut[ct.f32, "B"], x: ct.Ref[ct.f32, -1]):
    ct.store(through_the_builder(), index=(0,), tile=ct.load_tile_like(x, z))


@ct.entry
def forged_partition_index(c: ct.MappedMut[ct.f32, ("B",)], x: ct.Ref[ct.f32, -1]):
    for idx in c.iter_indices():
        c.store(x.partition((B,)).load(idx), PartitionIndex((0,), c))  # noqa: F821


def test_static_eval_cannot_reach_private_state():
    # static_eval sees a device object only as its static facts (no _array to reach)
    compile_refused(static_eval_store, "has no attribute '_array'")


def test_compiler_objects_reached_through_globals_are_caught_by_the_ir_check():
    compile_refused(builder_reach, r"ownership check of the compiled kernel: store of 'z' is not at this "
                    r"block's own index", exc=TileSafetyError)
    # in tile code itself the compiler's objects show no data (slot attributes are refused)
    compile_refused(builder_reach_in_tile_code, "no attribute 'args'")


def test_forged_partition_index_is_refused():
    compile_refused(forged_partition_index, "cannot be called with run-time values", mapped=True)


# The IR check alone (safe.verify): IR built by hand, as Python that escapes the front end could
# build it, must be refused whatever produced it.

def _emit(body, g, m):
    body(g, m)


def _compile_raw(body):
    """An entry kernel whose body emits IR directly through the builder, from static_eval
    (arbitrary Python run at compile time)."""
    from safetile.ops import grid as g
    from safetile.ops import memory as m

    @ct.entry
    def k(z: ct.Mut[ct.f32, "B"], x: ct.Ref[ct.f32, -1]):
        ct.static_eval(_emit(body, g, m))
        z.store(ct.load_tile_like(x, z))
    return k


def _param(i):
    return Array(ir_builder.current().blocks[0].args[i], "p")


IR_ATTACKS = {
    "store at a constant index": lambda g, m: m.store(_param(0), (0,), m.load(_param(1), (0,), (64,))),
    "store at another block's index": lambda g, m: m.store(_param(0), (g.bid(0) + 1,), m.load(_param(1), (0,), (64,))),
    "store of a smaller tile at the own index": lambda g, m: m.store(_param(0), (g.bid(0),),
                                                                      m.load(_param(1), (0,), (32,))),
    "load of the neighbour's sub-tensor": lambda g, m: m.load(_param(0), (g.bid(0) + 1,), (64,)),
    "gather from the mutable parameter": lambda g, m: m.gather(_param(0), ct.arange(64, dtype=ct.int32)),
    "scatter into the mutable parameter": lambda g, m: m.scatter(_param(0), ct.arange(64, dtype=ct.int32),
                                                                 m.load(_param(1), (0,), (64,))),
    "atomic on the mutable parameter": lambda g, m: m.atomic_add(_param(0), ct.arange(64, dtype=ct.int32),
                                                                 m.load(_param(1), (0,), (64,))),
    "store at num_blocks() instead of bid()": lambda g, m: m.store(_param(0), (g.num_blocks(0) - 1,),
                                                                   m.load(_param(1), (0,), (64,))),
    "masked scatter whose mask lanes are transposed against its index lanes": lambda g, m: _transposed_scatter(g, m),
    "masked scatter bounded on another offset": lambda g, m: _scatter_bounded_elsewhere(g, m),
}


def _transposed_scatter(g, m):
    """Index lanes r[i] (beyond the sub-tensor) kept by mask lanes r[j] (inside it): a reshape
    between the index and the mask misaligns them."""
    r = ct.arange(64, dtype=ct.int32) + 32
    idx = ct.broadcast_to(ct.reshape(g.bid(0) * 64 + r, (64, 1)), (64, 64))
    mask = ct.reshape((r >= 0) & (r < 64), (1, 64))
    m.scatter(_param(0), (idx,), ct.full((64, 64), 1.0, ct.float32), mask=mask)


def _scatter_bounded_elsewhere(g, m):
    r = ct.arange(64, dtype=ct.int32)
    q = r + 48
    m.scatter(_param(0), (g.bid(0) * 64 + q,), ct.full((64,), 1.0, ct.float32), mask=(r >= 0) & (r < 64))


@pytest.mark.parametrize("name", list(IR_ATTACKS))
def test_ir_check_refuses_every_foreign_access(name):
    compile_refused(_compile_raw(IR_ATTACKS[name]), "ownership check of the compiled kernel", exc=TileSafetyError)


# ----------------------------------------------------------------------------- mapped partitions

@ct.entry
def mapped_wrong_step(c: ct.MappedMut[ct.f32, ("B",)], x: ct.Ref[ct.f32, -1]):
    from_ir = ct.static_eval(_param(0))
    for i in range(ct.bid(0), ct.num_tiles(x, 0, (B,)), 1):  # noqa: F821 - every block walks everything
        ct.store(from_ir, index=(i,), tile=x.partition((B,)).load((i,)))  # noqa: F821


@ct.entry
def mapped_shifted_index(c: ct.MappedMut[ct.f32, ("B",)], x: ct.Ref[ct.f32, -1]):
    from_ir = ct.static_eval(_param(0))
    for i in range(ct.bid(0), ct.num_tiles(x, 0, (B,)), ct.num_blocks(0)):  # noqa: F821
        ct.store(from_ir, index=(i + 1,), tile=x.partition((B,)).load((i,)))  # noqa: F821


@ct.entry
def mapped_grid_stride_by_hand(c: ct.MappedMut[ct.f32, ("B",)], x: ct.Ref[ct.f32, -1]):
    from_ir = ct.static_eval(_param(0))
    for i in range(ct.bid(0), ct.num_tiles(x, 0, (B,)), ct.num_blocks(0)):  # noqa: F821
        ct.store(from_ir, index=(i,), tile=x.partition((B,)).load((i,)))  # noqa: F821


def test_mapped_store_outside_the_grid_stride_walk_is_refused():
    # static_eval may not produce arrays: the attacks above fail even before the IR check
    for k in (mapped_wrong_step, mapped_shifted_index):
        compile_refused(k, "static_eval produced a run-time value", mapped=True)


def test_ir_check_of_mapped_walks():
    """The IR check accepts exactly the disjoint walks: a hand-built grid-stride loop at the
    loop variable is disjoint across blocks; a step of 1 or a shifted index is not."""
    from safetile.ir.core import walk
    from safetile.safe.entry import ParamKey
    from safetile.safe.verify import verify_entry
    c = poisoned(N).partition(T).map(2)
    x = rnd(N, seed=3)

    @ct.entry
    def good(c: ct.MappedMut[ct.f32, ("B",)], x: ct.Ref[ct.f32, -1]):
        for idx in c.iter_indices():
            c.store(x.partition((B,)).load(idx), idx)  # noqa: F821
    fn = good.compile(c, x)
    keys = (ParamKey("mapped", ct.float32, 1, (T,), 1), ParamKey("ref", ct.float32, 1, (None,)))
    verify_entry(fn, keys)  # accepted
    loop = next(op for op in walk(fn.body) if op.name == "for")
    loop.operands[2] = loop.operands[0]  # step := bid(0): blocks' walks overlap
    with pytest.raises(TileSafetyError, match="not at an index produced by c.iter_indices"):
        verify_entry(fn, keys)


# ----------------------------------------------------------------------------- what stays allowed

@ct.entry
def static_facts(z: ct.Mut[ct.f32, "B"], x: ct.Ref[ct.f32, -1]):
    n = ct.static_eval(z.shape[0] * 2)
    z.store(ct.load_tile_like(x, z) * (n // B))  # noqa: F821


def test_static_eval_still_sees_static_facts():
    z = poisoned(N).partition(T)
    x = rnd(N, seed=4)
    z, x = static_facts(z, x).sync()
    assert np.allclose(z.unpartition().to_numpy(), 2 * x.to_numpy())


@ct.entry
def documented_surface(z: ct.Mut[ct.f32, "B"], x: ct.Ref[ct.f32, -1]):
    ct.static_assert(z.ndim == 1 and z.shape == (B,) and z.dtype == ct.float32)  # noqa: F821
    ct.static_assert(x.ndim == 1 and x.dtype == ct.float32 and hasattr(z, "store"))
    z.store(ct.load_tile_like(x, z) + x.partition((B,)).load((ct.bid(0),)))  # noqa: F821


def test_documented_surface_compiles_and_runs():
    z = poisoned(N).partition(T)
    x = rnd(N, seed=5)
    z, x = documented_surface(z, x).sync()
    assert np.allclose(z.unpartition().to_numpy(), 2 * x.to_numpy())


def test_store_to_a_ref_in_any_form_is_refused():
    @ct.entry
    def atomic_on_ref(z: ct.Mut[ct.f32, "B"], x: ct.Ref[ct.f32, -1]):
        ct.atomic_add(x, ct.arange(B, dtype=ct.int32), z.load())  # noqa: F821
        z.store(z.load())

    @ct.entry
    def tiled_view_store_on_ref(z: ct.Mut[ct.f32, "B"], x: ct.Ref[ct.f32, -1]):
        x.tiled_view((B,)).store((ct.bid(0),), z.load())  # noqa: F821
        z.store(z.load())
    for k in (atomic_on_ref, tiled_view_store_on_ref):
        compile_refused(k, "read-only", exc=TileTypeError)


@ct.entry
def _store_inner_tile(z: ct.Mut[ct.f32, "B"], i: int):
    z.partition((16,)).store(ct.full((16,), 1.0, ct.float32) * (ct.bid(0) + 1), (i,))


@ct.entry
def _load_tile(z: ct.Mut[ct.f32, "B"], x: ct.Ref[ct.f32, -1], i: int):
    z.store(ct.load(x, (i,), (64,), padding_mode=ct.PaddingMode.ZERO) + 1.0)


WRAPPING = [-1, 4, 2**31 - 1, 2**28, 2**28 + 1, 2**27 * 3, -(2**31), -(2**28)]


def _index_wraps_write_nothing():
    xs = np.random.default_rng(3).standard_normal(4 * 64).astype(np.float32)
    for i in WRAPPING:
        buf = np.full(256, np.nan, np.float32)
        _store_inner_tile(ct.from_dlpack(buf).partition(64), i).sync()
        assert np.isnan(buf).all(), f"inner index {i} wrote into the output"
        out = np.full(64, np.nan, np.float32)
        _load_tile(ct.from_dlpack(out).partition(64), ct.from_dlpack(xs.copy()), i).sync()
        # a tile index whose element offset would wrap round in int32 reads padding, not a tile
        # inside the array
        want = xs[64 * i:64 * i + 64] + 1 if 0 <= i < 4 else np.ones(64, np.float32)
        np.testing.assert_array_equal(out, want, err_msg=f"tile index {i}")


def test_tile_indices_whose_offsets_wrap_in_int32_address_nothing_cpu():
    _index_wraps_write_nothing()


def test_tile_indices_whose_offsets_wrap_in_int32_address_nothing_triton():
    from triton_interp import triton_interpreter
    with triton_interpreter():
        _index_wraps_write_nothing()


# ----------------------------------------------------------------------------- in-block scatters (z.partition(...).store)

def _owned_scatter(r_offset=0, lo=0, hi=64, mul=64, axis_fn=lambda g: g.bid(0), order="bid*P+r",
                   mask="both", reshape_r=None, bound_on=None):
    """A hand-built masked scatter into the first parameter: index = bid(0)*mul + r, mask from r."""
    def body(g, m):
        r = ct.arange(64, dtype=ct.int32) + r_offset
        base = mul * axis_fn(g) if order == "P*bid+r" else axis_fn(g) * mul
        idx = r + base if order == "r+bid*P" else base + r
        if reshape_r is not None:
            idx = reshape_r(idx)
        b = r if bound_on is None else bound_on(r)
        conds = {"both": (b >= lo) & (b < hi), "low": b >= lo, "high": b < hi, "none": None}[mask]
        m.scatter(_param(0), (idx,), ct.full((64,), 1.0, ct.float32), mask=conds)
    return body


OWNED_SCATTER_REFUSED = {
    "no mask": _owned_scatter(mask="none"),
    "no lower bound": _owned_scatter(mask="high"),
    "no upper bound": _owned_scatter(mask="low"),
    "a negative lower bound": _owned_scatter(lo=-1),
    "an upper bound past the sub-tensor": _owned_scatter(hi=65),
    "another block's base": _owned_scatter(axis_fn=lambda g: g.bid(0) + 1),
    "a base of a wrong size": _owned_scatter(mul=32),
    "a base of a wrong size, size first": _owned_scatter(mul=32, order="P*bid+r"),
    "another block's base, size first": _owned_scatter(axis_fn=lambda g: g.bid(0) + 1, order="P*bid+r"),
    "a base on another grid axis": _owned_scatter(axis_fn=lambda g: g.bid(1)),
    "bounds on another value": _owned_scatter(bound_on=lambda r: r - 16),
}


@pytest.mark.parametrize("name", list(OWNED_SCATTER_REFUSED))
def test_ir_check_refuses_scatters_that_may_leave_the_sub_tensor(name):
    compile_refused(_compile_raw(OWNED_SCATTER_REFUSED[name]), "ownership check of the compiled kernel: scatter",
                    exc=TileSafetyError)


@pytest.mark.parametrize("variant", ["bid*P+r", "r+bid*P", "P*bid+r", "broadcast index", "unit-axis reshape",
                                     "tighter bounds"])
def test_ir_check_accepts_scatters_kept_inside_the_sub_tensor(variant):
    body = {"bid*P+r": _owned_scatter(), "r+bid*P": _owned_scatter(order="r+bid*P"),
            "P*bid+r": _owned_scatter(order="P*bid+r"),
            "broadcast index": _owned_scatter(reshape_r=lambda i: ct.broadcast_to(i, (64,))),
            "unit-axis reshape": _owned_scatter(reshape_r=lambda i: ct.reshape(i, (1, 64))),
            "tighter bounds": _owned_scatter(lo=8, hi=32)}[variant]
    k = _compile_raw(body)
    z = poisoned(N).partition(T)
    x = rnd(N, seed=7)
    z, x = k(z, x).sync()  # the scatter's lanes are overwritten by the block's store of x
    assert np.array_equal(z.unpartition().to_numpy(), x.to_numpy())


def test_mapped_partition_cannot_be_scattered_into():
    def body(g, m):
        m.scatter(_param(0), (g.bid(0) * 64 + ct.arange(64, dtype=ct.int32),), ct.full((64,), 1.0, ct.float32),
                  mask=ct.arange(64, dtype=ct.int32) < 64)

    @ct.entry
    def k(c: ct.MappedMut[ct.f32, ("B",)], x: ct.Ref[ct.f32, -1]):
        ct.static_eval(_emit_mapped(body))
        for idx in c.iter_indices():
            c.store(x.partition((B,)).load(idx), idx)  # noqa: F821
    objs, action = launch_mapped(k)
    refused(objs, action, TileSafetyError, "scatter to the mutable parameter 'c' is only possible through")


def _emit_mapped(body):
    from safetile.ops import grid as g
    from safetile.ops import memory as m
    body(g, m)


# ----------------------------------------------------------------------------- hand-built mapped walks (rank 2)

def _walk_store(i, divisor, mod_divisor=None, shift=0):
    """Store ones at unflatten(i) of the 2-D mapped parameter, with the divisors given."""
    from safetile.ops import memory as m
    c = _param(0)
    d = divisor(m, c)
    dm = d if mod_divisor is None else mod_divisor(m, c)
    q = i // d if not shift else i // d + shift
    m.store(c, (q, i % dm), ct.full((8, 8), 1.0, ct.float32))


DIVISORS = {
    "its own tile count": (lambda m, c: m.num_tiles(c, 1, (8, 8)), None, 0, True),
    "a positive constant": (lambda m, c: 3, None, 0, True),
    "a constant one": (lambda m, c: 1, None, 0, True),
    "another axis's tile count": (lambda m, c: m.num_tiles(c, 0, (8, 8)), None, 0, False),
    "the input's tile count": (lambda m, c: m.num_tiles(_param(1), 1, (8, 8)), None, 0, False),
    "a constant zero": (lambda m, c: 0, None, 0, False),
    "a negative constant": (lambda m, c: -2, None, 0, False),
    "a run-time value": (lambda m, c: ct.bid(0) + 1, None, 0, False),
    "different divisors for // and %": (lambda m, c: m.num_tiles(c, 1, (8, 8)), lambda m, c: 2, 0, False),
    "a shifted first coordinate": (lambda m, c: m.num_tiles(c, 1, (8, 8)), None, 1, False),
}


@pytest.mark.parametrize("name", list(DIVISORS))
def test_ir_check_of_hand_built_mapped_walks(name):
    div, mod_div, shift, accepted = DIVISORS[name]

    @ct.entry
    def walk(c: ct.MappedMut[ct.f32, (8, 8)], x: ct.Ref[ct.f32, (-1, -1)]):
        total = ct.num_tiles(x, 0, (8, 8)) * ct.num_tiles(x, 1, (8, 8))
        for i in range(ct.bid(0), total, ct.num_blocks(0)):
            ct.static_eval(_walk_store(i, div, mod_div, shift))
    c = poisoned((32, 24)).partition((8, 8)).map(5)
    x = rnd((32, 24), seed=8)
    if not accepted:
        refused([c, x], lambda: walk(c, x), TileSafetyError, "not at an index produced by c.iter_indices")
        return
    c, x = walk(c, x).sync()
    out = c.unpartition().to_numpy()
    if name == "its own tile count":
        assert np.array_equal(out, np.ones((32, 24), np.float32))
    elif name == "a constant one":  # unflattening by 1: the walk is (i, 0), so only the first column of tiles
        assert np.array_equal(out[:, :8], np.ones((32, 8), np.float32)) and not np.any(out[:, 8:] == 1)
    else:  # unflattening by 3: still one block per sub-tensor, and the walk covers rows 0..3, columns 0..2
        assert np.array_equal(out[:, :24], np.ones((32, 24), np.float32))


def test_ir_check_of_mapped_loops_needs_the_grid_stride():
    for start, step in (("1", "num_blocks"), ("bid", "2")):
        def loop_body(i):
            from safetile.ops import memory as m
            m.store(_param(0), (i,), ct.full((64,), 1.0, ct.float32))

        @ct.entry
        def walk(c: ct.MappedMut[ct.f32, ("B",)], x: ct.Ref[ct.f32, -1]):
            lo = ct.bid(0) if start == "bid" else 1
            st = ct.num_blocks(0) if step == "num_blocks" else 2
            for i in range(lo, 4, st):
                ct.static_eval(loop_body(i))
        objs, action = launch_mapped(walk)
        refused(objs, action, TileSafetyError, "not at an index produced by c.iter_indices")
