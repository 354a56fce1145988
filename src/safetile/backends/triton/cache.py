"""Generated-source cache: in memory (per process) and on disk.

The key of a generated kernel is a hash of its specialised IR text (which fixes dtypes,
constants, ranks and tile shapes), the specialisation facts, the code generator version and
the Triton version. Entries live in ``~/.cache/safetile`` (``SAFETILE_CACHE_DIR`` moves it;
``SAFETILE_CACHE_DIR=off`` or ``SAFETILE_DISABLE_CACHE=1`` disables it, sources then go to
a private temporary directory because Triton reads kernel source from a file). Each entry
is a Python module whose first line carries the metadata as JSON and whose last line is
a SHA-256 of the rest: a truncated or corrupt entry fails the check and is regenerated.
Triton keeps its own compiled-binary cache (``~/.triton/cache`` or ``TRITON_CACHE_DIR``).

Finding a binary there costs a new process about half a second: ``triton.compile`` first
hashes Triton's whole native library (hundreds of MB) to build its cache key. So after
compiling, a small record (``bin_<key>.json``) notes which Triton cache entry holds the
binary for this source, target, compile options and Triton build; a later process loads
that entry directly (``load_binary``). A record whose entry is gone or does not match is
ignored, and the kernel is compiled the usual way.
"""
from __future__ import annotations

import functools
import hashlib
import importlib.metadata
import importlib.util
import json
import os
import sys
import tempfile
import threading
from pathlib import Path
from typing import Any
from collections.abc import Callable

from ...runtime import env
from ...runtime.native import SCRATCH, cache_dir
from .codegen import CODEGEN_VERSION, Generated
from ...locks import FORK_LOCKS

_MAGIC = "# safetile-kernel "
_lock = FORK_LOCKS.new()
_loaded: dict[tuple[str, bool], tuple[Any, Generated]] = {}  # (digest, interpreted) -> (jit fn, meta)
_preludes: dict[bool, dict] = {}


def _exec_file(path: Path, name: str, namespace: dict | None, interp: bool):
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None  # a .py file always has its loader
    module = importlib.util.module_from_spec(spec)
    if namespace:
        module.__dict__.update(namespace)
    sys.modules[name] = module
    try:
        with env.pinned_triton_interpret(interp):  # Triton decides when @triton.jit runs
            spec.loader.exec_module(module)
    except BaseException:
        sys.modules.pop(name, None)
        raise
    return module


def prelude_namespace(interp: bool) -> dict:
    """The names generated kernels use (``tl``, ``triton``, ``_ld``, ``_st_*`` helpers), loaded
    once per mode so compiled and interpreted kernels can coexist in one process."""
    ns = _preludes.get(interp)
    if ns is None:
        # executed from its file under a name per mode; importing it as a module first would
        # run its ~50 ``@triton.jit`` decorations (each reads its function's source) twice
        path = Path(__file__).with_name("prelude.py")
        mod = _exec_file(path, f"safetile.backends.triton._prelude_{'interp' if interp else 'cuda'}", None, interp)
        ns = _preludes[interp] = {k: getattr(mod, k) for k in mod.__all__}
    return ns


_backend_hash: str | None = None


def backend_hash() -> str:
    """A hash of this backend's own source files: editing the generator invalidates entries."""
    global _backend_hash
    if _backend_hash is None:
        h = hashlib.sha256(CODEGEN_VERSION.encode())
        for f in sorted(Path(__file__).parent.glob("*.py")):
            h.update(f.name.encode())
            h.update(f.read_bytes())
        _backend_hash = h.hexdigest()
    return _backend_hash


@functools.cache
def triton_version() -> str:
    """Triton's version from its installed metadata, without importing it ('' when absent)."""
    try:
        return importlib.metadata.version("triton")
    except importlib.metadata.PackageNotFoundError:
        return ""


def digest(ir_text: str, facts: Any) -> str:
    h = hashlib.sha256()
    for part in (backend_hash(), triton_version(), ir_text, repr(facts)):
        h.update(part.encode())
        h.update(b"\0")
    return h.hexdigest()


def _meta(gen: Generated) -> dict:
    # the signature's order is the kernel's parameter order: keep it a list of pairs
    return {"name": gen.name, "params": gen.params, "signature": [[k, v] for k, v in gen.signature.items()],
            "attrs": [[list(k), v] for k, v in gen.attrs.items()], "uses_print_buffer": gen.uses_print_buffer,
            "uses_descriptors": gen.uses_descriptors, "gluon": gen.gluon}


