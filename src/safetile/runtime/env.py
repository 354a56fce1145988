"""Every environment variable safetile reads, read here and nowhere else.

Each accessor reads the variable when called (tests and users switch them at run time), names
the variable, its default and its meaning, and parses it once. docs/architecture.md
("Environment variables") lists them in one table; tests/test_env.py checks that no other
module reads ``os.environ``.

This module imports nothing from safetile, so every layer may import it (tests/test_layers.py
declares it a leaf).

``os.environ.get`` encodes the name and decodes the value on every call (about 1 us); a
launch reads ``SAFETILE_BACKEND`` each time, so :func:`backend_override` reads the
environment's underlying mapping with a pre-encoded name instead.
"""
from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator, Mapping

_data = getattr(os.environ, "_data", None)
_encode = getattr(os.environ, "encodekey", None)
_decode = getattr(os.environ, "decodevalue", None)
_BACKEND_KEY = _encode("SAFETILE_BACKEND") if _encode is not None else None

_OFF = ("0", "off", "false")


def _flag(name: str) -> bool:
    """True when ``name`` is set to anything but empty or '0'."""
    return os.environ.get(name, "") not in ("", "0")


def backend_override() -> str | None:
    """``SAFETILE_BACKEND`` ('cpu', 'triton'; unset: None): the backend every launch of host
    arrays uses ('triton' runs generated kernels through Triton's interpreter on the CPU)."""
    if _BACKEND_KEY is None or _data is None or _decode is None:
        return os.environ.get("SAFETILE_BACKEND")
    v = _data.get(_BACKEND_KEY)
    return None if v is None else _decode(v)


def backend_source() -> tuple[dict, bytes] | None:
    """The mapping and encoded name :func:`backend_override` reads (``SAFETILE_BACKEND`` is set
    when the name is in the mapping), for the safe launch's C path; None where ``os.environ``
    has no such mapping."""
    if _BACKEND_KEY is None or not isinstance(_data, dict):
        return None
    return _data, _BACKEND_KEY


def debug() -> bool:
    """``SAFETILE_DEBUG`` (any non-empty value; default unset): errors keep safetile's own
    traceback and cause instead of showing only the user's line."""
    return bool(os.environ.get("SAFETILE_DEBUG"))


def compiler_timeout_sec() -> float | None:
    """``CUDA_TILE_COMPILER_TIMEOUT_SEC`` (seconds; default unset, no limit): the front end's
    time limit when no ``ct.compiler_timeout`` is active. A value that is not a number is no
    limit."""
    text = os.environ.get("CUDA_TILE_COMPILER_TIMEOUT_SEC")
    if not text:
        return None
    try:
        return float(text)
    except ValueError:
        return None


def default_device() -> str:
    """``SAFETILE_DEVICE`` (default 'cpu'): where the safe style's factories allocate when no
    ``device=`` is given; read once, when ``safetile.safe`` is first imported."""
    return os.environ.get("SAFETILE_DEVICE", "cpu")


def world_size() -> int:
    """``WORLD_SIZE`` (set by torchrun; default 1): the number of processes of a
    tensor-parallel run."""
    return int(os.environ.get("WORLD_SIZE", "1"))


def local_rank() -> int | None:
    """``LOCAL_RANK`` (set by torchrun; default unset): this process's GPU on its host."""
    text = os.environ.get("LOCAL_RANK")
    return None if text is None else int(text)


def cache_disabled() -> bool:
    """``SAFETILE_DISABLE_CACHE`` (default unset): anything but '' or '0' keeps generated
    sources and compiled kernels in memory only."""
    return _flag("SAFETILE_DISABLE_CACHE")


def cache_dir_setting() -> str:
    """``SAFETILE_CACHE_DIR`` (default '', meaning ``~/.cache/safetile``): the on-disk cache;
    'off' (or 'none', '0', 'false', 'disable', 'disabled') turns it off."""
    return os.environ.get("SAFETILE_CACHE_DIR", "")


def triton_cache_dir_setting() -> str:
    """``TRITON_CACHE_DIR`` (Triton's own; default '', meaning ``~/.triton/cache``): part of
    the compiled-binary cache key, and what ``safetile cache clear --triton`` empties."""
    return os.environ.get("TRITON_CACHE_DIR", "")


def dump_source() -> bool:
    """``SAFETILE_DUMP_SOURCE`` (default unset): anything but '' or '0' prints each generated
    Triton source when it is loaded."""
    return _flag("SAFETILE_DUMP_SOURCE")


def triton_interpret() -> bool:
    """``TRITON_INTERPRET`` (Triton's own; default unset): anything but '' or '0' runs Triton
    kernels in its CPU interpreter."""
    return _flag("TRITON_INTERPRET")


