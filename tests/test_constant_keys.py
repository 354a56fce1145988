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


def _value(c) -> float:
    """What the kernels compute from ``c`` (at compile time): type, sign of zero and every field count."""
    if isinstance(c, Cfg):
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


PAIRS = [(0.0, -0.0), (1, True), (1, 1.0), ((0.0, 1.0), (-0.0, 1.0)), ((1,), (True,)), (Cfg(1, 2.0), Cfg(1, 3.0))]


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
