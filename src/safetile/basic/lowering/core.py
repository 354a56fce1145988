"""The ``Lowerer``: state shared by the lowering rooms, locations and errors, kernel
parameters, and run-time errors.

While lowering, every BASIC variable holds a compile-time constant (a NumPy scalar of its
dtype, a ``StrVal`` of known bytes) or a ``Tile`` (strings: a ``StrVal`` of tiles).
Constant arithmetic is folded here with GW-BASIC's semantics; anything involving a tile calls
the public ``safetile`` op functions, so BASIC shares the one op catalogue with Python
kernels.

Run-time errors are GW-BASIC's: a hard error (*Illegal function call*, *Overflow* on an
integer, *Subscript out of range* ...) is an ``assert`` that shows ``<message> in <line>``
on the program's output and stops the launch; a soft one (*Division by zero*, *Overflow* of
a float) prints its message and the program goes on with the largest number.
"""
from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from ... import dtypes as dt
from ...errors import SourceLoc, TileError
from ...ir.builder import Builder
from ...ir.core import Block, Param, Value
from ...ir.types import ArrayType, TileType
from ...ops import grid as grd
from ...ops import memory as mem
from ...ops.values import Array, Tile, as_tile
from .. import ast as A
from ..analyzer import Analysis, ArrayInfo
from ..console import GWScreen
from ..errors import BasicError
from ..structure import stmt_exprs, walk_exprs, walk_stmts
from ..vtypes import BOOL, LONG, STRING, STRING_CAPACITY
from .flow import FlowMixin
from .functions import FunctionsMixin
from .machine import MachineMixin
from .printing import PrintMixin
from .statements import StatementsMixin
from .strings import StringsMixin, StrVal
from .values import ValuesMixin, is_tile

HIDDEN_TYPES = {"$pc": TileType(dt.int32, ()), "$dp": TileType(dt.int32, ()), "$sp": TileType(dt.int32, ()),
                "$rnd": TileType(dt.int32, ())}


def param_name(name: str) -> str:
    """A Python-identifier form of a BASIC name, for kernel parameter names."""
    return name.replace("%", "_int").replace("!", "").replace("$", "_str").replace("#", "_dbl")