@contextlib.contextmanager
def pinned_triton_interpret(interpreted: bool) -> Iterator[None]:
    """Set ``TRITON_INTERPRET`` for the duration (Triton reads it when ``@triton.jit`` runs),
    then put back what was there."""
    old = os.environ.get("TRITON_INTERPRET")
    os.environ["TRITON_INTERPRET"] = "1" if interpreted else "0"
    try:
        yield
    finally:
        if old is None:
            del os.environ["TRITON_INTERPRET"]
        else:
            os.environ["TRITON_INTERPRET"] = old


def tma_enabled() -> bool:
    """``SAFETILE_TMA`` (default on; '0', 'off' or 'false' turns it off): tensor-memory-
    accelerator descriptors for loads and stores on sm_90+."""
    return os.environ.get("SAFETILE_TMA", "1") not in _OFF


def persistent_enabled() -> bool:
    """``SAFETILE_PERSISTENT`` (default on; '0', 'off' or 'false' turns it off): grids of product
    loops walked by resident blocks on sm_90+ (backends/triton/persistent.py)."""
    return os.environ.get("SAFETILE_PERSISTENT", "1") not in _OFF


def pdl_enabled() -> bool:
    """``SAFETILE_PDL`` (default on; '0', 'off' or 'false' turns it off): programmatic
    dependent launch on sm_90+."""
    return os.environ.get("SAFETILE_PDL", "1") not in _OFF


def lean_launch() -> bool:
    """``SAFETILE_LEAN_LAUNCH`` (default on; '0', 'off' or 'false' turns it off): launch compiled
    kernels through safetile's one lean C launcher instead of Triton's per-signature one."""
    return os.environ.get("SAFETILE_LEAN_LAUNCH", "1") not in _OFF


def torch_facts() -> bool:
    """``SAFETILE_TORCH_FACTS`` (default on; '0', 'off' or 'false' turns it off): launches read a torch
    tensor's facts through safetile's C++ reader (runtime/torch_facts.py) instead of torch's Python
    methods, where it could be built."""
    return os.environ.get("SAFETILE_TORCH_FACTS", "1") not in _OFF


def safe_native() -> bool:
    """``SAFETILE_SAFE_NATIVE`` (default on; '0', 'off' or 'false' turns it off): the safe launch's
    common case runs through its C twin (safe/native.py) where one could be built."""
    return os.environ.get("SAFETILE_SAFE_NATIVE", "1") not in _OFF


def c_compiler() -> str:
    """``CC`` (default '': the compiler Python was built with): the C compiler safetile's small
    extension modules are built with (runtime/native.py)."""
    return os.environ.get("CC", "")


def cxx_compiler() -> str:
    """``CXX`` (default '': the C++ compiler Python was built with): the compiler of the torch fact
    reader (runtime/torch_facts.py)."""
    return os.environ.get("CXX", "")


def pipeline_loops() -> int:
    """``SAFETILE_PIPELINE_LOOPS`` (default 3): the pipelining depth of tile-streaming loops on
    sm_80+; 0, or anything but digits, turns it off."""
    text = os.environ.get("SAFETILE_PIPELINE_LOOPS", "3")
    return int(text) if text.isdigit() else 0


def llvm_opt() -> int | None:
    """``SAFETILE_LLVM_OPT`` (default unset): LLVM's IR optimisation level for safetile's kernels,
    0, 1 or 2 (0: cold compiles ~15 % shorter, some kernels 1-2 % slower); unset, 3 or anything
    else leaves Triton's own (O3)."""
    text = os.environ.get("SAFETILE_LLVM_OPT", "")
    return int(text) if text in ("0", "1", "2") else None


def print_buffer_setting() -> str:
    """``SAFETILE_PRINT_BUFFER`` (bytes, a K/M/G suffix allowed; default '', meaning 16 MiB):
    the device buffer that ``ct.printf`` and ``ct.assert_`` records go to (parsed by
    ``backends.triton.prints.buffer_bytes``)."""
    return os.environ.get("SAFETILE_PRINT_BUFFER", "")


def with_prefixes(prefixes: tuple[str, ...]) -> list[tuple[str, str]]:
    """The (name, value) pairs of every variable whose name starts with one of ``prefixes``,
    sorted (part of a cache key: variables that change what a compiler produces)."""
    return sorted((k, v) for k, v in os.environ.items() if k.startswith(prefixes))


def child_environment(overrides: Mapping[str, str] | None = None) -> dict[str, str]:
    """A copy of this process's environment with ``overrides``, for a child process."""
    env = dict(os.environ)
    env.update(overrides or {})
    return env