def _encode(key: str, gen: Generated) -> str:
    body = f"{_MAGIC}{key} {json.dumps(_meta(gen), sort_keys=True)}\n{gen.source}"
    return body + f"# sha256 {hashlib.sha256(body.encode()).hexdigest()}\n"


def _decode(key: str, text: str) -> Generated | None:
    """The metadata and source of a cache entry, or None when it is not a valid entry for ``key``."""
    body, sep, last = text.rstrip("\n").rpartition("\n")
    if not sep or not last.startswith("# sha256 "):
        return None
    body += "\n"
    if hashlib.sha256(body.encode()).hexdigest() != last[len("# sha256 "):].strip():
        return None
    first, _, source = body.partition("\n")
    if not first.startswith(_MAGIC):
        return None
    k, _, meta_text = first[len(_MAGIC):].partition(" ")
    if k != key:
        return None
    try:
        meta = json.loads(meta_text)
        signature = {k: v for k, v in meta["signature"]}
        if list(signature) != list(meta["params"]):
            return None
        return Generated(source, meta["name"], list(meta["params"]), signature,
                         {tuple(k): v for k, v in meta["attrs"]}, bool(meta["uses_print_buffer"]),
                         bool(meta["uses_descriptors"]), bool(meta.get("gluon", False)))
    except (ValueError, KeyError, TypeError):
        return None


def _write_atomic(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=path.name, suffix=".tmp")
    try:
        with os.fdopen(fd, "w") as f:
            f.write(text)
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise


def _import(path: Path, key: str, gen: Generated, interp: bool):
    name = f"_safetile_gen_{key[:24]}{'_interp' if interp else ''}"
    return getattr(_exec_file(path, name, prelude_namespace(interp), interp), gen.name)


def load(key: str, make: Callable[[], Generated], interp: bool = False) -> tuple[Any, Generated]:
    """The jit function and metadata for ``key``, from memory, disk, or ``make()``."""
    hit = _loaded.get((key, interp))
    if hit is not None:
        return hit
    with _lock:
        hit = _loaded.get((key, interp))
        if hit is not None:
            return hit
        root = cache_dir()
        gen = None
        path = None
        if root is not None:
            path = root / key[:2] / f"st_{key}.py"
            try:
                gen = _decode(key, path.read_text())
            except (OSError, UnicodeDecodeError):
                gen = None
            if gen is not None:
                try:
                    fn = _import(path, key, gen, interp)
                except Exception:  # noqa: BLE001 - a broken entry is regenerated, never fatal
                    gen = None
        if gen is None:
            gen = make()
            text = _encode(key, gen)
            if path is not None:  # set with root
                try:
                    _write_atomic(path, text)
                except OSError:
                    path = None
            if path is None or root is None:
                path = SCRATCH.get() / f"st_{key}.py"
                _write_atomic(path, text)
            fn = _import(path, key, gen, interp)
        if env.dump_source():
            print(f"# ---- safetile: Triton source {path} ----\n{gen.source}", flush=True)
        _loaded[(key, interp)] = (fn, gen)
        return fn, gen


def load_meta(key: str) -> Generated | None:
    """The metadata and source of a disk entry without importing it (nor Triton), or None."""
    root = cache_dir()
    if root is None:
        return None
    path = root / key[:2] / f"st_{key}.py"
    try:
        gen = _decode(key, path.read_text())
    except (OSError, UnicodeDecodeError):
        return None
    if gen is not None and env.dump_source():
        print(f"# ---- safetile: Triton source {path} ----\n{gen.source}", flush=True)
    return gen


# ---------------------------------------------------------------------------- compiled binaries

def _binary_record(key: str, src: Any, target: Any, options: dict) -> Path | None:
    """Where the record for this source, target, options and Triton build lives (None: no cache)."""
    root = cache_dir()
    if root is None:
        return None
    import triton
    from triton._C import libtriton
    lib = Path(libtriton.__file__).stat()
    h = hashlib.sha256()
    for part in (key, src.name, repr(target), repr(sorted(options.items())), triton.__version__,
                 f"{lib.st_size}:{lib.st_mtime_ns}", repr(sorted(libtriton.get_cache_invalidating_env_vars().items())),
                 env.triton_cache_dir_setting()):
        h.update(part.encode())
        h.update(b"\0")
    return root / key[:2] / f"bin_{h.hexdigest()[:40]}.json"


