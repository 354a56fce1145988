"""The safe style driven every way, on the CPU backend and (when present) a CUDA GPU:
entry launches on device tensors through sync, a then chain, await, and graph replay with
inputs refreshed by memcpy; results checked against NumPy on random data."""
from __future__ import annotations

import asyncio

import numpy as np
import pytest

import safetile as ct


def _devices():
    out = ["cpu"]
    try:
        import torch
        if torch.cuda.is_available():
            out.append(pytest.param("cuda", marks=pytest.mark.gpu))
    except ImportError:
        pass
    return out


DEVICES = _devices()
N = 100_003


@ct.entry
def add(z: ct.Mut[ct.f32, "B"], x: ct.Ref[ct.f32, -1], y: ct.Ref[ct.f32, -1]):
    z.store(ct.load_tile_like(x, z) + ct.load_tile_like(y, z))


@ct.entry
def axpy(z: ct.Mut[ct.f32, "B"], a: ct.f32, x: ct.Ref[ct.f32, -1]):
    z.store(a * ct.load_tile_like(x, z) + z.load())


def inputs(seed, device):
    x = ct.rand(N, seed=seed, device=device).sync()
    y = ct.rand(N, seed=seed + 1, device=device).sync()
    z = ct.full(N, np.nan, device=device).sync().partition(1024)
    return z, x, y


@pytest.mark.parametrize("device", DEVICES)
def test_safe_vector_add_sync(device):
    z, x, y = inputs(1, device)
    z, x, y = add(z, x, y).sync()
    np.testing.assert_array_equal(z.to_numpy(), x.to_numpy() + y.to_numpy())


@pytest.mark.parametrize("device", DEVICES)
def test_safe_then_chain(device):
    z, x, y = inputs(3, device)
    xs, ys = x.to_numpy(), y.to_numpy()
    out = add(z, x, y).then(lambda r: axpy(r[0], 2.0, r[1])).sync()
    z = out[0]
    np.testing.assert_allclose(z.to_numpy(), 3 * xs + ys, rtol=1e-6)


@pytest.mark.parametrize("device", DEVICES)
def test_safe_await(device):
    z, x, y = inputs(5, device)

    async def main():
        return await add(z, x, y)
    z, x, y = asyncio.run(main())
    np.testing.assert_array_equal(z.to_numpy(), x.to_numpy() + y.to_numpy())


@pytest.mark.parametrize("device", DEVICES)
def test_safe_graph_replay(device):
    z, x, y = inputs(7, device)
    g = add(z, x, y).graph()
    ys = None
    for seed in (11, 13):
        fresh = ct.rand(N, seed=seed, device=device).sync()
        want = fresh.to_numpy()
        ct.memcpy(x, fresh).sync()
        z, x, y = g.launch()
        ys = y.to_numpy() if ys is None else ys
        np.testing.assert_array_equal(z.to_numpy(), want + ys)
