"""``ct.tune``: exhaustive autotuning over hint and Constant configurations.

``exhaustive_search`` launches a kernel once per configuration of a search space, times
each one, and returns the fastest (cuTile Python's ``ct.tune.exhaustive_search`` entry
point). A configuration is a dict (or an object with attributes, e.g. a ``SimpleNamespace``):
keys that are kernel hint names (``num_warps``, ``num_stages``, ``num_ctas``, ``occupancy``,
``opt_level``) are applied with ``kernel.replace_hints``; every key, hint or not, reaches
``grid_fn`` and ``args_fn``, which turn it into the launch's grid and arguments (tile sizes
are Constant arguments). The best configuration is cached per kernel, device, argument
shapes and search space, in memory and as JSON under the safetile cache directory.
See docs/autotune.md.
"""
from __future__ import annotations

import ast
import difflib
import hashlib
import json
import statistics
import sys
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, fields, is_dataclass
from pathlib import Path
from typing import Any, Generic, TypeVar

from .errors import ArgumentError, SafetileError, describe
from .frontend.kernel import HINTS, validate_hints
from .frontend.source import parse_function
from .runtime import env
from .runtime.args import is_array, is_cuda
from .runtime.kernel import Kernel
from .runtime.launch import launch

__all__ = ["Measurement", "Trial", "TuningError", "TuningResult", "clear_cache", "exhaustive_search", "time_ms"]

_FORMAT = 2  # version of the cache entries' layout
T = TypeVar("T")
_FALLBACK_FLUSH_BYTES = 256 << 20
_memory: dict[tuple[str, str], dict] = {}  # (cache directory, key) -> entry, as on disk


class TuningError(SafetileError, RuntimeError):
    """Every configuration of a search failed; the message lists why."""


@dataclass(frozen=True)
class Trial:
    """One configuration's outcome: its median time (and the mean and 95% margin of its samples),
    or the error that made it fail."""

    config: Any
    time_ms: float | None
    error: str | None = None
    mean_ms: float | None = None
    margin_ms: float | None = None
    samples: int = 0
    error_type: type | None = None

    @property
    def ok(self) -> bool:
        return self.error is None

    @property
    def time(self) -> float:
        """The median time of a configuration that ran (``ok``)."""
        assert self.time_ms is not None, "a failed trial has no time"
        return self.time_ms


@dataclass(frozen=True, kw_only=True)
class Measurement(Generic[T]):
    """cuTile Python's view of one configuration's timing (microseconds)."""

    config: T
    mean_us: float
    num_samples: int
    error_margin_us: float  # half of the 95% confidence interval of the mean


@dataclass(frozen=True)
class TuningResult(Generic[T]):
    """The fastest configuration of a search, the kernel with its hints, and every trial.

    ``best``, ``successes``, ``failures`` and ``summary()`` are cuTile Python's view of the same
    search (``TuningResult[T]`` is generic over the configuration type, as there)."""

    config: Any               # the winning element of the search space, as given
    time_ms: float            # its median time (milliseconds)
    kernel: Kernel            # the kernel with the winning hints applied
    hints: dict[str, Any]     # those hints
    trials: tuple[Trial, ...]  # every configuration, in search-space order
    cached: bool              # True when this came from the cache (no search ran)
    key: str                  # the cache key (hex digest)
    device: str               # the device name the times belong to

    @property
    def successes(self) -> list[Measurement]:
        return [_measurement(t) for t in self.trials if t.ok]

    @property
    def best(self) -> Measurement:
        return next(_measurement(t) for t in self.trials if t.ok and t.config is self.config)

    @property
    def failures(self) -> list[tuple[Any, type, str]]:
        """``(config, exception class, message)`` for each failed configuration."""
        return [(t.config, t.error_type or Exception, t.error) for t in self.trials if t.error is not None]

    def summary(self, *, top_k: int = 10) -> str:
        """The fastest ``top_k`` configurations with their times, then the failures."""
        ranked = sorted(self.successes, key=lambda m: m.mean_us)
        lines = [f"{len(ranked)} succeeded, {len(self.failures)} failed"]
        for m in ranked[:top_k]:
            mark = "*" if m.config is self.config else " "
            lines.append(f"{mark} {m.config}: {m.mean_us:.1f}±{m.error_margin_us:.1f} us ({m.num_samples} samples)")
        for cfg, cls, msg in self.failures[:top_k]:
            lines.append(f"    {cfg}: {cls.__name__}: {str(msg).splitlines()[0][:60]}")
        return "\n".join(lines)

    def __str__(self) -> str:
        return self.summary()


