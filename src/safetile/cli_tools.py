"""The ``safetile`` command's tools beside BASIC (``cli.py`` registers them).

``safetile cache info`` / ``safetile cache clear [--triton]``
    Where safetile's disk cache is, how big, and what is in it (generated Triton sources,
    compiled-binary records, autotuning results; Triton's own binary cache is reported too);
    ``clear`` removes safetile's entries (only files safetile writes), and Triton's cache with
    ``--triton``.
``safetile bench [--device cpu|gpu] [--list] [SECTION] [ARGS...]``
    Runs the benchmark suite of a source checkout (``bench/``), or one section of it, and
    prints its table: ``gpu_bench.py`` where CUDA is available, else ``cpu_bench.py``. ARGS go
    to the script (e.g. ``--repeat 3``, ``--quick``).
``safetile check KERNELS.py [--args TYPES | --spec FILE] [--kernel NAME] [--dump ir|triton]``
    Imports a Python file and compiles every kernel in it (``@ct.kernel`` and ``@ct.entry``)
    for the given argument types, reporting each kernel's errors with their source location.
"""
from __future__ import annotations

import argparse
import ast
import importlib.util
import json
import os
import subprocess
import sys
import traceback
from pathlib import Path
from typing import Any

from .runtime import env

# ---------------------------------------------------------------------------------- parsers


def add_commands(sub: Any) -> None:
    """Register ``cache`` and ``bench`` on the command's subparsers."""
    c = sub.add_parser("cache", help="show or clear safetile's disk cache",
                       description="Show where safetile's disk cache is, its size and contents, or clear it.")
    c.add_argument("action", choices=("info", "clear"))
    c.add_argument("--triton", action="store_true", help="clear: also clear Triton's compiled-binary cache")
    b = sub.add_parser("bench", help="run the benchmark suite (or a section) and print its table",
                       description="Run bench/gpu_bench.py (with CUDA) or bench/cpu_bench.py from a source "
                                   "checkout; arguments after the section go to the script.")
    b.add_argument("--device", choices=("cpu", "gpu"), help="which suite (default: gpu when CUDA is available)")
    b.add_argument("--list", action="store_true", help="list the sections and exit")
    b.add_argument("--bench-dir", metavar="DIR", help="the suite's directory (default: bench/ of this checkout)")
    b.add_argument("section", nargs="?", help="a section, or several separated by commas (default: all)")
    b.add_argument("script_args", nargs=argparse.REMAINDER, metavar="ARGS", help="passed to the script")


def extend_check(c: Any) -> None:
    """The options ``safetile check`` takes for Python kernel files."""
    c.add_argument("--args", metavar="TYPES", help="KERNELS.py: argument types of the kernel(s), e.g. "
                   "'f32[1000]/128, f32[1000], f32[1000]' (see docs/cli.md)")
    c.add_argument("--spec", metavar="FILE", help="KERNELS.py: a JSON file of argument types per kernel")
    c.add_argument("--kernel", action="append", metavar="NAME", help="KERNELS.py: only this kernel (repeatable)")
    c.add_argument("--generics", action="append", metavar="NAME=VALUE", default=[],
                   help="KERNELS.py: a const generic of entry kernels given with --args (repeatable)")
    c.add_argument("--target", type=int, metavar="SM", help="--dump triton: the GPU architecture (e.g. 90)")


class UsageError(Exception):
    """Bad usage or inputs (exit status 2)."""


# ---------------------------------------------------------------------------------- cache

_KINDS = (("st_", ".py", "generated Triton sources"), ("bin_", ".json", "compiled-binary records"))


