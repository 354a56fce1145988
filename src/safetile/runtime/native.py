"""Small C extension modules that safetile builds from its own source, once per installation.

Hot paths where Python's bytecode, not the work, is the cost (the lean launcher and
``ct.launch``'s argument reader, the safe launch's common case) have a C twin. Each is one
source string, built on first use with the platform's C compiler into safetile's cache
(``SAFETILE_CACHE_DIR``; a scratch folder when the cache is off), keyed on the source and the
interpreter, and loaded by later processes without building. Where no compiler is at hand the
build fails once per process and the Python path is used: the C code is never required.
"""
from __future__ import annotations

import atexit
import hashlib
import importlib.util
import os
import platform
import shlex
import shutil
import subprocess
import sysconfig
import tempfile
import threading
from collections.abc import Callable, Sequence
from pathlib import Path
from types import ModuleType

from . import env
from ..locks import FORK_LOCKS

Builder = Callable[[str, str, str], str]  # (module name, C file, scratch folder) -> built library's path


def cache_dir() -> Path | None:
    """safetile's on-disk cache directory, or None when disabled."""
    if env.cache_disabled():
        return None
    where = env.cache_dir_setting()
    if where.lower() in ("off", "none", "0", "false", "disable", "disabled"):
        return None
    return Path(where) if where else Path.home() / ".cache" / "safetile"


class _Scratch:
    """This process's scratch folder (made on first use, removed at exit)."""

    def __init__(self) -> None:
        self._lock = FORK_LOCKS.new()
        self._path: Path | None = None

    def get(self) -> Path:
        with self._lock:
            if self._path is None:
                self._path = Path(tempfile.mkdtemp(prefix="safetile-src-"))
                atexit.register(shutil.rmtree, self._path, True)
            return self._path


SCRATCH = _Scratch()


def compile_c(name: str, source_file: str, folder: str, include_dirs: Sequence[str] = (),
              libraries: Sequence[str] = ()) -> str:
    """Build ``source_file`` into an extension module with the compiler Python was built with
    (``CC`` overrides it), as setuptools would for a single C file."""
    cc = shlex.split(env.c_compiler() or sysconfig.get_config_var("CC") or "cc")
    out = os.path.join(folder, name + (sysconfig.get_config_var("EXT_SUFFIX") or ".so"))
    includes = [sysconfig.get_paths()["include"], *include_dirs]
    cmd = [*cc, "-O2", "-shared", "-fPIC", source_file, "-o", out, *(f"-I{d}" for d in includes),
           *(f"-l{lib}" for lib in libraries)]
    subprocess.run(cmd, check=True, capture_output=True, timeout=300)
    return out


class NativeModule:
    """One C module: built from ``source`` when missing, loaded once per process (threads may ask
    at once). ``tag`` names what else the build depends on (e.g. the Triton whose headers it uses)."""

    def __init__(self, name: str, source: str, builder: Builder | None = None, tag: str = ""):
        self.name = name
        self.source = source
        self.builder: Builder = builder or compile_c
        self.tag = tag
        self._lock = FORK_LOCKS.new()
        self._module: ModuleType | None = None
        self._failed = False

    def path(self) -> Path:
        """Where this source's build lives for this interpreter."""
        suffix = sysconfig.get_config_var("EXT_SUFFIX") or ".so"
        h = hashlib.sha256("\0".join((self.source, suffix, platform.machine(), self.tag)).encode())
        root = cache_dir() or SCRATCH.get()
        return root / "native" / f"{self.name}_{h.hexdigest()[:32]}{suffix}"

    def loaded(self) -> ModuleType | None:
        """The module if this process has loaded it (never builds or loads)."""
        return self._module

    def get(self, build: bool) -> ModuleType | None:
        """The module, built first when missing and ``build``; None when it cannot be had (no C
        compiler, a failed build, a load error: remembered for the rest of the process). Without
        ``build`` it never waits: while another thread builds it (seconds for a C++ module), None."""
        m = self._module
        if m is not None or self._failed:
            return m
        if not self._lock.acquire(blocking=build):
            return None
        try:
            if self._module is None and not self._failed:
                path = self.path()
                try:
                    if not path.exists():
                        if not build:
                            return None
                        self._build(path)
                    self._module = self._load(path)
                except Exception:  # noqa: BLE001 - the Python path keeps working without it
                    self._failed = True
            return self._module
        finally:
            self._lock.release()

    def prebuild(self) -> threading.Thread | None:
        """Build the module in the background when it is missing (beside a first compile)."""
        if self._module is not None or self._failed or self.path().exists():
            return None
        t = threading.Thread(target=self.get, args=(True,), name=f"safetile-build-{self.name}", daemon=True)
        t.start()
        return t

    def _build(self, path: Path) -> None:
        with tempfile.TemporaryDirectory() as tmp:
            src = os.path.join(tmp, self.name + ".c")
            with open(src, "w") as f:
                f.write(self.source)
            so = self.builder(self.name, src, tmp)
            path.parent.mkdir(parents=True, exist_ok=True)
            part = path.with_name(path.name + f".{os.getpid()}.{threading.get_ident()}.tmp")
            shutil.copyfile(so, part)
            os.replace(part, path)  # atomic: a concurrent process loads a whole file or builds its own

    def _load(self, path: Path) -> ModuleType:
        spec = importlib.util.spec_from_file_location(self.name, path)
        if spec is None or spec.loader is None:
            raise ImportError(f"cannot load {path}")
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        return module
