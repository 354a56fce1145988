"""Kill tests of the seventh mutation pass (bench/NOTES.md, "Mutation testing (issue 9), seventh
pass"): mutants of src/safetile/safe/ that survived pass 6's held-out sample (mut8-final) and this
pass's training sample. Each test asserts behaviour (a refusal's wording, a result against NumPy,
bytes unchanged), not the mutant's text.
"""
# ruff: noqa: F821, UP037 - strings in kernel annotations are the shape language, not forward references
from __future__ import annotations

import os
import re
import sys
import threading

import numpy as np
import pytest

import safetile as ct
from safetile.errors import TileSafetyError

from attack_helpers import WAIT, Pause, add


# ----------------------------------------------------------------------------------------------
# The survivors of pass 6's held-out sample (mut8-final) not killed after it


@pytest.mark.skipif(not hasattr(os, "fork") or sys.platform != "linux", reason="needs os.fork (Linux)")
def test_after_a_fork_a_copy_of_a_memcpy_destination_its_chain_holds_is_refused_by_name():
    """A memcpy registers its destination as written until its terminal ends: a child forked while
    the chain runs refuses a copy of that memory, naming the memcpy (its source is only read: a
    copy of the source is allowed in the child)."""
    from test_fork import in_child
    dst = ct.zeros(64).sync()
    view = dst[:]
    src = np.arange(64, dtype=np.float32)
    srct = ct.from_numpy(src).sync()
    pause = Pause()
    op = ct.memcpy(dst, srct).then(pause)
    runner = threading.Thread(target=op.sync, daemon=True)
    runner.start()
    try:
        assert pause.entered.wait(WAIT)

        def child():
            out = []
            for v in (srct, view):
                try:
                    out.append(str(ct.copy(v).sync().to_numpy().sum()))
                except ct.ForkError as e:
                    out.append(str(e))
            return "\n".join(out)
        got = in_child(child).split("\n")
    finally:
        pause.go.set()
        runner.join(WAIT)
    assert got[0] == str(src.sum()), got
    assert got[1].startswith("a copy is refused: this memory was being written by memcpy"), got
    assert np.array_equal(dst.to_numpy(), src)


@pytest.mark.parametrize("params, bad", [("z: ct.Mut[ct.f32, 'B'], *rest", "rest"),
                                         ("z: ct.Mut[ct.f32, 'B'], **options", "options"),
                                         ("z: ct.Mut[ct.f32, 'B'], *, x: ct.Ref[ct.f32, -1]", "x")])
def test_a_parameter_that_is_not_positional_is_refused_at_its_declaration(params, bad, tmp_path):
    path = tmp_path / "decl.py"
    path.write_text(f"import safetile as ct\n\n\n@ct.entry\ndef k({params}):\n    pass\n")
    with pytest.raises(ct.TileDeclarationError, match="^" + re.escape(
            f"entry kernel 'k': parameter {bad!r} must be positional")) as e:
        exec(compile(path.read_text(), str(path), "exec", dont_inherit=True), {})  # noqa: S102 - the test's own source
    assert e.value.filename == str(path) and e.value.line == 5, str(e.value)
    assert bad in e.value.loc.source_line


@ct.entry
def add_two(z: ct.Mut[ct.f32, "B"], x: ct.Ref[ct.f32, -1], y: ct.Ref[ct.f32, -1]):
    z.store(z.load() + ct.load_tile_like(x, z) + ct.load_tile_like(y, z))


