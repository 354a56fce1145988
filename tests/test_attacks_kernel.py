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
}


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
