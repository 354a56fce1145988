"""Statements (other than PRINT and control flow) and arrays.

Arrays: a tiled INPUT/OUTPUT array ``A(i, j)`` is tile (i, j); any other array is indexed by
element, with GW-BASIC's rounding of subscripts and *Subscript out of range* outside its
bounds. Local arrays (``DIM`` without INPUT/OUTPUT, or used without DIM) live in hidden
scratch arrays with one row per block; a string array in two (bytes and lengths). Running a
local array's DIM a second time stops with *Duplicate Definition*.

READ walks the DATA items at run time: into a numeric variable an item is read as GW-BASIC
reads a number (*Syntax error* if it is not one), into a string variable as text; past the
last item is *Out of DATA*.
"""
from __future__ import annotations

import numpy as np

from ... import dtypes as dt
from ...ir.types import TileType
from ...ops import elementwise as ew
from ...ops import memory as mem
from ...ops import shape as shp
from ...ops.values import as_tile
from .. import ast as A
from ..vtypes import BOOL, INT, LONG, STRING, STRING_CAPACITY, scalar
from .strings import StrVal
from .values import is_tile
from ...frontend.common import MixinBase

_SEED0, _SEED_STEP = 5228370, 4455680  # GW-BASIC's first RND state, RANDOMIZE's scale


