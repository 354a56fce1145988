"""Launching specialised kernels through Triton.

``launch_gpu`` is called by ``ct.launch`` when an array argument lives on a CUDA device
(or when ``SAFETILE_BACKEND=triton`` forces this backend, e.g. with ``TRITON_INTERPRET=1``
on CPU torch tensors in tests).

Per kernel specialisation (``Function``) a ``Specialization`` object is kept in
``kernel.backend_cache``. A launch reads each array's base pointer, sizes and strides,
derives the facts that select a compiled variant (16-byte alignment and divisibility,
unit strides, 64-bit indexing, oversized grids) and calls the compiled kernel's launcher
directly (no Triton JIT dispatch). Variants are compiled once with ``triton.compile`` and
cached; dynamic sizes never recompile.
"""
from __future__ import annotations

import dataclasses

from typing import Any

from ... import dtypes as dt
from ...errors import ArgumentError, LaunchTypeError, TileCompilerExecutionError, TileError
from ...ir.core import Function, walk
from ...ir.printer import format_function
from ...ir.types import TileType
from ...runtime import env
from . import cache, direct, lean, llvm_level
from .codegen import ArrayFacts, Facts, Generated, chained_products, generate
from .persistent import INTERPRETED_WORKERS, PersistentCall, walkable, wanted as persistent_wanted
from .prints import DATA, PrintingCall, Records, interpreted_args
from ...locks import FORK_LOCKS

_I32_LIMIT = 2**31 - 1
_CODED = ("float8_e8m0fnu", "float8_e5m3fnu", "float4_e2m1fn")
_GRID_YZ_LIMIT = 65535


def interpreting() -> bool:
    return env.triton_interpret()


def tma_enabled() -> bool:
    return env.tma_enabled()


def loop_stages(target: int) -> int:
    """Pipelining depth of tile-streaming loops (``Facts.loop_stages``); ``SAFETILE_PIPELINE_LOOPS=0`` turns it off."""
    if target < 80:
        return 0
    return env.pipeline_loops()


def warp_specialized(fn: Function, target: int) -> bool:
    """The ``warp_specialize`` hint, where it can apply (sm_90+)."""
    return target >= 90 and bool(_resolve(fn.hints.get("warp_specialize", False), target))


def pingpong(fn: Function, target: int) -> bool:
    """``warp_specialize="pingpong"``, where it can apply (sm_90: Gluon's Hopper products)."""
    return target == 90 and _resolve(fn.hints.get("warp_specialize", False), target) == "pingpong"


def pdl_enabled(target: int) -> bool:
    """Programmatic dependent launch on sm_90+ (``SAFETILE_PDL=0`` turns it off)."""
    return target >= 90 and env.pdl_enabled()


# ---------------------------------------------------------------------------- arrays

