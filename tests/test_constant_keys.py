"""Constants that Python calls equal but that compute differently never share a compiled kernel
(red team round 5, 500 and 509): 0.0 and -0.0, 1 and True and 1.0, tuples of those, a dataclass
whose __eq__ skips a field. Every pair is launched in both orders, each result checked against a
fresh process's answer (a kernel compiled for that constant alone), on both styles and backends."""
from __future__ import annotations

import contextlib
import dataclasses

import numpy as np
import pytest

import safetile as ct
from triton_interp import triton_interpreter


@dataclasses.dataclass(frozen=True)
class Cfg:
    n: int
    scale: float = dataclasses.field(compare=False)


class LooseCfg:
    """A plain class whose ``__eq__`` and ``__hash__`` skip a field the kernel reads (red team round 6, 601)."""

    def __init__(self, n, scale):
        self.n, self.scale = n, scale

    def __eq__(self, other):
        return isinstance(other, LooseCfg) and other.n == self.n

    def __hash__(self):
        return hash(self.n)

    def __repr__(self):
        return f"{type(self).__name__}({', '.join(f'{k}={getattr(self, k)}' for k in ('n', 'scale', 'extra') if hasattr(self, k))})"


class SlottedCfg(LooseCfg):
    __slots__ = ("extra",)

    def __init__(self, n, scale, extra):
        super().__init__(n, scale)
        self.extra = extra


def _value(c) -> float:
    """What the kernels compute from ``c`` (at compile time): type, sign of zero and every field count."""
    if isinstance(c, SlottedCfg):
        return c.scale + c.extra
    if isinstance(c, (Cfg, LooseCfg, ScaledInt)):
        return c.scale
    if isinstance(c, tuple):
        return sum(_value(x) * (i + 1) for i, x in enumerate(c))
    if isinstance(c, bool):
        return 5.0
    if isinstance(c, int):
        return 7.0
    return float(np.copysign(100.0, c)) if c == 0.0 else c  # ±100 for ±0.0


@ct.kernel
def unchecked(out, c: ct.Constant[object]):
    ct.store(out, (0,), ct.full((16,), ct.static_eval(_value(c)), ct.float32))


@ct.entry
def safe(out: ct.Mut[ct.f32, "B"], c: ct.Constant[object]):
    out.store(ct.full((16,), ct.static_eval(_value(c)), ct.float32))


class ScaledInt(int):
    """An int that carries an attribute ``==`` never sees (red team round 7, 705)."""

    def __repr__(self):
        return f"ScaledInt({int(self)}, scale={self.scale})"


def _scaled(n, scale):
    v = ScaledInt(n)
    v.scale = scale
    return v


PAIRS = [(0.0, -0.0), (1, True), (1, 1.0), ((0.0, 1.0), (-0.0, 1.0)), ((1,), (True,)), (Cfg(1, 2.0), Cfg(1, 3.0)),
         (LooseCfg(1, 2.0), LooseCfg(1, 9.0)), (SlottedCfg(1, 2.0, 1.0), SlottedCfg(1, 2.0, 5.0)),
         (_scaled(1, 2.0), _scaled(1, 9.0))]


@pytest.mark.parametrize("backend", ["cpu", "triton"])
@pytest.mark.parametrize("style", ["unchecked", "safe"])
@pytest.mark.parametrize("pair", PAIRS, ids=lambda p: f"{p[0]!r}-{p[1]!r}")
def test_equal_constants_compile_apart(pair, style, backend):
    torch = pytest.importorskip("torch") if backend == "triton" else None
    for order in (pair, pair[::-1]):
        # a fresh kernel (its own caches) per order: the first constant compiles first
        kernel = unchecked.replace_hints() if style == "unchecked" else ct.entry(safe.fn)
        with triton_interpreter() if backend == "triton" else contextlib.nullcontext():
            for c in order:
                want = np.full(16, _value(c), np.float32)
                if style == "unchecked":
                    out = torch.full((16,), float("nan")) if torch else np.full(16, np.nan, np.float32)
                    ct.launch(None, (1,), kernel, (out, c))
                    got = out.numpy() if torch else out
                else:
                    data = np.full(16, np.nan, np.float32)
                    part = ct.from_dlpack(torch.from_numpy(data) if torch else data).partition(16)
                    part, _ = kernel(part, c).sync()
                    got = part.unpartition().to_numpy()
                np.testing.assert_array_equal(got, want, err_msg=f"{c!r} after {order[0]!r}")


