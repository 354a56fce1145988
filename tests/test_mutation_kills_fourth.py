"""Kill tests of the fourth mutation pass (bench/NOTES.md, "Mutation testing (issue 9), fourth
pass"): whole modules' mutants run (race, deviceop, entry, launch), and a test written for each
behaviour no test pinned. Each asserts what a user sees (a report, a message, a result, a
refusal), never the text of a mutant."""
from __future__ import annotations

import re
import sys

import numpy as np
import pytest

import safetile as ct

from attack_helpers import rnd

# ----------------------------------------------------------------------------- the race detector


@ct.kernel
def _to_first(x, out, T: ct.Constant[int]):
    """Every block stores its tile of ``x`` at tile 0 of ``out``."""
    ct.store(out, index=(0,), tile=ct.load(x, index=(ct.bid(0),), shape=(T,)))


@pytest.mark.parametrize("blocks", [3, 9])
def test_race_listing_is_cut_only_past_its_limit(blocks):
    """``describe(limit)`` lists ``limit`` pairs of blocks and says how many more there are, and
    says nothing more when there are exactly ``limit`` (the default is 8)."""
    rep = ct.detect_races(_to_first, (blocks, 1, 1), (rnd(4 * blocks).to_numpy(), np.zeros(4 * blocks, np.float32), 4),
                          raise_on_race=False)
    n = len(rep.conflicts)
    assert n == blocks - 1
    assert "more pair(s)" not in rep.describe(limit=n) and rep.describe(limit=n).count("both write") == n
    assert rep.describe(limit=n - 1).endswith(f"\n  ... and 1 more pair(s) of blocks")
    assert rep.describe() == rep.describe(limit=8) and str(rep) == rep.describe()
    assert ("more pair(s)" in rep.describe()) == (n > 8)


@ct.kernel
def _one_byte(x, out):
    """Every block stores one byte at element 0."""
    ct.store(out, index=(0,), tile=ct.load(x, index=(ct.bid(0),), shape=(1,)))


def test_race_on_a_one_byte_element_at_the_lowest_address():
    """Two blocks writing the very first byte of the memory the launch touches is a race (the
    byte at the lowest address is counted like any other)."""
    out = np.zeros(8, np.uint8)
    rep = ct.detect_races(_one_byte, (2, 1, 1), (np.arange(8, dtype=np.uint8), out), raise_on_race=False)
    assert rep.racy_elements == 1 and rep.written_elements == 1
    [c] = rep.conflicts
    assert (c.array, c.block_a, c.block_b, c.lo, c.hi, c.count, c.kind) == \
        ("out", (0, 0, 0), (1, 0, 0), (0,), (0,), 1, "write-write")


@ct.kernel
def _twice_to_first(x, out, T: ct.Constant[int]):
    t = ct.load(x, index=(ct.bid(0),), shape=(T,))
    ct.store(out, index=(0,), tile=t)
    ct.store(out, index=(0,), tile=t + 1.0)


def test_race_a_block_writing_twice_is_not_its_own_rival():
    """A block storing the same elements twice is program order: with two such blocks the one
    race is between the two blocks, never a block against itself."""
    rep = ct.detect_races(_twice_to_first, (2, 1, 1), (rnd(8).to_numpy(), np.zeros(8, np.float32), 4),
                          raise_on_race=False)
    assert [(c.block_a, c.block_b, c.count, c.kind) for c in rep.conflicts] == [((0, 0, 0), (1, 0, 0), 4, "write-write")]
    alone = ct.detect_races(_twice_to_first, (1, 1, 1), (rnd(8).to_numpy(), np.zeros(8, np.float32), 4),
                            raise_on_race=False)
    assert not alone and alone.written_elements == 4


@ct.kernel
def _all_read_first(x, out, T: ct.Constant[int]):
    """Every block reads tile 0 of ``x`` (and writes its own tile of ``out``)."""
    ct.store(out, index=(ct.bid(0),), tile=ct.load(x, index=(0,), shape=(T,)))


def test_race_blocks_reading_one_tile_are_no_race():
    rep = ct.detect_races(_all_read_first, (4, 1, 1), (rnd(16).to_numpy(), np.zeros(16, np.float32), 4),
                          raise_on_race=False)
    assert not rep and rep.written_elements == 16 and rep.racy_elements == 0


@ct.entry
def _inc(z: ct.Mut[ct.f32, "B"]):
    z.store(z.load() + 1.0)


def test_race_detector_checks_an_entry_kernels_explicit_grid():
    """The grid given to ``detect_races`` for an entry kernel is checked like a launch's: one
    that does not match the partition is refused before anything runs; the matching one runs."""
    z = ct.from_dlpack(np.zeros(64, np.float32)).partition(16)
    with pytest.raises(ct.GridError, match=re.escape("launch grid (2, 1, 1) does not match")):
        ct.detect_races(_inc, (2, 1, 1), (z,))
    assert not z.is_moved
    t = z.unpartition()
    assert not t.to_numpy().any()
    z = t.partition(16)
    assert not ct.detect_races(_inc, (4, 1, 1), (z,))
    assert np.array_equal(z.unpartition().to_numpy(), np.ones(64, np.float32))


# ----------------------------------------------------------------------------- entry kernels


@ct.entry
def _every_kind(z: ct.Mut[ct.f32, ("B",)], x: ct.Ref[ct.f32, (64,)], y: ct.Ref[ct.f32, -1], a: ct.f32,
                k: ct.Constant[int]):
    z.store(ct.load_tile_like(y, z) * a + x.partition((B,)).load((ct.bid(0),)) + float(k))  # noqa: F821