@pytest.mark.parametrize("same_op", [False, True], ids=["two ops", "one op twice"])
def test_one_tensor_produced_for_two_parameters_is_refused_naming_both(same_op):
    """Operations producing the same tensor for two read parameters: a tensor moves into one
    parameter only (``ct.shared`` reads it through several); both parameters are named and
    nothing moves."""
    z = ct.zeros(16).sync().partition(16)
    x = ct.from_numpy(np.arange(16, dtype=np.float32)).sync()
    v = ct.value(x)
    args = (v, v) if same_op else (ct.value(x), ct.value(x))
    said = (f"kernel 'add_two': the same {x.label} is passed as argument 'x' and argument 'y'; a mutable argument "
            "must not alias any other argument, and a tensor moves into one parameter only")
    with pytest.raises(ct.AliasError, match="^" + re.escape(said) + "$"):
        add_two(z, *args).sync()
    assert not z.is_moved and not x.is_moved
    s = x.shared()
    (out, _, _) = add_two(z, s, s).sync()
    assert np.array_equal(out.unpartition().to_numpy(), 2 * np.arange(16, dtype=np.float32))
    assert s.try_unwrap() is x


def _ir_attack(name):
    import test_attacks_kernel as tak
    return tak, tak._compile_raw(tak.IR_ATTACKS[name])


@pytest.mark.parametrize("name, said", [
    ("store at a constant index", "store of 'z' is not at this block's own index (bid(0) on axis 0); a ct.Mut "
                                  "parameter is only reached through z.load()/z.store(tile)"),
    ("store of a smaller tile at the own index", "store of 'z' has tile shape (32,), not the sub-tensor shape (64,)"),
    ("gather from the mutable parameter", "gather uses the mutable parameter 'z'; only z.load() and z.store(...) "
                                          "may touch it, so that no block reaches another block's sub-tensor"),
])
def test_the_compiled_ir_check_says_what_it_refuses(name, said):
    """Hand-built IR that escapes the front end is refused by the compiled-IR check, which says
    which access of which parameter it refuses and why."""
    tak, k = _ir_attack(name)
    e = tak.compile_refused(k, "^" + re.escape("ownership check of the compiled kernel: " + said) + "\n",
                            exc=TileSafetyError)
    assert isinstance(e, TileSafetyError)


def test_a_graph_updated_keeps_replaying_on_its_stream():
    """``g.update(op)`` re-captures on the graph's own stream (the one it was captured on)."""
    s = ct.Stream("cpu")
    x = ct.from_numpy(np.arange(16, dtype=np.float32)).sync().shared()
    g = add(ct.zeros(16).sync().partition(16), x).graph(s)
    assert g.stream is s
    (z, _) = g.launch()
    g.update(add(z, x))
    assert g.stream is s
    (z, _) = g.launch()
    assert np.array_equal(z.unpartition().to_numpy(), 2 * np.arange(16, dtype=np.float32))
    g.close()


def test_the_race_detector_names_the_arrays_of_an_entry_launch_that_races(monkeypatch):
    """An entry launch cannot race while the launch checks hold; the race detector is what shows it
    if one does not. With the overlap check switched off (as a bug in it would), a mutable
    partition aliasing a read argument races, and the report names the partition's array and the
    racing region in its coordinates."""
    import safetile.safe.checks as checks

    @ct.entry
    def first_block(z: ct.Mut[ct.f32, "B"], x: ct.Ref[ct.f32, -1]):
        z.store(x.partition((B,)).load((0,)) + 1.0)  # noqa: F821 - B is the generic of z

    n = np.zeros(64, np.float32)
    t = ct.from_dlpack(n)  # the same memory as n
    monkeypatch.setattr(checks, "overlaps", lambda a, b: False)
    rep = ct.detect_races(first_block, None, (t.partition(16), n), raise_on_race=False)
    assert {(c.array, c.block_a, c.block_b, c.lo, c.hi, c.count, c.kind) for c in rep.conflicts} == {
        ("z", (0, 0, 0), (b, 0, 0), (0,), (15,), 16, "write-read") for b in (1, 2, 3)}
    assert "16 element(s) of 'z' in region [0:16]" in rep.describe()


# ----------------------------------------------------------------------------------------------
# The survivors of this pass's training sample (seed mut9-train, p = 0.04)


@ct.entry
def positive(z: ct.Mut[ct.bool_, "B"], x: ct.Ref[ct.f32, -1]):
    z.store(ct.load_tile_like(x, z) > 0.0)