def test_a_constant_object_with_an_unhashable_attribute_is_refused_by_name():
    out = np.full(16, np.nan, np.float32)
    with pytest.raises(ct.ArgumentError, match=r"Constant LooseCfg must be hashable in every field: 'scale' holds a list"):
        ct.launch(None, (1,), unchecked.replace_hints(), (out, LooseCfg(1, [2.0])))
    assert np.isnan(out).all()


@ct.kernel
def ignores(out, c: ct.Constant[object]):
    ct.store(out, (0,), ct.full((16,), 1.0, ct.float32))


def test_equal_value_types_still_share_compiled_code():
    """Python's and libraries' value types keep their equality as the key (a new equal value does
    not compile again)."""
    from fractions import Fraction
    kernel = ignores.replace_hints()
    out = np.full(16, np.nan, np.float32)
    for c in (Fraction(1, 2), Fraction(2, 4), "ab", "".join(["a", "b"]), ct.float16, ct.float16):
        ct.launch(None, (1,), kernel, (out, c))
    assert len(kernel._cache) == 3
    np.testing.assert_array_equal(out, np.ones(16, np.float32))


def test_a_constant_that_contains_itself_or_cannot_be_hashed_is_refused_by_name():
    out = np.full(16, np.nan, np.float32)
    me = LooseCfg(1, 2.0)
    me.scale = me
    with pytest.raises(ct.ArgumentError, match="Constant LooseCfg refers to itself"):
        ct.launch(None, (1,), unchecked.replace_hints(), (out, me))

    class BadHash:
        def __hash__(self):
            raise RuntimeError("no hash")
    with pytest.raises(ct.ArgumentError, match=r"hashing 'scale' raised RuntimeError: no hash"):
        ct.launch(None, (1,), unchecked.replace_hints(), (out, LooseCfg(1, BadHash())))
    assert np.isnan(out).all()


def _signed(c) -> float:
    """What ``signs`` computes from ``c`` at compile time: the sign of its (imaginary) zero, or the
    number of characters a Decimal prints (its exponent: ``1.0`` and ``1.00``)."""
    import math
    from decimal import Decimal
    if isinstance(c, complex):
        return math.copysign(100.0, c.imag)
    if isinstance(c, Decimal):
        return float(len(str(c)))
    return float(np.copysign(100.0, c))


@ct.kernel
def signs(out, c: ct.Constant[object]):
    ct.store(out, (0,), ct.full((16,), ct.static_eval(_signed(c)), ct.float32))


@ct.entry
def safe_signs(out: ct.Mut[ct.f32, "B"], c: ct.Constant[object]):
    out.store(ct.full((16,), ct.static_eval(_signed(c)), ct.float32))


def _more_pairs():
    from decimal import Decimal
    return [(np.float64(0.0), np.float64(-0.0)), (np.float32(0.0), np.float32(-0.0)),
            (np.float16(0.0), np.float16(-0.0)), (complex(1.0, 0.0), complex(1.0, -0.0)),
            (Decimal("1.0"), Decimal("1.00"))]


@pytest.mark.parametrize("style", ["unchecked", "safe"])
@pytest.mark.parametrize("pair", _more_pairs(), ids=lambda p: f"{type(p[0]).__name__}-{p[0]!r}-{p[1]!r}")
def test_equal_numpy_complex_and_decimal_constants_compile_apart(pair, style):
    """Found by the eighth mutation pass (bench/NOTES.md): const_signature keyed these by type only,
    so they shared compiled code and plans (fixed on main in 8311c2b)."""
    for order in (pair, pair[::-1]):
        kernel = signs.replace_hints() if style == "unchecked" else ct.entry(safe_signs.fn)
        for c in order:
            data = np.full(16, np.nan, np.float32)
            if style == "unchecked":
                ct.launch(None, (1,), kernel, (data, c))
                got = data
            else:
                part, _ = kernel(ct.from_dlpack(data).partition(16), c).sync()
                got = part.unpartition().to_numpy()
            np.testing.assert_array_equal(got, np.full(16, _signed(c), np.float32), err_msg=f"{c!r} after {order[0]!r}")