def _cache_entries(root: Path) -> dict[str, list[Path]]:
    """safetile's own files under ``root``, by kind (nothing else there is touched)."""
    found: dict[str, list[Path]] = {name: [] for _, _, name in _KINDS}
    found["autotuning results"] = []
    if not root.is_dir():
        return found
    for d in root.iterdir():
        if d.is_dir() and len(d.name) == 2 and all(ch in "0123456789abcdef" for ch in d.name):
            for f in d.iterdir():
                for prefix, suffix, name in _KINDS:
                    if f.is_file() and f.name.startswith(prefix) and f.name.endswith(suffix):
                        found[name].append(f)
    tune = root / "tune"
    if tune.is_dir():
        found["autotuning results"] = [f for f in tune.iterdir() if f.is_file() and f.suffix == ".json"]
    return found


def _size(paths) -> int:
    total = 0
    for p in paths:
        try:
            total += p.stat().st_size
        except OSError:
            pass
    return total


def _tree_size(root: Path) -> tuple[int, int]:
    files = size = 0
    for dirpath, _, names in os.walk(root):
        for n in names:
            files += 1
            try:
                size += os.lstat(os.path.join(dirpath, n)).st_size
            except OSError:
                pass
    return files, size


def human(n: float) -> str:
    for unit in ("B", "KiB", "MiB", "GiB"):
        if n < 1024 or unit == "GiB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return f"{n:.1f} GiB"


def _triton_cache() -> Path:
    where = env.triton_cache_dir_setting()
    return Path(where) if where else Path.home() / ".triton" / "cache"


def cmd_cache(args) -> int:
    from .backends.triton.cache import cache_dir
    root = cache_dir()
    triton = _triton_cache()
    if args.action == "info":
        if root is None:
            print("safetile cache: disabled (SAFETILE_CACHE_DIR=off or SAFETILE_DISABLE_CACHE=1); generated "
                  "sources go to a temporary directory per process")
        else:
            entries = _cache_entries(root)
            where = "SAFETILE_CACHE_DIR" if env.cache_dir_setting() else \
                "default; SAFETILE_CACHE_DIR moves it"
            print(f"safetile cache: {root} ({where}{'' if root.exists() else '; not created yet'})")
            for name, files in entries.items():
                print(f"  {name:28s} {len(files):6d} files {human(_size(files)):>10s}")
            everything = [f for files in entries.values() for f in files]
            print(f"  {'total':28s} {len(everything):6d} files {human(_size(everything)):>10s}")
        count, size = _tree_size(triton) if triton.is_dir() else (0, 0)
        print(f"Triton's binary cache: {triton} (TRITON_CACHE_DIR): {count} files, {human(size)}; "
              "`safetile cache clear --triton` clears it too")
        return 0
    removed, freed = 0, 0
    if root is not None:
        for files in _cache_entries(root).values():
            for f in files:
                try:
                    size = f.stat().st_size
                    f.unlink()
                except OSError:
                    continue
                removed += 1
                freed += size
        for d in [*root.iterdir(), root / "tune"] if root.is_dir() else []:
            if d.is_dir() and not any(d.iterdir()):
                d.rmdir()
        print(f"removed {removed} files ({human(freed)}) from {root}")
    else:
        print("safetile cache: disabled, nothing to clear")
    if args.triton and triton.is_dir():
        count, size = _tree_size(triton)
        for entry in triton.iterdir():
            if entry.is_dir() and not entry.is_symlink():
                import shutil
                shutil.rmtree(entry, ignore_errors=True)
            else:
                entry.unlink(missing_ok=True)
        print(f"removed {count} files ({human(size)}) from Triton's cache {triton}")
    return 0


# ---------------------------------------------------------------------------------- bench

_GPU_SECTIONS = ("copy", "add", "gemm", "rows", "attention", "others", "launch", "compile", "safe")
_CPU_SECTIONS = ("add", "gemm", "softmax", "exec-modes")


def _bench_dir(args) -> Path:
    d = Path(args.bench_dir) if args.bench_dir else Path(__file__).resolve().parents[2] / "bench"
    if not (d / "cpu_bench.py").is_file():
        raise UsageError(f"no benchmark suite at {d}: it is part of a source checkout (bench/); run from a clone "
                         "installed with pip install -e ., or give --bench-dir")
    return d