def _measurement(t: Trial) -> Measurement:
    mean = t.mean_ms if t.mean_ms is not None else t.time
    return Measurement(config=t.config, mean_us=mean * 1e3, num_samples=t.samples,
                       error_margin_us=(t.margin_ms or 0.0) * 1e3)


# ----------------------------------------------------------------------------- timing

def time_ms(fn: Callable[[], Any], *, cuda: bool, stream: Any = None, reps: int = 20, warmup: int = 3,
            flush_l2: bool = True) -> float:
    """The median time of ``fn()`` in milliseconds (see ``time_samples``)."""
    return statistics.median(time_samples(fn, cuda=cuda, stream=stream, reps=reps, warmup=warmup,
                                          flush_l2=flush_l2))


def time_samples(fn: Callable[[], Any], *, cuda: bool, stream: Any = None, reps: int = 20, warmup: int = 3,
                 flush_l2: bool = True) -> list[float]:
    """The median time of ``fn()`` in milliseconds over ``reps`` calls after ``warmup`` calls.

    On CUDA each call is bracketed by CUDA events on ``stream``; with ``flush_l2`` a buffer
    larger than the L2 cache is written before each call, outside the timed region, so no
    call finds its inputs in L2 (and the queued flush hides the host's launch cost). On the
    host, ``time.perf_counter`` around each call.
    """
    _check_count("reps", reps, 1)
    _check_count("warmup", warmup, 0)
    if not cuda:
        for _ in range(warmup):
            fn()
        times = []
        for _ in range(reps):
            t0 = time.perf_counter()
            fn()
            times.append((time.perf_counter() - t0) * 1e3)
        return times
    try:
        import torch
    except ImportError:
        raise RuntimeError("timing on CUDA needs torch (pip install 'safetile[gpu]')") from None
    s = _torch_stream(torch, stream)
    with torch.cuda.stream(s):
        for _ in range(warmup):
            fn()
        flush = torch.empty(_flush_bytes(torch, s.device), dtype=torch.int8, device=s.device) if flush_l2 else None
        events = [(torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)) for _ in range(reps)]
        for start, end in events:
            if flush is not None:
                flush.zero_()
            start.record(s)
            fn()
            end.record(s)
        s.synchronize()
    return [start.elapsed_time(end) for start, end in events]


def _check_count(name: str, value: Any, least: int) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or value < least:
        raise ArgumentError(f"{name} must be an integer >= {least}, got {value!r}")


def _torch_stream(torch, stream: Any):
    """``stream`` (None, a torch stream, a CuPy stream, a raw handle) as a torch stream."""
    if stream is None:
        return torch.cuda.current_stream()
    if isinstance(stream, torch.cuda.Stream):
        return stream
    from .backends.triton.launcher import stream_handle
    return torch.cuda.ExternalStream(stream_handle(stream, torch.cuda.current_device()))


def _flush_bytes(torch, device) -> int:
    """Twice the device's L2 cache, or 256 MiB where torch does not report it."""
    l2 = getattr(torch.cuda.get_device_properties(device), "L2_cache_size", 0)
    return 2 * l2 if l2 else _FALLBACK_FLUSH_BYTES


# ----------------------------------------------------------------------------- configurations

def _as_mapping(cfg: Any, i: int) -> dict[str, Any]:
    """The named values of a configuration (hint names among them become hints); a configuration
    of another kind (a tuple, a number) has none and reaches only the callbacks."""
    if isinstance(cfg, Mapping):
        return dict(cfg)
    if is_dataclass(cfg) and not isinstance(cfg, type):
        return {f.name: getattr(cfg, f.name) for f in fields(cfg)}
    if hasattr(cfg, "__dict__") and not callable(cfg):
        return dict(vars(cfg))
    return {}


def _config_hints(kernel: Kernel, cfg: Any, mapping: dict[str, Any], hints_fn: Callable | None,
                  i: int) -> dict[str, Any]:
    """The hints a configuration sets (its hint-named keys, then ``hints_fn``), validated."""
    params = {p.name for p in kernel.params}
    for name in mapping:
        if name not in HINTS and name not in params:
            near = difflib.get_close_matches(str(name), list(HINTS), n=1, cutoff=0.8)
            if near:
                raise ArgumentError(f"search_space[{i}]: {name!r} is not a kernel hint; did you mean {near[0]!r}? "
                                    f"(keys that are not hint names only reach grid_fn and args_fn)")
    hints = {k: v for k, v in mapping.items() if k in HINTS}
    if hints_fn is not None:
        extra = hints_fn(cfg)
        if not isinstance(extra, Mapping):
            raise ArgumentError(f"hints_fn(search_space[{i}]) must return a dict of hints, got {type(extra).__name__}")
        hints.update(extra)
    try:
        return validate_hints(hints)
    except (TypeError, ValueError) as e:
        raise type(e)(f"search_space[{i}]: {e}") from None