def array_parts(a: Any) -> tuple[int, tuple, tuple, Any]:
    """(data pointer, shape, element strides, object to hand to the interpreter)."""
    if type(a).__module__.startswith("torch"):
        return a.data_ptr(), tuple(a.shape), tuple(a.stride()), a
    cai = getattr(a, "__cuda_array_interface__", None)
    if cai is not None:
        shape = tuple(cai["shape"])
        import numpy as np
        itemsize = np.dtype(cai["typestr"]).itemsize
        strides: tuple[int, ...]
        if cai.get("strides") is None:
            steps, acc = [], 1
            for n in reversed(shape):
                steps.append(acc)
                acc *= n
            strides = tuple(reversed(steps))
        else:
            strides = tuple(s // itemsize for s in cai["strides"])
        return int(cai["data"][0]), shape, strides, a
    import numpy as np
    import torch
    if isinstance(a, np.ndarray):
        t = _numpy_to_torch(a)
        return t.data_ptr(), tuple(t.shape), tuple(t.stride()), t
    t = torch.from_dlpack(a)
    return t.data_ptr(), tuple(t.shape), tuple(t.stride()), t


def is_cuda_array(a) -> bool:
    from ...runtime.args import is_cuda
    return is_cuda(a)


def _numpy_to_torch(a):
    import numpy as np
    import torch
    d = dt.as_dtype(a.dtype)
    if d.name == "bfloat16":
        return torch.from_numpy(a.view(np.int16)).view(torch.bfloat16)
    if d.name in ("float8_e4m3fn", "float8_e5m2", "float8_e8m0fnu"):
        return torch.from_numpy(a.view(np.uint8)).view(getattr(torch, d.name))
    return torch.from_numpy(a)


_I32_TILE_MARGIN = 2**25  # twice the largest tile: a clamped tile index stays past the array (memory._tile_index)


def needs_idx64(shape: tuple, strides: tuple) -> bool:
    """Whether element offsets into this array may not fit in int32 (with room for a tile past its end)."""
    span = 0
    limit = _I32_LIMIT - _I32_TILE_MARGIN
    for n, s in zip(shape, strides):
        if n >= limit or s >= _I32_LIMIT or s <= -_I32_LIMIT:
            return True
        if n:
            span += (n - 1) * (s if s >= 0 else -s)
    return span >= limit


def _pow2_div(x: int) -> int:
    """The largest power of two <= 16 that divides ``x``."""
    x &= 15
    return 16 if x == 0 else x & -x


def array_facts(ptr: int, shape: tuple, strides: tuple) -> ArrayFacts:
    return ArrayFacts(_pow2_div(ptr), tuple(s == 1 for s in strides), tuple(_pow2_div(s) for s in strides),
                      tuple(_pow2_div(n) for n in shape), needs_idx64(shape, strides))


# ---------------------------------------------------------------------------- streams

def stream_handle(stream: Any, device: int) -> int:
    if stream is None:
        from triton.runtime.driver import driver
        return driver.active.get_current_stream(device)
    if isinstance(stream, int):
        return stream
    h = getattr(stream, "cuda_stream", None)  # torch
    if h is None:
        h = getattr(stream, "ptr", None)  # CuPy
    if h is None and hasattr(stream, "__cuda_stream__"):  # CUDA stream protocol
        h = stream.__cuda_stream__()[1]
    if h is None and getattr(stream, "torch_stream", None) is not None:  # a CUDA ct.Stream
        h = stream.torch_stream.cuda_stream
    if h is None:
        raise LaunchTypeError(f"cannot use {type(stream).__name__} as a CUDA stream (expected a torch or CuPy "
                              "stream, a ct.Stream, an int handle, or None)")
    return int(h)


# ---------------------------------------------------------------------------- compile options

def _resolve(value, target: int):
    from ...frontend.kernel import ByTarget
    return value.resolve(f"sm_{target}") if isinstance(value, ByTarget) else value


def default_num_warps(fn: Function) -> int:
    biggest, acc = 1, 0
    for op in walk(fn.body):
        for r in op.results:
            if isinstance(r.type, TileType):
                n = 1
                for s in r.type.shape:
                    n *= s
                biggest = max(biggest, n)
        if op.name == "mma":
            n = 1
            for s in op.result.type.shape:
                n *= s
            acc = max(acc, n)
    if acc:
        return 8 if acc >= 128 * 128 else 4
    return 16 if biggest >= 16384 else 8 if biggest >= 4096 else 4


def compile_options(fn: Function, gen: Generated, facts: Facts) -> dict:
    # the ping-pong kernel: 4 warps per partition, its own pipeline and registers (pingpong_emit.py)
    opts: dict[str, Any] = {"num_warps": 4, "sanitize_overflow": False} if gen.gluon else _hinted_options(fn, facts)
    if facts.pdl:
        opts["launch_pdl"] = True
    level = env.llvm_opt()
    if level is not None:  # SAFETILE_LLVM_OPT; not a Triton option: compile_fitting applies it (llvm_level.py)
        opts["llvm_opt"] = level
    return opts


def _hinted_options(fn: Function, facts: Facts) -> dict:
    """Triton's options from the kernel's hints (and the facts that pin them)."""
    target = facts.target
    hints = {k: _resolve(v, target) for k, v in fn.hints.items()}
    warps = hints.get("num_warps") or default_num_warps(fn)
    opts: dict[str, Any] = {"num_warps": warps, "sanitize_overflow": False}
    if hints.get("num_stages"):
        opts["num_stages"] = hints["num_stages"]
    if facts.warp_specialize and chained_products(fn):  # Triton 3.6's warp-specialised attention loops
        opts["num_stages"] = 2  # computed NaNs at 3 stages on an H100 (2026-11-24), right at 2; loops with
        # one product (GEMM) were right at 3 and 4 stages on an H200 (2026-11-29, bench/NOTES.md)
    if hints.get("num_ctas") and target >= 90:
        opts["num_ctas"] = hints["num_ctas"]
    if hints.get("occupancy"):
        opts["maxnreg"] = max(24, min(255, 65536 // (hints["occupancy"] * warps * 32)) // 8 * 8)
    return opts


def _triton_version() -> str | None:
    try:
        import triton
        return str(triton.__version__)
    except ImportError:  # pragma: no cover - the backend needs Triton
        return None


def _shared_limit() -> int:
    """Shared memory one block may use on the current device (0: unknown)."""
    try:
        from triton.runtime.driver import driver
        dev = driver.active.get_current_device()
        return int(driver.active.utils.get_device_properties(dev)["max_shared_mem"])
    except Exception:  # noqa: BLE001 - no limit known: compile as asked
        return 0


def compile_fitting(src, target, options: dict, shared_limit: int | None = None):
    """``triton.compile(src, target, options)``, made to fit where the hints do not: a
    ``num_ctas`` > 1 that Triton fails to plan is compiled with one CTA, and a binary that needs
    more shared memory than a block has (a deep software pipeline of big tiles: the 128x256x128
    tiles of NVIDIA's batched-matmul sample, the 32x1024 tiles of its LayerNorm backward) is
    compiled again with fewer pipeline stages. An ``occupancy`` hint caps registers per thread
    (``maxnreg``); where that cap makes ptxas spill (NVIDIA's attention sample at d=128 with
    128x128 tiles and occupancy 2: 0.17x SDPA), the kernel is compiled again without the cap and
    the binary that spills less is kept. Hints never make a correct kernel fail, nor spill.
    ``options["llvm_opt"]`` (from ``compile_options``) is LLVM's optimisation level for these
    compiles (llvm_level.py), not a Triton option."""
    import triton
    opts = dict(options)
    level = opts.pop("llvm_opt", None)
    keyed = llvm_level.cache_env(level)

    def compile_with(o: dict):
        with llvm_level.level(level if keyed else None):
            return triton.compile(src, target=target, options=o, **keyed)
    try:
        compiled = compile_with(opts)
    except Exception:
        if opts.get("num_ctas", 1) == 1:
            raise
        opts["num_ctas"] = 1
        compiled = compile_with(opts)
    limit = _shared_limit() if shared_limit is None else shared_limit
    stages = opts.get("num_stages") or 3  # Triton's default for CUDA
    while limit and compiled.metadata.shared > limit and stages > 1:
        stages -= 1
        opts["num_stages"] = stages
        compiled = compile_with(opts)
    if opts.get("maxnreg"):
        spills = _spills(compiled)
        if spills:
            other = compile_with({k: v for k, v in opts.items() if k != "maxnreg"})
            if _spills(other) < spills:
                compiled = other
    return compiled


def _spills(compiled) -> int:
    """How many registers ptxas spilled in this binary (it is loaded on the current GPU to ask)."""
    try:
        from triton.runtime.driver import driver
        utils = driver.active.utils
        device = driver.active.get_current_device()
        return int(utils.load_binary(compiled.name, compiled.kernel, compiled.metadata.shared, device)[3])
    except Exception:  # noqa: BLE001 - no GPU or another Triton: keep what was compiled
        return 0


# ---------------------------------------------------------------------------- variants

class Variant:
    """One compiled kernel for one set of facts. A launch is
    ``call(gx, gy, gz, stream, *prefix, *kernel_args)`` (Triton's C launcher, or its Python
    wrapper where the kernel needs per-launch scratch memory)."""

    def __init__(self, jitfn, gen: Generated, facts: Facts, fn: Function, interp: bool, key: str = "",
                 loaded: tuple | None = None, resident: int = 0):
        self.gen = gen
        self.fn = fn
        self.interp = interp
        self.jitfn = jitfn
        self.persistent = facts.persistent  # takes the logical grid last and walks it (persistent.py)
        if interp:
            return
        if loaded is not None:  # found through direct.load: no Triton objects
            self.call, self.prefix = loaded
            self._wrap(facts, fn, gen, resident)
            return
        from triton.compiler import ASTSource
        from triton.runtime.driver import driver
        target = driver.active.get_current_target()
        if gen.gluon:
            from triton.experimental.gluon._runtime import GluonASTSource as ASTSource
        src = ASTSource(jitfn, dict(gen.signature), {}, dict(gen.attrs))
        options = compile_options(fn, gen, facts)
        # a binary compiled by an earlier process: straight from Triton's cache (see cache.py)
        self.compiled = cache.load_binary(key, src, target, options) if key else None
        if self.compiled is None:
            cache.memoize_triton_key()
            building = cache.prebuild_launcher(gen.signature)  # a C compiler run, beside the kernel's
            lean_building = lean.prebuild()  # once per installation, beside it too
            self.compiled = compile_fitting(src, target, options)
            if key:
                cache.remember_binary(key, src, target, options, self.compiled)
            for t in (building, lean_building):
                if t is not None:
                    t.join()
        launcher = self.compiled.run  # loads the binary and builds (or finds) Triton's C launcher
        if key:
            direct.remember(key, options, facts.target, self.compiled, gen.signature)
        self.function = self.compiled.function
        self.packed = self.compiled.packed_metadata
        scratch = getattr(launcher, "global_scratch_size", 0) or getattr(launcher, "profile_scratch_size", 0)
        if getattr(self.compiled.metadata, "global_scratch_size", 0):
            _ensure_allocator()
        raw = getattr(launcher, "launch", None)
        if scratch or raw is None:
            # Triton's Python wrapper allocates the per-launch scratch (tensor descriptors made on device)
            self.call = launcher
            self.prefix = (self.function, self.packed, None, None, None)
        else:
            # straight into the compiled C launcher: (grid, stream, function, cooperative, pdl,
            # global scratch, profile scratch, metadata, launch metadata, enter/exit hooks, args)
            prefix = (self.function, bool(launcher.launch_cooperative_grid), bool(launcher.launch_pdl),
                      None, None, self.packed, None, None, None)
            self.call, self.prefix = leaner(raw, prefix, gen.signature, build=True)
        meta = self.compiled.metadata
        self._wrap(facts, fn, gen, direct.resident_blocks(self.function, meta.num_warps * 32, meta.shared)
                   if facts.persistent else 0)

    def _wrap(self, facts: Facts, fn: Function, gen: Generated, resident: int) -> None:
        """The launch wrappers the kernel's parameters ask for: a persistent kernel takes the
        logical grid last and runs on ``resident`` blocks (persistent.py); the print buffer goes
        after the kernel arguments, output after the launch (prints.py)."""
        if facts.persistent:
            self.call = PersistentCall(self.call, resident or _I32_LIMIT)
        if gen.uses_print_buffer:
            self.call = PrintingCall(self.call, fn)


def leaner(call, prefix: tuple, signature: dict, build: bool) -> tuple[Any, tuple]:
    """``(call, prefix)`` of Triton's raw C launcher (no scratch memory), moved to safetile's
    lean launcher where it takes the kernel (lean.py); as given otherwise."""
    function, cooperative, pdl, scratch, profile, (warps, ctas, shared), *_ = prefix
    if scratch is not None or profile is not None:
        return call, prefix
    return lean.launcher(function, warps, ctas, shared, pdl, cooperative, signature, build) or (call, prefix)


def _ensure_allocator() -> None:
    from triton.runtime import _allocation
    if _allocation._allocator.get() is _allocation._NULL_ALLOCATOR:
        import torch
        import triton

        def alloc(size: int, alignment: int, stream):
            return torch.empty(size, dtype=torch.int8, device="cuda")
        triton.set_allocator(alloc)


class Specialization:
    """Everything known about one specialised Function: argument handling and variants."""

    def __init__(self, kernel, fn: Function):
        self.fn = fn
        self.kernel = kernel
        self.variants: dict[tuple, Variant] = {}  # launch key -> variant
        self.by_facts: dict[tuple, Variant] = {}  # (facts, interpreted) -> variant
        self.lock = FORK_LOCKS.new()
        # position of each runtime argument in the launch args and its kind
        self.slots: list[tuple[int, str, Any]] = []
        rt = iter(fn.runtime_params)
        for i, is_const in enumerate(kernel.constant_params):
            if is_const:
                continue
            p = next(rt)
            self.slots.append((i, p.kind, p.arg.type.dtype))
        self.ir_text: str | None = None
        self.walkable = walkable(fn)  # the IR's part of the persistent decision (persistent.py)

    # -------------------------------------------------------------- facts
    def facts_for(self, parts, big_grid: bool, target: int, interp: bool) -> Facts:
        arrays = tuple(array_facts(ptr, tuple(shape), tuple(strides)) for ptr, shape, strides in parts)
        ws = warp_specialized(self.fn, target) and not interp
        hints = {k: _resolve(v, target) for k, v in self.fn.hints.items()}
        # the hints rule the walk out under the interpreter too, so that tests there see the GPU's choice
        excluded = bool(hints.get("warp_specialize")) or (hints.get("num_ctas") or 1) > 1
        persistent = persistent_wanted(self.walkable, hints.get("persistent"), target, interp,
                                       big_grid or excluded or not env.persistent_enabled())
        return Facts(arrays, big_grid, target, tma_enabled() and not interp, pdl_enabled(target) and not interp,
                     0 if interp else loop_stages(target), ws, pingpong(self.fn, target) and not interp, persistent)

    def variant(self, key: tuple, parts, big_grid: bool, target: int, interp: bool, device: int = 0) -> Variant:
        """The variant for a new launch key (arrays' alignment/shape/stride summary): facts are
        derived once per key; keys with the same facts share one compiled variant."""
        with self.lock:
            v = self.variants.get(key)
            if v is not None:
                return v
            facts = self.facts_for(parts, big_grid, target, interp)
            v = self.by_facts.get((facts, interp))
            if v is None:
                if self.ir_text is None:
                    self.ir_text = format_function(self.fn)
                v = self._build(facts, interp, device)
                self.by_facts[(facts, interp)] = v
            if len(self.variants) > 4096:  # many distinct shapes: forget the summaries, keep variants
                self.variants.clear()
            self.variants[key] = v
            return v

    def _build(self, facts: Facts, interp: bool, device: int) -> Variant:
        """The compiled variant for ``facts``. A binary that needs more shared memory than a block
        has even with one pipeline stage (tensor-descriptor loads stage whole tiles there: two
        32x1024 float32 tiles of NVIDIA's LayerNorm-backward sample) is built again with plain
        pointer loads and no software pipelining: hints never make a correct kernel fail."""
        assert self.ir_text is not None  # variant() formats the IR before the first build
        k = cache.digest(self.ir_text, facts)
        v = None if interp else self._warm(k, facts, device)
        if v is not None:
            return v
        jitfn, gen = cache.load(k, lambda: generate(self.fn, facts), interp)
        try:
            return Variant(jitfn, gen, facts, self.fn, interp, k)
        except TileError:
            raise
        except Exception as e:
            if facts.pingpong:  # Gluon could not build this kernel: Triton's own warp specialisation
                return self._build(dataclasses.replace(facts, pingpong=False), interp, device)
            if facts.persistent:  # the walk over the grid would not build: a grid of tiles, as written
                return self._build(dataclasses.replace(facts, persistent=False), interp, device)
            if facts.warp_specialize:  # a loop shape Triton cannot partition (Triton 3.6 on Hopper:
                # two matrix-product loops in a row, as a causal attention's split loop): compile
                # it as written, unspecialised
                return self._build(dataclasses.replace(facts, warp_specialize=False), interp, device)
            plain = dataclasses.replace(facts, tma=False, loop_stages=0)
            if type(e).__name__ == "OutOfResources" and plain != facts:
                return self._build(plain, interp, device)
            raise self._compile_error(e) from e

    def _compile_error(self, e: Exception) -> TileCompilerExecutionError:
        """Triton's (or ptxas's) failure on a kernel, as a safetile error naming the kernel."""
        text = str(e).strip().splitlines()
        first = text[0] if text else type(e).__name__
        if type(e).__name__ == "OutOfResources":
            msg = (f"kernel {self.fn.name!r} does not fit this GPU: {first}; its tiles are too large for "
                   "one block here (smaller tile sizes, or fewer tiles live at once, make it fit)")
        else:
            msg = f"the Triton compiler failed on kernel {self.fn.name!r}: {type(e).__name__}: {first}"
        return TileCompilerExecutionError(msg, compiler_version=_triton_version())

    def _warm(self, k: str, facts: Facts, device: int) -> Variant | None:
        """A variant an earlier process compiled, loaded without importing Triton (see direct.py)."""
        gen = cache.load_meta(k)
        if gen is None:
            return None
        loaded = direct.load(k, compile_options(self.fn, gen, facts), facts.target, device, len(gen.signature))
        if loaded is None:
            return None
        function, *_, (warps, _ctas, shared) = loaded[1][:6]
        resident = direct.resident_blocks(function, warps * 32, shared) if facts.persistent else 0
        if not isinstance(loaded[0], direct.WithScratch):  # Triton not imported: use the lean launcher if built
            loaded = leaner(*loaded, gen.signature, build=False)
        return Variant(None, gen, facts, self.fn, False, k, loaded, resident)

    # -------------------------------------------------------------- launch
    def __call__(self, stream, grid3, args) -> Variant | None:
        """Launch; returns the compiled variant that ran on the current device (None otherwise)."""
        r = self.resolve(grid3, args)
        if r is None:
            self.call_interpreted(grid3, args)
            return None
        v, (gx, gy, gz), flat, device = r
        if device != _current_device():  # arguments on another device: launch there
            with _torch.cuda.device(device):
                self(stream, grid3, args)
            return None
        if stream is None:
            stream = _get_stream(device)
        elif type(stream) is not int:
            stream = stream_handle(stream, device)
        v.call(gx, gy, gz, stream, *v.prefix, *flat)
        return v

    def resolve(self, grid3, args):
        """(variant, launch grid, flat kernel arguments, device) for CUDA arguments, or None when
        the launch belongs to Triton's interpreter (host arrays)."""
        flat: list = []
        key: list = []
        device = None
        for i, kind, _ in self.slots:
            a = args[i]
            if kind == "array":
                if type(a) is _Tensor:
                    if not a.is_cuda:  # CPU tensors: only under Triton's interpreter
                        return None
                    if device is None:  # the first tensor decides the device
                        device = a.get_device()
                    ptr = a.data_ptr()
                    shape = a.shape
                    strides = a.stride()
                else:
                    if not is_cuda_array(a):
                        return None
                    ptr, shape, strides, _ = array_parts(a)
                flat.append(ptr)
                flat += shape
                flat += strides
                key.append(ptr & 15)
                key.append(shape)
                key.append(strides)
            else:
                flat.append(a)
        gx, gy, gz = grid3
        big = gy > _GRID_YZ_LIMIT or gz > _GRID_YZ_LIMIT
        if device is None:  # no array arguments: the interpreter when asked for, else the current device
            if interpreting():
                return None
            device = _get_device()
        key.append(device)  # compiled variants and streams are per device
        key.append(big)
        launch_key = tuple(key)
        v = self.variants.get(launch_key)
        if v is None:
            v = self.variant(launch_key, self.parts(args), big, _capability(device), False, device)
        if big:
            flat += self.flat_grid(grid3)
            grid3 = (gx * gy * gz, 1, 1)
        return v, grid3, flat, device

    def bind(self, grid3, args) -> Bound | None:
        """This launch with its arguments resolved once, for arguments whose memory and layout
        cannot change between launches (the safe style's tensors); None for the interpreter."""
        r = self.resolve(grid3, args)
        if r is None:
            return None
        v, g, flat, device = r
        return Bound(v, g, tuple(flat), device)

    def parts(self, args) -> list:
        return [array_parts(args[i])[:3] for i, kind, _ in self.slots if kind == "array"]

    @staticmethod
    def flat_grid(grid3) -> tuple:
        gx, gy, gz = grid3
        if gx * gy * gz > 2**31 - 1:
            raise ArgumentError(f"grid {grid3} has more than 2**31 - 1 blocks")
        return (gx, gy)

    def call_interpreted(self, grid3, args) -> None:
        if not interpreting():
            raise ArgumentError(f"kernel {self.kernel.__name__!r}: the Triton backend runs on CUDA arrays; "
                                "host arrays need TRITON_INTERPRET=1 (Triton's interpreter) or the CPU backend")
        flat: list = []
        parts = []
        for i, kind, d in self.slots:
            a = args[i]
            if kind == "array":
                ptr, shape, strides, obj = array_parts(a)
                if d.name in _CODED:  # formats Triton has no type for travel as their bytes
                    obj = obj.view(_torch.uint8)
                flat.append(obj)
                flat += shape
                flat += strides
                parts.append((ptr, shape, strides))
            else:
                flat.append(_interp_scalar(a, d))
        _one_storage_per_address(flat)
        big = grid3[1] > _GRID_YZ_LIMIT or grid3[2] > _GRID_YZ_LIMIT
        key = ("interp", tuple((p[0] & 15, tuple(p[1]), tuple(p[2])) for p in parts), big)
        v = self.variants.get(key)
        if v is None:
            v = self.variant(key, parts, big, 0, True)
        if big:
            flat += self.flat_grid(grid3)
            grid3 = (grid3[0] * grid3[1] * grid3[2], 1, 1)
        _interp_launch(v, grid3, flat)


try:
    import torch as _torch
    _Tensor = _torch.Tensor
    _cuda_get_device = getattr(_torch._C, "_cuda_getDevice", None) or _torch.cuda.current_device
except ImportError:  # pragma: no cover - the GPU backend needs torch for streams and devices
    _torch = None
    _Tensor = None
    _cuda_get_device = None


def _current_device() -> int:
    """The current CUDA device where CUDA is known to be initialised (a CUDA tensor is in hand,
    or a launch already ran): torch.cuda.current_device() without its initialisation check."""
    return _cuda_get_device()


def _get_device() -> int:
    """The current CUDA device (initialising CUDA if needed)."""
    return _torch.cuda.current_device()


def _raw_stream(device: int) -> int:
    return _torch._C._cuda_getCurrentRawStream(device)


# the raw handle of the device's current stream: torch's own function where it has it (CUDA builds)
_get_stream = getattr(getattr(_torch, "_C", None), "_cuda_getCurrentRawStream", None) or _raw_stream


_caps: dict[int, int] = {}


def _capability(device: int) -> int:
    c = _caps.get(device)
    if c is None:
        import torch
        major, minor = torch.cuda.get_device_capability(device)
        c = _caps[device] = major * 10 + minor
    return c


# ---------------------------------------------------------------------------- interpreter

class Bound:
    """A resolved launch: calling it with a raw stream handle submits the kernel."""

    __slots__ = ("call", "grid", "tail", "device")

    def __init__(self, v: Variant, grid3: tuple, flat: tuple, device: int):
        self.call, self.grid, self.tail, self.device = v.call, grid3, (*v.prefix, *flat), device

    def __call__(self, stream: int) -> None:
        gx, gy, gz = self.grid
        self.call(gx, gy, gz, stream, *self.tail)


def _interp_scalar(x, d: dt.DType):
    """A typed interpreter tensor (the interpreter otherwise types Python scalars itself)."""
    import numpy as np
    import triton.language as tl
    from triton.runtime.interpreter import TensorHandle

    from .codegen import TL
    tld = eval(TL[d.name], {"tl": tl})  # noqa: S307 - our own table of "tl.<dtype>" names
    with np.errstate(all="ignore"):
        data = np.array([x]).astype(d.np_dtype if d.name not in ("bfloat16",) else np.float32)
    return tl.core.tensor(TensorHandle(data, tld), tld)


def _one_storage_per_address(flat: list) -> None:
    """Triton's interpreter keeps one storage per storage address (the first it meets): two storages
    starting at one address (a NumPy view wrapped by ``torch.from_numpy`` and the torch tensor it
    came from) would make it place the second tensor in the first's, too small, storage. Tensors
    of such a group are put on its largest storage (which covers the others: same start), in place."""
    largest: dict[int, Any] = {}
    tensors = [(i, t) for i, t in enumerate(flat) if isinstance(t, _Tensor)]
    for _, t in tensors:
        st = t.untyped_storage()
        have = largest.get(st.data_ptr())
        if have is None or st.nbytes() > have.nbytes():
            largest[st.data_ptr()] = st
    for i, t in tensors:
        st = t.untyped_storage()
        big = largest[st.data_ptr()]
        if big.nbytes() > st.nbytes():
            offset = (t.data_ptr() - big.data_ptr()) // t.element_size()
            flat[i] = t.new_empty(0).set_(big, offset, t.shape, t.stride())


def _interp_launch(v: Variant, grid3, flat) -> None:
    from . import interp
    interp.install()
    if v.gen.uses_print_buffer:
        buf, cap, ops = interpreted_args(v.fn)
        flat = [*flat, buf, _interp_scalar(cap, dt.int32)]
    run = grid3
    if v.persistent:  # a few workers walk the logical grid, passed last (persistent.py)
        flat = [*flat, *grid3]
        run = (min(grid3[0] * grid3[1] * grid3[2], INTERPRETED_WORKERS), 1, 1)
    with interp.jit_calls_interpreted():
        v.jitfn[run](*flat)
    if v.gen.uses_print_buffer:
        used = min(int(buf[:4].view(_torch.int32)[0]), cap)
        Records(ops, buf[:DATA + max(used, 0)].numpy(), cap).report(grid3)


# ---------------------------------------------------------------------------- entry points

def specialization(kernel, fn: Function, specs) -> Specialization:
    key = ("triton", specs)
    spec = kernel.backend_cache.get(key)
    if spec is None or spec.fn is not fn:
        spec = kernel.backend_cache[key] = Specialization(kernel, fn)
    return spec


def learn_fast(kernel, v: Variant, grid3, args) -> None:
    """After a checked ``ct.launch`` ran ``v`` on CUDA: teach the kernel's fast path (and install
    its entry, ``kernel.gpu_fast``, which ``ct.launch`` calls first)."""
    fast = kernel.gpu_learned
    if fast is None:
        from .fastpath import FastPath
        fast = kernel.gpu_learned = FastPath(kernel)
    fast.learn(v, grid3, args)
    kernel.gpu_fast = fast.entry


def launch_gpu(stream, grid3, kernel, fn: Function, specs, args) -> None:
    """Run ``fn`` (the specialisation of ``kernel`` for ``specs``) over ``grid3`` on ``stream``."""
    spec = kernel.backend_cache.get(("triton", specs))
    if spec is None or spec.fn is not fn:
        spec = specialization(kernel, fn, specs)
    spec(stream, grid3, args)


def kernel_source(kernel, args, target: int | None = None) -> str:
    """The generated Triton source for launching ``kernel`` with ``args``."""
    from ...runtime.args import arg_specs
    args = tuple(args)
    specs = arg_specs(kernel, args)
    fn = kernel.specialize(specs)
    spec = specialization(kernel, fn, specs)
    return function_source(fn, [args[i] for i, kind, _ in spec.slots if kind == "array"], target)


def function_source(fn: Function, arrays: list, target: int | None = None) -> str:
    """The generated Triton source for the compiled ``fn`` launched with ``arrays`` (its array
    arguments in parameter order: their alignment and strides are specialisation facts)."""
    parts = []
    for a in arrays:
        if hasattr(a, "strides") and hasattr(a, "__array_interface__"):  # NumPy
            ptr = a.__array_interface__["data"][0]
            parts.append((ptr, tuple(a.shape), tuple(s // a.itemsize for s in a.strides)))
        else:
            parts.append(array_parts(a)[:3])
    if target is None:
        target = 0
        if not interpreting():
            try:
                import torch
                if torch.cuda.is_available():
                    target = _capability(torch.cuda.current_device())
            except ImportError:
                pass
    facts = Facts(tuple(array_facts(*p) for p in parts), False, target, tma_enabled() and target >= 90,
                  pdl_enabled(target), loop_stages(target), warp_specialized(fn, target), pingpong(fn, target))
    return generate(fn, facts).source