def _cuda_available() -> bool:
    try:
        import torch
    except ImportError:
        return False
    return bool(torch.cuda.is_available())


def cmd_bench(args) -> int:
    device = args.device or ("gpu" if _cuda_available() else "cpu")
    known = _GPU_SECTIONS if device == "gpu" else _CPU_SECTIONS
    if args.list:
        print(f"{device} sections: {', '.join(known)}")
        return 0
    sections = [s for s in (args.section or "").split(",") if s]
    unknown = [s for s in sections if s not in known]
    if unknown:
        raise UsageError(f"unknown {device} benchmark section {', '.join(unknown)}; sections: {', '.join(known)}")
    d = _bench_dir(args)
    runs: list[list[str]] = []
    if device == "gpu":
        runs.append([str(d / "gpu_bench.py")] + (["--only", ",".join(sections)] if sections else []))
    else:
        kernels = [s for s in sections if s != "exec-modes"]
        if kernels or not sections:
            runs.append([str(d / "cpu_bench.py")] + (["--only", ",".join(kernels)] if kernels else []))
        if "exec-modes" in sections or not sections:
            runs.append([str(d / "exec_modes.py")])
    child = env.child_environment()
    src = str(Path(__file__).resolve().parents[1])
    child["PYTHONPATH"] = src + (os.pathsep + child["PYTHONPATH"] if child.get("PYTHONPATH") else "")
    for cmd in runs:
        print(f"$ {' '.join(Path(c).name if i == 0 else c for i, c in enumerate(cmd + args.script_args))}",
              flush=True)
        rc = subprocess.call([sys.executable, *cmd, *args.script_args], env=child)
        if rc:
            return rc
    return 0


# ---------------------------------------------------------------------------------- check


def _load_module(path: Path):
    """Import a kernels file (its directory on sys.path for its own imports)."""
    name = "safetile_check_" + "".join(ch if ch.isalnum() else "_" for ch in path.stem)
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise UsageError(f"cannot import {path}: not a Python file")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    sys.path.insert(0, str(path.resolve().parent))
    try:
        spec.loader.exec_module(module)
    except Exception as e:  # noqa: BLE001 - the user's module failed: show its own frames only
        tb = e.__traceback__
        while tb is not None and tb.tb_frame.f_code.co_filename != str(path.resolve()) \
                and tb.tb_frame.f_code.co_filename != str(path):
            tb = tb.tb_next
        detail = "".join(traceback.format_exception(type(e), e, tb)) if tb is not None else f"{type(e).__name__}: {e}"
        raise UsageError(f"importing {path} failed:\n{detail.rstrip()}") from None
    finally:
        sys.path.remove(str(path.resolve().parent))
    return module


def _kernels(module) -> dict[str, Any]:
    from .runtime.kernel import Kernel
    from .safe.entry import EntryKernel
    return {n: v for n, v in vars(module).items() if isinstance(v, (Kernel, EntryKernel)) and not n.startswith("_")}


class ArgType:
    """One argument of a check, parsed from a type string (see ``parse_types``)."""

    def __init__(self, text: str, dtype: Any = None, shape: tuple | None = None, partition: tuple | None = None,
                 blocks: int | None = None, value: Any = None):
        self.text, self.dtype, self.shape, self.partition, self.blocks, self.value = \
            text, dtype, shape, partition, blocks, value

    def make(self, safe: bool) -> tuple[Any, Any]:
        """(the launch argument, the array behind it or None)."""
        import numpy as np
        if self.shape is None:
            if self.dtype is not None:  # a scalar of a safetile dtype
                return self.dtype.np_dtype.type(self.value if self.value is not None else 1), None
            return self.value, None
        a = np.zeros(self.shape, dtype=self.dtype.np_dtype)  # untouched pages: no memory is used
        if self.partition is None:
            return a, a
        if not safe:
            raise UsageError(f"{self.text}: a partition (/...) is for @ct.entry kernels; an unchecked kernel takes "
                             "the array")
        from .safe.tensor import Tensor
        p = Tensor(a).partition(self.partition)
        return (p.map(self.blocks) if self.blocks is not None else p), a


