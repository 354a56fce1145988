"""Kernel output on the Triton backend: print records in a device buffer, formatted on the
host after the launch.

A kernel with ``print`` or ``assert`` ops takes two extra trailing arguments: a byte
buffer and the size of its data area. One thread of a block writes each print as a record:
it reserves room with an atomic add on the buffer's byte counter, then stores the op's
index, the block's linear index and the operand values (tiles whole, in C order). A failing
assert reserves a failure slot and notes where the data area stood, so prints the block made
after the failure are dropped; ``while`` loops of such kernels stop once any block has
failed (each test reads the failure count), so a failed block cannot spin forever.

After the launch the host copies the used part back, sorts the records by block (keeping
each block's own order), renders them with the same ``Printer`` as the CPU backend, and
raises ``TileRuntimeError`` for the first failing block, as the CPU backend does.

When the buffer fills, later records are dropped (a record is never cut); a note on
stderr says how many. The data area is ``SAFETILE_PRINT_BUFFER`` bytes (default 16 MiB).

Layout (bytes): 0 int32 data bytes reserved, 4 int32 print records attempted, 8 int32
failures, 12 unused, 16.. ``FAIL_SLOTS`` failure entries of four int32 (block, op index,
data position, 0), then the data area at ``DATA``. A record: int32 op index, int32 block,
then each operand at an 8-byte aligned offset.
"""
from __future__ import annotations

import sys
from typing import Any

import numpy as np

from ...errors import TileRuntimeError, TileUnsupportedFeatureError
from ...ir.core import Function, Op, tile_type, walk
from ...runtime import env

FAIL_SLOTS = 32
DATA = 16 + 16 * FAIL_SLOTS
DEFAULT_BYTES = 16 << 20


def buffer_bytes() -> int:
    """The size of the data area (``SAFETILE_PRINT_BUFFER``, bytes; a K/M/G suffix works)."""
    text = env.print_buffer_setting().strip().upper()
    if not text:
        return DEFAULT_BYTES
    scale = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}.get(text[-1], 1)
    try:
        n = int(text[:-1] if scale > 1 else text) * scale
    except ValueError:
        raise ValueError(f"SAFETILE_PRINT_BUFFER={text!r} is not a number of bytes") from None
    return max(1024, min(n, (1 << 31) - 1024)) // 8 * 8


def buffer_ops(fn: Function) -> list[Op]:
    """The print and assert ops of a kernel, numbered in this order in its records."""
    return [op for op in walk(fn.body) if op.name in ("print", "assert")]


def storage_dtype(d) -> np.dtype:
    """How a value of safetile dtype ``d`` is stored in a record."""
    if d.is_bool:
        return np.dtype(np.int8)
    if d.name.startswith("float8") or d.name in ("bfloat16", "tfloat32"):
        return np.dtype(np.float32)
    return np.dtype(d.np_dtype)


