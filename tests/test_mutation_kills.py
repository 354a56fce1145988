"""Direct tests of the safe style's small pure functions (extents, overlap, self-overlap, facts,
the grid rule), written to kill the mutants that the corpus leaves alive (see docs/safety.md)."""
from __future__ import annotations

import numpy as np

from safetile.safe.memory import distinct_elements, extent_of, overlaps


def test_extent_of_a_reversed_view_starts_at_its_last_element():
    a = np.arange(16, dtype=np.float32)
    e = extent_of(a[12:3:-2])  # elements 12, 10, 8, 6, 4
    base = a.__array_interface__["data"][0]
    assert (e.lo, e.hi) == (base + 4 * 4, base + 13 * 4)
    assert e.ptr == base + 12 * 4 and e.count == 5 and distinct_elements(e)