def _canonical(value: Any) -> str:
    return json.dumps(value, sort_keys=True, default=repr)


def _config_key(cfg: Any, mapping: dict[str, Any]) -> str:
    return _canonical(mapping) if mapping or isinstance(cfg, Mapping) else _canonical(["config", repr(cfg)])


# ----------------------------------------------------------------------------- cache keys

def _kernel_id(kernel: Kernel) -> list[str]:
    """Qualified name and a hash of the kernel's AST: an edit to its body re-tunes."""
    fn = kernel.fn
    body = ast.dump(parse_function(fn).node)
    return [f"{fn.__module__}.{kernel.__qualname__}", hashlib.sha256(body.encode()).hexdigest()[:16],
            _canonical(kernel.hints)]


def _arg_signature(kernel: Kernel, args: tuple) -> list:
    """Shapes and dtypes of arrays, types of scalars; Constants vary per config and are left out."""
    sig: list = []
    for is_const, a in zip(kernel.constant_params, args):
        if not is_const:
            sig.append([[int(n) for n in a.shape], str(a.dtype)] if is_array(a) else type(a).__name__)
    return sig


def _device_name(kernel: Kernel, args: tuple) -> tuple[str, bool]:
    """(device name, whether launches run on CUDA), decided like ``ct.launch`` decides."""
    gpu = [a for a, c in zip(args, kernel.constant_params) if not c and is_cuda(a)]
    if not gpu:
        return ("triton-interpreter" if env.backend_override() == "triton" else "cpu"), False
    import torch
    index = getattr(getattr(gpu[0], "device", None), "index", None)
    return torch.cuda.get_device_name(torch.cuda.current_device() if index is None else index), True


def _cache_root() -> Path | None:
    from .backends.triton.cache import cache_dir
    root = cache_dir()
    return None if root is None else root / "tune"


def clear_cache() -> None:
    """Forget the in-memory layer of the tuning cache (files on disk stay; see docs/autotune.md)."""
    _memory.clear()


def _load(root: Path | None, key: str) -> dict | None:
    entry = _memory.get((str(root), key))
    if entry is None and root is not None:
        try:
            entry = json.loads((root / f"{key}.json").read_text())
        except (OSError, UnicodeDecodeError, ValueError):
            return None
    return entry


def _store(root: Path | None, key: str, entry: dict) -> None:
    _memory[(str(root), key)] = entry
    if root is not None:
        from .backends.triton.cache import _write_atomic
        try:
            _write_atomic(root / f"{key}.json", json.dumps(entry, indent=1))
        except OSError:
            pass  # an unwritable cache directory only costs a re-search next process


def _from_entry(entry: Any, key: str, space: list, canon: list[str]) -> tuple[int, list[Trial]] | None:
    """The best index and trials of a cache entry, or None when it is not a valid one for ``space``."""
    try:
        best = entry["best"]
        rows = entry["trials"]
        if entry["format"] != _FORMAT or entry["key"] != key or len(rows) != len(space) \
                or not 0 <= best < len(space) or any(r["config"] != c for r, c in zip(rows, canon)):
            return None
        trials = [Trial(cfg, None if r["time_ms"] is None else float(r["time_ms"]),
                        None if r["error"] is None else str(r["error"]), r.get("mean_ms"), r.get("margin_ms"),
                        int(r.get("samples") or 0)) for cfg, r in zip(space, rows)]
    except (KeyError, TypeError, ValueError):
        return None
    return (best, trials) if trials[best].ok and trials[best].time_ms is not None else None


# ----------------------------------------------------------------------------- progress