def test_every_parameter_kind_reaches_the_triton_backend():
    """A mutable partition, a Ref of static and of dynamic size, a scalar and a constant, each
    handed to the Triton backend (in its interpreter) as what it is: the result is the NumPy one."""
    from triton_interp import triton_interpreter
    with triton_interpreter():
        x, y = rnd(64, seed=1), rnd(64, seed=2)
        z = ct.from_dlpack(np.full(64, np.nan, np.float32)).partition(16)
        z, *_ = _every_kind.backend("triton")(z, x, y, 3.0, 5).sync()
    want = y.to_numpy() * np.float32(3.0) + x.to_numpy() + np.float32(5.0)
    np.testing.assert_allclose(z.unpartition().to_numpy(), want, rtol=1e-6)


def test_a_forced_triton_backend_on_host_memory_is_refused_without_the_interpreter():
    """``k.backend("triton")`` is kept by the launch: host arrays outside Triton's interpreter are
    refused, naming the way out, and the arguments stay the caller's."""
    z = ct.from_dlpack(np.zeros(64, np.float32)).partition(16)
    with pytest.raises(ct.ArgumentError, match=re.escape("the Triton backend runs on CUDA arrays; host arrays need "
                                                         "TRITON_INTERPRET=1")):
        _inc.backend("triton")(z).sync()
    assert not z.is_moved
    z, = _inc.backend("cpu")(z).sync()
    assert np.array_equal(z.unpartition().to_numpy(), np.ones(64, np.float32))


_ends_its_line = lambda x: x.shape[0] > 100  # a comment is no part of it


def test_a_lambda_ending_its_line_is_shown_without_what_follows_it():
    """The text of a lambda precondition is the lambda: not the line break or comment after it."""
    @ct.entry(preconditions=[_ends_its_line])
    def k(z: ct.Mut[ct.f32, "B"], x: ct.Ref[ct.f32, -1]):
        z.store(z.load() + 1.0)
    with pytest.raises(ct.PreconditionError, match=re.escape("precondition `lambda x: x.shape[0] > 100` does not "
                                                             "hold")):
        k(ct.zeros(16).sync().partition(16), rnd(8))


# ----------------------------------------------------------------------------- device operations and ownership


@pytest.mark.parametrize("cls", [ct.Tensor, ct.Partition, ct.Shared])
def test_subclassing_an_owned_type_is_refused_naming_it(cls):
    with pytest.raises(ct.OwnershipError, match=f"^Mine: safetile's {cls.__name__} cannot be subclassed "
                                                r"\(its ownership checks would be open to overriding\)$"):
        type("Mine", (cls,), {})


@pytest.mark.parametrize("n", ["2", 2.0, True, -1])
def test_unzip_refuses_a_count_that_is_no_count(n):
    with pytest.raises(ct.DeviceOpError, match=re.escape(f"unzip(n): n is the number of outputs (an integer >= 0), "
                                                         f"got {n!r}")):
        ct.value((1, 2)).unzip(n)


def test_unzip_of_an_op_of_unknown_arity_checks_the_count_when_it_runs():
    """An op whose tuple length is known only when it runs (a ``map``) is split as asked; if it
    then produces another number of values, each part says so, and right counts work."""
    a, b = ct.value((1, 2, 3)).map(lambda v: v).unzip(2)
    for part in (a, b):
        with pytest.raises(ct.DeviceOpError, match=re.escape("unzip(): the operation produced 3 values, not 2")):
            part.sync()
    a, b, c = ct.value((1, 2, 3)).map(lambda v: v).unzip(3)
    assert (a.sync(), b.sync(), c.sync()) == (1, 2, 3)
    with pytest.raises(ct.DeviceOpError, match=r"^first\(\): the operation produced 0 values$"):
        ct.value(()).first().sync()


# ----------------------------------------------------------------------------- after the held-out sample mut6-final


def test_a_bad_annotation_is_located_at_its_parameter():
    """A declaration refused at decoration points at the parameter's own line and columns, not
    at the ``def``."""
    with pytest.raises(ct.TileDeclarationError) as info:
        @ct.entry
        def k(z: ct.Mut[ct.f32, "B"],
              x: ct.Ref[ct.f32, ()]):
            pass
    [loc] = info.value.locs
    assert loc.source_line.strip() == "x: ct.Ref[ct.f32, ()]):"
    assert "ct.Ref[ct.f32, ()]" in loc.source_line[loc.col:loc.end_col]


def test_a_wrapped_array_keeps_its_name():
    assert ct.from_dlpack(np.zeros(4, np.float32), "q").label == "tensor 'q'"
    assert ct.Tensor.from_dlpack(np.zeros(4, np.float32), name="q").label == "tensor 'q'"


def test_use_after_move_names_the_action_and_the_site_of_the_move():
    u = ct.zeros(4).sync().named("src")
    u.partition(4)
    line = sys._getframe().f_lineno - 1
    with pytest.raises(ct.UseAfterMoveError, match=re.escape(
            f"tensor 'src' cannot be copied: it was moved into partition 'src' (by .partition() at "
            f"test_mutation_kills_fourth.py:{line})")):
        ct.copy(u)
    v = ct.zeros(4).sync().named("v")
    v.shared()
    line = sys._getframe().f_lineno - 1
    with pytest.raises(ct.UseAfterMoveError, match=re.escape(
            f"tensor 'v' cannot be read: it was moved into shared tensor 'v' (by .shared() at "
            f"test_mutation_kills_fourth.py:{line}); get it back with .try_unwrap()")):
        v.to_numpy()


def test_race_report_lines_are_indented_under_the_headline():
    rep = ct.detect_races(_to_first, (3, 1, 1), (rnd(12).to_numpy(), np.zeros(12, np.float32), 4),
                          raise_on_race=False)
    lines = rep.describe().split("\n")
    assert lines[1:] == ["  " + c.describe() for c in rep.conflicts]
