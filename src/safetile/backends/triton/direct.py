"""A warm start that does not import Triton.

A process that launches a kernel compiled by an earlier process needs only the binary and a C
launcher for its signature. Importing Triton to reach them (its package import alone is ~0.1 s)
was most of such a first launch. So when a kernel is first compiled, safetile also builds its
own copy of Triton's C launcher for the signature (Triton's generated source, minus the one
lookup in Triton's driver module its initialisation does, which only launches taking tensor
descriptors from the host need; no safetile kernel takes one), in the background, into
safetile's cache, and records the cubin, that launcher and the launch metadata. A later process
with the same source, compile options, target, Triton build and Triton environment loads the
cubin with the CUDA driver (``cuModuleLoadData``, shared-memory opt-in as Triton does) and
imports the launcher, without Triton.

Records are keyed without importing Triton: its installed version and the size and time of its
native library, every ``TRITON_*``/``LLVM_*``/``MLIR_*`` variable and the cache folders.
Anything unexpected (a file gone or of another size, no current CUDA context, a driver error,
tensor descriptors made on the host, profiling scratch, Triton's launcher source not as
expected) returns None and the kernel loads through Triton as before.
"""
from __future__ import annotations

import ctypes
import functools
import hashlib
import importlib.util
import json
import os
import re
import sysconfig
import threading
from pathlib import Path
from typing import Any

from ...runtime import env
from . import cache
from ...locks import FORK_LOCKS

_ENV_PREFIXES = ("TRITON_", "LLVM_", "MLIR_")
_LAUNCHER = "__triton_launcher"
_lock = FORK_LOCKS.new()


@functools.cache
def _libtriton() -> str:
    """'size:mtime' of Triton's native library, found without importing the package."""
    try:
        spec = importlib.util.find_spec("triton")
        if spec is None or spec.origin is None:
            return ""
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
    compiler_env = env.with_prefixes(_ENV_PREFIXES)
    for part in (key, json.dumps(options, sort_keys=True, default=repr), str(target), cache.triton_version(),
                 _libtriton(), repr(compiler_env)):
        h.update(part.encode())
        h.update(b"\0")
    return root / key[:2] / f"direct_{h.hexdigest()[:40]}.json"


def _size(path: str) -> int:
    return os.stat(path).st_size


_DRIVER_LOOKUP = re.compile(
    r"\n[ \t]*PyObject\s*\*\s*driver_mod\s*=\s*PyImport_ImportModule\(\"triton\.backends\.nvidia\.driver\"\);"
    r".*?py_tensor_map_type\s*=\s*PyObject_GetAttrString\(driver_mod,\s*\"PyCUtensorMap\"\);"
    r"\s*if\s*\(py_tensor_map_type\s*==\s*NULL\)\s*\{\s*return NULL;\s*\}", re.S)


def _launcher_source(signature: dict) -> str | None:
    """Triton's launcher source for ``signature`` without its initialisation's import of Triton."""
    from triton.backends.nvidia import driver as nv
    source, n = _DRIVER_LOOKUP.subn("\n", nv.make_launcher({}, dict(signature), None))
    return source if n == 1 and "PyImport_ImportModule" not in source and "nvTmaDesc" not in source else None


def _own_launcher(signature: dict) -> str | None:
    """Path of safetile's launcher module for ``signature`` (built with Triton's build helper
    into safetile's cache when missing)."""
    root = cache.cache_dir()
    source = _launcher_source(signature)
    if root is None or source is None:
        return None
    import tempfile

    from triton.backends.nvidia import driver as nv
    from triton.runtime.build import _build, platform_key
    suffix = sysconfig.get_config_var("EXT_SUFFIX")
    digest = hashlib.sha256((source + platform_key() + cache.triton_version()).encode()).hexdigest()
    path = root / "launchers" / f"{digest[:40]}{suffix}"
    if not path.exists():
        with tempfile.TemporaryDirectory() as tmp:
            src = os.path.join(tmp, _LAUNCHER + ".c")
            with open(src, "w") as f:
                f.write(source)
            so = _build(_LAUNCHER, src, tmp, nv.library_dirs(), nv.include_dirs, nv.libraries, [])
            path.parent.mkdir(parents=True, exist_ok=True)
            part = path.with_name(path.name + f".{os.getpid()}.{threading.get_ident()}.tmp")
            with open(so, "rb") as src_f, open(part, "wb") as dst:
                dst.write(src_f.read())
            os.replace(part, path)
    return str(path)


def remember(key: str, options: dict, target: int, compiled: Any, signature: dict) -> threading.Thread | None:
    """After Triton loaded ``compiled``: build safetile's launcher for its signature and record
    where everything lives, in a thread (a C compiler run the first time a signature is seen;
    not a daemon, so a short process still finishes the record before it exits)."""
    try:
        md = compiled.metadata
        if getattr(md, "tensordesc_meta", None) or getattr(md, "profile_scratch_size", 0):
            return None
        path = record_path(key, options, target)
        cubin = compiled.metadata_group.get(f"{compiled.name}.cubin")
        if path is None or path.exists() or not cubin:
            return None
        record = {"name": compiled.name, "cubin": cubin, "cubin_size": _size(cubin), "num_warps": md.num_warps,
                  "num_ctas": md.num_ctas, "shared": md.shared, "launch_pdl": bool(md.launch_pdl),
                  "launch_cooperative_grid": bool(md.launch_cooperative_grid),
                  "global_scratch_size": md.global_scratch_size, "params": len(signature)}
    except Exception:  # noqa: BLE001 - the record only saves time
        return None

    def build() -> None:
        try:
            launcher = _own_launcher(signature)
            if launcher is not None:
                cache._write_atomic(path, json.dumps({**record, "launcher": launcher,
                                                      "launcher_size": _size(launcher)}))
        except Exception:  # noqa: BLE001
            pass
    t = threading.Thread(target=build, name="safetile-launcher-record")
    t.start()
    return t


