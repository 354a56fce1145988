"""Kernel output on both backends: ``ct.print``/``ct.printf`` print once per block, in block
order, with the same text on the CPU backend and on the Triton backend (records in a device
buffer formatted on the host; run here under Triton's interpreter, and on a GPU where there is
one). Failing asserts carry their message and location; a full print buffer drops records and
says so."""
from __future__ import annotations

import numpy as np
import pytest
from triton_interp import triton_interpreter

import safetile as ct


@ct.kernel
def several_prints(x, n):
    t = ct.load(x, (ct.bid(0),), (4,))
    ct.print("block", ct.bid(0), "tile", t)
    ct.printf("%d: sum=%.3f max=%g flag=%d\n", ct.bid(0), ct.sum(t), ct.max(t), ct.max(t) > 5)
    ct.printf("%5.2f|%-6d|%x|%e\n", ct.min(t), ct.bid(0) * 7, ct.bid(0) + 250, ct.sum(t))
    i = 0
    while i < n:
        ct.printf("  i=%d half=%s\n", i, (t * 0.5).astype(ct.float16))
        i = i + 1


@ct.kernel
def failing(x, limit):
    t = ct.load(x, (ct.bid(0),), (4,))
    ct.printf("before %d\n", ct.bid(0))
    over = ct.max(t) >= limit
    while over:  # endless where the assert fails: the failed block must not spin here on the GPU backend
        ct.assert_(ct.max(t) < limit, "value over the limit")
    ct.printf("after %d\n", ct.bid(0))


def _run(kernel, grid, args, backend, capfd):
    capfd.readouterr()
    if backend == "cpu":
        ct.launch(None, grid, kernel, tuple(np.asarray(a) if hasattr(a, "numpy") else a for a in args))
    else:
        with triton_interpreter():
            ct.launch(None, grid, kernel, args)
    return capfd.readouterr()


def _x():
    import torch
    return torch.arange(12, dtype=torch.float32) * 1.25 - 3.0


def test_prints_are_identical_on_cpu_and_triton(capfd):
    x = _x()
    cpu = _run(several_prints, (3,), (x.numpy(), 2), "cpu", capfd).out
    gpu = _run(several_prints, (3,), (x, 2), "triton", capfd).out
    assert gpu == cpu
    lines = cpu.splitlines()
    assert [ln for ln in lines if ln.startswith("block")] == [
        "block 0 tile [-3.  , -1.75, -0.5 ,  0.75]", "block 1 tile [2.  , 3.25, 4.5 , 5.75]",
        "block 2 tile [ 7.  ,  8.25,  9.5 , 10.75]"]
    assert "1: sum=15.500 max=5.75 flag=1" in lines
    assert len(lines) == 3 * 5  # once per block: 3 blocks x (2 prints + 1 printf + 2 loop lines)


def test_failed_assert_names_message_block_and_line(capfd):
    x = _x()
    with pytest.raises(ct.TileRuntimeError, match=r"value over the limit \(block \(1, 0, 0\)\) at .*test_kernel_prints"):
        with triton_interpreter():
            ct.launch(None, (3,), failing, (x, 5.0))
    out = capfd.readouterr().out.splitlines()
    # blocks before the failing one print everything; the failing block what it printed before
    assert out[:3] == ["before 0", "after 0", "before 1"]
    with triton_interpreter():
        ct.launch(None, (3,), failing, (x, 100.0))
    assert capfd.readouterr().out.splitlines() == ["before 0", "after 0", "before 1", "after 1", "before 2",
                                                  "after 2"]


def test_a_full_print_buffer_drops_records_and_says_so(capfd, monkeypatch):
    monkeypatch.setenv("SAFETILE_PRINT_BUFFER", "1024")
    x = _x()
    with triton_interpreter():
        ct.launch(None, (3,), several_prints, (x, 40))
    captured = capfd.readouterr()
    assert "did not fit in the device print buffer" in captured.err
    assert 0 < len(captured.out.splitlines()) < 3 * 43


@pytest.mark.gpu
def test_prints_on_the_gpu_match_the_cpu(capfd):
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("needs a CUDA GPU")
    x = _x()
    cpu = _run(several_prints, (3,), (x.numpy(), 2), "cpu", capfd).out
    capfd.readouterr()
    ct.launch(None, (3,), several_prints, (x.cuda(), 2))
    assert capfd.readouterr().out == cpu
    with pytest.raises(ct.TileRuntimeError, match="value over the limit"):
        ct.launch(None, (3,), failing, (x.cuda(), 5.0))
    assert capfd.readouterr().out.splitlines()[:3] == ["before 0", "after 0", "before 1"]
    ct.launch(None, (3,), failing, (x.cuda(), 100.0))  # the context survives a failed assert
    torch.cuda.synchronize()
    assert capfd.readouterr().out.count("after") == 3