def _literal(node: ast.AST, text: str) -> Any:
    try:
        return ast.literal_eval(node)
    except ValueError:
        raise UsageError(f"cannot read argument type {text!r}") from None


def _dtype(node: ast.AST, text: str):
    from . import dtypes as dt
    from .safe.types import SHORT_NAMES
    if isinstance(node, ast.Name):
        if node.id in SHORT_NAMES:
            return SHORT_NAMES[node.id]
        try:
            return dt.as_dtype(node.id)
        except TypeError:
            pass
    raise UsageError(f"{text!r}: {ast.unparse(node)!r} is not an element type (f32, f16, bf16, i32, float32, ...)")


def _dims(node: ast.AST, text: str) -> tuple[int, ...]:
    value = _literal(node, text)
    dims = value if isinstance(value, tuple) else (value,)
    if not all(isinstance(n, int) and not isinstance(n, bool) and n > 0 for n in dims):
        raise UsageError(f"{text!r}: sizes must be positive integers")
    return dims


def _arg_type(node: ast.AST, source: str) -> ArgType:
    text = ast.get_source_segment(source, node) or ast.unparse(node)
    blocks = None
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.MatMult):  # .../(32,32)@5: mapped
        blocks = _literal(node.right, text)
        node = node.left
    partition = None
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Div):  # f32[300,200]/(64,64): a partition
        partition = _dims(node.right, text)
        node = node.left
    if isinstance(node, ast.Subscript):
        return ArgType(text, _dtype(node.value, text), _dims(node.slice, text), partition, blocks)
    if partition is not None or blocks is not None:
        raise UsageError(f"{text!r}: only arrays (dtype[shape]) can be partitioned")
    if isinstance(node, ast.Name) and node.id in ("int", "float", "bool"):
        return ArgType(text, value={"int": 1, "float": 1.0, "bool": True}[node.id])
    if isinstance(node, ast.Name):
        return ArgType(text, _dtype(node, text))
    if isinstance(node, ast.Call) and len(node.args) == 1 and not node.keywords:  # f32(2.5): a typed scalar
        return ArgType(text, _dtype(node.func, text), value=_literal(node.args[0], text))
    return ArgType(text, value=_literal(node, text))


def parse_types(text: str) -> list[ArgType]:
    """Argument types: ``f32[1000]`` (an array), ``f32[300,200]/(64,64)`` (an entry kernel's
    partition), ``f32[100,96]/(32,32)@5`` (mapped over 5 blocks), ``f32`` / ``f32(2.5)`` (a scalar),
    ``int``, ``float``, and Python literals for constants (``128``, ``(64, 64)``, ``True``)."""
    try:
        tree = ast.parse(f"[{text}]", mode="eval")
    except SyntaxError as e:
        raise UsageError(f"cannot read argument types {text!r}: {e.msg}") from None
    source = f"[{text}]"
    return [_arg_type(node, source) for node in tree.body.elts]  # type: ignore[attr-defined]


def _specs(args, kernels: dict[str, Any]) -> dict[str, list[tuple[str, dict]]]:
    """kernel name -> [(argument types text, generics)] from --args / --spec."""
    out: dict[str, list[tuple[str, dict]]] = {}
    if args.args is not None:
        names = args.kernel or list(kernels)
        if len(names) != 1:
            raise UsageError(f"--args gives the types of one kernel; name it with --kernel ({', '.join(kernels)})")
        generics = {}
        for g in args.generics:
            name, sep, value = g.partition("=")
            if not sep:
                raise UsageError(f"--generics {g!r}: expected NAME=VALUE")
            generics[name.strip()] = _literal(ast.parse(value.strip(), mode="eval").body, g) \
                if value.strip()[:1].isdigit() else value.strip()
        out[names[0]] = [(args.args, generics)]
    if args.spec is not None:
        try:
            data = json.loads(Path(args.spec).read_text())
        except (OSError, ValueError) as e:
            raise UsageError(f"cannot read the spec {args.spec}: {e}") from None
        if not isinstance(data, dict):
            raise UsageError(f"{args.spec}: expected a JSON object of kernel name -> argument types")
        for name, entry in data.items():
            for item in entry if isinstance(entry, list) else [entry]:
                if isinstance(item, str):
                    out.setdefault(name, []).append((item, {}))
                elif isinstance(item, dict) and isinstance(item.get("args"), str):
                    out.setdefault(name, []).append((item["args"], dict(item.get("generics", {}))))
                else:
                    raise UsageError(f"{args.spec}: kernel {name!r}: each entry is a string of argument types or "
                                     '{"args": "...", "generics": {...}}')
    return out


