"""A warm start that does not import Triton.

A process that launches a kernel compiled by an earlier process needs only the binary and
Triton's C launcher for its signature, both already in Triton's cache. Importing Triton to
reach them (its package import alone is ~0.1 s) was most of such a first launch. So when a
kernel is first loaded the usual way, a small record notes the cubin, the launcher module and
the launch metadata; a later process with the same source, compile options, target, Triton
build and Triton environment loads the cubin with the CUDA driver (``cuModuleLoadData``, as
Triton does, shared-memory opt-in included) and imports the launcher module directly.

Records are keyed without importing Triton: its installed version and the size and time of
its native library, every ``TRITON_*``/``LLVM_*``/``MLIR_*`` variable and the cache folder.
Anything unexpected (a file gone or of another size, no current CUDA context, a driver error,
tensor descriptors made on the host, profiling scratch) returns None and the kernel loads
through Triton as before.
"""
from __future__ import annotations

import ctypes
import functools
import hashlib
import importlib.util
import json
import os
import sysconfig
import threading
from pathlib import Path
from typing import Any

from . import cache

_ENV_PREFIXES = ("TRITON_", "LLVM_", "MLIR_")
_LAUNCHER = "__triton_launcher"
_lock = threading.Lock()


@functools.cache
def _libtriton() -> str:
    """'size:mtime' of Triton's native library, found without importing the package."""
    try:
        spec = importlib.util.find_spec("triton")
        folder = Path(spec.origin).parent / "_C"
        lib = next(p for p in sorted(folder.iterdir()) if p.name.startswith("libtriton"))
        st = lib.stat()
        return f"{lib}:{st.st_size}:{st.st_mtime_ns}"
    except (AttributeError, TypeError, OSError, StopIteration):
        return ""


def record_path(key: str, options: dict, target: int) -> Path | None:
    root = cache.cache_dir()
    if root is None or not cache.triton_version():
        return None
    h = hashlib.sha256()
    env = sorted((k, v) for k, v in os.environ.items() if k.startswith(_ENV_PREFIXES))
    for part in (key, json.dumps(options, sort_keys=True, default=repr), str(target), cache.triton_version(),
                 _libtriton(), repr(env)):
        h.update(part.encode())
        h.update(b"\0")
    return root / key[:2] / f"direct_{h.hexdigest()[:40]}.json"


def _size(path: str) -> int:
    return os.stat(path).st_size


def remember(key: str, options: dict, target: int, compiled: Any, signature: dict) -> None:
    """After Triton loaded ``compiled`` (and built its launcher): record where both live."""
    try:
        md = compiled.metadata
        if getattr(md, "tensordesc_meta", None) or getattr(md, "profile_scratch_size", 0):
            return
        path = record_path(key, options, target)
        if path is None or path.exists():
            return
        from triton.backends.nvidia import driver as nv
        from triton.runtime.build import platform_key
        from triton.runtime.cache import get_cache_manager
        source = nv.make_launcher({}, dict(signature), None)
        digest = hashlib.sha256((source + platform_key()).encode("utf-8")).hexdigest()
        launcher = get_cache_manager(digest).get_file(_LAUNCHER + sysconfig.get_config_var("EXT_SUFFIX"))
        cubin = compiled.metadata_group.get(f"{compiled.name}.cubin")
        if not launcher or not cubin:
            return
        record = {"name": compiled.name, "cubin": cubin, "cubin_size": _size(cubin), "launcher": launcher,
                  "launcher_size": _size(launcher), "num_warps": md.num_warps, "num_ctas": md.num_ctas,
                  "shared": md.shared, "launch_pdl": bool(md.launch_pdl),
                  "launch_cooperative_grid": bool(md.launch_cooperative_grid),
                  "global_scratch_size": md.global_scratch_size}
        cache._write_atomic(path, json.dumps(record))
    except Exception:  # noqa: BLE001 - the record only saves time
        pass


# ---------------------------------------------------------------------------- the CUDA driver

_CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES = 1
_CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES = 8
_CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN = 97
_CU_FUNC_CACHE_PREFER_SHARED = 1


@functools.cache
def _driver():
    lib = ctypes.CDLL("libcuda.so.1")
    for name in ("cuCtxGetCurrent", "cuModuleLoadData", "cuModuleGetFunction", "cuDeviceGet",
                 "cuDeviceGetAttribute", "cuFuncGetAttribute", "cuFuncSetAttribute", "cuFuncSetCacheConfig"):
        getattr(lib, name).restype = ctypes.c_int
    return lib


