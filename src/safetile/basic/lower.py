"""Lowering an analysed BASIC program to the tile IR.

Values
    While lowering, every BASIC variable holds either a compile-time constant (NumPy
    ``float32``/``int32`` scalars; plain Python ints are not-yet-typed literals) or a
    ``Tile`` of the variable's type. Arithmetic on constants is folded here with BASIC's
    single-precision semantics; anything involving a tile calls the public ``safetile``
    op functions (``ct.add``, ``ct.load``, ``ct.mma``, ``ct.print`` ...), so BASIC shares
    the one op catalogue with Python kernels.

Control flow
    Structured parts of a program (FOR/NEXT, WHILE/WEND and IFs that contain no GOTO,
    GOSUB, RETURN or END, and no line that is jumped to) become ``for``/``while``/``if``
    ops directly; a FOR with a constant whole step whose body leaves the loop variable
    alone becomes a counted ``for`` loop (the K loop of a GEMM). The rest is split into
    basic blocks and run by a state machine: ``while pc >= 0`` around a binary tree of
    ``if`` ops on the program counter ``pc``. A block with a single predecessor is
    inlined into it, so only jump targets with several predecessors (loop heads, join
    points, GOSUB return points) are states. GOSUB pushes the return state on a 32-entry
    stack held in an int32 tile; RETURN pops it into ``pc``. END and STOP set ``pc`` to -1.
    Loop-carried variables are the ones a body changes; variables the body sets to the
    constant they already hold (the print column after a newline) stay constants.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Callable

import numpy as np

from .. import dtypes as dt
from ..errors import SourceLoc, TileError
from ..ir.builder import Builder, building
from ..ir.core import Block, Function, Param, Value
from ..ir.types import ArrayType, TileType
from ..ir.verify import verify
from ..ops import debug as dbg
from ..ops import elementwise as ew
from ..ops import factories as fac
from ..ops import grid as grd
from ..ops import matmul as mm
from ..ops import memory as mem
from ..ops import reduction as red
from ..ops import shape as shp
from ..ops.values import Array, Tile, as_tile
from . import ast as A
from .analyzer import (Analysis, ArrayInfo, ForNode, IfNode, LineMark, SimpleNode, WhileNode, assigned_in,
                       walk_nodes, node_stmts, walk_stmts)
from .errors import BasicError
from .printing import FLOAT_SPEC, INT_SPEC, ZONE, format_float, format_int

INT, FLOAT, BOOL, U32 = dt.int32, dt.float32, dt.bool_, dt.uint32
STACK_DEPTH = 32
MAX_INLINE_DEPTH = 32
_INT_MIN, _INT_MAX = -(2 ** 31), 2 ** 31 - 1
_CMP = {"=": "equal", "<>": "not_equal", "<": "less", ">": "greater", "<=": "less_equal", ">=": "greater_equal"}
_CMP_PY = {"=": np.equal, "<>": np.not_equal, "<": np.less, ">": np.greater, "<=": np.less_equal,
           ">=": np.greater_equal}
_CONTROL = (A.Goto, A.Gosub, A.Return, A.OnGoto, A.End)


def param_name(name: str) -> str:
    """A Python-identifier form of a BASIC name, for kernel parameter names."""
    return name.replace("%", "_int").replace("!", "_sgl").replace("$", "_str").replace("#", "_dbl")


# ----------------------------------------------------------------------------- constants

def is_tile(v) -> bool:
    return isinstance(v, Tile)


def wrap32(v: int) -> int:
    return (int(v) + 2 ** 31) % 2 ** 32 - 2 ** 31


def round_half_up(v) -> int:
    f = float(v)
    if math.isnan(f):
        return 0
    if math.isinf(f):
        return _INT_MAX if f > 0 else _INT_MIN
    return int(math.floor(f + 0.5))


def const_kind(v) -> str:
    if isinstance(v, (bool, np.bool_)):
        return "bool"
    if isinstance(v, int):
        return "loose"
    if isinstance(v, np.integer):
        return "int"
    return "float"


def same(a, b) -> bool:
    if a is b:
        return True
    if is_tile(a) or is_tile(b):
        return False
    return type(a) is type(b) and bool(a == b)


# ----------------------------------------------------------------------------- control-flow graph

@dataclass
class CfgBlock:
    id: int
    stmts: list = field(default_factory=list)  # callables lowering straight-line code
    term: tuple = ("halt",)
    preds: int = 0
    dynamic: bool = False
    reachable: bool = False
    state: int | None = None


class Lowerer:
    def __init__(self, an: Analysis):
        self.an = an
        self.src = an.src
        self.builder = Builder()
        self.body = Block()
        self.params: list[Param] = []
        self.param_names: dict[str, str] = {}  # param name -> BASIC name / role
        self.env: dict[str, Any] = {}
        self.types: dict[str, TileType] = {}
        self.kernel_arrays: dict[str, Array] = {}
        self.local_arrays: dict[str, Array] = {}
        self.array_dims: dict[str, list] = {}
        self.data_array: Array | None = None
        self.seed: Tile | None = None
        self.bid: Any = 0
        self.line: int | None = None
        self.pos: A.Pos | None = None
        self.multi_block = bool(an.outputs)
        self.zones = an.uses_zones
        self.machine = False
        self.states: list[CfgBlock] = []
        self.flat_fors: list[ForNode] = []
        self.int_shadow: dict[int, Tile] = {}
        self.locs: dict[tuple, SourceLoc] = {}
        self.index_vars: set[str] = set()
        from .analyzer import stmt_exprs, walk_exprs
        for ln in an.program.lines:
            for st in walk_stmts(ln.stmts):
                for e in stmt_exprs(st):
                    for x in walk_exprs(e):
                        if isinstance(x, A.Index):
                            for arg in x.args:
                                self.index_vars |= {y.name for y in walk_exprs(arg) if isinstance(y, A.Var)}
        self.labels: dict[Any, CfgBlock] = {}

    # ------------------------------------------------------------------ errors and locations

    def loc(self, pos: A.Pos | None) -> SourceLoc | None:
        if pos is None:
            return None
        loc = self.locs.get(pos)
        if loc is None:
            loc = self.locs[pos] = self.src.loc(pos[0], pos[1], pos[2])
        return loc

    def error(self, message: str, pos: A.Pos | None = None) -> BasicError:
        pos = pos or self.pos
        return BasicError(message, self.loc(pos), self.line)

    def at(self, pos: A.Pos, fn: Callable, *args):
        """Run ``fn`` with the builder located at ``pos``; tile errors become BASIC errors there."""
        saved = self.builder.loc, self.pos
        self.builder.loc = self.loc(pos)
        self.pos = pos
        try:
            return fn(*args)
        except BasicError:
            raise
        except TileError as e:
            raise self.error(e.message, pos) from None
        finally:
            self.builder.loc, self.pos = saved

    def where_text(self) -> str:
        return f" in line {self.line}" if self.line is not None else ""

    # ------------------------------------------------------------------ parameters

    def add_param(self, name: str, kind: str, type_, role: str) -> Value:
        pname = param_name(name)
        v = Value(type_, hint=pname)
        self.body.args.append(v)
        self.params.append(Param(pname, kind, value=v))
        self.param_names[pname] = role
        return v

    def prologue(self) -> None:
        an = self.an
        for item in an.inputs:
            if isinstance(item, ArrayInfo):
                v = self.add_param(item.name, "array", ArrayType(item.dtype, item.ndim), item.name)
                self.kernel_arrays[item.name] = Array(v, item.name)
            else:
                v = self.add_param(item.name, "scalar", TileType(item.dtype, ()), item.name)
                self.env[item.name] = Tile(v)
        for arr in an.outputs:
            if arr.name not in self.kernel_arrays:
                v = self.add_param(arr.name, "array", ArrayType(arr.dtype, arr.ndim), arr.name)
                self.kernel_arrays[arr.name] = Array(v, arr.name)
        if an.uses_data:
            v = self.add_param("__data", "array", ArrayType(dt.float64, 1), "DATA")
            self.data_array = Array(v, "__data")
        for arr in an.arrays.values():
            if arr.is_local:
                v = self.add_param("__local_" + arr.name, "array", ArrayType(arr.dtype, arr.ndim + 1),
                                   "local " + arr.name)
                self.local_arrays[arr.name] = Array(v, arr.name)
        if an.uses_rnd:
            v = self.add_param("__seed", "scalar", TileType(INT, ()), "seed")
            self.seed = Tile(v)
        # values every region may use are made here, in the entry block
        if self.multi_block:
            self.bid = grd.bid(0)
        for name, arr in an.arrays.items():
            if arr.is_local:
                a = self.local_arrays[name]
                self.array_dims[name] = [np.int32(s + 1) if s is not None else mem.array_dim(a, k + 1)
                                         for k, s in enumerate(arr.static_sizes)]
            elif arr.tile is None:
                a = self.kernel_arrays[name]
                self.array_dims[name] = [mem.array_dim(a, k) for k in range(arr.ndim)]
        # variables: uninitialised = 0
        for name, t in an.var_types.items():
            self.types[name] = t
            if name not in an.scalar_inputs:
                self.env[name] = self.zero(t)
        hidden = {"$pc": TileType(INT, ()), "$dp": TileType(INT, ()), "$col": TileType(INT, ()), "$sp": TileType(INT, ()),
                  "$stk": TileType(INT, (STACK_DEPTH,)), "$rk": TileType(U32, ()), "$rn": TileType(U32, ()),
                  "$rl": TileType(FLOAT, ()), "$rv": TileType(FLOAT, ())}
        self.types.update(hidden)
        if an.uses_data:
            self.env["$dp"] = np.int32(0)
        if self.zones:
            self.env["$col"] = np.int32(0)
        if an.uses_gosub:
            self.env["$sp"] = np.int32(0)
            self.env["$stk"] = np.int32(0)
        if an.uses_rnd:
            self.env["$rk"] = self.rnd_key(ew.astype(self.seed, U32))
            self.env["$rn"] = np.uint32(0)
            self.env["$rl"] = np.float32(0)
            self.env["$rv"] = np.float32(0)

    def zero(self, t: TileType):
        return np.int32(0) if t.dtype.is_int else np.float32(0)

    # ------------------------------------------------------------------ value conversions

    def numeric(self, v):
        """Booleans used as numbers are -1 (true) and 0 (false), as in classic BASIC."""
        if is_tile(v):
            if v.dtype.is_bool:
                return ew.where(v, -1, 0)
            return v
        if isinstance(v, (bool, np.bool_)):
            return -1 if v else 0
        return v

    def tile_operand(self, v):
        """A constant made safe to meet a tile: huge literals become float32."""
        v = self.numeric(v)
        if isinstance(v, int) and not _INT_MIN <= v <= _INT_MAX:
            return np.float32(v)
        return v

    def truth(self, v):
        if is_tile(v):
            if v.shape != ():
                raise self.error("a condition must be a number, not a tile")
            return v if v.dtype.is_bool else ew.not_equal(v, 0)
        return bool(self.numeric(v) != 0)

    def to_float(self, v):
        v = self.numeric(v)
        if is_tile(v):
            return v if v.dtype.is_float else ew.astype(v, FLOAT)
        return np.float32(v)

    def to_int(self, v):
        """Round to the nearest integer (halves up), as assignment to a % variable does."""
        v = self.numeric(v)
        if is_tile(v):
            if v.dtype.is_float:
                return ew.astype(ew.floor(ew.add(v, 0.5)), INT)
            return v if v.dtype is INT else ew.astype(v, INT)
        return np.int32(wrap32(round_half_up(v)))

    def to_index(self, v):
        """A subscript or tile index: floored like INT, as an int32 scalar."""
        v = self.numeric(v)
        if is_tile(v):
            if v.dtype.is_int:
                return v if v.dtype is INT else ew.astype(v, INT)
            shadow = self.int_shadow.get(v.value.id)
            if shadow is not None:
                return shadow
            src = v.value.owner
            if src is not None and src.name == "astype" and src.operands[0].type.dtype.is_int:
                return Tile(src.operands[0]) if src.operands[0].type.dtype is INT else ew.astype(v, INT)
            if src is not None and src.name in ("floor", "ceil"):
                return ew.astype(v, INT)  # already whole
            return ew.astype(ew.floor(v), INT)
        f = float(v)
        if math.isnan(f) or math.isinf(f):
            return np.int32(-1)
        return np.int32(max(_INT_MIN, min(_INT_MAX, math.floor(f))))

    def to_type(self, v, t: TileType):
        """Convert a value for storage in a variable (or array) of type ``t``."""
        if t.dtype.is_bool:  # internal flags
            return self.truth(v)
        v = self.numeric(v)
        if not is_tile(v):
            if t.dtype.is_int:
                return np.int32(wrap32(round_half_up(v))) if t.dtype is INT else t.dtype.np_dtype.type(
                    round_half_up(v))
            return np.float32(v)
        if t.dtype.is_int and v.dtype.is_float:
            v = ew.astype(ew.floor(ew.add(v, 0.5)), t.dtype)
        elif v.dtype is not t.dtype:
            v = ew.astype(v, t.dtype)
        if v.shape != t.shape:
            v = shp.broadcast_to(v, t.shape)
        return v

    def materialize(self, v, t: TileType) -> Tile:
        v = self.to_type(v, t)
        if is_tile(v):
            return v
        if t.shape:
            return fac.full(t.shape, v, t.dtype)
        return as_tile(v, t.dtype)

    def assign(self, name: str, v) -> None:
        v = self.to_type(v, self.types[name])
        self.env[name] = v
        if is_tile(v) and v.shape == () and v.dtype.is_float and name in self.index_vars:
            # a float variable used in subscripts: convert it once, where it is defined, rather
            # than at every use inside loops (unused conversions are removed after lowering)
            self.int_shadow[v.value.id] = self.to_index(v)

    # ------------------------------------------------------------------ structured control flow

    def emit_if(self, cond, then_fn: Callable, else_fn: Callable) -> None:
        if not is_tile(cond):
            (then_fn if cond else else_fn)()
            return
        before = dict(self.env)
        envs, blocks = [], []
        for fn in (then_fn, else_fn):
            self.env = dict(before)
            block = Block()
            with self.builder.inside(block):
                fn()
            envs.append(self.env)
            blocks.append(block)
        names = [n for n in dict.fromkeys([*envs[0], *envs[1]])
                 if not same(envs[0].get(n), before.get(n)) or not same(envs[1].get(n), before.get(n))]
        merged, yields, rtypes = {}, ([], []), []
        keep = []
        for n in names:
            a, b = envs[0].get(n), envs[1].get(n)
            if a is None or b is None:
                continue
            if same(a, b):
                merged[n] = a
                continue
            t = self.types[n]
            for k, (v, block) in enumerate(zip((a, b), blocks)):
                with self.builder.inside(block):
                    yields[k].append(self.materialize(v, t))
            rtypes.append(t)
            keep.append(n)
        for ys, block in zip(yields, blocks):
            with self.builder.inside(block):
                self.builder.emit("yield", [y.value for y in ys])
        op = self.builder.emit("if", [cond.value], {"result_types": tuple(rtypes)}, regions=blocks)
        self.env = dict(before)
        self.env.update(merged)
        for n, r in zip(keep, op.results):
            self.env[n] = Tile(r)

    def emit_loop(self, kind: str, assigned: set[str], optimistic: set[str], cond_fn: Callable | None,
                  body_fn: Callable, bounds: list[Tile] | None = None, iv_type: TileType | None = None,
                  ignore: tuple = ()) -> None:
        """A ``while`` (cond_fn, body_fn) or ``for`` (bounds, body_fn(iv)) op carrying the
        variables the body changes. Variables in ``optimistic`` holding constants are first
        assumed unchanged; the body is lowered again (carrying them) if that was wrong."""
        entry = dict(self.env)
        carried = [n for n in entry if n in assigned and not (n in optimistic and not is_tile(entry[n]))]
        for _ in range(len(entry) + 2):
            attempt = self._loop_attempt(kind, entry, carried, cond_fn, body_fn, iv_type)
            out_env = attempt[2]
            changed = [n for n in entry if n not in carried and n not in ignore
                       and not same(out_env.get(n), entry[n])]
            if not changed:
                break
            carried = [n for n in entry if n in carried or n in changed]
        else:  # pragma: no cover - each round carries at least one more variable
            raise self.error("internal error: loop-carried variables do not settle")
        cond_block, body_block, _ = attempt
        self.env = dict(entry)
        init = [self.materialize(entry[n], self.types[n]).value for n in carried]
        rtypes = tuple(self.types[n] for n in carried)
        if kind == "for":
            op = self.builder.emit("for", [b.value for b in bounds] + init, {"result_types": rtypes},
                                   regions=[body_block])
        else:
            op = self.builder.emit("while", init, {"result_types": rtypes}, regions=[cond_block, body_block])
        for n, r in zip(carried, op.results):
            self.env[n] = Tile(r)

    def _loop_attempt(self, kind, entry, carried, cond_fn, body_fn, iv_type):
        cond_block = None
        if kind == "while":
            cond_block = Block([Value(self.types[n], hint=param_name(n.strip("$"))) for n in carried])
            self.env = dict(entry)
            for n, a in zip(carried, cond_block.args):
                self.env[n] = Tile(a)
            with self.builder.inside(cond_block):
                c = cond_fn()
                if not is_tile(c):
                    c = as_tile(bool(c), BOOL)
                self.builder.emit("yield", [c.value])
        args = [Value(self.types[n], hint=param_name(n.strip("$"))) for n in carried]
        iv = None
        if kind == "for":
            iv = Value(iv_type, hint="iv")
            args = [iv] + args
        body_block = Block(args)
        self.env = dict(entry)
        for n, a in zip(carried, args[1:] if kind == "for" else args):
            self.env[n] = Tile(a)
        with self.builder.inside(body_block):
            if kind == "for":
                body_fn(Tile(iv))
            else:
                body_fn()
            ys = [self.materialize(self.env[n], self.types[n]) for n in carried]
            self.builder.emit("yield", [y.value for y in ys])
        out_env = self.env
        return cond_block, body_block, out_env

    # ------------------------------------------------------------------ expressions

    def ev(self, e: A.Expr):
        method = getattr(self, "ev_" + type(e).__name__)
        return self.at(e.pos, method, e)

    def ev_Num(self, e: A.Num):
        if isinstance(e.value, int):
            return e.value
        return np.float32(e.value)

    def ev_Str(self, e: A.Str):
        raise self.error("strings can only be printed")

    def ev_Var(self, e: A.Var):
        t = self.types.get(e.name, TileType(FLOAT, ()))
        v = self.env.get(e.name)
        if v is None:
            v = self.zero(t)
        if t.shape and not is_tile(v):
            return self.materialize(v, t)  # a tile variable holding one value is still a tile
        return v

    def ev_Bid(self, e: A.Bid):
        return self.bid

    def ev_Unary(self, e: A.Unary):
        v = self.ev(e.operand)
        if e.op == "NOT":
            if is_tile(v) and v.dtype.is_bool:
                return ew.bitwise_not(v)
            if isinstance(v, (bool, np.bool_)):
                return not v
            if is_tile(v):
                return ew.bitwise_not(self.to_int(v))
            return np.int32(wrap32(~int(self.to_int(v))))
        v = self.numeric(v)
        if is_tile(v):
            return ew.negative(v)
        if const_kind(v) == "int":
            return np.int32(wrap32(-int(v)))
        return -v

    def ev_Binary(self, e: A.Binary):
        a = self.ev(e.left)
        b = self.ev(e.right)
        if is_tile(a) or is_tile(b):
            return self.tile_binary(e.op, a, b)
        return self.fold_binary(e.op, a, b)

    def fold_binary(self, op: str, a, b):
        if op in ("AND", "OR", "XOR"):
            if isinstance(a, (bool, np.bool_)) and isinstance(b, (bool, np.bool_)):
                return {"AND": bool(a) and bool(b), "OR": bool(a) or bool(b), "XOR": bool(a) != bool(b)}[op]
            ia, ib = int(self.to_int(a)), int(self.to_int(b))
            r = {"AND": ia & ib, "OR": ia | ib, "XOR": ia ^ ib}[op]
            return np.int32(wrap32(r))
        a, b = self.numeric(a), self.numeric(b)
        ka, kb = const_kind(a), const_kind(b)
        with np.errstate(all="ignore"):
            if op in _CMP_PY:
                if "float" in (ka, kb):
                    return bool(_CMP_PY[op](np.float32(a), np.float32(b)))
                return bool(_CMP_PY[op](int(a), int(b)))
            if op == "/":
                return np.float32(np.float32(a) / np.float32(b))
            if op == "^":
                return np.float32(np.power(np.float32(a), np.float32(b)))
            if "float" in (ka, kb):
                fa, fb = np.float32(a), np.float32(b)
                if op == "+":
                    return np.float32(fa + fb)
                if op == "-":
                    return np.float32(fa - fb)
                if op == "*":
                    return np.float32(fa * fb)
                if op == "MOD":
                    return np.float32(np.fmod(fa, fb))
                if op == "\\":
                    return np.float32(np.trunc(fa / fb))
            ia, ib = int(a), int(b)
            if op == "+":
                r = ia + ib
            elif op == "-":
                r = ia - ib
            elif op == "*":
                r = ia * ib
            elif op == "MOD":
                r = 0 if ib == 0 else ia - ib * _trunc_div(ia, ib)
            elif op == "\\":
                r = 0 if ib == 0 else _trunc_div(ia, ib)
            else:  # pragma: no cover - the parser makes no other operators
                raise self.error(f"internal error: operator {op}")
        if "int" in (ka, kb):
            return np.int32(wrap32(r))
        return r

    def tile_binary(self, op: str, a, b):
        if op in ("AND", "OR", "XOR"):
            fn = {"AND": ew.bitwise_and, "OR": ew.bitwise_or, "XOR": ew.bitwise_xor}[op]
            a_bool = (is_tile(a) and a.dtype.is_bool) or isinstance(a, (bool, np.bool_))
            b_bool = (is_tile(b) and b.dtype.is_bool) or isinstance(b, (bool, np.bool_))
            if a_bool and b_bool:
                return fn(a if is_tile(a) else bool(a), b if is_tile(b) else bool(b))
            return fn(self.to_int(a), self.to_int(b))
        a, b = self.tile_operand(a), self.tile_operand(b)
        if op in _CMP:
            return getattr(ew, _CMP[op])(a, b)
        if op == "+":
            return ew.add(a, b)
        if op == "-":
            return ew.sub(a, b)
        if op == "*":
            return ew.mul(a, b)
        if op == "/":
            return ew.truediv(a, b)
        if op == "^":
            return ew.pow(self.to_float(a), self.to_float(b))
        if op == "MOD":
            r = ew.mod(a, b)  # sign of b; BASIC's MOD takes the sign of a
            fix = ew.bitwise_and(ew.not_equal(r, 0), ew.not_equal(ew.less(r, 0), ew.less(a, 0)))
            return ew.where(fix, ew.sub(r, b), r)
        if op == "\\":
            if (is_tile(a) and a.dtype.is_float) or (is_tile(b) and b.dtype.is_float) or \
                    const_kind(a) == "float" or const_kind(b) == "float":
                return self.fix(ew.truediv(a, b))
            q = ew.floordiv(a, b)
            exact = ew.equal(ew.mul(q, b), a)
            return ew.where(ew.bitwise_and(ew.less(q, 0), ew.bitwise_not(exact)), ew.add(q, 1), q)
        raise self.error(f"internal error: operator {op}")  # pragma: no cover

    def fix(self, v):
        return ew.where(ew.less(v, 0), ew.ceil(v), ew.floor(v))

    def ev_Index(self, e: A.Index):
        arr = self.an.arrays[e.name]
        idx = [self.to_index(self.ev(a)) for a in e.args]
        if arr.tile is not None:
            return mem.load(self.kernel_arrays[e.name], index=tuple(idx), shape=arr.tile,
                            padding_mode=mem.PaddingMode.ZERO)
        array, full = self.element_ref(e, arr, idx)
        return mem.gather(array, tuple(full))

    def element_ref(self, e: A.Index, arr: ArrayInfo, idx: list):
        """The array and full index of an element, checking the subscripts at run time."""
        dims = self.array_dims[e.name]
        conds, static_bad = [], False
        for i, n in zip(idx, dims):
            if is_tile(i) or is_tile(n):
                conds.append(ew.bitwise_and(ew.greater_equal(i, 0), ew.less(i, n)))
            elif not 0 <= int(i) < int(n):
                static_bad = True
        if static_bad or conds:
            shown = ", ".join(A.expr_text(a) for a in e.args)
            msg = f"subscript out of range: {e.name}({shown}){self.where_text()}"
            if arr.is_local and all(s is not None for s in arr.static_sizes):
                msg += f" (DIM {e.name}({', '.join(str(s) for s in arr.static_sizes)}))"
            if static_bad:
                dbg.assert_(as_tile(False, BOOL), msg)
            else:
                ok = conds[0]
                for c in conds[1:]:
                    ok = ew.bitwise_and(ok, c)
                dbg.assert_(ok, msg)
        if arr.is_local:
            return self.local_arrays[e.name], [self.bid] + idx
        return self.kernel_arrays[e.name], idx

    def store_index(self, target: A.Index, value) -> None:
        arr = self.an.arrays[target.name]
        idx = [self.to_index(self.ev(a)) for a in target.args]
        if arr.tile is not None:
            tile = self.materialize(value, TileType(arr.dtype, arr.tile))
            mem.store(self.kernel_arrays[target.name], index=tuple(idx), tile=tile)
            return
        array, full = self.element_ref(target, arr, idx)
        v = self.materialize(value, TileType(arr.dtype, ()))
        mem.scatter(array, tuple(full), v)

    def ev_Call(self, e: A.Call):
        name = e.name
        if name == "RND":
            return self.rnd(e)
        if name == "MMA":
            return self.mma(e)
        args = [self.ev(a) for a in e.args]
        if name in ("MIN", "MAX"):
            a, b = (self.numeric(x) for x in args)
            if not is_tile(a) and not is_tile(b):
                fa, fb = (np.float32(x) if "float" in (const_kind(a), const_kind(b)) else x for x in (a, b))
                return min(fa, fb) if name == "MIN" else max(fa, fb)
            a, b = self.tile_operand(a), self.tile_operand(b)
            return ew.minimum(a, b) if name == "MIN" else ew.maximum(a, b)
        (x,) = args
        x = self.numeric(x)
        if not is_tile(x):
            return self.fold_call(name, x)
        if name == "SUM":
            return red.sum(x) if x.shape else x
        if name == "ABS":
            return ew.abs(x)
        if name == "INT":
            return ew.floor(x) if x.dtype.is_float else x
        if name == "FIX":
            return self.fix(x) if x.dtype.is_float else x
        if name == "SGN":
            return ew.where(ew.greater(x, 0), 1, ew.where(ew.less(x, 0), -1, 0))
        if name == "SQR":
            return ew.sqrt(x)
        if name == "ATN":
            x = self.to_float(x)
            return ew.atan2(x, 1.0)
        fn = {"SIN": ew.sin, "COS": ew.cos, "TAN": ew.tan, "EXP": ew.exp, "LOG": ew.log}[name]
        return fn(x)

    def fold_call(self, name: str, x):
        k = const_kind(x)
        with np.errstate(all="ignore"):
            if name in ("SUM",):
                return x
            if name == "ABS":
                return abs(x) if k != "int" else np.int32(wrap32(abs(int(x))))
            if name == "INT":
                return np.float32(np.floor(x)) if k == "float" else x
            if name == "FIX":
                return np.float32(np.trunc(x)) if k == "float" else x
            if name == "SGN":
                return np.int32(int(x > 0) - int(x < 0))
            f = np.float32(x)
            if name == "SQR":
                return np.float32(np.sqrt(f))
            if name == "ATN":
                return np.float32(np.arctan(f))
            return np.float32({"SIN": np.sin, "COS": np.cos, "TAN": np.tan, "EXP": np.exp, "LOG": np.log}[name](f))

    def mma(self, e: A.Call):
        a, b, acc = (self.ev(x) for x in e.args)
        if not (is_tile(a) and a.ndim == 2 and is_tile(b) and b.ndim == 2):
            raise self.error("MMA needs two 2-D tiles, e.g. MMA(A(I, K), B(K, J), ACC)")
        if a.dtype is not b.dtype:
            d = dt.promote(a.dtype, b.dtype)
            a, b = ew.astype(a, d), ew.astype(b, d)
        out = (a.shape[0], b.shape[1])
        allowed = mm.MMA_ACC.get(a.dtype.name, ())
        if not allowed:
            raise self.error(f"MMA of {a.dtype.name} tiles is not supported")
        acc_d = acc.dtype if is_tile(acc) else (INT if a.dtype.is_int else FLOAT)
        if acc_d.name not in allowed:
            acc_d = dt.as_dtype(allowed[-1])
        acc_t = self.materialize(acc, TileType(acc_d, out))
        return mm.emit_mma(a, b, acc_t)

    # ------------------------------------------------------------------ random numbers

    def mix32(self, h: Tile) -> Tile:
        h = ew.bitwise_xor(h, ew.bitwise_rshift(h, 16))
        h = ew.mul(h, 0x85EBCA6B)
        h = ew.bitwise_xor(h, ew.bitwise_rshift(h, 13))
        h = ew.mul(h, 0xC2B2AE35)
        return ew.bitwise_xor(h, ew.bitwise_rshift(h, 16))

    def rnd_key(self, seed_u32: Tile) -> Tile:
        b = ew.astype(as_tile(self.bid, INT) if not is_tile(self.bid) else self.bid, U32)
        h = ew.add(ew.add(ew.mul(seed_u32, 0x9E3779B9), ew.mul(b, 0x85EBCA6B)), 0x27D4EB2F)
        return self.mix32(h)

    def rnd_next(self) -> None:
        n = ew.add(self.materialize(self.env["$rn"], TileType(U32, ())), 1)
        h = self.mix32(ew.add(self.env["$rk"], ew.mul(n, 0x9E3779B9)))
        r = ew.truediv(ew.astype(ew.bitwise_rshift(h, 8), FLOAT), 16777216.0)
        self.env["$rn"] = n
        self.env["$rl"] = r
        self.env["$rv"] = r

    def rnd_reseed(self, x) -> None:
        bits = ew.bitcast(self.materialize(x, TileType(FLOAT, ())), U32)
        self.env["$rk"] = self.mix32(ew.add(ew.mul(bits, 0x9E3779B9), 0x165667B1))
        self.env["$rn"] = np.uint32(0)

    def rnd(self, e: A.Call):
        if e.args:
            x = self.numeric(self.ev(e.args[0]))
            if not is_tile(x):
                if x == 0:
                    return self.env["$rl"]
                if x < 0:
                    self.rnd_reseed(x)
                self.rnd_next()
                return self.env["$rv"]
            xf = self.to_float(x)
            self.emit_if(ew.less(xf, 0), lambda: (self.rnd_reseed(xf), self.rnd_next()),
                         lambda: self.emit_if(ew.equal(xf, 0), lambda: self.env.__setitem__("$rv", self.env["$rl"]),
                                              self.rnd_next))
            return self.env["$rv"]
        self.rnd_next()
        return self.env["$rv"]

    # ------------------------------------------------------------------ statements

    def stmt(self, s: A.Stmt) -> None:
        self.line = s.line
        method = getattr(self, "st_" + type(s).__name__, None)
        if method is None:
            return
        self.at(s.pos, method, s)

    def st_Let(self, s: A.Let) -> None:
        v = self.ev(s.expr)
        if isinstance(s.target, A.Var):
            self.at(s.target.pos, self.assign, s.target.name, v)
        else:
            self.at(s.target.pos, self.store_index, s.target, v)

    def st_Read(self, s: A.Read) -> None:
        n = len(self.an.data)
        for tgt in s.targets:
            dp = self.env["$dp"]
            if not is_tile(dp):
                k = int(dp)
                if 0 <= k < n:
                    v = self.an.data[k][0]
                    v = v if isinstance(v, int) else np.float32(v)
                else:
                    dbg.assert_(as_tile(False, BOOL), f"out of DATA{self.where_text()}")
                    v = 0
            else:
                dbg.assert_(ew.less(dp, n), f"out of DATA{self.where_text()}")
                v = mem.gather(self.data_array, dp)
            self.env["$dp"] = np.int32(int(dp) + 1) if not is_tile(dp) else ew.add(dp, 1)
            if isinstance(tgt, A.Var):
                self.at(tgt.pos, self.assign, tgt.name, v)
            else:
                self.at(tgt.pos, self.store_index, tgt, v)

    def st_Restore(self, s: A.Restore) -> None:
        if "$dp" not in self.env:
            return
        start = 0 if s.target is None else self.an.data_start.get(s.target, len(self.an.data))
        self.env["$dp"] = np.int32(start)

    def st_Randomize(self, s: A.Randomize) -> None:
        if s.seed is None:
            self.env["$rk"] = self.rnd_key(ew.astype(self.seed, U32))
        else:
            x = self.to_int(self.ev(s.seed))
            self.env["$rk"] = self.rnd_key(ew.astype(self.materialize(x, TileType(INT, ())), U32))
        self.env["$rn"] = np.uint32(0)

    # ------------------------------------------------------------------ PRINT

    def st_Print(self, s: A.Print) -> None:
        """PRINT: ``;`` joins items, ``,`` moves to the next 14-column zone, a trailing
        separator keeps the line open. Numbers print with a sign position and a trailing
        space. A comma right after a number whose trailing space ends exactly on a zone
        boundary stays there (so a number at a zone start plus its comma is exactly one
        zone, which one printf field expresses); otherwise a comma always advances."""
        zones = self.zones
        col = self.env["$col"] if zones else np.int32(0)
        parts: list = []

        def flush(end: str = "") -> None:
            if parts or end:
                dbg.print(dbg.FormatString(list(parts)), end=end)
                parts.clear()

        def add_col(k) -> None:
            nonlocal col
            if not zones:
                return
            if not is_tile(col) and not is_tile(k):
                col = np.int32(int(col) + int(k))
            else:
                col = ew.add(col, k)

        def spaces(n, limit: int = 255) -> None:
            if not is_tile(n):
                k = max(int(n), 0)
                parts.append(" " * k)
                add_col(k)
                return
            flush()
            n = ew.minimum(ew.maximum(n, 0), limit)
            bit = 1 << (limit.bit_length() - 1)
            while bit:
                self.emit_if(ew.not_equal(ew.bitwise_and(n, bit), 0),
                             lambda bit=bit: dbg.print(" " * bit, end=""), lambda: None)
                bit >>= 1
            add_col(n)

        items = s.items
        last = "start"  # kind of the last item: start | num | text | comma
        absorbed = False
        for k, it in enumerate(items):
            nxt = items[k + 1] if k + 1 < len(items) else None
            next_comma = isinstance(nxt, A.PrintSep) and nxt.sep == ","
            if isinstance(it, A.PrintSep):
                if it.sep == ",":
                    if absorbed:
                        absorbed = False
                    elif zones:
                        if not is_tile(col):
                            r = int(col) % ZONE
                            pad = (ZONE - r) % ZONE if last == "num" else ZONE - r
                        else:
                            r = ew.mod(col, ZONE)
                            pad = ew.sub(ZONE, r)
                            if last == "num":
                                pad = ew.mod(pad, ZONE)
                        self.at(it.pos, spaces, pad, ZONE)
                    last = "comma"
                continue
            absorbed = False
            if isinstance(it, A.Str):
                parts.append(it.value)
                add_col(len(it.value))
                last = "text"
                continue
            if isinstance(it, A.PrintFn):
                n = self.to_int(self.ev(it.arg))
                if it.fn == "SPC":
                    self.at(it.pos, spaces, n)
                else:  # TAB(n): move to column n (1-based) unless already past it
                    target = ew.sub(n, 1) if is_tile(n) else int(n) - 1
                    pad = ew.sub(target, col) if is_tile(target) or is_tile(col) else target - int(col)
                    self.at(it.pos, spaces, pad)
                last = "text"
                continue
            last = "num"
            v = self.numeric(self.ev(it))
            at_zone = zones and next_comma and not is_tile(col) and int(col) % ZONE == 0
            if not is_tile(v):
                text = (format_int(v) if const_kind(v) == "int" else format_float(v)) + " "
                if at_zone and len(text) <= ZONE:
                    text = text.ljust(ZONE)
                    absorbed = True
                parts.append(text)
                add_col(len(text))
                continue
            if v.shape != ():
                parts.append((v, ""))
                parts.append(" ")
                col = np.int32(0)
                continue
            is_int = v.dtype.is_int
            if is_int:
                v = v if v.dtype is INT else ew.astype(v, INT)
            else:
                v = ew.add(v if v.dtype is FLOAT else ew.astype(v, FLOAT), np.float32(0.0))
            if at_zone:
                parts.append((v, "% -13d" if is_int else "% -13.7G"))
                parts.append(" ")
                add_col(ZONE)
                absorbed = True
                continue
            parts.append((v, INT_SPEC if is_int else FLOAT_SPEC))
            parts.append(" ")
            if zones:
                add_col(ew.add(self.int_len(v) if is_int else self.float_len(v), 1))
        newline = not items or not isinstance(items[-1], A.PrintSep)
        flush("\n" if newline else "")
        if zones:
            self.env["$col"] = np.int32(0) if newline else (col if is_tile(col) else np.int32(col))

    def float_len(self, v: Tile) -> Tile:
        """The width of ``% .7G`` for a float32 scalar (see printing.float_len_reference)."""
        F64 = dt.float64
        x = ew.astype(v, F64)
        a = ew.abs(x)
        finite = ew.bitwise_and(ew.bitwise_not(ew.isnan(a)), ew.less(a, math.inf))
        nz = ew.bitwise_and(finite, ew.greater(a, 0.0))
        safe = ew.where(nz, a, 1.0)
        e = ew.floor(ew.truediv(ew.log(safe), math.log(10.0)))
        p = ew.pow(10.0, e)
        e = ew.where(ew.greater_equal(safe, ew.mul(p, 10.0)), ew.add(e, 1.0),
                     ew.where(ew.less(safe, p), ew.sub(e, 1.0), e))
        raw = ew.where(ew.greater_equal(e, 6.0), ew.truediv(safe, ew.pow(10.0, ew.maximum(ew.sub(e, 6.0), 0.0))),
                       ew.mul(safe, ew.pow(10.0, ew.maximum(ew.sub(6.0, e), 0.0))))
        fl = ew.floor(raw)
        diff = ew.sub(raw, fl)
        n = ew.where(ew.greater(diff, 0.5), ew.add(fl, 1.0),
                     ew.where(ew.less(diff, 0.5), fl, ew.add(fl, ew.mod(fl, 2.0))))
        bump = ew.greater_equal(n, 1e7)
        e = ew.where(bump, ew.add(e, 1.0), e)
        n = ew.where(bump, 1e6, n)
        tz: Any = 0.0
        for k in range(1, 7):
            tz = ew.add(tz, ew.where(ew.equal(ew.mod(n, float(10 ** k)), 0.0), 1.0, 0.0))
        fixed = ew.bitwise_and(ew.greater_equal(e, -4.0), ew.less(e, 7.0))
        frac_f = ew.maximum(ew.sub(ew.sub(6.0, e), tz), 0.0)
        int_d = ew.where(ew.greater_equal(e, 0.0), ew.add(e, 1.0), 1.0)
        len_f = ew.add(ew.add(1.0, int_d), ew.where(ew.greater(frac_f, 0.0), ew.add(frac_f, 1.0), 0.0))
        frac_e = ew.sub(6.0, tz)
        len_e = ew.add(6.0, ew.where(ew.greater(frac_e, 0.0), ew.add(frac_e, 1.0), 0.0))
        out = ew.where(fixed, len_f, len_e)
        out = ew.where(ew.equal(a, 0.0), 2.0, out)
        out = ew.where(finite, out, 4.0)
        return ew.astype(out, INT)

    def int_len(self, v: Tile) -> Tile:
        a = ew.abs(ew.astype(v, dt.float64))
        n: Any = 2
        for k in range(1, 10):
            n = ew.add(n, ew.where(ew.greater_equal(a, float(10 ** k)), 1, 0))
        return n

    # ------------------------------------------------------------------ structured nodes

    def lower_seq(self, seq: list) -> None:
        for node in seq:
            self.lower_node(node)

    def lower_node(self, node) -> None:
        if isinstance(node, LineMark):
            self.line = node.number
        elif isinstance(node, SimpleNode):
            self.stmt(node.stmt)
        elif isinstance(node, IfNode):
            self.lower_if(node, 0)
        elif isinstance(node, ForNode):
            self.line = node.stmt.line
            self.at(node.stmt.pos, self.lower_for, node)
        elif isinstance(node, WhileNode):
            self.line = node.stmt.line
            self.at(node.stmt.pos, self.lower_while, node)

    def lower_if(self, node: IfNode, k: int) -> None:
        if k == len(node.arms):
            self.lower_seq(node.orelse or [])
            return
        cond, body, head = node.arms[k]
        self.line = head.line
        c = self.at(cond.pos, lambda: self.truth(self.ev(cond)))
        self.emit_if(c, lambda: self.lower_seq(body), lambda: self.lower_if(node, k + 1))

    def hidden_assigned(self, seq: list) -> set[str]:
        out: set[str] = set()
        for n in walk_nodes(seq):
            for s in node_stmts(n):
                if isinstance(s, (A.Read, A.Restore)):
                    out.add("$dp")
                if isinstance(s, A.Print) and self.zones:
                    out.add("$col")
                if isinstance(s, A.Randomize):
                    out |= {"$rk", "$rn"}
                for e in _exprs(s):
                    if isinstance(e, A.Call) and e.name == "RND":
                        out |= {"$rk", "$rn", "$rl", "$rv"}
        return out

    def optimistic(self, seq: list) -> set[str]:
        """Variables whose every assignment in ``seq`` is a literal (so may stay constant)."""
        lits: dict[str, bool] = {}
        for n in walk_nodes(seq):
            for s in node_stmts(n):
                if isinstance(s, A.Let) and isinstance(s.target, A.Var):
                    name = s.target.name
                    lits[name] = lits.get(name, True) and isinstance(s.expr, A.Num)
                elif isinstance(s, A.For):
                    lits[s.var] = False
                elif isinstance(s, A.Read):
                    for t in s.targets:
                        if isinstance(t, A.Var):
                            lits[t.name] = False
        return {n for n, ok in lits.items() if ok} | {"$col"}

    def lower_for(self, node: ForNode) -> None:
        s = node.stmt
        var = s.var
        vt = self.types[var]
        start = self.to_type(self.ev(s.start), vt)
        lim = self.to_type(self.ev(s.stop), vt)
        step = self.to_type(self.ev(s.step), vt) if s.step is not None else self.to_type(1, vt)
        assigned = assigned_in(node.body) | self.hidden_assigned(node.body)
        optimistic = self.optimistic(node.body)
        small = lambda c: math.isfinite(float(c)) and float(c).is_integer() and abs(float(c)) < 2 ** 30  # noqa: E731
        counted = (var not in assigned and not is_tile(step) and float(step) != 0 and small(step)
                   and (not is_tile(start) and small(start) or is_tile(start) and start.dtype is INT
                        or is_tile(start) and self._int_source(start) is not None))
        if counted:
            self._counted_for(node, var, vt, start, lim, int(step), assigned, optimistic)
            return
        self.env[var] = start
        lim_v, step_v = lim, step

        def cond():
            v = self.env[var]
            if not is_tile(step_v):
                if float(step_v) >= 0:
                    return self.le(v, lim_v)
                return self.ge(v, lim_v)
            up = ew.bitwise_and(ew.greater_equal(step_v, 0), ew.less_equal(v, lim_v))
            down = ew.bitwise_and(ew.less(step_v, 0), ew.greater_equal(v, lim_v))
            return ew.bitwise_or(up, down)

        def body():
            self.lower_seq(node.body)
            self.line = node.next.line if node.next else self.line
            cur = self.env[var]
            self.env[var] = self.to_type(self.tile_binary("+", cur, step_v) if is_tile(cur) or is_tile(step_v)
                                         else self.fold_binary("+", cur, step_v), vt)

        self.emit_loop("while", assigned | {var}, optimistic, cond, body)

    def le(self, a, b):
        return ew.less_equal(a, b) if is_tile(a) or is_tile(b) else bool(a <= b)

    def ge(self, a, b):
        return ew.greater_equal(a, b) if is_tile(a) or is_tile(b) else bool(a >= b)

    def _int_source(self, t: Tile):
        src = t.value.owner
        if src is not None and src.name == "astype" and src.operands[0].type.dtype is INT:
            return Tile(src.operands[0])
        return None

    def _counted_for(self, node: ForNode, var: str, vt: TileType, start, lim, step: int, assigned, optimistic):
        """FOR with a whole constant step: a ``for`` op over an int32 counter."""
        if is_tile(start):
            start_i = start if start.dtype is INT else self._int_source(start)
        else:
            start_i = np.int32(int(start))
        if is_tile(lim):
            lim_i = ew.floor(lim) if step > 0 else ew.ceil(lim)
            if lim_i.dtype is not INT:  # clamp so that lim + 1 cannot overflow
                lim_i = ew.astype(ew.minimum(ew.maximum(lim_i, -2.0 ** 30), 2.0 ** 30), INT)
            else:
                lim_i = ew.minimum(lim_i, 2 ** 30)
        else:
            f = float(lim)
            f = 0.0 if math.isnan(f) else max(-2.0 ** 30, min(2.0 ** 30, f))
            lim_i = np.int32(math.floor(f) if step > 0 else math.ceil(f))
        if step == 1:
            stop = ew.add(lim_i, 1) if is_tile(lim_i) else np.int32(int(lim_i) + 1)
            lo = start_i
            trips = None
        else:
            if is_tile(lim_i) or is_tile(start_i):
                span = ew.sub(lim_i, start_i) if step > 0 else ew.sub(start_i, lim_i)
                trips = ew.maximum(ew.add(ew.floordiv(span, abs(step)), 1), 0)
            else:
                span = int(lim_i) - int(start_i) if step > 0 else int(start_i) - int(lim_i)
                trips = np.int32(max(span // abs(step) + 1, 0))
            lo, stop = np.int32(0), trips
        bounds = [as_tile(b, INT) if not is_tile(b) else b for b in (lo, stop, np.int32(1))]

        def body(iv: Tile):
            v = iv if step == 1 else ew.add(start_i, ew.mul(iv, step))
            self.env[var] = self.to_type(v, vt)
            self.lower_seq(node.body)

        self.emit_loop("for", assigned - {var}, optimistic - {var}, None, body, bounds=bounds,
                       iv_type=TileType(INT, ()), ignore=(var,))
        # the variable after the loop: the first value that failed the test
        if step == 1:
            final = ew.maximum(start_i, stop) if is_tile(start_i) or is_tile(stop) else \
                np.int32(max(int(start_i), int(stop)))
        else:
            final = ew.add(start_i, ew.mul(trips, step)) if is_tile(trips) or is_tile(start_i) else \
                np.int32(int(start_i) + int(trips) * step)
        self.env[var] = self.to_type(final, vt)

    def lower_while(self, node: WhileNode) -> None:
        assigned = assigned_in(node.body) | self.hidden_assigned(node.body)
        cond_expr = node.stmt.cond

        def cond():
            self.line = node.stmt.line
            return self.at(cond_expr.pos, lambda: self.truth(self.ev(cond_expr)))

        self.emit_loop("while", assigned, self.optimistic(node.body), cond, lambda: self.lower_seq(node.body))

    # ------------------------------------------------------------------ flattening (GOTO & co)

    def clean(self, node) -> bool:
        """Whether a construct can be lowered as structured control flow."""
        if not isinstance(node, (IfNode, ForNode, WhileNode)):
            return True
        for n in walk_nodes([node]):
            if isinstance(n, LineMark) and n.number in self.an.jump_targets:
                return False
            for s in node_stmts(n):
                if isinstance(s, _CONTROL):
                    return False
        return True

    def linearize(self, seq: list, out: list) -> None:
        for node in seq:
            if isinstance(node, LineMark):
                out.append(("label", ("line", node.number)))
                out.append(("stmt", lambda n=node.number: setattr(self, "line", n)))
                continue
            if isinstance(node, SimpleNode) and isinstance(node.stmt, _CONTROL):
                self.linearize_control(node.stmt, out)
                continue
            if self.clean(node):
                out.append(("stmt", lambda node=node: self.lower_node(node)))
                continue
            if isinstance(node, IfNode):
                end = object()
                for cond, body, head in node.arms:
                    t, f = object(), object()
                    out.append(("branch", head, cond, t, f))
                    out.append(("label", t))
                    self.linearize(body, out)
                    out.append(("goto", end))
                    out.append(("label", f))
                if node.orelse is not None:
                    self.linearize(node.orelse, out)
                out.append(("label", end))
            elif isinstance(node, ForNode):
                test, body, after = object(), object(), object()
                state = {"lim": f"$for{node.index}lim", "step": f"$for{node.index}step",
                         "on": f"$for{node.index}on"}
                self.flat_fors.append(node)
                out.append(("stmt", lambda node=node, state=state: self.at(node.stmt.pos, self.for_init, node, state)))
                out.append(("label", test))
                out.append(("forbranch", node, state, body, after))
                out.append(("label", body))
                self.linearize(node.body, out)
                nxt = node.next
                out.append(("stmt", lambda node=node, state=state, nxt=nxt:
                            self.at(nxt.pos, self.for_step, node, state, nxt)))
                out.append(("goto", test))
                out.append(("label", after))
            elif isinstance(node, WhileNode):
                test, body, after = object(), object(), object()
                out.append(("label", test))
                out.append(("branch", node.stmt, node.stmt.cond, body, after))
                out.append(("label", body))
                self.linearize(node.body, out)
                out.append(("goto", test))
                out.append(("label", after))

    def linearize_control(self, s: A.Stmt, out: list) -> None:
        if isinstance(s, A.Goto):
            out.append(("goto", ("line", s.target)))
        elif isinstance(s, A.Gosub):
            ret = object()
            out.append(("gosub", s, ("line", s.target), ret))
            out.append(("label", ret))
        elif isinstance(s, A.Return):
            out.append(("return", s))
        elif isinstance(s, A.OnGoto):
            fall = object()
            out.append(("on", s, [("line", t) for t, _ in s.targets], fall))
            out.append(("label", fall))
        elif isinstance(s, A.End):
            out.append(("halt", s))

    def for_init(self, node: ForNode, state: dict) -> None:
        s = node.stmt
        self.line = s.line
        vt = self.types[s.var]
        self.env[s.var] = self.to_type(self.ev(s.start), vt)
        lim = self.to_type(self.ev(s.stop), vt)
        step = self.to_type(self.ev(s.step), vt) if s.step is not None else self.to_type(1, vt)
        for key, v in (("lim", lim), ("step", step)):
            self.types[state[key]] = vt
            self.env[state[key]] = v
        self.env[state["on"]] = True

    def for_cond(self, node: ForNode, state: dict):
        var = node.stmt.var
        v, lim, step = self.env[var], self.env[state["lim"]], self.env[state["step"]]
        if not is_tile(step):
            return self.le(v, lim) if float(step) >= 0 else self.ge(v, lim)
        up = ew.bitwise_and(ew.greater_equal(step, 0), ew.less_equal(v, lim))
        down = ew.bitwise_and(ew.less(step, 0), ew.greater_equal(v, lim))
        return ew.bitwise_or(up, down)

    def for_step(self, node: ForNode, state: dict, nxt) -> None:
        self.line = nxt.line if nxt is not None else self.line
        var = node.stmt.var
        on = self.env[state["on"]]
        if on is not True:
            dbg.assert_(on if is_tile(on) else as_tile(False, BOOL),
                        f"NEXT without FOR{self.where_text()}: the FOR {var} of line {node.stmt.line} "
                        "has not run")
        cur, step = self.env[var], self.env[state["step"]]
        v = self.tile_binary("+", cur, step) if is_tile(cur) or is_tile(step) else self.fold_binary("+", cur, step)
        self.env[var] = self.to_type(v, self.types[var])

    def build_cfg(self, instrs: list) -> CfgBlock:
        blocks: list[CfgBlock] = [CfgBlock(0)]
        cur = blocks[0]
        open_, fresh = True, True  # cur has no terminator / no statements yet
        for ins in instrs:
            kind = ins[0]
            if kind == "label":
                if open_ and fresh:
                    self.labels[ins[1]] = cur
                    continue
                new = CfgBlock(len(blocks))
                blocks.append(new)
                if open_:
                    cur.term = ("goto", ins[1])
                cur = new
                self.labels[ins[1]] = cur
                open_, fresh = True, True
                continue
            if not open_:  # code after a jump that no label leads to: unreachable
                cur = CfgBlock(len(blocks))
                blocks.append(cur)
                open_, fresh = True, True
            if kind == "stmt":
                cur.stmts.append(ins[1])
                fresh = False
            else:
                cur.term = ins
                open_ = False
        if open_:
            cur.term = ("halt", None)
        self.cfg = blocks
        return blocks[0]

    def successors(self, b: CfgBlock) -> list:
        t = b.term
        kind = t[0]
        if kind == "goto":
            return [t[1]]
        if kind == "branch":
            return [t[3], t[4]]
        if kind == "forbranch":
            return [t[3], t[4]]
        if kind == "gosub":
            return [t[2], t[3]]
        if kind == "on":
            return list(t[2]) + [t[3]]
        return []

    def analyse_cfg(self, entry: CfgBlock) -> None:
        entry.dynamic = True
        stack = [entry]
        entry.reachable = True
        while stack:
            b = stack.pop()
            for lab in self.successors(b):
                s = self.labels[lab]
                if not s.reachable:
                    s.reachable = True
                    stack.append(s)
        for b in self.cfg:
            if not b.reachable:
                continue
            t = b.term
            for lab in self.successors(b):
                self.labels[lab].preds += 1
            if t[0] == "gosub":
                self.labels[t[3]].dynamic = True
            if t[0] == "on" and t[1].gosub:
                self.labels[t[3]].dynamic = True
        for b in self.cfg:
            if b.reachable and (b.dynamic or b.preds != 1):
                b.state = -1
        # Inlined blocks nest inside the branches that reach them; bound that nesting.
        stack = [(b, 0) for b in self.cfg if b.state is not None]
        while stack:
            b, depth = stack.pop()
            inc = 0 if b.term[0] == "goto" else 1
            for lab in self.successors(b):
                s = self.labels[lab]
                if s.state is not None:
                    continue
                if depth + inc > MAX_INLINE_DEPTH:
                    s.state = -1
                    stack.append((s, 0))
                else:
                    stack.append((s, depth + inc))
        self.states = [b for b in self.cfg if b.state is not None]
        for k, b in enumerate(self.states):
            b.state = k
        # A loop is needed unless the entry is the only state and nothing jumps back to it.
        self.machine = len(self.states) > 1 or entry.preds > 0 or any(
            b.reachable and b.term[0] == "return" for b in self.cfg)

    def jump(self, lab) -> None:
        b = self.labels[lab]
        if b.state is None:
            self.run_block(b)
        else:
            self.set_pc(b.state)

    def set_pc(self, k: int) -> None:
        if self.machine:
            self.env["$pc"] = np.int32(k)

    def run_block(self, b: CfgBlock) -> None:
        while True:
            for fn in b.stmts:
                fn()
            t = b.term
            if t[0] != "goto":
                break
            nb = self.labels[t[1]]
            if nb.state is not None:
                self.set_pc(nb.state)
                return
            b = nb
        kind = t[0]
        if kind == "halt":
            if t[1] is not None:
                self.line = t[1].line
            self.set_pc(-1)
        elif kind == "branch":
            head, cond = t[1], t[2]
            self.line = head.line
            c = self.at(cond.pos, lambda: self.truth(self.ev(cond)))
            self.emit_if(c, lambda: self.jump(t[3]), lambda: self.jump(t[4]))
        elif kind == "forbranch":
            node, state = t[1], t[2]
            self.line = node.stmt.line
            c = self.at(node.stmt.pos, self.for_cond, node, state)
            self.emit_if(c, lambda: self.jump(t[3]), lambda: self.jump(t[4]))
        elif kind == "gosub":
            s = t[1]
            self.line = s.line
            self.at(s.pos, self.push, self.labels[t[3]].state, s)
            self.jump(t[2])
        elif kind == "return":
            s = t[1]
            self.line = s.line
            self.at(s.pos, self.pop, s)
        elif kind == "on":
            s, targets, fall = t[1], t[2], t[3]
            self.line = s.line
            k = self.at(s.expr.pos, lambda: self.to_int(self.ev(s.expr)))

            def choose(i: int) -> None:
                if i == len(targets):
                    self.jump(fall)
                    return
                c = ew.equal(k, i + 1) if is_tile(k) else bool(int(k) == i + 1)

                def go():
                    if s.gosub:
                        self.at(s.pos, self.push, self.labels[fall].state, s)
                    self.jump(targets[i])
                self.emit_if(c, go, lambda: choose(i + 1))
            choose(0)

    def push(self, ret_state: int, s: A.Stmt) -> None:
        sp = self.env["$sp"]
        ok = ew.less(sp, STACK_DEPTH) if is_tile(sp) else bool(int(sp) < STACK_DEPTH)
        if ok is not True:
            dbg.assert_(ok if is_tile(ok) else as_tile(False, BOOL),
                        f"GOSUB nested more than {STACK_DEPTH} deep{self.where_text()}")
        stk = self.materialize(self.env["$stk"], self.types["$stk"])
        lanes = fac.arange(STACK_DEPTH, dtype=INT)
        self.env["$stk"] = ew.where(ew.equal(lanes, sp), ret_state, stk)
        self.env["$sp"] = ew.add(sp, 1) if is_tile(sp) else np.int32(int(sp) + 1)

    def pop(self, s: A.Stmt) -> None:
        sp = self.env["$sp"]
        ok = ew.greater(sp, 0) if is_tile(sp) else bool(int(sp) > 0)
        if ok is not True:
            dbg.assert_(ok if is_tile(ok) else as_tile(False, BOOL), f"RETURN without GOSUB{self.where_text()}")
        sp = ew.sub(sp, 1) if is_tile(sp) else np.int32(int(sp) - 1)
        stk = self.materialize(self.env["$stk"], self.types["$stk"])
        lanes = fac.arange(STACK_DEPTH, dtype=INT)
        self.env["$pc"] = red.sum(ew.where(ew.equal(lanes, sp), stk, 0))
        self.env["$sp"] = sp

    def dispatch(self, lo: int, hi: int) -> None:
        if hi - lo == 1:
            self.run_block(self.states[lo])
            return
        mid = (lo + hi) // 2
        pc = self.env["$pc"]
        c = ew.less(pc, mid) if is_tile(pc) else bool(int(pc) < mid)
        self.emit_if(c, lambda: self.dispatch(lo, mid), lambda: self.dispatch(mid, hi))

    def lower_program(self) -> None:
        instrs: list = []
        self.linearize(self.an.tree, instrs)
        entry = self.build_cfg(instrs)
        self.analyse_cfg(entry)
        if not self.machine:
            self.run_block(entry)
            return
        self.env["$pc"] = np.int32(0)
        for node in self.flat_fors:
            vt = self.types[node.stmt.var]
            for key in ("lim", "step"):
                name = f"$for{node.index}{key}"
                self.types[name] = vt
                self.env[name] = self.zero(vt)
            self.types[f"$for{node.index}on"] = TileType(BOOL, ())
            self.env[f"$for{node.index}on"] = False
        names = assigned_in(self.an.tree) | {n for n in self.env if n.startswith("$")}
        optimistic = self.optimistic(self.an.tree)
        self.emit_loop("while", names, optimistic,
                       lambda: ew.greater_equal(self.env["$pc"], 0) if is_tile(self.env["$pc"])
                       else bool(int(self.env["$pc"]) >= 0),
                       lambda: self.dispatch(0, len(self.states)))


def _trunc_div(a: int, b: int) -> int:
    q = abs(a) // abs(b)
    return q if (a >= 0) == (b >= 0) else -q


def _exprs(s: A.Stmt):
    from .analyzer import stmt_exprs, walk_exprs
    for e in stmt_exprs(s):
        yield from walk_exprs(e)


def remove_dead_ops(fn: Function) -> None:
    """Drop pure ops whose results nobody uses (the lowering makes some speculatively).

    One backward sweep: an op's operands lose a use when it is dropped, so whole dead
    chains (and dead ops inside regions using outer values) go in the same pass."""
    from ..ir.catalogue import OPS
    from ..ir.core import walk
    uses: dict[int, int] = {}
    for op in walk(fn.body):
        for v in op.operands:
            uses[v.id] = uses.get(v.id, 0) + 1

    def sweep(block: Block) -> None:
        kept = []
        for op in reversed(block.ops):
            if OPS[op.name].effect == "pure" and op.results and all(uses.get(r.id, 0) == 0 for r in op.results):
                for v in op.operands:
                    uses[v.id] -= 1
                continue
            for region in op.regions:
                sweep(region)
            kept.append(op)
        kept.reverse()
        block.ops = kept

    sweep(fn.body)


def lower(an: Analysis, name: str = "basic_main") -> tuple[Function, Lowerer]:
    """Lower an analysed program to a verified IR ``Function``."""
    low = Lowerer(an)
    with building(low.builder), low.builder.inside(low.body):
        try:
            low.prologue()
            low.lower_program()
        except BasicError:
            raise
        except TileError as e:
            raise low.error(e.message) from None
        except RecursionError:
            raise BasicError("the program is nested too deeply to compile", None) from None
        low.builder.emit("yield", [])
    fn = Function(name, low.params, low.body, {}, an.src.filename)
    remove_dead_ops(fn)
    try:
        verify(fn)
    except TileError as e:
        raise BasicError(f"internal error: {e.message}", e.loc, internal=True) from None
    return fn, low