def check_python(args) -> int:
    """``safetile check KERNELS.py``: compile every kernel for its argument types."""
    from .errors import LaunchError, TileError
    from .safe.entry import EntryKernel
    path = Path(args.program)
    if not path.is_file():
        raise UsageError(f"cannot read {path}")
    if args.dump in ("tokens", "ast"):
        raise UsageError(f"--dump {args.dump} is for BASIC programs; a Python kernel file takes --dump ir or triton")
    kernels = _kernels(_load_module(path))
    if args.kernel:
        missing = [k for k in args.kernel if k not in kernels]
        if missing:
            raise UsageError(f"{path} has no kernel {', '.join(map(repr, missing))} (kernels: "
                             f"{', '.join(kernels) or 'none'})")
        kernels = {k: kernels[k] for k in args.kernel}
    if not kernels:
        print(f"{path}: no @ct.kernel or @ct.entry kernels found", file=sys.stderr)
        return 1
    specs = _specs(args, kernels)
    unknown = [k for k in specs if k not in kernels]
    if unknown:
        raise UsageError(f"the spec names {', '.join(map(repr, unknown))}, not kernels of {path}")
    ok = errors = untyped = 0
    for name, kernel in kernels.items():
        if name not in specs:
            untyped += 1
            print(f"{path}: {name}: not compiled (no argument types: give --args or a --spec entry)")
            continue
        safe = isinstance(kernel, EntryKernel)
        for text, generics in specs[name]:
            types = parse_types(text)
            made = [t.make(safe) for t in types]
            launch_args = tuple(m[0] for m in made)
            k = kernel.generics(**generics) if generics else kernel
            if generics and not safe:
                raise UsageError(f"{name}: generics are for @ct.entry kernels")
            try:
                fn = k.compile(*launch_args) if safe else k.specialize(_unchecked_specs(k, launch_args))
            except (TileError, LaunchError) as e:
                errors += 1
                print(f"{path}: {name}({text}): error\n{type(e).__name__}: {e}")
                continue
            ok += 1
            print(f"{path}: {name}({text}): ok")
            if args.dump == "ir":
                from .ir.printer import format_function
                print(format_function(fn))
            elif args.dump == "triton":
                print(_triton_source(fn, [m[1] for m, t in zip(made, types) if t.shape is not None], args.target))
    summary = f"{path}: {ok} compiled, {errors} error{'s' if errors != 1 else ''}"
    print(summary + (f", {untyped} without argument types" if untyped else ""))
    if not ok and not errors:
        raise UsageError("nothing was compiled: give the kernels' argument types with --args or --spec "
                         "(see docs/cli.md)")
    return 1 if errors else 0


def _unchecked_specs(kernel, launch_args: tuple) -> tuple:
    from .runtime.args import arg_specs
    from .runtime.launch import check_args
    return arg_specs(kernel, check_args(kernel, launch_args))


def _triton_source(fn, arrays: list, target: int | None) -> str:
    try:
        from .backends.triton.launcher import function_source
    except ImportError as e:
        raise UsageError(f"--dump triton needs the Triton backend (pip install torch triton): {e}") from None
    return function_source(fn, arrays, target)


COMMANDS = {"cache": cmd_cache, "bench": cmd_bench}
