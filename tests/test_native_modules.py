"""safetile's small native modules (runtime/native.py): built once into the cache, loaded by later
callers; a caller that does not build never waits for another thread's build (a C++ module takes
seconds, and a first launch asks for it beside its compile)."""
from __future__ import annotations

import shutil
import threading
import time

import pytest

from safetile.runtime.native import NativeModule, compile_c

SOURCE = r"""
#define PY_SSIZE_T_CLEAN
#include <Python.h>
static struct PyModuleDef def = {PyModuleDef_HEAD_INIT, "safetile_test_native", NULL, -1, NULL};
PyMODINIT_FUNC PyInit_safetile_test_native(void) { return PyModule_Create(&def); }
"""


@pytest.fixture
def slow_module(monkeypatch, tmp_path):
    if shutil.which("gcc") is None and shutil.which("cc") is None:
        pytest.skip("no C compiler")
    monkeypatch.setenv("SAFETILE_CACHE_DIR", str(tmp_path))
    started, release = threading.Event(), threading.Event()

    def builder(name: str, source_file: str, folder: str) -> str:
        started.set()
        release.wait(30)
        return compile_c(name, source_file, folder)
    return NativeModule("safetile_test_native", SOURCE, builder, tag="test"), started, release


def test_a_caller_that_does_not_build_never_waits_for_a_build(slow_module):
    mod, started, release = slow_module
    builder = threading.Thread(target=mod.get, args=(True,))
    builder.start()
    assert started.wait(30)
    t0 = time.perf_counter()
    assert mod.get(build=False) is None  # the build is in progress: not waited for
    assert time.perf_counter() - t0 < 1.0
    release.set()
    builder.join(60)
    m = mod.get(build=False)
    assert m is not None and m.__name__ == "safetile_test_native"
    assert mod.path().exists()


def test_a_later_loader_finds_the_build_in_the_cache(slow_module):
    mod, _, release = slow_module
    release.set()
    assert mod.get(build=True) is not None
    again = NativeModule("safetile_test_native", SOURCE, tag="test")
    assert again.get(build=False) is not None  # loaded from the cache: no builder given, none needed
