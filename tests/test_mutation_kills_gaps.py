"""Kill tests of the third mutation pass (bench/NOTES.md, "Mutation testing (issue 9), third
pass"): behaviours a sampled mutmut run showed no test pinned. Each asserts what a user sees
(a message, a result, a refusal), never the text of a mutant."""
from __future__ import annotations

import re

import pytest

import safetile as ct

from attack_helpers import poisoned, refused, rnd


@ct.entry
def ref_partition_of_three(z: ct.Mut[ct.f32, "B"], x: ct.Ref[ct.f32, -1]):
    z.store(x.partition((3,)).load((ct.bid(0),)))


@ct.entry
def mut_partition_of_three(z: ct.Mut[ct.f32, "B"], x: ct.Ref[ct.f32, -1]):
    z.partition((3,)).store(ct.full((3,), 1.0, ct.float32), (0,))


@pytest.mark.parametrize("kernel", [ref_partition_of_three, mut_partition_of_three], ids=["Ref", "Mut"])
def test_an_in_kernel_partition_shape_that_is_no_tile_shape_is_named(kernel):
    """A partition taken inside a kernel needs a tile shape (powers of two): the error says it is
    the partition shape that is wrong, at the user's line."""
    z, x = poisoned(16).partition(16), rnd(16, seed=1)
    e = refused([z, x], lambda: kernel(z, x), ct.TileTypeError,
                re.escape("tile dimensions must be powers of two, got partition shape (3,)"))
    assert e.loc is not None and e.loc.filename.endswith("test_mutation_kills_gaps.py")
