"""LLVM's IR optimisation level for safetile's kernels (``SAFETILE_LLVM_OPT``; default: Triton's O3).

Triton runs LLVM's O3 pipeline over a kernel's LLVM IR before the NVPTX back end turns it into
PTX and ptxas into SASS. For safetile's generated kernels that pipeline is ~15 % of a cold
compile (0.13 of 0.88 CPU s for the benchmark's 128x128 attention, 0.05 of 0.34 for its GEMM,
sm_90), and O0 leaves the floating-point and tensor-core work of their loops as it was: the
NVPTX back end (at its aggressive level) and ptxas optimise after it. But the integer and
address arithmetic around it is not always as good: on an H100, O0 binaries of the 3-D
attention ran 1-2 % slower (causal at 4 warps, d=128), others the same or faster (bench/NOTES.md,
"Session 7"). So O0 is an opt-in (``SAFETILE_LLVM_OPT=0``) for work that compiles more than it
runs, and Triton's level stays the default.

Triton's stage calls ``llvm.optimize_module(module, OPTIMIZE_O3)`` itself, so the level is
chosen by a wrapper around that function, installed once per process when a level is first
asked for, that changes the level only inside :func:`level` on the calling thread (a compile
runs on its caller's thread): every other compile in the process (a user's own Triton kernels,
torch.compile's) keeps Triton's O3. The level is part of Triton's cache key for the compile
(:func:`cache_env`), so binaries built at different levels never stand in for each other.
"""
from __future__ import annotations

import contextlib
import inspect
import threading
from collections.abc import Iterator
from typing import Any
from ...locks import FORK_LOCKS

_local = threading.local()
_install_lock = FORK_LOCKS.new()
_installed = False
_ENV_KEY = "SAFETILE_LLVM_OPT"


def _install() -> bool:
    """Wrap Triton's ``llvm.optimize_module`` once (False where this Triton has none)."""
    global _installed
    with _install_lock:
        if _installed:
            return True
        try:
            from triton._C.libtriton import llvm
            original = llvm.optimize_module
            levels = (llvm.OPTIMIZE_O0, llvm.OPTIMIZE_O1, llvm.OPTIMIZE_O2, llvm.OPTIMIZE_O3)
        except (ImportError, AttributeError):
            return False

        def optimize_module(module, opt, *args, **kwargs):
            wanted = current()
            return original(module, opt if wanted is None else levels[wanted], *args, **kwargs)
        optimize_module.__wrapped__ = original  # type: ignore[attr-defined]
        llvm.optimize_module = optimize_module
        _installed = True
        return True


def current() -> int | None:
    """The level compiles on this thread ask for (None: Triton's own)."""
    return getattr(_local, "level", None)


@contextlib.contextmanager
def level(wanted: int | None) -> Iterator[None]:
    """Compiles on this thread run LLVM's pipeline at ``wanted`` (0-3; None: Triton's own).
    Nested uses restore the level they found."""
    if wanted is None or not _install():
        yield
        return
    before = getattr(_local, "level", None)
    _local.level = wanted
    try:
        yield
    finally:
        _local.level = before


def cache_env(wanted: int | None) -> dict[str, Any]:
    """``triton.compile`` keyword arguments that put ``wanted`` into Triton's cache key (its
    compile-invalidating environment, which Triton also records in the binary's metadata);
    empty for Triton's own level or a Triton without that parameter."""
    if wanted is None or not _install():
        return {}
    import triton
    if "_env_vars" not in inspect.signature(triton.compile).parameters:
        return {}
    from triton._C.libtriton import get_cache_invalidating_env_vars
    return {"_env_vars": {**get_cache_invalidating_env_vars(), _ENV_KEY: str(wanted)}}
