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


@pytest.mark.parametrize("device", DEVICES)
def test_values_of_an_unfinished_await_are_refused_outside_and_waited_for_inside(device):
    """A chain's launches give their arguments back as soon as they are submitted, but only to
    the chain itself: other code gets UseAfterMoveError until the await has finished, and a
    host read inside the chain (a then/inspect closure) waits for the submitted work."""
    # on the GPU the work must still run when the chain has been submitted (host ~10 us per
    # launch): 20 launches over 2^26 elements take ~5 ms there
    n = 1 << 26 if device == "cuda" else 1 << 20
    x = ct.rand(n, seed=3, device=device).sync().shared()
    z = ct.zeros(n, device=device).sync().partition(1024)
    steps = 20
    seen = []

    async def main():
        op = axpy(z, 2.0, x)
        for k in range(steps - 1):
            if k == 9:  # after 10 launches: read inside the chain
                op = op.inspect(lambda r: seen.append(r[0].to_numpy()))
            op = op.then(lambda r: axpy(*r))
        task = asyncio.ensure_future(op)
        await asyncio.sleep(0)  # the chain starts
        with pytest.raises(ct.UseAfterMoveError, match="moved into launch|in use by an unfinished await"):
            z.to_numpy()
        z2, _, _ = await task
        return z2.to_numpy()

    final = asyncio.run(main())
    xs = x.to_numpy().astype(np.float64)
    np.testing.assert_allclose(seen[0], 10 * 2.0 * xs, rtol=1e-5)
    np.testing.assert_allclose(final, steps * 2.0 * xs, rtol=1e-5)


@pytest.mark.parametrize("device", DEVICES)
def test_chain_without_a_device_runs_on_its_launches_device(device):
    """A chain whose first op has no device (``ct.empty()``) is driven on the device of the
    launches it drives: a graph of GPU launches is a CUDA graph on a GPU stream, and a sync
    waits on that stream; a CPU stream given by the caller is refused for GPU work."""
    z, x, y = inputs(11, device)
    xs, ys = x.to_numpy(), y.to_numpy()
    box = {"z": z}

    def step(_):
        return add(box["z"], x, y)
    z, _, _ = ct.empty().then(step).sync()
    np.testing.assert_array_equal(z.to_numpy(), xs + ys)
    box["z"] = z
    g = ct.empty().then(step).graph()
    assert g.stream.device == z.device
    assert (g._cuda_graph is not None) == (device == "cuda")
    z2, _, _ = g.launch()
    np.testing.assert_array_equal(z2.to_numpy(), xs + ys)
    g.close()
    if device == "cuda":
        with pytest.raises(ct.DeviceOpError, match="the stream given"):
            ct.empty().then(step).sync_on(ct.Stream("cpu"))
        z2.to_numpy()  # the refused chain gave its values back


# ----------------------------------------------------------------------------- the guarantees on a GPU (issue 9)

@ct.entry
def bump(z: ct.Mut[ct.f32, "B"]):
    z.store(z.load() + 1.0)


def _cuda():
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("needs a CUDA GPU")
    return torch


@pytest.mark.gpu
def test_gpu_storage_moved_under_a_wrapped_tensor_is_followed():
    torch = _cuda()
    src = torch.zeros(4096, device="cuda")
    z = ct.from_dlpack(src).partition(1024)
    x = ct.rand(4096, seed=21, device="cuda").sync()
    y = ct.rand(4096, seed=22, device="cuda").sync()
    z, x, y = add(z, x, y).sync()
    src.resize_(1 << 22)  # reallocates the shared storage: the tensor's memory moved
    z, x, y = add(z, x, y).sync()  # a new data pointer is a new fact: checked again, run on the new memory
    np.testing.assert_array_equal(z.to_numpy(), x.to_numpy() + y.to_numpy())


@pytest.mark.gpu
def test_gpu_launches_from_two_threads_on_shared_memory_lose_no_update():
    """Two threads bump overlapping views on their own streams: the registry orders them (a
    stream waits on the other's event), so no update is lost."""
    import threading
    torch = _cuda()
    t = ct.zeros(1 << 22, device="cuda").sync()
    views = [t[0:3 << 20], t[1 << 20:4 << 20]]  # overlap on [1M, 3M)
    n = 50
    errors = []

    def run(v):
        try:
            p = v.partition(1024)
            stream = ct.Stream("cuda")
            for _ in range(n):
                p, = bump(p).sync_on(stream)
        except BaseException as e:  # noqa: BLE001
            errors.append(e)
    threads = [threading.Thread(target=run, args=(v,)) for v in views]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    assert not errors, errors
    out = t.to_numpy()
    m = 1 << 20
    assert (out[:m] == n).all() and (out[m:3 * m] == 2 * n).all() and (out[3 * m:] == n).all()
    torch.cuda.synchronize()


@pytest.mark.gpu
def test_gpu_host_read_of_a_view_waits_for_a_running_chain():
    _cuda()
    t = ct.zeros(1 << 24, device="cuda").sync()
    view = t[:]
    z = t.partition(1024)
    op = bump(z)
    for _ in range(19):
        op = op.then(lambda r: bump(*r))
    import threading
    seen = []
    th = threading.Thread(target=lambda: seen.append(view.to_numpy()))
    done = []

    def chain():
        done.append(op.sync())
    tc = threading.Thread(target=chain)
    tc.start()
    th.start()
    tc.join()
    th.join()
    a = seen[0]
    assert (a == a[0]).all() and 0 <= a[0] <= 20, "a host read saw a chain's launch half done"


def _cuda_or_skip():
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("needs a CUDA GPU")
    return torch


@pytest.mark.gpu
def test_chained_gpu_launches_keep_their_memory_until_the_terminal_has_waited():
    """The next step of a chain may drop the previous launch's inputs while the GPU still runs it;
    torch's allocator would then hand that memory to work on its own stream at once. The terminal
    holds each submitted launch's arguments (raw tensors' aliases included) until it has waited,
    so the result is right even when the next step fills new memory straight away."""
    import gc
    import weakref
    torch = _cuda_or_skip()
    n = 1 << 24
    z = ct.from_dlpack(torch.zeros(n, device="cuda")).partition(1024)
    probe: dict = {}

    def second(v):
        x = torch.full((n,), 2.0, device="cuda")  # only this launch refers to it
        op = axpy(v[0], 1.0, x)
        probe["alias"] = weakref.ref(op._runtime[2])
        return op

    def third(v):
        probe["alive"] = probe["alias"]() is not None
        gc.collect()
        noise = torch.full((n,), -1e9, device="cuda")  # may take the freed memory, on torch's stream
        return axpy(v[0], 1.0, noise + 1e9 + 3.0)

    z, _, _ = axpy(z, 1.0, torch.zeros(n, device="cuda")).then(second).then(third).sync()
    assert probe["alive"]
    gc.collect()
    assert probe["alias"]() is None
    np.testing.assert_array_equal(z.unpartition().to_numpy(), np.full(n, 5.0, np.float32))