# ---------------------------------------------------------------------------- the CUDA driver

_CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES = 1
_CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES = 8
_CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN = 97
_CU_FUNC_CACHE_PREFER_SHARED = 1
_CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT = 16


@functools.cache
def _driver():
    lib = ctypes.CDLL("libcuda.so.1")
    for name in ("cuCtxGetCurrent", "cuModuleLoadData", "cuModuleGetFunction", "cuDeviceGet",
                 "cuDeviceGetAttribute", "cuFuncGetAttribute", "cuFuncSetAttribute", "cuFuncSetCacheConfig",
                 "cuCtxGetDevice", "cuOccupancyMaxActiveBlocksPerMultiprocessor"):
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
        _check(cu.cuDeviceGetAttribute(ctypes.byref(optin), _CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN,
                                       dev))
        if optin.value > 49152:
            static = ctypes.c_int()
            _check(cu.cuFuncSetCacheConfig(fn, _CU_FUNC_CACHE_PREFER_SHARED))
            _check(cu.cuFuncGetAttribute(ctypes.byref(static), _CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES, fn))
            _check(cu.cuFuncSetAttribute(fn, _CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                                         optin.value - static.value))
    assert fn.value is not None  # cuModuleGetFunction succeeded
    return fn.value


def resident_blocks(function: int, threads: int, shared: int) -> int:
    """How many blocks of ``function`` (``threads`` each, ``shared`` bytes of dynamic shared memory)
    the current GPU runs at once: its SMs times the driver's occupancy; 0 when the driver cannot say."""
    try:
        cu = _driver()
        dev, sms, per_sm = ctypes.c_int(), ctypes.c_int(), ctypes.c_int()
        _check(cu.cuCtxGetDevice(ctypes.byref(dev)))
        _check(cu.cuDeviceGetAttribute(ctypes.byref(sms), _CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, dev))
        _check(cu.cuOccupancyMaxActiveBlocksPerMultiprocessor(ctypes.byref(per_sm), ctypes.c_void_p(function),
                                                                threads, ctypes.c_size_t(shared)))
        return sms.value * per_sm.value
    except Exception:  # noqa: BLE001 - no driver: the caller launches the whole grid
        return 0


@functools.cache
def _launcher_module(path: str):
    """safetile's launcher module at ``path``, under a name of its own per file (loading a
    second file under a name already loaded hands back the first module: CPython's cache of
    single-phase extension modules); the last part keeps the init function's name."""
    unique = f"_safetile_launcher_{hashlib.sha256(path.encode()).hexdigest()[:16]}.{_LAUNCHER}"
    spec = importlib.util.spec_from_file_location(unique, path)
    assert spec is not None and spec.loader is not None  # an extension module's file has its loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    if os.path.realpath(getattr(module, "__file__", "")) != os.path.realpath(path):
        raise ImportError(f"loading {path} gave another module")
    return module


class WithScratch:
    """The C launcher with the per-launch global scratch buffer tensor descriptors made on the
    device need (one slice per block, as Triton's launcher allocates it)."""

    __slots__ = ("launch", "per_block")

    def __init__(self, launch, per_block: int):
        self.launch, self.per_block = launch, per_block

    def __call__(self, gx, gy, gz, stream, function, coop, pdl, _scratch, profile, *rest):
        import torch
        buf = torch.empty(gx * gy * gz * self.per_block, dtype=torch.uint8, device="cuda")
        self.launch(gx, gy, gz, stream, function, coop, pdl, buf.data_ptr(), profile, *rest)


def load(key: str, options: dict, target: int, device: int, params: int) -> tuple[Any, tuple] | None:
    """(call, prefix) for launching the kernel recorded for these inputs, as ``Variant`` keeps
    them (``call(gx, gy, gz, stream, *prefix, *kernel_args)``), or None. ``params``: the number
    of kernel parameters (checked against the record)."""
    try:
        path = record_path(key, options, target)
        if path is None or not path.exists():
            return None
        rec = json.loads(path.read_text())
        if _size(rec["cubin"]) != rec["cubin_size"] or _size(rec["launcher"]) != rec["launcher_size"]:
            return None
        if rec["params"] != params:
            return None
        with _lock:  # one module load per function even when threads race here
            fn = _load_function(Path(rec["cubin"]).read_bytes(), rec["name"], rec["shared"], device)
            launch = _launcher_module(rec["launcher"]).launch
        prefix = (fn, rec["launch_cooperative_grid"], rec["launch_pdl"], None, None,
                  (rec["num_warps"], rec["num_ctas"], rec["shared"]), None, None, None)
        if rec["global_scratch_size"]:
            launch = WithScratch(launch, rec["global_scratch_size"] * rec["num_ctas"])
        return launch, prefix
    except Exception:  # noqa: BLE001 - load through Triton instead
        return None