class Lowerer(ValuesMixin, FunctionsMixin, StringsMixin, PrintMixin, StatementsMixin, FlowMixin, MachineMixin):
    """Lowers one analysed program into the body of one kernel."""

    def __init__(self, an: Analysis):
        self.an = an
        self.src = an.src
        self.builder = Builder()
        self.body = Block()
        self.params: list[Param] = []
        self.param_names: dict[str, str] = {}  # param name -> BASIC name / role
        self.env: dict[str, Any] = {}
        self.types: dict[str, Any] = dict(HIDDEN_TYPES)
        self.kernel_arrays: dict[str, Array] = {}
        self.local_arrays: dict[str, Array] = {}
        self.string_lengths: dict[str, Array] = {}  # string arrays: their lengths
        self.input_strings: dict[str, tuple[Array, Tile]] = {}
        self.array_dims: dict[str, list] = {}
        self.data_array: Array | None = None
        self.text_array: Array | None = None
        self.text_rows: list[bytes] = [item.text or b"" for item in an.data]  # rows of the hidden text table
        self.data_errors = sorted({item.error for item in an.data if item.text is None or item.number is None})
        self.seed: Tile | None = None
        self.bid: Any = np.int32(0)
        self.line: int | None = None
        self.pos: A.Pos | None = None
        self.multi_block = bool(an.outputs)
        self.screen = GWScreen()
        self.locs: dict[tuple, SourceLoc] = {}
        self.int_shadow: dict[int, Tile] = {}
        self.index_vars: set[str] = set()
        self.fn_locals: list[dict[str, Any]] = []
        self.init_machine()
        for ln in an.program.lines:  # variables used in subscripts (converted once where set)
            for st in walk_stmts(ln.stmts):
                for e in stmt_exprs(st):
                    for x in walk_exprs(e):
                        if isinstance(x, A.Index):
                            for arg in x.args:
                                self.index_vars |= {y.name for y in walk_exprs(arg) if isinstance(y, A.Var)}

    # ------------------------------------------------------------------ errors and locations

    def loc(self, pos: A.Pos | None) -> SourceLoc | None:
        if pos is None:
            return None
        loc = self.locs.get(pos)
        if loc is None:
            loc = self.locs[pos] = self.src.loc(pos[0], pos[1], pos[2])
        return loc

    def error(self, message: str, pos: A.Pos | None = None) -> BasicError:
        return BasicError(message, self.loc(pos or self.pos), self.line)

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

    def gw_message(self, message: str) -> str:
        return f"{message} in {self.line}" if self.line is not None else message

    def runtime_error(self, ok, message: str, located: bool = True) -> None:
        """GW-BASIC's hard error ``message`` where ``ok`` (a bool tile, or a Python bool) is false:
        the program's output shows ``<message> in <line>`` (just the message when not
        ``located``) and the launch stops."""
        if ok is True or (not is_tile(ok) and bool(ok)):
            return
        cond = ok if is_tile(ok) else as_tile(False, BOOL)
        text = self.gw_message(message) if located else message
        self.builder.emit("assert", [cond.value], {"message": text, "layout": self.screen})

    def soft_error(self, bad, message: str) -> None:
        """GW-BASIC's soft error: where ``bad``, print ``message`` on a line and go on."""
        if bad is False or (not is_tile(bad) and not bool(bad)):
            return
        def show() -> None:
            self.builder.emit("print", [], {"parts": (("w", message),), "end": "\n", "layout": self.screen})

        if is_tile(bad):
            self.emit_if(bad, show, lambda: None)
        else:
            show()

    # ------------------------------------------------------------------ parameters

    def add_param(self, name: str, kind: str, type_, role: str) -> Value:
        pname = param_name(name)
        v = Value(type_, hint=pname)
        self.body.args.append(v)
        self.params.append(Param(pname, kind, value=v))
        self.param_names[pname] = role
        return v

    def text_table(self) -> Array:
        """The hidden table of string bytes (DATA items, then string constants), made on first use."""
        if self.text_array is None:
            v = self.add_param("__text", "array", ArrayType(dt.uint8, 2), "TEXT")
            self.text_array = Array(v, "__text")
        return self.text_array

    def prologue(self) -> None:
        an = self.an
        for item in an.inputs:
            if isinstance(item, ArrayInfo):
                v = self.add_param(item.name, "array", ArrayType(item.dtype, item.ndim), item.name)
                self.kernel_arrays[item.name] = Array(v, item.name)
            elif item.dtype is STRING:
                chars = self.add_param(item.name, "array", ArrayType(dt.uint8, 1), item.name)
                length = self.add_param(item.name + "_len", "scalar", TileType(LONG, ()), "length " + item.name)
                self.input_strings[item.name] = (Array(chars, item.name), Tile(length))
            else:
                v = self.add_param(item.name, "scalar", TileType(item.dtype, ()), item.name)
                self.env[item.name] = Tile(v)
        for arr in an.outputs:
            if arr.name not in self.kernel_arrays:
                v = self.add_param(arr.name, "array", ArrayType(arr.dtype, arr.ndim), arr.name)
                self.kernel_arrays[arr.name] = Array(v, arr.name)
        if an.uses_data:  # rows: number (NaN: none), length as text, error ids as number and as text
            v = self.add_param("__data", "array", ArrayType(dt.float64, 2), "DATA")
            self.data_array = Array(v, "__data")
        for arr in an.arrays.values():
            if not arr.is_local:
                continue
            if arr.is_string:
                chars = self.add_param("__local_" + arr.name, "array", ArrayType(dt.uint8, arr.ndim + 2),
                                       "local " + arr.name)
                lens = self.add_param("__llen_" + arr.name, "array", ArrayType(LONG, arr.ndim + 1),
                                      "lengths " + arr.name)
                self.local_arrays[arr.name] = Array(chars, arr.name)
                self.string_lengths[arr.name] = Array(lens, arr.name)
            else:
                v = self.add_param("__local_" + arr.name, "array", ArrayType(arr.dtype, arr.ndim + 1),
                                   "local " + arr.name)
                self.local_arrays[arr.name] = Array(v, arr.name)
        if an.uses_rnd:
            v = self.add_param("__seed", "scalar", TileType(dt.int32, ()), "seed")
            self.seed = Tile(v)
        # values every region may use are made here, in the entry block
        if self.multi_block:
            self.bid = grd.bid(0)
        for name, arr in an.arrays.items():
            if arr.is_local:
                a = self.string_lengths.get(name) or self.local_arrays[name]
                self.array_dims[name] = [np.int32(s + 1) if s is not None else mem.array_dim(a, k + 1)
                                         for k, s in enumerate(arr.static_sizes)]
            elif arr.tile is None:
                a = self.kernel_arrays[name]
                self.array_dims[name] = [mem.array_dim(a, k) for k in range(arr.ndim)]
        for name, t in an.var_types.items():  # variables start as 0 and ""
            self.types[name] = t
            if name in an.scalar_inputs:
                if name in self.input_strings:
                    chars_array, length_tile = self.input_strings[name]
                    self.env[name] = StrVal(mem.load(chars_array, index=(0,), shape=(STRING_CAPACITY,),
                                                     padding_mode=mem.PaddingMode.ZERO), length_tile)
                continue
            self.env[name] = self.zero(t)
        self.init_hidden()
