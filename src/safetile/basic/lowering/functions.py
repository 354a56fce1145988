"""Built-in functions, RND and DEF FN.

The numeric functions follow GW-BASIC: ``SQR``, ``LOG``, ``EXP`` and the trigonometric
functions compute in double precision and store a single truncated toward zero (so their
digits match GW-BASIC's); ``SQR`` of a negative number and ``LOG`` of one that is not
positive are *Illegal function call*; ``EXP`` beyond the range is *Overflow*. ``RND`` is
GW-BASIC's generator (a 24-bit linear congruential sequence), so a program draws the same
numbers as under GW-BASIC. ``DEF FN`` functions are expanded where they are called, their
parameters local to the body; calling one before its DEF has run is *Undefined user
function*.
"""
from __future__ import annotations

import math

import numpy as np

from ... import dtypes as dt
from ...ir.types import TileType
from ...ops import elementwise as ew
from ...ops import matmul as mm
from ...ops import reduction as red
from .. import ast as A
from ..gwnumbers import SINGLE_MAX, truncate_single
from ..lexer import STRING_FUNCTIONS
from ..vtypes import DBL, INT, SIGIL_DTYPES, SNG, STRING, scalar
from .exprs import ExprMixin, shaped
from .values import const, dtype_of, is_tile, tconst

_TRIG_MAX = 5e16
_FLOAT_FNS = {"SQR": math.sqrt, "EXP": math.exp, "LOG": math.log, "ATN": math.atan,
              "SIN": lambda x: math.sin(x) if abs(x) < _TRIG_MAX else 0.0,
              "COS": lambda x: math.cos(x) if abs(x) < _TRIG_MAX else 1.0,
              "TAN": lambda x: math.tan(x) if abs(x) < _TRIG_MAX else 0.0}
_TILE_FNS = {"SQR": ew.sqrt, "EXP": ew.exp, "LOG": ew.log, "SIN": ew.sin, "COS": ew.cos, "TAN": ew.tan}


