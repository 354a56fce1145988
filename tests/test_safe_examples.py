"""The safe-style examples (examples/safe/*.py) against NumPy references.

Each runs on the CPU backend; a subset also runs on the Triton backend under Triton's
interpreter (TRITON_INTERPRET=1), skipped cleanly when torch/triton or the backend is
missing. Inputs are random; outputs are poisoned with NaN before every run.
"""
from __future__ import annotations

import importlib
import importlib.util
import os
import sys

import numpy as np
import pytest
from triton_interp import triton_interpreter


EXAMPLES = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "examples", "safe")


def ex(name):
    """Import examples/safe/<name>.py under a unique module name."""
    key = f"safetile_safe_example_{name}"
    if key not in sys.modules:
        spec = importlib.util.spec_from_file_location(key, os.path.join(EXAMPLES, f"{name}.py"))
        mod = importlib.util.module_from_spec(spec)
        sys.modules[key] = mod
        spec.loader.exec_module(mod)
    return sys.modules[key]


def rel(got, ref):
    return float(np.linalg.norm(got.astype(np.float64) - ref) / np.linalg.norm(ref))


CASES = {
    # name: (kwargs on CPU, kwargs under the interpreter, tolerance on max |error|)
    "vector_add": (dict(n=1000, block=128), dict(n=300, block=64), 0.0),
    "saxpy": (dict(n=777, block=256, alpha=2.5), dict(n=200, block=64, alpha=-1.5), 1e-6),
    "softmax": (dict(rows=50, cols=100, bm=8), dict(rows=9, cols=20, bm=4), 1e-6),
    "rmsnorm": (dict(rows=37, cols=96, bm=8), dict(rows=5, cols=24, bm=4), 1e-5),
    "dropout": (dict(n=3000, block=512, p=0.3, seed=1234), dict(n=300, block=128, p=0.5, seed=9), 0.0),
}
MATMULS = {
    "gemm": (dict(m=96, n=80, k=72), dict(m=32, n=48, k=24, bm=16, bn=16, bk=8)),
    "batched_matmul": (dict(batch=3, m=64, n=48, k=40), dict(batch=2, m=16, n=16, k=16, bm=16, bn=16, bk=8)),
    "persistent_gemm": (dict(m=128, n=96, k=64, num_blocks=5), dict(m=32, n=32, k=16, bm=16, bn=16, bk=8,
                                                                     num_blocks=3)),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_safe_example_elementwise_cpu(name):
    kw, _, tol = CASES[name]
    got, ref = ex(name).run(**kw)
    assert not np.isnan(got).any()
    assert np.abs(got - ref).max() <= tol + 1e-7 * np.abs(ref).max()


@pytest.mark.parametrize("name", sorted(MATMULS))
def test_safe_example_matmul_cpu(name):
    got, ref = ex(name).run(**MATMULS[name][0])
    assert not np.isnan(got).any() and rel(got, ref) < 1e-5


@pytest.mark.parametrize("causal", [False, True])
def test_safe_example_flash_attention_cpu(causal):
    got, ref = ex("flash_attention").run(heads=2, seq=100, d=32, bm=32, bn=16, causal=causal)
    assert not np.isnan(got).any() and np.abs(got - ref).max() < 1e-5


def test_safe_example_dropout_statistics():
    got, _ = ex("dropout").run(n=1 << 14, block=1024, p=0.25, seed=5)
    kept = np.mean(got != 0)
    assert abs(kept - 0.75) < 0.02
    again, _ = ex("dropout").run(n=1 << 14, block=256, p=0.25, seed=5)  # another block size, same mask
    assert np.array_equal(got, again)


def test_safe_example_permute_heads():
    m = ex("permute_heads")
    x = m.inputs(2, 4, 32, 16, seed=2)
    ref = m.reference(x)
    assert np.array_equal(m.run_safe(x, bs=8), ref)
    good, _ = m.run_unchecked(x, bs=8, swap=False)
    assert np.array_equal(good, ref)
    bad, report = m.run_unchecked(x, bs=8, swap=True, detect=True)
    assert report and not np.allclose(bad, ref)


def test_safe_example_toy_model_graph_replay():
    m = ex("toy_model_graph")
    model = m.ToyModel(layers=4, tokens=32, d=32, bt=16, seed=3)
    assert model.graph.num_ops == 4
    rng = np.random.default_rng(0)
    for _ in range(2):  # two different batches through the same captured graph
        x = rng.standard_normal((32, 32)).astype(np.float32)
        got = model(x)
        ref = m.reference(x, model.weights)
        assert rel(got, ref) < 1e-5
    replay, eager, n = m.tokens_per_second(layers=3, tokens=16, d=32, steps=3)
    assert replay > 0 and eager > 0 and n == 3


# ----------------------------------------------------------------------------- Triton interpreter

@pytest.mark.parametrize("name", sorted(CASES) + sorted(MATMULS))
def test_safe_example_triton_interpreter(name):
    with triton_interpreter():
        if name in CASES:
            _, kw, tol = CASES[name]
            got, ref = ex(name).run(**kw)
            assert not np.isnan(got).any()
            assert np.abs(got - ref).max() <= tol + 1e-6 * np.abs(ref).max()
        else:
            got, ref = ex(name).run(**MATMULS[name][1])
            assert not np.isnan(got).any() and rel(got, ref) < 1e-5


def test_safe_example_permute_heads_triton_interpreter():
    m = ex("permute_heads")
    x = m.inputs(1, 2, 16, 16, seed=4)
    with triton_interpreter():
        assert np.array_equal(m.run_safe(x, bs=8), m.reference(x))
