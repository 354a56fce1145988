"""IR → Triton source: one ``@triton.jit`` kernel per specialised ``Function``.

The generator walks the structured IR once. Every tile value becomes a Triton tensor of
the same static shape held in a Python variable (``v12``); scalars are 0-d tensors.
Arrays become a base pointer plus per-axis sizes and strides (``x_ptr``, ``x_n0``,
``x_s0``); strides known to be 1 for this specialisation are written as the literal ``1``.
Constants are hoisted to the top of the kernel (typed ``tl.full``) or inlined as literals
where Triton's typing keeps the operand's dtype. ``if``/``for``/``while`` become Triton
``if``/``for``/``while`` with loop-carried values as plain variables.

Per-op lowerings live in this package's family modules (``elementwise.py``, ``memory.py``
...), one emitter per catalogue op registered with ``@lowers``; an emitter returns the
Python expression of each result (or writes statements through ``g.line``).
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any
from collections.abc import Callable

import numpy as np

from ... import dtypes as dt
from ...errors import TileInternalError, TileUnsupportedFeatureError
from ...ir.catalogue import OPS
from ...ir.core import Block, Function, Op, Value, tile_type, walk
from ...ir.types import ArrayType, TileType
from .bounds import value_bounds
from .ksplit import split_wide_k
from .persistent import products, walk_order, wrap_body

CODEGEN_VERSION = "3"

Emitter = Callable[["Gen", Op], Any]
EMITTERS: dict[str, Emitter] = {}


def lowers(*names: str):
    """Register the Triton lowering of catalogue ops ``names``."""
    def deco(fn: Emitter) -> Emitter:
        for n in names:
            if n in EMITTERS:
                raise RuntimeError(f"Triton lowering of {n!r} registered twice")
            EMITTERS[n] = fn
        return fn
    return deco


# ------------------------------------------------------------------------------ dtypes

TL = {
    "bool_": "tl.int1", "int8": "tl.int8", "int16": "tl.int16", "int32": "tl.int32", "int64": "tl.int64",
    "uint8": "tl.uint8", "uint16": "tl.uint16", "uint32": "tl.uint32", "uint64": "tl.uint64",
    "float16": "tl.float16", "bfloat16": "tl.bfloat16", "float32": "tl.float32", "float64": "tl.float64",
    "tfloat32": "tl.float32", "float8_e4m3fn": "tl.float8e4nv", "float8_e5m2": "tl.float8e5",
    # formats Triton has no type for travel as their raw bits (one code per byte for float4)
    "float8_e8m0fnu": "tl.uint8", "float8_e5m3fnu": "tl.uint8", "float4_e2m1fn": "tl.uint8",
}
SIG = {
    "bool_": "i1", "int8": "i8", "int16": "i16", "int32": "i32", "int64": "i64",
    "uint8": "u8", "uint16": "u16", "uint32": "u32", "uint64": "u64",
    "float16": "fp16", "bfloat16": "bf16", "float32": "fp32", "float64": "fp64",
    "tfloat32": "fp32", "float8_e4m3fn": "fp8e4nv", "float8_e5m2": "fp8e5",
    "float8_e8m0fnu": "u8", "float8_e5m3fnu": "u8", "float4_e2m1fn": "u8",
}


def tl_dtype(d: dt.DType) -> str:
    return TL[d.name]


def compute_dtype(d: dt.DType) -> dt.DType:
    """Floats narrower than 32 bits compute in float32 (as on the CPU backend)."""
    return dt.float32 if d.is_float and d.bits < 32 else (dt.float32 if d is dt.tfloat32 else d)


def py_literal(value: Any, d: dt.DType) -> str:
    """Source text for a scalar of dtype ``d`` (value rounded to ``d`` first)."""
    if d.is_bool:
        return "True" if value else "False"
    if d.is_int:
        return repr(int(value))
    v = float(np.asarray(value).astype(d.np_dtype).astype(np.float64))
    if math.isnan(v):
        return "_NAN"
    if math.isinf(v):
        return "_INF" if v > 0 else "_NINF"
    if v == 0 and math.copysign(1.0, v) < 0:
        # Triton turns every scalar constant equal to 0 into +0.0 (semantic.scalar_constant), so
        # -0.0 is made at run time: 0.0 * -1.0 is -0.0 in IEEE arithmetic (and in MLIR's folding)
        return NEGATIVE_ZERO
    return repr(v)


# A float32 -0.0 as a 0-d tensor (see py_literal); casts to other float types keep the sign.
NEGATIVE_ZERO = "(tl.full((), 0.0, tl.float32) * -1.0)"


# ------------------------------------------------------------------------------ specialisation facts

@dataclass(frozen=True)
class ArrayFacts:
    """What this specialisation may assume about one array argument."""

    ptr_align: int  # largest power of two <= 16 dividing the base address (bytes)
    unit: tuple[bool, ...]  # stride == 1, per axis
    stride_div: tuple[int, ...]  # largest power of two <= 16 dividing each stride (elements)
    size_div: tuple[int, ...]  # likewise for each size
    idx64: bool  # offsets may exceed int32


@dataclass(frozen=True)
class Facts:
    arrays: tuple[ArrayFacts, ...]  # one per array parameter, in order
    big_grid: bool = False  # grid y or z above 65535: launched flat along x
    target: int = 0  # compute capability (90 = sm_90); 0 = interpreter / generic
    tma: bool = True  # tensor descriptors allowed where legal
    # programmatic dependent launch (sm_90+): the kernel is launched so that it may start while
    # the previous kernel on the stream finishes, and waits for its predecessor to complete
    # (memory visible) before touching memory: plain stream order, launch latency overlapped.
    # It lets its own successor launch first thing, or, when its top level has a loop of matrix
    # products, right after the last such loop (``_signal_after``; a walked kernel, after its
    # walk): a successor launched early parks its blocks on whichever SMs have room, two to an SM
    # where this kernel left one free, and a tile-starved GEMM then runs at the pace of its
    # doubled-up SMs (H200, session 17: 1024³ in CUDA graphs 0.61× cuBLAS signalling first, 0.91×
    # after the K loop).
    pdl: bool = False
    # software-pipelining depth for innermost loops that load tiles and multiply none (Triton
    # pipelines loops with matrix products itself): the next iterations' loads are issued
    # (cp.async) while this one computes, as a row loop over chunks wants. 0: off.
    loop_stages: int = 0
    # sm_90+ (the ``warp_specialize`` kernel hint): loops that multiply tiles are handed to
    # Triton's automatic warp specialisation (a producer warp group issues the tensor-descriptor
    # loads, two consumer warp groups each take half of the rows, registers rebalanced between
    # them). Triton 3.6 applies it on Hopper to kernels of 4 warps only; elsewhere it is ignored.
    warp_specialize: bool = False
    # sm_90+ (``warp_specialize="pingpong"``): an online-softmax loop (two chained products, as in
    # attention) is written in Gluon with FlashAttention-3's schedule: a producer warp and two
    # consumer warp groups taking turns on the tensor cores (pingpong.py). Other kernels: as
    # ``warp_specialize``.
    pingpong: bool = False
    # a persistent grid (persistent.py): min(blocks, resident blocks) are launched, each walking
    # the logical grid, which the kernel takes as its last parameters
    persistent: bool = False


def default_facts(fn: Function) -> Facts:
    arrays = tuple(ArrayFacts(16, (False,) * p.arg.type.ndim, (1,) * p.arg.type.ndim,
                              (1,) * p.arg.type.ndim, False)
                   for p in fn.runtime_params if p.kind == "array")
    return Facts(arrays)


class ArrayInfo:
    def __init__(self, name: str, atype: ArrayType, facts: ArrayFacts):
        self.name = name
        self.type = atype
        self.dtype = atype.dtype
        self.ndim = atype.ndim
        self.facts = facts
        self.ptr = f"{name}_ptr"
        static = atype.static_shape or (None,) * atype.ndim
        self.size_params = [f"{name}_n{i}" for i in range(self.ndim)]
        self.stride_params = [f"{name}_s{i}" for i in range(self.ndim)]
        self.sizes = [str(s) if s is not None else p for s, p in zip(static, self.size_params)]
        self.static = static
        self.strides = ["1" if u else p for u, p in zip(facts.unit, self.stride_params)]
        self.idx64 = facts.idx64


# ------------------------------------------------------------------------------ the module

_MEMORY_OPS = frozenset({"load", "store", "gather", "scatter", "atomic_rmw", "atomic_cas"})
_PLAIN_WRITES = frozenset({"store", "scatter"})


def ordered_arrays(fn: Function) -> set[int]:
    """The array parameters whose accesses need a block-wide barrier before each: those the kernel
    writes with plain stores and accesses more than once (a store then a load of the same element
    may fall to different threads of the block). Arrays written only by atomics, or accessed once,
    need none."""
    count: dict[int, int] = {}
    written: set[int] = set()
    for op in walk(fn.body):
        if op.name in _MEMORY_OPS and op.operands:
            a = op.operands[0].id
            count[a] = count.get(a, 0) + 1
            if op.name in _PLAIN_WRITES:
                written.add(a)
    return {a for a in written if count[a] > 1}


class Module:
    """One generated source file: helper functions plus the kernel."""

    def __init__(self, fn: Function, facts: Facts):
        self.fn = fn
        self.facts = facts
        self.helpers: list[str] = []
        self.helper_names: dict[str, str] = {}
        self.counter = 0
        self.consts: dict[int, tuple[Any, dt.DType, tuple[int, ...]]] = {}
        self.arrays: dict[int, ArrayInfo] = {}
        # print and assert ops by id(op), numbered as their records are (prints.buffer_ops)
        self.print_index: dict[int, int] = {}
        self.uses_assert = False
        self.uses_descriptors = False
        self.iv_range: dict[int, tuple[Value, Value, Value]] = {}  # for-loop iv id -> start, stop, step
        self.lower_bounds: dict[int, tuple[int | None, int | None]] = {}
        self._users: dict[int, list[Op]] | None = None
        self._looped: set[int] | None = None
        self.ordered = ordered_arrays(fn)

    def in_loop(self, op: Op) -> bool:
        """Whether ``op`` sits in the body of a ``for`` or ``while`` loop (at any depth)."""
        if self._looped is None:
            self._looped = {id(inner) for loop in walk(self.fn.body) if loop.name in ("for", "while")
                            for region in loop.regions for inner in walk(region)}
        return id(op) in self._looped

    def users(self, v: Value) -> list[Op]:
        """The ops (in any region) that take ``v`` as an operand."""
        if self._users is None:
            users: dict[int, list[Op]] = {}
            for op in walk(self.fn.body):
                for x in op.operands:
                    users.setdefault(x.id, []).append(op)
            self._users = users
        return self._users.get(v.id, [])

    def fresh(self, prefix: str) -> str:
        self.counter += 1
        return f"{prefix}{self.counter}"

    def add_helper(self, key: str, prefix: str, build: Callable[[str], str]) -> str:
        """A module-level helper (combine function ...), generated once per key."""
        name = self.helper_names.get(key)
        if name is None:
            name = self.fresh(prefix)
            self.helper_names[key] = name
            self.helpers.append(build(name))
        return name


class Gen:
    """Emits the statements of one Triton function body."""

    def __init__(self, module: Module, vectorized: bool = False, parent: Gen | None = None):
        self.m = module
        self.vectorized = vectorized  # inside a combine function: no control flow, all values broadcast
        self.parent = parent
        self.lines: list[str] = []
        self.hoisted: list[str] = []
        self.hoisted_names: dict[Any, str] = {}
        self.names: dict[int, str] = {}
        self.squeezed: dict[int, str] = {}  # value id -> the same tile without its size-1 axes
        self.depth = 1
        self.signal_after: Op | None = None  # the top-level loop after which PDL's signal goes

    # -------------------------------------------------------------- text
    def line(self, text: str) -> None:
        self.lines.append("    " * self.depth + text)

    def hoist(self, key: Any, expr: str, prefix: str = "c") -> str:
        """A loop-invariant value computed once at the top of the function."""
        name = self.hoisted_names.get(key)
        if name is None:
            name = self.m.fresh(prefix)
            self.hoisted_names[key] = name
            self.hoisted.append(f"    {name} = {expr}")
        return name

    def tmp(self, expr: str, prefix: str = "t") -> str:
        name = self.m.fresh(prefix)
        self.line(f"{name} = {expr}")
        return name

    # -------------------------------------------------------------- values
    def ty(self, v: Value) -> TileType:
        return tile_type(v)

    def const(self, v: Value) -> Any:
        """The Python value of a scalar constant, else None."""
        c = self.m.consts.get(v.id)
        if c is not None and c[2] == ():
            return c[0]
        return None

    def splat(self, v: Value) -> Any:
        """The Python value of a constant of any shape (every element equal), else None."""
        c = self.m.consts.get(v.id)
        return None if c is None else c[0]

    def is_const(self, v: Value) -> bool:
        return v.id in self.m.consts

    def val(self, v: Value) -> str:
        """An expression that is a Triton tensor of ``v``'s type (constants materialised)."""
        if v.id in self.names:
            return self.names[v.id]
        c = self.m.consts.get(v.id)
        if c is not None:
            value, d, shape = c
            return self.hoist(("const", py_literal(value, d), d.name, shape), self.const_expr(c))
        if self.parent is not None and v.id in self.parent.names:
            raise TileUnsupportedFeatureError(
                "a reduce/scan combining function cannot use run-time values from the enclosing kernel",
                v.owner.loc if v.owner else None)
        raise TileInternalError(f"Triton backend: value {v!r} used before definition")

    @staticmethod
    def const_expr(c: tuple) -> str:
        """A fresh Triton tensor of the constant ``c`` (value, dtype, shape)."""
        value, d, shape = c
        text = py_literal(value, d)
        if d.is_float and d.bits < 32 and d.name != "float16":  # bf16/fp8: exact value via float32
            return f"tl.full({list(shape)!r}, {text}, tl.float32).to({tl_dtype(d)})"
        return f"tl.full({list(shape)!r}, {text}, {tl_dtype(d)})"

    def lit(self, v: Value) -> str:
        """Like ``val`` but a one-element int32/float32/bool constant may stay a Python literal
        (Triton keeps the other operand's dtype for such weakly typed literals; operands of
        element-wise ops share one rank, so broadcasting is unchanged)."""
        c = self.m.consts.get(v.id)
        if c is not None and math.prod(c[2]) == 1 and c[1].name in ("int32", "float32", "bool_"):
            text = py_literal(c[0], c[1])
            return f"({text})" if text.startswith("-") else text
        return self.val(v)

    def operands(self, op: Op) -> list[str]:
        """Operand expressions for an element-wise op: literals where allowed, but never all."""
        exprs = [self.lit(v) for v in op.operands]
        if all(self.is_const(v) for v in op.operands):
            exprs[0] = self.val(op.operands[0])
        return exprs

    def array(self, v: Value) -> ArrayInfo:
        return self.m.arrays[v.id]

    # -------------------------------------------------------------- analysis
    def nonneg(self, v: Value) -> bool:
        """Whether an integer value is provably >= 0 (drops lower-bound checks, simplifies //, %)."""
        lo = self.bounds(v)[0]
        return lo is not None and lo >= 0

    def bounds(self, v: Value) -> tuple[int | None, int | None]:
        """Static (lower, upper) bounds of an integer value (bounds.py), None where unknown."""
        return value_bounds(self.m, v)

    # -------------------------------------------------------------- dtype helpers
    def cast(self, expr: str, src: dt.DType, dst: dt.DType) -> str:
        """Value conversion with safetile's astype rules."""
        if src is dst or (src.name == dst.name):
            return expr
        if dst is dt.tfloat32:
            return f"_st_round_tf32({self.cast(expr, src, dt.float32)})"
        if dst.is_bool:
            return f"({expr} != 0)"
        if dst.is_int and src.is_float:
            cd = compute_dtype(src)
            x = self.cast(expr, src, cd) if cd is not src else expr
            info = np.iinfo(dst.np_dtype)
            return (f"_st_f2i({x}, {tl_dtype(dst)}, {float(info.min)!r}, {float(info.max)!r}, "
                    f"{int(info.min)}, {int(info.max)})")
        if src is dt.tfloat32 and dst is dt.float32:
            return expr
        if dst is dt.bfloat16 and src is not dt.float64:
            return f"_st_to_bf16({self.cast(expr, src, dt.float32)})"
        return f"{expr}.to({tl_dtype(dst)})"

    def up(self, expr: str, d: dt.DType) -> str:
        """``expr`` in the compute dtype of ``d`` (16-bit floats widen to float32)."""
        cd = compute_dtype(d)
        return expr if cd.name == d.name or d is dt.tfloat32 else f"{expr}.to({tl_dtype(cd)})"

    def down(self, expr: str, d: dt.DType) -> str:
        cd = compute_dtype(d)
        if cd.name == d.name or d is dt.tfloat32:
            return expr
        return self.cast(expr, cd, d)

    # -------------------------------------------------------------- blocks and ops
    def block(self, block: Block, arg_names: list[str]) -> list[str]:
        """Emit a region's ops; returns the expressions it yields (materialised)."""
        for a, n in zip(block.args, arg_names):
            self.names[a.id] = n
        for op in block.ops:
            if op.name == "yield":
                return [self.val(v) for v in op.operands]
            self.op(op)
        return []

    def op(self, op: Op) -> None:
        if op.name in ("if", "for", "while"):
            getattr(self, "_" + op.name)(op)
            if op is self.signal_after:
                self.line("_st_gdc_launch()")
            return
        if op.name in _MEMORY_OPS and op.operands and op.operands[0].id in self.m.ordered:
            # a block is one logical thread: its accesses to an array it writes happen in program
            # order, though different threads of the block may own the lanes of each access
            self.line("tl.debug_barrier()")
        if op.name == "constant":
            self.m.consts[op.result.id] = (op.attrs["value"], op.attrs["dtype"], tuple(op.attrs["shape"]))
            return
        if self._fold(op):
            return
        emitter = EMITTERS.get(op.name)
        if emitter is None:
            raise TileInternalError(f"the Triton backend has no lowering for {op.name!r}", op.loc)
        out = emitter(self, op)
        if not op.results:
            if out is not None:
                self.line(out)
            return
        exprs = out if isinstance(out, (list, tuple)) else [out]
        for r, e in zip(op.results, exprs):
            if e is None:
                continue
            if isinstance(e, Value):  # alias of another value (no-op lowering)
                self.names[r.id] = self.val(e)
                continue
            name = self.m.fresh("v")
            self.line(f"{name} = {e}")
            self.names[r.id] = name

    def _fold(self, op: Op) -> bool:
        """Constant folding of shape changes and conversions of constants."""
        if op.name not in ("reshape", "broadcast_to", "broadcast", "astype") or not op.operands:
            return False
        c = self.m.consts.get(op.operands[0].id)
        if c is None:
            return False
        value, d, _ = c
        rt = tile_type(op.result)
        if op.name == "astype":
            with np.errstate(all="ignore"):
                value = dt.convert(np.asarray(value, dtype=d.np_dtype), rt.dtype).item()
            if rt.dtype.is_float:
                value = float(value)
        self.m.consts[op.result.id] = (value, rt.dtype, tuple(rt.shape))
        return True

    def _branch(self, region: Block, results: list[str]) -> None:
        self.depth += 1
        start = len(self.lines)
        ys = self.block(region, [])
        for r, y in zip(results, ys):
            self.line(f"{r} = {y}")
        if len(self.lines) == start:
            self.line("pass")
        self.depth -= 1

    def _if(self, op: Op) -> None:
        cond = op.operands[0]
        c = self.const(cond)
        if c is not None:  # statically known branch
            ys = self.block(op.regions[0 if c else 1], [])
            for r, y in zip(op.results, ys):
                self.names[r.id] = y
            return
        if self.vectorized:
            cexpr = self.val(cond)
            a = self.block(op.regions[0], [])
            b = self.block(op.regions[1], [])
            for r, x, y in zip(op.results, a, b):
                self.names[r.id] = self.tmp(f"tl.where({cexpr}, {x}, {y})", "v")
            return
        results = [self.m.fresh("r") for _ in op.results]
        self.line(f"if {self.val(cond)}:")
        self._branch(op.regions[0], results)
        self.line("else:")
        self._branch(op.regions[1], results)
        for r, n in zip(op.results, results):
            self.names[r.id] = n

    def _no_loops(self, op: Op) -> None:
        if self.vectorized:
            raise TileUnsupportedFeatureError("loops are not supported inside reduce/scan combining functions "
                                              "on the Triton backend", op.loc)

    def _carry(self, op: Op, inits: list[Value]) -> list[str]:
        """A variable per loop-carried value. A constant initial value is materialised afresh for
        each (compiled Triton must not see two loop variables start as one value)."""
        names = []
        for v in inits:
            n = self.m.fresh("k")
            c = self.m.consts.get(v.id)
            init = self.const_expr(c) if c is not None else self.val(v)
            self.line(f"{n} = {init}")
            names.append(n)
        return names

    def _next_values(self, carried: list[str], ys: list[str]) -> None:
        """The loop variables take the body's yielded values, all at once: a yielded value may be
        another loop variable's current value (``A = B: B = C``), which a one-by-one assignment
        would already have overwritten."""
        moves = [(c, y) for c, y in zip(carried, ys) if c != y]
        overwritten = {c for c, _ in moves}
        staged = []
        for c, y in moves:
            if y in overwritten:
                t = self.m.fresh("t")
                self.line(f"{t} = {y}")
                y = t
            staged.append((c, y))
        for c, y in staged:
            self.line(f"{c} = {y}")

    def _for(self, op: Op) -> None:
        self._no_loops(op)
        lo, hi, step = op.operands[:3]
        carried = self._carry(op, op.operands[3:])
        body = op.regions[0]
        iv = self.m.fresh("i")
        self.m.iv_range[body.args[0].id] = (lo, hi, step)
        interp = self.m.facts.target == 0  # Triton's interpreter: the induction variable is a Python int
        stop, by = self.lit(hi), self.lit(step)
        low = self.bounds(step)[0]
        if low is None or low < 1:  # a run-time step <= 0 runs no iteration (as on the CPU backend)
            by = self.tmp(f"tl.maximum({self.lit(step)}, 1)")
            stop = self.tmp(f"tl.where({self.lit(step)} > 0, {stop}, {self.lit(lo)})")
        bounds = f"{self.lit(lo)}, {stop}, {by}"
        stages = self.m.facts.loop_stages
        if self.m.facts.warp_specialize and not interp and _multiplies_tiles(body):
            self.line(f"for {iv} in tl.range({bounds}, warp_specialize=True):")
        elif stages and not interp and _streams_tiles(body):
            self.line(f"for {iv} in tl.range({bounds}, num_stages={stages}):")
        else:
            self.line(f"for {iv}{'_py' if interp else ''} in range({bounds}):")
        self.depth += 1
        start = len(self.lines)
        if interp:  # give it the IR's integer type, as compiled Triton does, so `.to(...)` works on it
            self.line(f"{iv} = tl.full((), {iv}_py, {tl_dtype(body.args[0].type.dtype)})")
        self._next_values(carried, self.block(body, [iv] + carried))
        if len(self.lines) == start:
            self.line("pass")
        self.depth -= 1
        for r, n in zip(op.results, carried):
            self.names[r.id] = n

    def _while(self, op: Op) -> None:
        self._no_loops(op)
        carried = self._carry(op, op.operands)
        cond_b, body_b = op.regions
        flag = self.m.fresh("w")
        (c,) = self.block(cond_b, carried)
        self.line(f"{flag} = {self._no_failure(c)}")
        self.line(f"while {flag}:")
        self.depth += 1
        self._next_values(carried, self.block(body_b, carried))
        (c,) = self.block(cond_b, carried)
        self.line(f"{flag} = {self._no_failure(c)}")
        self.depth -= 1
        for r, n in zip(op.results, carried):
            self.names[r.id] = n

    def _no_failure(self, cond: str) -> str:
        """A while condition that also stops the loop once an assert has failed (prints.py)."""
        if not self.m.uses_assert:
            return cond
        return f"({cond}) & (tl.load(_st_pbuf.to(tl.pointer_type(tl.int32)) + 2, volatile=True) == 0)"

    # -------------------------------------------------------------- combine functions
    def combine_function(self, region: Block, prefix: str = "_st_comb") -> str:
        """A ``@triton.jit`` function computing a reduce/scan combining region."""
        sub = Gen(self.m, vectorized=True, parent=self)
        args = [self.m.fresh("a") for _ in region.args]
        ys = sub.block(region, args)
        name = self.m.fresh(prefix)
        body = sub.hoisted + sub.lines
        src = ["@triton.jit", f"def {name}({', '.join(args)}):"] + body + [f"    return {', '.join(ys)}"]
        self.m.helpers.append("\n".join(src))
        return name


