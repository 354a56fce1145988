"""The interval arithmetic under the Triton code generator's masks (backends/triton/bounds.py),
checked exhaustively against safetile's integer semantics on small intervals: every result of
every pair of operands must lie inside the computed interval (a bound too tight would drop a
``>= 0`` mask; tests/test_index_wrap_adversarial.py attacks the whole analysis end to end)."""
from __future__ import annotations

import itertools

import numpy as np
import pytest

from safetile.backends.triton.bounds import interval


def _floordiv(a: int, b: int) -> int:
    return 0 if b == 0 else a // b  # toward -inf; 0 for a zero divisor (prelude._st_ifloordiv)


def _mod(a: int, b: int) -> int:
    return 0 if b == 0 else a % b  # the divisor's sign; 0 for a zero divisor (prelude._st_imod)


SEMANTICS = {"add": lambda a, b: a + b, "sub": lambda a, b: a - b, "mul": lambda a, b: a * b,
             "floordiv": _floordiv, "mod": _mod, "maximum": max, "minimum": min}


def _intervals(rng, n, span=9):
    for _ in range(n):
        lo = int(rng.integers(-span, span + 1))
        yield lo, lo + int(rng.integers(0, span))


@pytest.mark.parametrize("name", sorted(SEMANTICS))
def test_every_result_lies_inside_the_interval(name):
    rng = np.random.default_rng(sorted(SEMANTICS).index(name))
    f = SEMANTICS[name]
    for x, y in zip(_intervals(rng, 400), _intervals(rng, 400)):
        lo, hi = interval(name, [x, y])
        got = [f(a, b) for a, b in itertools.product(range(x[0], x[1] + 1), range(y[0], y[1] + 1))]
        assert lo <= min(got) and max(got) <= hi, (name, x, y, (lo, hi), (min(got), max(got)))


@pytest.mark.parametrize("name", ["add", "sub", "mul", "maximum", "minimum"])
def test_the_interval_is_tight_where_it_can_be(name):
    """For these ops the ends are reached: a looser bound would add masks for nothing."""
    rng = np.random.default_rng(7)
    f = SEMANTICS[name]
    for x, y in zip(_intervals(rng, 200), _intervals(rng, 200)):
        got = [f(a, b) for a, b in itertools.product(range(x[0], x[1] + 1), range(y[0], y[1] + 1))]
        assert interval(name, [x, y]) == (min(got), max(got))


def test_where_takes_both_values():
    assert interval("where", [(-3, 2), (5, 9)]) == (-3, 9)