@ct.entry
def copy_f32(z: ct.Mut[ct.f32, "B"], x: ct.Ref[ct.f32, -1]):
    z.store(ct.load_tile_like(x, z))


def test_torch_op_outputs_of_boolean_and_tf32_element_types_are_torch_tensors_of_their_storage_type():
    """An output declared ``dtype=ct.bool_`` is a torch.bool tensor; ``dtype=ct.tfloat32`` is
    stored as torch.float32 (torch has no tf32 storage type)."""
    torch = pytest.importorskip("torch")
    from safetile.integrations.torch import Out, torch_op
    x = torch.arange(64, dtype=torch.float32) - 20
    pos = torch_op("safetile_test::mut9_positive", positive, outputs={"z": Out("x", dtype=ct.bool_)},
                   generics={"B": 16})
    r = pos(x)
    assert r.dtype == torch.bool and torch.equal(r, x > 0)
    cp = torch_op("safetile_test::mut9_copy_tf32", copy_f32, outputs={"z": Out("x", dtype=ct.tfloat32)},
                  generics={"B": 16})
    r = cp(x)
    assert r.dtype == torch.float32 and torch.equal(r, x)


def test_a_launch_refused_after_taking_a_shared_handle_gives_the_handle_back():
    """A launch whose later argument is refused (a moved tensor) takes nothing: the partition and
    the Shared handle before it are free again, so the Shared can be unwrapped."""
    z = ct.zeros(16).sync().partition(16)
    x = ct.from_numpy(np.arange(16, dtype=np.float32)).sync()
    s = x.shared()
    y = ct.zeros(16).sync()
    py = y.partition(16)  # y moved into its partition
    with pytest.raises(ct.UseAfterMoveError, match="^" + re.escape(f"{y.label} cannot be passed as argument 'y'")):
        add_two(z, s, y)
    assert not z.is_moved
    assert s.try_unwrap() is x
    assert py.unpartition() is y
    (out, _, _) = add_two(z, x.shared(), ct.from_numpy(np.ones(16, np.float32)).sync()).sync()
    assert np.array_equal(out.unpartition().to_numpy(), np.arange(16, dtype=np.float32) + 1)


@ct.entry
def add_scalar(z: ct.Mut[ct.f32, "B"], v: ct.f32):
    z.store(z.load() + v)


@pytest.mark.parametrize("v", [float("nan"), float("inf"), -float("inf"), np.float64("nan")])
def test_a_non_finite_float_scalar_reaches_the_kernel(v):
    (z, _) = add_scalar(ct.zeros(16).sync().partition(16), v).sync()
    assert np.array_equal(z.unpartition().to_numpy(), np.zeros(16, np.float32) + np.float32(v), equal_nan=True)


def test_a_generic_scalar_of_another_type_is_refused_after_a_launch_of_a_matching_one():
    """The type checks are cached per scalar type: a float binds the generic to float32; a bool or a
    float16 scalar after it is still checked (and refused), not given the float's result."""
    @ct.entry
    def add_generic(z: ct.Mut["E", "B"], v: "E"):
        z.store(z.load() + v)

    (z, _) = add_generic(ct.zeros(16).sync().partition(16), 2.5).sync()
    assert np.array_equal(z.unpartition().to_numpy(), np.full(16, 2.5, np.float32))
    for v, name in ((True, "bool_"), (np.float16(1.5), "float16"), (3, "int32")):
        z = ct.zeros(16).sync().partition(16)
        with pytest.raises(ct.LaunchTypeError, match="^" + re.escape(
                f"kernel 'add_generic': generic 'E' is float32 from argument 'z' but {name} from argument 'v'")):
            add_generic(z, v)
        assert not z.is_moved