_HEAVY = frozenset({"exp", "exp2", "log", "log2", "sin", "cos", "tan", "sinh", "cosh", "tanh", "pow", "atan2",
                    "sqrt", "rsqrt", "truediv"})


def _streams_tiles(body: Block) -> bool:
    """An innermost loop that loads tiles at its top level and only does light arithmetic on
    them: its time is memory latency, which prefetching the next chunks hides. Loops with matrix
    products are pipelined by Triton itself; with transcendental functions or divisions the
    staging through shared memory cost more than it hid (H100: a chunked softmax 8 % slower,
    a chunked LayerNorm 27 % faster)."""
    ops = list(walk(body))
    if any(o.name in ("for", "while", "mma") or (o.name in _HEAVY and not _is_square(o)) for o in ops):
        return False
    return any(o.name == "load" for o in body.ops)


def _signal_after(fn: Function) -> Op | None:
    """The last top-level loop with a matrix product in it (see ``Facts.pdl``), if any."""
    loops = [op for op in fn.body.ops if op.name in ("for", "while") and products(op)]
    return loops[-1] if loops else None


def _multiplies_tiles(body: Block) -> bool:
    """An innermost loop with a matrix product and no writes: the producer/consumer shape Triton's
    warp specialisation partitions. Triton 3.6 turned a loop with an atomic update into code
    without the update (session 12), so a loop that writes keeps its plain form."""
    ops = list(walk(body))
    return (any(o.name == "mma" for o in ops) and not any(o.name in ("for", "while") for o in ops)
            and not any(OPS[o.name].effect in ("write", "io") for o in ops))