def _check(status: int) -> None:
    if status != 0:
        raise OSError(f"CUDA driver error {status}")


def _load_function(cubin: bytes, name: str, shared: int, device: int) -> int:
    """The CUfunction of ``name`` in ``cubin`` on the current context, with dynamic shared memory
    opted in as Triton does."""
    cu = _driver()
    ctx = ctypes.c_void_p()
    _check(cu.cuCtxGetCurrent(ctypes.byref(ctx)))
    if not ctx.value:
        raise OSError("no current CUDA context")
    module, fn = ctypes.c_void_p(), ctypes.c_void_p()
    _check(cu.cuModuleLoadData(ctypes.byref(module), ctypes.c_char_p(cubin)))
    _check(cu.cuModuleGetFunction(ctypes.byref(fn), module, name.encode()))
    if shared > 49152:
        dev, optin = ctypes.c_int(), ctypes.c_int()
        _check(cu.cuDeviceGet(ctypes.byref(dev), device))
        _check(cu.cuDeviceGetAttribute(ctypes.byref(optin), _CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN, dev))
        if optin.value > 49152:
            static = ctypes.c_int()
            _check(cu.cuFuncSetCacheConfig(fn, _CU_FUNC_CACHE_PREFER_SHARED))
            _check(cu.cuFuncGetAttribute(ctypes.byref(static), _CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES, fn))
            _check(cu.cuFuncSetAttribute(fn, _CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                                         optin.value - static.value))
    return fn.value


_DRIVER_MODULE = "triton.backends.nvidia.driver"


@functools.cache
def _launcher_module(path: str):
    """Triton's compiled launcher module. Its initialisation looks up ``PyCUtensorMap`` in Triton's
    CUDA driver module, which is only ever used for tensor descriptors passed from the host (no
    safetile kernel takes one); when Triton is not imported, a stand-in module answers that one
    lookup, under the import lock, and is removed again."""
    import _imp
    import sys
    import types
    spec = importlib.util.spec_from_file_location(_LAUNCHER, path)
    module = importlib.util.module_from_spec(spec)
    _imp.acquire_lock()
    stub = None
    try:
        if _DRIVER_MODULE not in sys.modules:
            stub = types.ModuleType(_DRIVER_MODULE)
            stub.PyCUtensorMap = type("PyCUtensorMapUnused", (), {})
            sys.modules[_DRIVER_MODULE] = stub
        spec.loader.exec_module(module)
    finally:
        if stub is not None and sys.modules.get(_DRIVER_MODULE) is stub:
            del sys.modules[_DRIVER_MODULE]
        _imp.release_lock()
    return module


class _WithScratch:
    """The C launcher with the per-launch global scratch buffer tensor descriptors made on the
    device need (one slice per block, as Triton's launcher allocates it)."""

    __slots__ = ("launch", "per_block")

    def __init__(self, launch, per_block: int):
        self.launch, self.per_block = launch, per_block

    def __call__(self, gx, gy, gz, stream, function, coop, pdl, _scratch, profile, *rest):
        import torch
        buf = torch.empty(gx * gy * gz * self.per_block, dtype=torch.uint8, device="cuda")
        self.launch(gx, gy, gz, stream, function, coop, pdl, buf.data_ptr(), profile, *rest)


def load(key: str, options: dict, target: int, device: int) -> tuple[Any, tuple] | None:
    """(call, prefix) for launching the kernel recorded for these inputs, as ``Variant`` keeps
    them (``call(gx, gy, gz, stream, *prefix, *kernel_args)``), or None."""
    try:
        path = record_path(key, options, target)
        if path is None or not path.exists():
            return None
        rec = json.loads(path.read_text())
        if _size(rec["cubin"]) != rec["cubin_size"] or _size(rec["launcher"]) != rec["launcher_size"]:
            return None
        with _lock:  # one module load per function even when threads race here
            fn = _load_function(Path(rec["cubin"]).read_bytes(), rec["name"], rec["shared"], device)
            launch = _launcher_module(rec["launcher"]).launch
        prefix = (fn, rec["launch_cooperative_grid"], rec["launch_pdl"], None, None,
                  (rec["num_warps"], rec["num_ctas"], rec["shared"]), None, None, None)
        if rec["global_scratch_size"]:
            launch = _WithScratch(launch, rec["global_scratch_size"] * rec["num_ctas"])
        return launch, prefix
    except Exception:  # noqa: BLE001 - load through Triton instead
        return None