class _Progress:
    """A tqdm bar when tqdm is installed, else one rewritten stderr line; nothing when disabled."""

    def __init__(self, total: int, desc: str, enabled: bool):
        self.total, self.desc, self.n, self.bar = total, desc, 0, None
        self.enabled = enabled
        if enabled:
            try:
                from tqdm import tqdm
                self.bar = tqdm(total=total, desc=desc, unit="config", leave=False)
            except ImportError:
                pass

    def step(self, best: float | None) -> None:
        self.n += 1
        note = "" if best is None else f"best {best:.4g} ms"
        if self.bar is not None:
            self.bar.set_postfix_str(note, refresh=False)
            self.bar.update()
        elif self.enabled:
            sys.stderr.write(f"\r{self.desc}: {self.n}/{self.total} configs  {note}".ljust(60))
            sys.stderr.flush()

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()
        elif self.enabled:
            sys.stderr.write("\n")


# ----------------------------------------------------------------------------- the search

def exhaustive_search(search_space: Iterable[Any], stream: Any, grid_fn: Callable[[Any], Any],
                      kernel: Kernel | Callable[[Any], Kernel], args_fn: Callable[[Any], tuple],
                      hints_fn: Callable[[Any], Mapping] | None = None, *, quiet: bool = False,
                      reps: int = 20, warmup: int = 3, flush_l2: bool = True, progress: bool = True,
                      cache: bool = True, force: bool = False, key: Any = None) -> TuningResult:
    """Launch ``kernel`` with every configuration of ``search_space`` and return the fastest.

    Per configuration: hints (its hint-named keys, plus ``hints_fn(cfg)``) via
    ``kernel.replace_hints``, ``grid_fn(cfg)`` and ``args_fn(cfg)`` (fresh arguments, so
    Constant tile sizes can vary), one untimed launch (compilation), then ``time_ms``. A
    configuration that fails to compile or launch is recorded in ``trials`` and skipped;
    ``TuningError`` only if all fail. With ``cache``, a previous result for the same kernel,
    device, argument signature (or ``key``) and search space is returned without a search;
    ``force`` searches again and overwrites it. ``kernel`` may also be a function mapping a
    configuration to the kernel to time (cuTile Python's form; no caching then); ``quiet``
    turns the progress display off.
    """
    if isinstance(search_space, (Mapping, str, bytes)) or not isinstance(search_space, Iterable):
        raise ArgumentError(f"search_space must be an iterable of configurations (dicts), got "
                            f"{type(search_space).__name__}; wrap a single configuration in a list")
    if not isinstance(kernel, Kernel) and not callable(kernel):
        raise ArgumentError("kernel must be a @ct.kernel or a function of the configuration, got "
                            f"{type(kernel).__name__}")
    progress = progress and not quiet
    for name, f in (("grid_fn", grid_fn), ("args_fn", args_fn)):
        if not callable(f):
            raise ArgumentError(f"{name} must be a callable taking a configuration, got {type(f).__name__}")
    if hints_fn is not None and not callable(hints_fn):
        raise ArgumentError("hints_fn must be None or a callable taking a configuration, got "
                            f"{type(hints_fn).__name__}")
    _check_count("reps", reps, 1)
    _check_count("warmup", warmup, 0)
    space = list(search_space)
    if not space:
        raise ArgumentError("search_space is empty: give at least one configuration")
    mappings = [_as_mapping(cfg, i) for i, cfg in enumerate(space)]
    kernels = [kernel] * len(space) if isinstance(kernel, Kernel) else [_kernel_of(kernel, c, i)
                                                                        for i, c in enumerate(space)]
    hints = [_config_hints(k, cfg, m, hints_fn, i) for i, (k, cfg, m) in enumerate(zip(kernels, space, mappings))]
    canon = [_config_key(cfg, m) for cfg, m in zip(space, mappings)]
    if not isinstance(kernel, Kernel):  # a kernel per configuration: searched every time
        cache, kernel = False, kernels[0]

    first_args = _first_args(space, args_fn, kernel, canon)
    device, cuda = _device_name(kernel, first_args)
    shape_key = _arg_signature(kernel, first_args) if key is None else ["user", repr(key)]
    kernel_id = _kernel_id(kernel)
    digest = hashlib.sha256(_canonical([_FORMAT, kernel_id, device, shape_key, canon]).encode()).hexdigest()
    root = _cache_root() if cache else None

    hit = _from_entry(_load(root, digest), digest, space, canon) if cache and not force else None
    if hit is not None:
        best, trials = hit
        cached = True
    else:
        trials = _run_all(space, hints, kernels, stream, grid_fn, args_fn, cuda,
                          dict(reps=reps, warmup=warmup, flush_l2=flush_l2), progress)
        ok = [i for i, t in enumerate(trials) if t.ok]
        if not ok:
            lines = "\n".join(f"  {c}: {t.error}" for c, t in zip(canon, trials))
            raise TuningError(f"all {len(space)} configurations of {kernel.__name__!r} failed:\n{lines}")
        best = min(ok, key=lambda i: trials[i].time)
        cached = False
        if cache:
            _store(root, digest, {"format": _FORMAT, "key": digest, "kernel": kernel_id[0],
                                  "device": device, "best": best,
                                  "trials": [{"config": c, "time_ms": t.time_ms, "error": t.error,
                                              "mean_ms": t.mean_ms, "margin_ms": t.margin_ms, "samples": t.samples}
                                             for c, t in zip(canon, trials)]})
    return TuningResult(space[best], trials[best].time, _with_hints(kernels[best], hints[best]), hints[best],
                        tuple(trials), cached, digest, device)