def record_fields(op: Op) -> tuple[list[tuple[int, np.dtype, tuple[int, ...]]], int]:
    """(offset, storage dtype, shape) of each operand of a print op, and the record size."""
    fields = []
    pos = 8
    for v in op.operands:
        d = storage_dtype(v.type.dtype)
        shape = tuple(tile_type(v).shape)
        fields.append((pos, d, shape))
        pos += -(-int(np.prod(shape, dtype=np.int64)) * d.itemsize // 8) * 8
    return fields, pos


class Records:
    """The decoded content of a print buffer."""

    def __init__(self, ops: list[Op], raw: np.ndarray, capacity: int):
        header = raw[:DATA].view(np.int32)
        reserved, attempted, failures = int(header[0]), int(header[1]), int(header[2])
        data = raw[DATA:DATA + min(max(reserved, 0), capacity)]
        self.prints: list[tuple[int, int, Op, list[np.ndarray]]] = []  # (block, position, op, values)
        pos = 0
        while pos + 8 <= len(data):
            index, block = (int(x) for x in data[pos:pos + 8].view(np.int32))
            op = ops[index]
            fields, size = record_fields(op)
            if pos + size > len(data):
                break
            values = [data[pos + off:pos + off + int(np.prod(shape, dtype=np.int64)) * d.itemsize].view(d)
                      .reshape(shape) for off, d, shape in fields]
            self.prints.append((block, pos, op, values))
            pos += size
        self.dropped = attempted - len(self.prints)
        entries = raw[16:DATA].view(np.int32).reshape(FAIL_SLOTS, 4)
        self.failures = [(int(b), ops[int(i)], int(p)) for b, i, p, _ in entries[:min(failures, FAIL_SLOTS)]]
        self.failed_blocks = failures

    def report(self, grid: tuple[int, int, int]) -> None:
        """Print the records in block order; raise for the first failing block."""
        from ...ops.debug import Printer
        printer = Printer()
        first_fail: dict[int, tuple[Op, int]] = {}
        for block, op, pos in self.failures:
            if block not in first_fail or pos < first_fail[block][1]:
                first_fail[block] = (op, pos)
        stop = min(first_fail) if first_fail else None
        out = []
        for block, pos, op, values in sorted(self.prints, key=lambda r: (r[0], r[1])):
            if stop is not None and (block > stop or block == stop and pos >= first_fail[stop][1]):
                continue
            out.append(printer.text(op.attrs, values))
        printer.write("".join(out))
        if self.dropped > 0:
            sys.stdout.flush()
            print(f"safetile: {self.dropped} print record(s) did not fit in the device print buffer of "
                  f"{buffer_bytes()} bytes and were dropped (set SAFETILE_PRINT_BUFFER to enlarge it)",
                  file=sys.stderr)
        if stop is None:
            sys.stdout.flush()
            return
        op, _ = first_fail[stop]
        printer.write(printer.failure_text(op.attrs))
        sys.stdout.flush()
        failing = sorted(first_fail)
        gx, gy, _ = grid
        coords = ", ".join(str((b % gx, (b // gx) % gy, b // (gx * gy))) for b in failing[:4])
        more = f" and {self.failed_blocks - 4} more" if self.failed_blocks > 4 else ""
        where = f" at {op.loc.filename}:{op.loc.line}" if op.loc else ""
        raise TileRuntimeError(f"assertion failed: {op.attrs['message']} (block {coords}{more}){where}")


class PrintingCall:
    """A compiled kernel's launcher with the print buffer appended to its arguments: the
    launch waits for the kernel, then reports its output (see the module docstring)."""

    def __init__(self, inner, fn: Function):
        self.inner = inner
        self.ops = buffer_ops(fn)

    def __call__(self, gx, gy, gz, stream, *rest) -> None:
        import torch
        if torch.cuda.is_current_stream_capturing():
            raise TileUnsupportedFeatureError("a kernel that prints or asserts cannot be captured in a CUDA "
                                              "graph (its output is read back after each launch)")
        cap = buffer_bytes()
        buf = torch.empty(DATA + cap, dtype=torch.uint8, device="cuda")
        buf[:DATA].zero_()
        self.inner(gx, gy, gz, stream, *rest, buf.data_ptr(), cap)
        torch.cuda.synchronize(buf.device)
        head = buf[:DATA].cpu().numpy()
        used = min(int(head[:4].view(np.int32)[0]), cap)
        raw = np.concatenate([head, buf[DATA:DATA + max(used, 0)].cpu().numpy()])
        Records(self.ops, raw, cap).report((gx, gy, gz))


def interpreted_args(fn: Function) -> tuple[Any, int, list[Op]]:
    """A host print buffer for a launch under Triton's interpreter: (tensor, capacity, ops)."""
    import torch
    cap = buffer_bytes()
    return torch.zeros(DATA + cap, dtype=torch.uint8), cap, buffer_ops(fn)