def chained_products(fn: Function) -> bool:
    """Whether a loop that warp specialisation would partition holds more than one matrix product
    (attention's QKᵀ then PV), the shape whose deeper pipelines Triton 3.6 got wrong."""
    return any(op.name == "for" and _multiplies_tiles(op.regions[0])
               and sum(o.name == "mma" for o in walk(op.regions[0])) > 1 for op in walk(fn.body))


def _is_square(op: Op) -> bool:
    """``x ** 2``, which the element-wise lowering writes as ``x * x``."""
    e = op.operands[1].owner if op.name == "pow" else None
    while e is not None and e.name in ("broadcast", "broadcast_to", "reshape", "astype"):
        e = e.operands[0].owner
    return e is not None and e.name == "constant" and e.attrs["value"] == 2


# ------------------------------------------------------------------------------ whole kernel

def kernel_name(fn: Function) -> str:
    safe = "".join(ch if ch.isalnum() or ch == "_" else "_" for ch in fn.name)
    return f"st_{safe}"


@dataclass
class Generated:
    source: str
    name: str
    params: list[str]  # kernel parameter names in order
    signature: dict[str, str]  # Triton signature type per parameter
    attrs: dict[tuple[int, ...], list]  # divisibility attributes per parameter index
    uses_print_buffer: bool  # takes the print buffer arguments (prints.py)
    uses_descriptors: bool
    gluon: bool = False  # a Gluon kernel (pingpong.py): compiled from a GluonASTSource


