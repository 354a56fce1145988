"""Running launches on the Triton backend inside Triton's interpreter (CPU memory), for
tests; skips cleanly where torch, triton or the backend is missing."""
from __future__ import annotations

import contextlib
import importlib
import os

import pytest


@contextlib.contextmanager
def triton_interpreter():
    """Route ``ct.launch`` to the Triton backend and run kernels in Triton's interpreter."""
    pytest.importorskip("torch")
    pytest.importorskip("triton")
    try:
        importlib.import_module("safetile.backends.triton.launcher")
    except ImportError as e:  # pragma: no cover - depends on the installation
        pytest.skip(f"the Triton backend is not available: {e}")
    saved = {k: os.environ.get(k) for k in ("TRITON_INTERPRET", "SAFETILE_BACKEND")}
    os.environ["TRITON_INTERPRET"] = "1"
    os.environ["SAFETILE_BACKEND"] = "triton"
    try:
        yield
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