class FunctionsMixin(ExprMixin):
    def ev_Call(self, e: A.Call):
        name = e.name
        if name == "RND":
            return self.rnd(e)
        if name == "MMA":
            return self.mma(e)
        args = [self.ev(a) for a in e.args]
        if name in STRING_FUNCTIONS or name in ("LEN", "ASC", "VAL", "INSTR"):
            return self.string_call(name, args)
        if name in ("MIN", "MAX"):
            return self.min_max(name, *args)
        (x,) = args
        x = self.numeric(x)
        if shaped(x) or name == "SUM":
            return self.tile_call(name, x)
        return self.number_call(name, x)

    def number_call(self, name: str, x):
        d = dtype_of(x)
        if name == "ABS":
            if d is INT:
                self.runtime_error(ew.not_equal(x, const(-32768, INT)) if is_tile(x) else int(x) != -32768, "Overflow")
            return ew.abs(x) if is_tile(x) else const(abs(x.item()), d)
        if name == "SGN":
            if is_tile(x):
                return ew.where(ew.greater(x, 0), tconst(1, INT),
                                ew.where(ew.less(x, 0), tconst(-1, INT), tconst(0, INT)))
            return const(int(x > 0) - int(x < 0), INT)
        if name in ("INT", "FIX"):
            if d.is_int:
                return x
            if is_tile(x):
                return ew.floor(x) if name == "INT" else ew.where(ew.less(x, 0), ew.ceil(x), ew.floor(x))
            return const(math.floor(float(x)) if name == "INT" else math.trunc(float(x)), d)
        if name == "CINT":
            return self.round_int(x, INT)
        if name in ("CSNG", "CDBL"):
            return self.convert(x, SNG if name == "CSNG" else DBL)
        return self.float_function(name, x)

    def float_function(self, name: str, x):
        """SQR EXP LOG ATN SIN COS TAN of a single (a double is taken as a single first)."""
        xs = self.convert(x, SNG)
        if not is_tile(xs):
            f = float(xs)
            if name == "SQR" and f < 0 or name == "LOG" and f <= 0:
                self.runtime_error(False, "Illegal function call")
                return np.float32(0)
            try:
                r = _FLOAT_FNS[name](f)
            except OverflowError:
                r = math.inf
            return self.clamp_const(truncate_single(r) if abs(r) <= SINGLE_MAX
                                    else np.float32(math.copysign(np.inf, r)))
        x64 = self.convert(xs, DBL)
        if name == "SQR":
            self.runtime_error(ew.greater_equal(x64, 0.0), "Illegal function call")
            x64 = ew.maximum(x64, 0.0)
        elif name == "LOG":
            self.runtime_error(ew.greater(x64, 0.0), "Illegal function call")
            x64 = ew.where(ew.greater(x64, 0.0), x64, 1.0)
        if name == "ATN":
            r = ew.atan2(x64, 1.0)
        else:
            r = _TILE_FNS[name](x64)
            if name in ("SIN", "COS", "TAN"):
                r = ew.where(ew.less(ew.abs(x64), _TRIG_MAX), r, 1.0 if name == "COS" else 0.0)
        if name == "EXP":
            over = ew.greater(r, SINGLE_MAX)
            self.soft_error(over, "Overflow")
            r = ew.where(over, SINGLE_MAX, r)
        return self.truncate_to(r, SNG)

    def tile_call(self, name: str, x):
        """Functions of TILE-extension tiles: element-wise, safetile's float rules."""
        if name == "SUM":
            return red.sum(x) if is_tile(x) and x.shape else x
        if name == "ABS":
            return ew.abs(x)
        if name == "INT":
            return ew.floor(x) if x.dtype.is_float else x
        if name == "FIX":
            return ew.where(ew.less(x, 0), ew.ceil(x), ew.floor(x)) if x.dtype.is_float else x
        if name == "SGN":
            return ew.where(ew.greater(x, 0), 1, ew.where(ew.less(x, 0), -1, 0))
        if name == "CINT":
            return self.round_int(x, dt.int32, check=False)
        if name in ("CSNG", "CDBL"):
            return ew.astype(x, SNG if name == "CSNG" else DBL)
        if name == "ATN":
            return ew.atan2(self.to_float(x, x.dtype if x.dtype.is_float else SNG), 1.0)
        return _TILE_FNS[name](x)

    def min_max(self, name: str, a, b):
        a, b = self.numeric(a), self.numeric(b)
        if not is_tile(a) and not is_tile(b):
            d = dt.promote(dtype_of(a), dtype_of(b))
            x, y = self.convert(a, d), self.convert(b, d)
            return min(x, y) if name == "MIN" else max(x, y)
        a, b = self.tile_operand(a), self.tile_operand(b)
        return ew.minimum(a, b) if name == "MIN" else ew.maximum(a, b)

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
        acc_d = acc.dtype if is_tile(acc) else (dt.int32 if a.dtype.is_int else SNG)
        if acc_d.name not in allowed:
            acc_d = dt.as_dtype(allowed[-1])
        acc_t = self.materialize(acc, TileType(acc_d, out))
        return mm.emit_mma(a, b, acc_t)

    # ------------------------------------------------------------------ RND

    def rnd_cycle(self, state):
        """GW-BASIC's generator: state * 214013 + 2531011, modulo 2**24."""
        if not is_tile(state):
            return np.int32((int(state) * 214013 + 2531011) & 0xFFFFFF)
        return ew.bitwise_and(ew.add(ew.mul(state, 214013), 2531011), 0xFFFFFF)

    def rnd(self, e: A.Call):
        """RND, RND(x > 0): the next number; RND(0): the last again; RND(x < 0): restart the
        sequence from x's mantissa, then the next number."""
        if e.args:
            x = self.convert(self.numeric(self.ev(e.args[0])), SNG)
            if not is_tile(x):
                if x < 0:
                    self.env["$rnd"] = self.rnd_cycle(self.rnd_restart(x))
                elif x > 0:
                    self.env["$rnd"] = self.rnd_cycle(self.env["$rnd"])
            else:
                restart = self.rnd_cycle(self.rnd_restart(x))
                state = self.env["$rnd"]
                nxt = self.rnd_cycle(state)
                self.env["$rnd"] = ew.where(ew.less(x, 0), restart, ew.where(ew.equal(x, 0), state, nxt))
        else:
            self.env["$rnd"] = self.rnd_cycle(self.env["$rnd"])
        return ew.mul(ew.astype(self.env["$rnd"], SNG), np.float32(2.0 ** -24))

    def rnd_restart(self, x):
        """The state RND(x < 0) restarts from: x's 24-bit mantissa with its leading one."""
        if not is_tile(x):
            bits = int(np.float32(x).view(np.uint32))
            return np.int32((bits & 0x7FFFFF) | 0x800000) if bits & 0x7FFFFFFF else np.int32(0)
        bits = ew.bitcast(x, dt.int32)
        man = ew.bitwise_or(ew.bitwise_and(bits, 0x7FFFFF), 0x800000)
        return ew.where(ew.equal(x, np.float32(0)), 0, man)

    # ------------------------------------------------------------------ DEF FN

    def ev_FnCall(self, e: A.FnCall):
        fn = self.an.fns[e.name]
        self.runtime_error(self.env[f"$fn:{e.name}"], "Undefined user function")
        scope = {}
        for p, a in zip(fn.params, e.args):
            t = STRING if p.endswith("$") else scalar(SIGIL_DTYPES[p[-1]])
            scope[p] = self.to_type(self.ev(a), t)
        if isinstance(fn.expr, A.Var) and fn.expr.name in fn.params and fn.expr.name[-1] == e.name[-1]:
            # PC-BASIC hands back the parameter's own storage, restored to the global value
            # before it is read: such a function gives the variable the parameter shadows
            return self.ev_Var(fn.expr)
        self.fn_locals.append(scope)
        try:
            v = self.ev(fn.expr)
        finally:
            self.fn_locals.pop()
        return v if fn.type is STRING else self.to_type(v, fn.type)

