"""Kill tests of the fourth mutation pass (bench/NOTES.md, "Mutation testing (issue 9), fourth
pass"): whole modules' mutants run (race, deviceop, entry, launch), and a test written for each
behaviour no test pinned. Each asserts what a user sees (a report, a message, a result, a
refusal), never the text of a mutant."""
from __future__ import annotations

import re

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