def kernel_params(fn: Function, facts: Facts, m: Module, g: Gen) -> tuple[list[str], dict[str, str], dict]:
    """The kernel's parameters in launch order (arrays as pointer, sizes and strides), their Triton
    signature and divisibility attributes; records each array in ``m`` and names each scalar
    parameter in ``g``."""
    from .prints import buffer_ops
    params: list[str] = []
    sig: dict[str, str] = {}
    attrs: dict[tuple[int, ...], list] = {}
    array_facts = iter(facts.arrays)

    def add(name: str, ty: str, div: int = 1) -> None:
        if div >= 8:  # Triton's alignment analysis starts from these (it specialises on 16 itself)
            attrs[(len(params),)] = [["tt.divisibility", div]]
        params.append(name)
        sig[name] = ty

    for p in fn.runtime_params:
        safe = "".join(ch if ch.isalnum() or ch == "_" else "_" for ch in p.name)
        if p.kind == "array":
            af = next(array_facts)
            atype = p.arg.type
            assert isinstance(atype, ArrayType)  # the front end types array parameters so
            info = ArrayInfo(f"{safe}", atype, af)
            m.arrays[p.arg.id] = info
            ity = "i64" if af.idx64 else "i32"
            add(info.ptr, "*" + SIG[info.dtype.name], af.ptr_align)
            for i, n in enumerate(info.size_params):
                add(n, ity, af.size_div[i])
            for i, s in enumerate(info.stride_params):
                add(s, ity, 1 if af.unit[i] else af.stride_div[i])
        else:
            name = f"{safe}_v"
            g.names[p.arg.id] = name
            add(name, SIG[p.arg.type.dtype.name])
    if facts.big_grid:
        add("_st_gx", "i32")
        add("_st_gy", "i32")
    for k, op in enumerate(buffer_ops(fn)):
        m.print_index[id(op)] = k
        m.uses_assert = m.uses_assert or op.name == "assert"
    if m.print_index:
        add("_st_pbuf", "*u8", 16)
        add("_st_pcap", "i32")
    if facts.persistent:  # after the print buffer: PersistentCall appends them innermost
        for name in ("_st_gx", "_st_gy", "_st_gz"):
            add(name, "i32")
    return params, sig, attrs


