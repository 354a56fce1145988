"""Declared launch preconditions: the expression language, truth values and refusals.

Every condition is checked before anything runs; a failing one refuses the launch with a
``PreconditionError`` naming it and the values it read, and leaves the arguments untouched.
Each case below is evaluated against Python's own reading of the same expression.
"""
from __future__ import annotations

import numpy as np
import pytest

import safetile as ct

from attack_helpers import poisoned, refused, rnd


def kernel_with(cond):
    @ct.entry(preconditions=[cond])
    def k(z: ct.Mut[ct.f32, "B"], x: ct.Ref[ct.f32, (-1, "K")], n: int, c: ct.Constant[int]):
        z.store(z.load() + 1.0)
    return k


CASES = [
    # (condition, Python reading with x.shape == (rows, 8), n, c, B == 16)
    ("0 < dim(x, 0) <= 64", lambda rows, n, c: 0 < rows <= 64),
    ("0 < dim(x, 0) < dim(x, 1) * 4 <= 64", lambda rows, n, c: 0 < rows < 8 * 4 <= 64),
    ("dim(x, 0) == dim(x, 1) == 8", lambda rows, n, c: rows == 8 == 8),
    ("dim(x, 0) % 8 == 0 and n > 0", lambda rows, n, c: rows % 8 == 0 and n > 0),
    ("dim(x, 0) % 8 == 0 or n > 0", lambda rows, n, c: rows % 8 == 0 or n > 0),
    ("not dim(x, 0) > 32", lambda rows, n, c: not rows > 32),
    ("not (n < 0 or c == 3) and rank(x) == 2", lambda rows, n, c: not (n < 0 or c == 3)),
    ("K % 4 == 0 and B == 16 and numel(x) == dim(x, 0) * K", lambda rows, n, c: True),
    ("n != c and (n > c or dim(x, 0) >= 24)", lambda rows, n, c: n != c and (n > c or rows >= 24)),
    ("min(n, c) >= 0 and max(dim(x, 0), 16) // 16 <= 2 and abs(-n) == n", lambda rows, n, c:
        min(n, c) >= 0 and max(rows, 16) // 16 <= 2 and abs(-n) == n),
    ("-n < 0 < +c", lambda rows, n, c: -n < 0 < c),
    ("n ** 2 - 2 * n + 1 >= 0", lambda rows, n, c: True),
    (lambda x, n: x.shape[0] < 64 and x.ndim == 2 and not n == 5, lambda rows, n, c: rows < 64 and not n == 5),
    (lambda x, c: 8 <= x.shape[0] <= 32 or c == 0, lambda rows, n, c: 8 <= rows <= 32 or c == 0),
]


@pytest.mark.parametrize("rows, n, c", [(8, 1, 0), (24, 5, 3), (32, -1, 1), (48, 0, 0), (64, 7, 7)])
@pytest.mark.parametrize("cond, reading", CASES, ids=[c if isinstance(c, str) else f"lambda{i}"
                                                      for i, (c, _) in enumerate(CASES)])
def test_precondition_expressions_read_like_python(cond, reading, rows, n, c):
    k = kernel_with(cond)
    z, x = poisoned(64).partition(16), rnd((rows, 8), seed=rows)
    if reading(rows, n, c):
        z, x, _, _ = k(z, x, n, c).sync()
        assert np.all(np.isnan(z.unpartition().to_numpy()))  # ran: NaN + 1
    else:
        e = refused([z, x], lambda: k(z, x, n, c), ct.PreconditionError, "does not hold")
        assert "the launch was rejected before running" in str(e)


def test_failure_names_the_values_read():
    k = kernel_with("dim(x, 0) % 64 == 0 and numel(x) > 0")
    z, x = poisoned(64).partition(16), rnd((24, 8), seed=1)
    refused([z, x], lambda: k(z, x, 1, 1), ct.PreconditionError,
            r"`dim\(x, 0\) % 64 == 0 and numel\(x\) > 0` does not hold \(dim\(x, 0\) = 24, numel\(x\) = 192\)")


@pytest.mark.parametrize("cond, pattern", [
    ("dim(x, 0) in (1, 2)", "unsupported comparison In"),
    ("len(x) > 0", r"unsupported call len\(x\)"),
    ("x.dtype == 1", r"unsupported expression"),
    ("dim(x, 5) > 0", "could not be evaluated: IndexError"),
    ("n / 0 > 1", "could not be evaluated: ZeroDivisionError"),
    (lambda x: None, "not a truth value"),
    (lambda x: "yes", "not a truth value"),
    (lambda x: np.array([1, 2]), "not a truth value"),
])
def test_bad_preconditions_refuse_the_launch(cond, pattern):
    k = kernel_with(cond)
    z, x = poisoned(64).partition(16), rnd((8, 8), seed=2)
    refused([z, x], lambda: k(z, x, 1, 1), ct.PreconditionError, pattern)


def test_a_precondition_that_is_not_an_expression_is_refused_at_declaration():
    with pytest.raises(ct.TileDeclarationError, match="not an expression"):
        kernel_with("dim(x, 0) >")
    with pytest.raises(TypeError, match="string or a callable"):  # a TileDeclarationError is a TypeError
        kernel_with(42)


@pytest.mark.parametrize("cond", ["dim(y, 0) > 0", lambda q: True])
def test_a_precondition_naming_no_parameter_is_refused_at_declaration(cond):
    with pytest.raises(ct.TileDeclarationError, match=r"names (y|q), which is neither a parameter nor a generic") as e:
        kernel_with(cond)
    assert e.value.loc is not None and "preconditions" in e.value.loc.source_line


def test_numpy_truth_values_are_accepted():
    k = kernel_with(lambda x: np.bool_(x.shape[0] == 8))
    z, x = poisoned(64).partition(16), rnd((8, 8), seed=3)
    k(z, x, 1, 1).sync()
    k2 = kernel_with(lambda x: np.int64(x.shape[0] - 8))  # 0: false
    z2, x2 = poisoned(64).partition(16), rnd((8, 8), seed=4)
    refused([z2, x2], lambda: k2(z2, x2, 1, 1), ct.PreconditionError, "does not hold")