def _kernel_of(fn: Callable, cfg: Any, i: int) -> Kernel:
    try:
        k = fn(cfg)
    except Exception as e:  # noqa: BLE001 - reported as a misuse of the argument
        raise ArgumentError(f"kernel must be a @ct.kernel or a function returning one; kernel(search_space[{i}]) "
                            f"raised {describe(e)}") from None
    if not isinstance(k, Kernel):
        raise ArgumentError(f"kernel(search_space[{i}]) must return a @ct.kernel, got {type(k).__name__}")
    return k


def _args(args_fn: Callable, cfg: Any, kernel: Kernel) -> tuple:
    args = args_fn(cfg)
    if not isinstance(args, (tuple, list)) or len(args) != len(kernel.params):
        raise ArgumentError(f"args_fn must return a tuple of {len(kernel.params)} kernel argument(s) "
                            f"({', '.join(p.name for p in kernel.params)}), got {args!r:.200}")
    return tuple(args)


def _first_args(space: list, args_fn: Callable, kernel: Kernel, canon: list[str]) -> tuple:
    """The arguments of the first configuration ``args_fn`` accepts: they decide the device
    and the cache key's shapes (arrays are the same for every configuration)."""
    errors = []
    for cfg, c in zip(space, canon):
        try:
            return _args(args_fn, cfg, kernel)
        except Exception as e:  # noqa: BLE001 - reported below if no configuration works
            errors.append(f"  {c}: {describe(e)}")
    raise TuningError("args_fn failed for every configuration:\n" + "\n".join(errors))


def _with_hints(kernel: Kernel, hints: dict[str, Any]) -> Kernel:
    """The base kernel itself when a configuration sets no hints (its compilations are reused)."""
    return kernel.replace_hints(**hints) if hints else kernel


def _run_all(space: list, hints: list[dict], base: list[Kernel], stream: Any, grid_fn: Callable, args_fn: Callable,
             cuda: bool, timing: dict, progress: bool) -> list[Trial]:
    kernels: dict[tuple, Kernel] = {}  # one kernel (and compile cache) per kernel and distinct hint set
    bar = _Progress(len(space), f"tuning {base[0].__name__}", progress)
    trials: list[Trial] = []
    best: float | None = None
    try:
        for cfg, h, kernel in zip(space, hints, base):
            k = kernels.setdefault((id(kernel), _canonical(h)), _with_hints(kernel, h))
            trials.append(_trial(cfg, k, stream, grid_fn, args_fn, cuda, timing))
            if trials[-1].ok:
                best = trials[-1].time if best is None else min(best, trials[-1].time)
            bar.step(best)
    finally:
        bar.close()
    return trials


def _trial(cfg: Any, kernel: Kernel, stream: Any, grid_fn: Callable, args_fn: Callable, cuda: bool,
           timing: dict) -> Trial:
    """Time one configuration; any failure (compile error, resources, bad arguments) is recorded."""
    try:
        grid = grid_fn(cfg)
        args = _args(args_fn, cfg, kernel)

        def run() -> None:
            launch(stream, grid, kernel, args)
        run()  # compiles; errors surface here rather than inside the timed loop
        if cuda:
            import torch
            torch.cuda.synchronize()
        times = time_samples(run, cuda=cuda, stream=stream, **timing)
        mean = statistics.fmean(times)
        margin = 1.96 * statistics.stdev(times) / len(times) ** 0.5 if len(times) > 1 else 0.0
        return Trial(cfg, statistics.median(times), None, mean, margin, len(times))
    except Exception as e:  # noqa: BLE001 - one failing configuration never ends the search
        return Trial(cfg, None, describe(e), error_type=type(e))