def generate(fn: Function, facts: Facts) -> Generated:
    """The Triton source of ``fn`` specialised for ``facts`` (Gluon where ``facts.pingpong`` asks
    for that schedule and the kernel has its loop shape: pingpong.py)."""
    from . import lowerings  # noqa: F401 - registers every family's emitters
    if facts.pingpong:
        from .pingpong_emit import generate_pingpong
        try:
            gen = generate_pingpong(fn, facts)
        except Exception:  # noqa: BLE001 - a hint never makes a correct kernel fail: generated as written
            gen = None
        if gen is not None:
            return gen
    fn = split_wide_k(fn) or fn
    m = Module(fn, facts)
    g = Gen(m)
    late = _signal_after(fn) if facts.pdl else None
    # a walked kernel signals after its walk: inside it, after the K loop, the walk measured 15 %
    # slower at 1024³ (H200, session 17), where the same signal after a grid block's loop cost nothing
    g.signal_after = None if facts.persistent else late
    params, sig, attrs = kernel_params(fn, facts, m, g)
    ys = g.block(fn.body, [])
    del ys
    name = kernel_name(fn)
    lines = [f"# generated by safetile (Triton backend v{CODEGEN_VERSION}) from kernel {fn.name!r}",
             "# tl, triton, _ld and the _st_* helpers come from safetile/backends/triton/prelude.py", ""]
    for h in m.helpers:
        lines += ["", h, ""]
    lines += ["", "@triton.jit", f"def {name}({', '.join(params)}):"]
    if facts.big_grid:
        lines += ["    _st_pid = tl.program_id(0)",
                  "    _st_bx = _st_pid % _st_gx",
                  "    _st_by = (_st_pid // _st_gx) % _st_gy",
                  "    _st_bz = _st_pid // (_st_gx * _st_gy)"]
    if facts.pdl:
        lines += ["    _st_gdc_wait()"] if late is not None else ["    _st_gdc_launch()", "    _st_gdc_wait()"]
    lines += g.hoisted + (wrap_body(g.lines, walk_order(fn)) if facts.persistent else g.lines)
    if late is not None and facts.persistent:
        lines.append("    _st_gdc_launch()")
    if not g.hoisted and not g.lines and not facts.pdl:
        lines.append("    pass")
    source = "\n".join(lines) + "\n"
    return Generated(source, name, params, sig, attrs, bool(m.print_index), m.uses_descriptors)