def load_binary(key: str, src: Any, target: Any, options: dict) -> Any:
    """The CompiledKernel recorded for this source, options and target, or None."""
    try:
        path = _binary_record(key, src, target, options)
        if path is None or not path.exists():
            return None
        record = json.loads(path.read_text())
        from triton.compiler.compiler import CompiledKernel
        from triton.runtime.cache import get_cache_manager
        meta_name = f"{src.name[:150]}.json"
        group = get_cache_manager(record["hash"]).get_group(meta_name)
        if not group or meta_name not in group:
            return None
        compiled = CompiledKernel(src, group, record["hash"])
        return compiled if compiled.name == src.name else None
    except Exception:  # noqa: BLE001 - a stale or broken record means compiling normally
        return None


def remember_binary(key: str, src: Any, target: Any, options: dict, compiled: Any) -> None:
    """Record which Triton cache entry holds ``compiled`` (best effort)."""
    try:
        path = _binary_record(key, src, target, options)
        if path is not None:
            _write_atomic(path, json.dumps({"hash": compiled.hash, "name": compiled.name}))
    except Exception:  # noqa: BLE001 - the record only saves time
        pass


# ---------------------------------------------------------------------------- first compile in a process

_key_memo_lock = FORK_LOCKS.new()
_key_memo_done = False


def _triton_fingerprint(root: Path) -> str:
    """Name, size and modification time of every file of the Triton package: what Triton's own
    compile-cache key (``triton_key``) is computed from."""
    h = hashlib.sha256()
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = sorted(d for d in dirnames if d != "__pycache__")
        for f in sorted(filenames):
            st = os.stat(os.path.join(dirpath, f))
            h.update(f"{os.path.relpath(os.path.join(dirpath, f), root)}:{st.st_size}:{st.st_mtime_ns}\0".encode())
    return h.hexdigest()


def memoize_triton_key() -> None:
    """Keep Triton's ``triton_key()`` on disk. Triton computes it in every process before its first
    compilation by hashing its whole installation, native library included (0.3–0.7 s); the value
    only changes when those files do. The record is keyed by every file's name, size and
    modification time; on a match, ``triton.runtime.cache.triton_key`` returns the recorded value
    (the string Triton computed for the same files), otherwise Triton's own function runs and
    its result is recorded. Best effort: any failure leaves Triton as it is."""
    global _key_memo_done
    with _key_memo_lock:
        if _key_memo_done:
            return
        _key_memo_done = True
        root = cache_dir()
        if root is None:
            return
        try:
            import triton
            import triton.runtime.cache as tcache
            original = tcache.triton_key
            fingerprint = _triton_fingerprint(Path(triton.__file__).parent)
            path = root / f"triton_key_{fingerprint[:40]}.json"
            try:
                record = json.loads(path.read_text())
                value = record["key"] if record.get("fingerprint") == fingerprint else None
            except (OSError, ValueError, KeyError, TypeError):
                value = None
            if value is None:
                value = original()
                _write_atomic(path, json.dumps({"fingerprint": fingerprint, "key": value}))

            def triton_key() -> str:
                return value
            # lru_cache's interface, which Triton calls on its key function
            triton_key.cache_clear = getattr(original, "cache_clear", lambda: None)  # type: ignore[attr-defined]
            tcache.triton_key = triton_key
        except Exception:  # noqa: BLE001 - only saves time
            pass


def prebuild_launcher(signature: dict) -> threading.Thread | None:
    """Build Triton's C launcher for ``signature`` in the background (a C compiler run, ~0.3 s
    when no kernel with this signature was built before) while the kernel itself compiles; the
    launcher lands in Triton's cache, where loading the compiled kernel finds it. The source is
    made exactly as Triton's CUDA launcher makes it for a kernel without host-side tensor
    descriptors. Best effort: on any failure Triton builds it as usual."""
    try:
        from triton.backends.nvidia import driver as nv
        from triton.runtime.build import compile_module_from_src
    except Exception:  # noqa: BLE001 - not the CUDA backend of the Triton this was written for
        return None

    def build() -> None:
        try:
            source = nv.make_launcher({}, dict(signature), None)
            compile_module_from_src(src=source, name="__triton_launcher", library_dirs=nv.library_dirs(),
                                    include_dirs=nv.include_dirs, libraries=nv.libraries)
        except Exception:  # noqa: BLE001 - only saves time
            pass
    t = threading.Thread(target=build, name="safetile-launcher-build", daemon=True)
    t.start()
    return t
