"""A lean C launcher: one small extension module launches every compiled kernel.

Triton's generated launcher (one C module per signature) parses its arguments with
``PyArg_ParseTuple`` (13 fixed fields, launch metadata, enter/exit hooks, then the kernel's
arguments), parses the metadata tuple again and looks up each pointer argument's
``data_ptr``. safetile's launch paths hand it plain ints only, so most of that is wasted on
every launch. This module's ``launch(gx, gy, gz, stream, spec, *kernel_args)`` takes the
per-kernel constants from a ``Spec`` made once per compiled variant (the ``CUfunction``, warps,
CTAs, shared memory, PDL, and one type code per kernel parameter), converts each argument by
its code with the same range checks (an int that does not fit its parameter raises
``OverflowError`` before anything runs), and calls ``cuLaunchKernelEx`` with the GIL released,
as Triton's launcher does (including its two scratch pointers, 0 here: variants that need
scratch memory keep Triton's launcher).

The module is built once per installation with Triton's own build helper (the C compiler
Triton builds its launchers with) into safetile's cache (``runtime/native.py``), beside the
kernel's first compile; a warm process loads it without Triton. Anything unexpected (no compiler, a parameter type it
does not know, 16-CTA clusters) leaves the variant on Triton's launcher; ``SAFETILE_LEAN_LAUNCH=0``
turns it off.

The module also holds ``Reader``, ``ct.launch``'s one-pass path (fastpath.py) in C: on the H100
host the Python reader's bytecode, not its torch attribute reads, was most of its time.
"""
from __future__ import annotations

import threading
from typing import Any

from ...runtime import env, torch_facts
from ...runtime.native import NativeModule
from . import cache
from .lean_source import SOURCE


_NAME = "safetile_lean_launch"
_CODES = {"i1": 1, "i8": 2, "i16": 3, "i32": 4, "i64": 5, "u8": 6, "u16": 7, "u32": 8, "u64": 9,
          "fp16": 10, "bf16": 11, "fp32": 12, "fp64": 13}


def type_codes(signature: dict[str, str]) -> bytes | None:
    """One code per kernel parameter (pointers 0), or None for a type the launcher does not know."""
    out = bytearray()
    for ty in signature.values():
        code = 0 if ty.startswith("*") else _CODES.get(ty)
        if code is None:
            return None
        out.append(code)
    return bytes(out)


def _build(name: str, source_file: str, folder: str) -> str:
    """Build with Triton's own helper: its compiler and the CUDA headers it ships."""
    from triton.backends.nvidia import driver as nv
    from triton.runtime.build import _build as triton_build
    return triton_build(name, source_file, folder, [], nv.include_dirs, ["dl"], [])  # libcuda: opened at run time


def new_loader() -> NativeModule:
    """The lean module's loader (one per process: ``_loader``; tests make their own)."""
    return NativeModule(_NAME, SOURCE, _build, tag=cache.triton_version())


_loader = new_loader()


def prebuild() -> threading.Thread | None:
    """Build the module in the background (beside a kernel's first compile) when it is missing, and
    the C++ fact reader its ``Reader`` uses (not waited for: until it is built, torch's methods)."""
    if not env.lean_launch():
        return None
    torch_facts.prebuild()
    return _loader.prebuild()


def reader(table: dict, kinds: tuple[str, ...], generic, tensor_type, const_types: frozenset, current_device,
           get_stream, stream_handle) -> Any:
    """ct.launch's one-pass reader in C for these argument kinds (``fastpath._specialised``
    describes what it does), or None where the lean module is not loaded in this process."""
    m = _loader.loaded()
    if m is None or not env.lean_launch():
        return None
    codes = bytes(0 if k.startswith("tensor") else _KINDS[k] for k in kinds)
    try:
        return m.Reader(table, codes, tensor_type, const_types, generic, current_device, get_stream, stream_handle,
                        torch_facts.capsule())
    except ValueError:  # more arguments than it takes
        return None


_KINDS = {"int": 1, "float": 2, "bool": 3, "const": 4}


def launcher(function: int, warps: int, ctas: int, shared: int, pdl: bool, cooperative: bool,
             signature: dict[str, str], build: bool) -> tuple[Any, tuple] | None:
    """``(call, prefix)`` launching this compiled kernel through the lean launcher (as ``Variant``
    keeps them: ``call(gx, gy, gz, stream, *prefix, *kernel_args)``), or None: Triton's."""
    if not env.lean_launch():
        return None
    codes = type_codes(signature)
    if codes is None:
        return None
    m = _loader.get(build)
    if m is None:
        return None
    try:
        spec = m.Spec(function, warps, ctas, shared, pdl, cooperative, codes)
    except ValueError:  # e.g. 16-CTA clusters (Triton's launcher sets a non-portable attribute for them)
        return None
    return m.launch, (spec,)