class StatementsMixin(MixinBase):
    # ------------------------------------------------------------------ hidden state

    def init_hidden(self) -> None:
        an = self.an
        if an.uses_data:
            self.env["$dp"] = np.int32(0)
        if an.uses_gosub:
            from .machine import STACK
            self.types["$stk"] = STACK
            self.env["$sp"] = np.int32(0)
            self.env["$stk"] = np.int32(0)
        if an.uses_rnd:  # block 0 with seed 0 starts where GW-BASIC starts; other blocks elsewhere
            start = ew.add(ew.add(ew.mul(self.seed, _SEED_STEP), _SEED0), ew.mul(self.bid, 2531011))
            self.env["$rnd"] = ew.bitwise_and(start, 0xFFFFFF)
        for name, arr in an.arrays.items():
            if arr.is_local and not arr.implicit:
                self.types[f"$dim:{name}"] = scalar(BOOL)
                self.env[f"$dim:{name}"] = False
        for name in an.fns:
            self.types[f"$fn:{name}"] = scalar(BOOL)
            self.env[f"$fn:{name}"] = False
        for name in an.swap_checked:
            self.types[f"$set:{name}"] = scalar(BOOL)
            self.env[f"$set:{name}"] = name in an.scalar_inputs

    # ------------------------------------------------------------------ statements

    def stmt(self, s: A.Stmt) -> None:
        self.line = s.line
        if self.deferred_error(s):
            return
        method = getattr(self, "st_" + type(s).__name__, None)
        if method is not None:
            self.at(s.pos, method, s)

    def deferred_error(self, s: A.Stmt) -> bool:
        """A GW-BASIC run-time error known before the run (analyzer.Deferred): raise it here."""
        d = self.an.deferred.get(id(s))
        if d is None:
            return False
        self.line = s.line
        if isinstance(s, A.Let) and d.message == "Type mismatch":  # the value is computed first
            self.ev(s.expr)
        self.at(s.pos, self.runtime_error, False, d.message)
        return True

    def st_Let(self, s: A.Let) -> None:
        v = self.ev(s.expr)
        if id(s.expr) in self.an.bad_exprs:
            return
        v = self.checked_float(v, s.expr)
        if isinstance(s.target, A.Var):
            self.at(s.target.pos, self.assign, s.target.name, v)
        else:
            self.at(s.target.pos, self.store_index, s.target, v)

    def st_Swap(self, s: A.Swap) -> None:
        """SWAP a, b: a variable b that was never given a value is *Illegal function call*."""
        if isinstance(s.b, A.Var) and not (isinstance(s.a, A.Var) and s.a.name == s.b.name):
            self.runtime_error(self.env[f"$set:{s.b.name}"], "Illegal function call")
        a, b = self.ev(s.a), self.ev(s.b)
        for target, v in ((s.a, b), (s.b, a)):
            if isinstance(target, A.Var):
                self.assign(target.name, v)
            else:
                self.store_index(target, v)

    def st_Dim(self, s: A.Dim) -> None:
        for d in s.decls:
            flag = f"$dim:{d.name}"
            if flag in self.env:
                done = self.env[flag]
                self.runtime_error(ew.bitwise_not(done) if is_tile(done) else not done, "Duplicate Definition")
                self.env[flag] = True

    def st_DefFn(self, s: A.DefFn) -> None:
        self.env[f"$fn:{s.name}"] = True

    def st_Broken(self, s: A.Broken) -> None:  # pragma: no cover - always a deferred error
        self.runtime_error(False, "Syntax error")

    def stop_message(self) -> None:
        """STOP shows ``Break in <line>`` on a line of its own."""
        self.builder.emit("print", [], {"parts": (("msg", self.gw_message("Break")),), "end": "",
                                        "layout": self.screen})

    # ------------------------------------------------------------------ DATA

    def st_Read(self, s: A.Read) -> None:
        n = len(self.an.data)
        for tgt in s.targets:
            dp = self.env["$dp"]
            string = self.target_type(tgt) is STRING
            if not is_tile(dp):
                v = self.static_item(int(dp), string)
            else:
                self.runtime_error(ew.less(dp, n), "Out of DATA")
                self.data_checks(dp, string)
                if string:
                    length = ew.astype(mem.gather(self.data_array, (dp, np.int32(1))), LONG)
                    v = StrVal(self.load_text(dp), ew.maximum(length, 0))
                else:
                    number = mem.gather(self.data_array, (dp, np.int32(0)))
                    v = ew.where(ew.isnan(number), 0.0, number)
            self.env["$dp"] = np.int32(int(dp) + 1) if not is_tile(dp) else ew.add(dp, 1)
            if isinstance(tgt, A.Var):
                self.at(tgt.pos, self.assign, tgt.name, v)
            else:
                self.at(tgt.pos, self.store_index, tgt, v)

    def data_checks(self, dp, string: bool) -> None:
        """The item at run-time position ``dp`` must be of the kind read: *Syntax error* (in its
        DATA line) otherwise."""
        wanted = [item.error for item in self.an.data if (item.text if string else item.number) is None]
        if not wanted:
            return
        code = mem.gather(self.data_array, (dp, np.int32(3 if string else 2)))
        for message in sorted(set(wanted)):
            ident = float(self.data_errors.index(message) + 1)
            self.runtime_error(ew.not_equal(code, ident), message, located=False)

    def static_item(self, k: int, string: bool):
        """DATA item ``k`` (known while compiling) for a string or a numeric READ."""
        data = self.an.data
        if k >= len(data):
            self.runtime_error(False, "Out of DATA")
            return StrVal.constant(b"") if string else np.float32(0)
        item = data[k]
        value = item.text if string else item.number
        if value is None:
            self.runtime_error(False, item.error, located=False)
            return StrVal.constant(b"") if string else np.float32(0)
        return StrVal.constant(value) if string else value

    def target_type(self, tgt: A.Target):
        if isinstance(tgt, A.Var):
            return self.types[tgt.name]
        arr = self.an.arrays[tgt.name]
        return STRING if arr.is_string else TileType(arr.dtype, ())

    def st_Restore(self, s: A.Restore) -> None:
        if "$dp" not in self.env:
            return
        start = 0 if s.target is None else self.an.data_start.get(s.target, len(self.an.data))
        self.env["$dp"] = np.int32(start)

    # ------------------------------------------------------------------ arrays

    def ev_Index(self, e: A.Index):
        arr = self.an.arrays[e.name]
        idx = [self.subscript(arr, self.ev(a)) for a in e.args]
        if arr.tile is not None:
            return mem.load(self.kernel_arrays[e.name], index=tuple(idx), shape=arr.tile,
                            padding_mode=mem.PaddingMode.ZERO)
        array, full = self.element_ref(e, arr, idx)
        if arr.is_string:
            chars = mem.load(array, index=tuple(full) + (np.int32(0),), shape=(1,) * len(full) + (STRING_CAPACITY,),
                             padding_mode=mem.PaddingMode.ZERO)
            return StrVal(shp.reshape(chars, (STRING_CAPACITY,)), mem.gather(self.string_lengths[e.name], tuple(full)))
        return mem.gather(array, tuple(full))

    def subscript(self, arr, v):
        """A tile index, or an element subscript rounded as GW-BASIC rounds it (a local array's
        subscript beyond 32767 is *Overflow*)."""
        if arr.tile is not None or not arr.is_local:
            return self.to_index(v)
        return self.convert(self.round_int(v, INT), LONG)

    def element_ref(self, e: A.Index, arr, idx: list):
        """The array and full index of an element, checking the subscripts at run time: a
        negative one is *Illegal function call*, one past the DIM *Subscript out of range*."""
        dims = self.array_dims[e.name]
        for i in idx:
            self.runtime_error(ew.greater_equal(i, 0) if is_tile(i) else int(i) >= 0, "Illegal function call")
        for i, n in zip(idx, dims):
            self.runtime_error(ew.less(i, n) if is_tile(i) or is_tile(n) else int(i) < int(n),
                               "Subscript out of range")
        if arr.is_local:
            return self.local_arrays[e.name], [self.bid] + idx
        return self.kernel_arrays[e.name], idx

    def store_index(self, target: A.Index, value) -> None:
        arr = self.an.arrays[target.name]
        idx = [self.subscript(arr, self.ev(a)) for a in target.args]
        if arr.tile is not None:
            tile = self.materialize(value, TileType(arr.dtype, arr.tile))
            mem.store(self.kernel_arrays[target.name], index=tuple(idx), tile=tile)
            return
        array, full = self.element_ref(target, arr, idx)
        if arr.is_string:
            chars, length = self.string_tiles(value)
            mem.store(array, index=tuple(full) + (np.int32(0),),
                      tile=shp.reshape(chars, (1,) * len(full) + (STRING_CAPACITY,)))
            mem.scatter(self.string_lengths[target.name], tuple(full), length)
            return
        mem.scatter(array, tuple(full), self.materialize(value, TileType(arr.dtype, ())))

    # ------------------------------------------------------------------ RANDOMIZE

    def st_Randomize(self, s: A.Randomize) -> None:
        """RANDOMIZE n: GW-BASIC reseeds from the two top bytes of n's binary form."""
        if s.seed is None:
            n = ew.astype(self.seed, LONG)
        else:
            n = self.randomize_key(self.ev(s.seed))
        state = ew.bitwise_and(self.env["$rnd"], 0xFF)
        state = self.rnd_cycle(state)
        self.env["$rnd"] = ew.bitwise_and(ew.add(state, ew.mul(n, _SEED_STEP)), 0xFFFFFF)

    def randomize_key(self, v):
        """The signed 16-bit number GW-BASIC takes from RANDOMIZE's argument: an integer as it
        is; a single's (or double's) exponent and top mantissa bytes xor the next two."""
        v = self.numeric(v)
        d = v.dtype if is_tile(v) else dt.as_dtype(np.asarray(v).dtype)
        if d.is_int:
            return self.convert(v, LONG) if is_tile(v) else as_tile(np.int32(int(v)), LONG)
        x = self.convert(v, dt.float32) if d is not dt.float64 else v
        if d is dt.float64:  # MBF double: bytes 6, 7 xor bytes 4, 5
            bits = ew.bitcast(as_tile(x, dt.float64) if not is_tile(x) else x, dt.int64)
            exp = ew.bitwise_and(ew.bitwise_rshift(bits, 52), 0x7FF)
            mbf_exp = ew.where(ew.equal(exp, 0), 0, ew.sub(exp, 894))
            top = ew.bitwise_or(ew.bitwise_and(ew.bitwise_rshift(bits, 45), 0x7F),
                                ew.bitwise_and(ew.bitwise_rshift(bits, 56), 0x80))
            low = ew.bitwise_and(ew.bitwise_rshift(bits, 29), 0xFFFF)
            word = ew.bitwise_or(top, ew.bitwise_lshift(ew.bitwise_and(mbf_exp, 0xFF), 8))
            return self._signed16(ew.astype(ew.bitwise_xor(word, low), LONG))
        bits = ew.bitcast(as_tile(x, dt.float32) if not is_tile(x) else x, dt.int32)
        exp = ew.bitwise_and(ew.bitwise_rshift(bits, 23), 0xFF)
        mbf_exp = ew.where(ew.equal(exp, 0), 0, ew.add(exp, 2))
        top = ew.bitwise_or(ew.bitwise_and(ew.bitwise_rshift(bits, 16), 0x7F),
                            ew.bitwise_and(ew.bitwise_rshift(bits, 24), 0x80))
        word = ew.bitwise_or(top, ew.bitwise_lshift(ew.bitwise_and(mbf_exp, 0xFF), 8))
        return self._signed16(ew.bitwise_xor(word, ew.bitwise_and(bits, 0xFFFF)))

    @staticmethod
    def _signed16(w):
        return ew.where(ew.greater_equal(w, 0x8000), ew.sub(w, 0x10000), w)