def test_a_compiled_specialisation_describes_each_parameter_for_the_gpu_backend():
    """What a launch compiles carries, per parameter, the spec the GPU backend specialises on (the
    CPU interpreter does not read it, so it is checked here): a mutable partition as a writable
    array of its tensor's rank, a read-only tensor as a read-only array (with the sizes a generic
    fixed, none where any size goes), a scalar by its element type, a Constant by its value."""
    from safetile.frontend.kernel import ArraySpec, ConstSpec, ScalarSpec

    @ct.entry
    def k(z: ct.Mut[ct.f32, "B"], x: ct.Ref[ct.f32, "N"], y: ct.Ref[ct.f16, -1], v: ct.f32, n: ct.Constant[int]):
        z.store(z.load() + ct.load_tile_like(x, z) + v * n)

    (z, *_) = k(ct.zeros(16).sync().partition(8), ct.ones(16).sync(), ct.zeros(4, dtype=ct.float16).sync(), 2.0,
                3).sync()
    assert np.array_equal(z.unpartition().to_numpy(), np.full(16, 7.0, np.float32))
    (compiled,) = k.caches.compiled.values()
    assert compiled.specs == (ArraySpec(ct.float32, 1, False, None), ArraySpec(ct.float32, 1, True, (16,)),
                              ArraySpec(ct.float16, 1, True, None), ScalarSpec(ct.float32), ConstSpec(3))


def test_from_numpy_refuses_torch_tensors_that_are_not_strided_memory_by_name():
    torch = pytest.importorskip("torch")
    import warnings
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # torch's prototype and deprecation notices
        sparse = torch.zeros(4).to_sparse()
    with pytest.raises(ct.TensorError, match="^" + re.escape(
            "from_numpy: a torch tensor with layout torch.sparse_coo is not plain strided memory; safetile tensors "
            "wrap strided memory")):
        ct.from_numpy(sparse)


@pytest.mark.parametrize("make", [lambda: np.zeros(3, np.complex64), lambda: [1 + 2j, 3j]], ids=["ndarray", "list"])
def test_from_numpy_refuses_an_element_type_a_tensor_cannot_hold_in_full(make):
    a = make()
    name = np.asarray(a).dtype
    said = (f"from_numpy: a safetile Tensor cannot hold {name} elements (it holds booleans, integers and "
            "floating-point numbers)")
    with pytest.raises(ct.DTypeError, match="^" + re.escape(said) + "$"):
        ct.from_numpy(a)


@pytest.mark.skipif(not hasattr(os, "fork") or sys.platform != "linux", reason="needs os.fork (Linux)")
def test_after_a_fork_memory_a_chains_second_launch_wrote_is_refused_by_name():
    """Every launch of a chain registers the memory it writes (not only the first): a child forked
    while the chain runs refuses a copy of what its second launch wrote, naming the launch."""
    from attack_helpers import inc
    from test_fork import in_child
    a, b = ct.zeros(64).sync(), ct.zeros(64).sync()
    view = b[:]
    pa, pb = a.partition(16), b.partition(16)
    pause = Pause()
    op = inc(pa).then(lambda _: inc(pb)).then(pause)
    runner = threading.Thread(target=op.sync, daemon=True)
    runner.start()
    try:
        assert pause.entered.wait(WAIT)

        def child():
            try:
                return str(ct.copy(view).sync().to_numpy().sum())
            except ct.ForkError as e:
                return str(e)
        got = in_child(child)
    finally:
        pause.go.set()
        runner.join(WAIT)
    assert got.startswith("a copy is refused: this memory was being written by launch 'inc' (op #"), got
    assert np.array_equal(pb.unpartition().to_numpy(), np.ones(64, np.float32))


def test_wrapping_a_moved_tensor_is_refused_by_name():
    t = ct.zeros(4).sync()
    p = t.partition(4)
    with pytest.raises(ct.UseAfterMoveError, match="^" + re.escape(
            f"{t.label} cannot be wrapped: it was moved into {p.label} (by .partition() at ")):
        ct.from_dlpack(t)
    assert p.unpartition() is t
    from attack_helpers import inc
    w = ct.from_dlpack(t)  # given back: it wraps, zero-copy
    inc(w.partition(4)).sync()
    assert np.array_equal(t.to_numpy(), np.ones(4, np.float32))
