"""Expressions: operators with GW-BASIC's semantics, on constants (folded) and tiles.

``+ - * /`` compute in single precision (double when a double takes part; safetile's 32-bit
integers stay exact under + - *); ``^`` with an integer exponent multiplies by repeated
squaring, as GW-BASIC does, else goes through double precision and truncates to single;
``\\``, ``MOD`` and the logical operators round their operands to integers (*Overflow*
outside -32768..32767); comparisons give true/false, which are -1/0 as numbers. Division by
zero prints *Division by zero* and gives the largest number, as does an overflowing float
result (*Overflow*), checked where an assignment or PRINT takes the value. Tiles of the TILE
extension follow safetile's element-wise rules instead.
"""
from __future__ import annotations

import math

import numpy as np

from ... import dtypes as dt
from ...ops import elementwise as ew
from ...ops.values import Tile, as_tile
from .. import ast as A
from ..gwnumbers import (
    DOUBLE,
    DOUBLE_MAX,
    LN2,
    SINGLE,
    SINGLE_MAX,
    MbfOverflow,
    mbf_add,
    mbf_div,
    mbf_mul,
    truncate_single,
)
from ..structure import walk_exprs
from ..vtypes import BOOL, DBL, INT, LONG, SNG, arith_dtype, numeric_kind
from .mbf import single_op
from .strings import StrVal
from .values import const, dtype_of, is_tile, tconst
from ...frontend.common import MixinBase

_CMP = {"=": "equal", "<>": "not_equal", "<": "less", ">": "greater", "<=": "less_equal", ">=": "greater_equal"}
_CMP_PY = {"=": np.equal, "<>": np.not_equal, "<": np.less, ">": np.greater, "<=": np.less_equal,
           ">=": np.greater_equal}
_LOGIC = ("AND", "OR", "XOR", "EQV", "IMP")
_MAY_OVERFLOW = ("+", "-")  # checked where the value is used (* / ^ and EXP check themselves)


def shaped(v) -> bool:
    return is_tile(v) and v.shape != ()


def operands(e: A.Expr) -> list[A.Expr]:
    if isinstance(e, (A.Index, A.Call, A.FnCall)):
        return list(e.args)
    if isinstance(e, A.Unary):
        return [e.operand]
    if isinstance(e, A.Binary):
        return [e.left, e.right]
    return []



def float_max(d) -> float:
    """The largest number of GW-BASIC's type ``d`` (what an overflow or a division by zero gives)."""
    return DOUBLE_MAX if d is DBL else SINGLE_MAX

class ExprMixin(MixinBase):
    def ev(self, e: A.Expr):
        if id(e) in self.an.bad_exprs:
            return self.at(e.pos, self.ev_bad, e)
        method = getattr(self, "ev_" + type(e).__name__)
        return self.at(e.pos, method, e)

    def ev_bad(self, e: A.Expr):
        """An expression that stops the program (Type mismatch ...) once its operands are
        evaluated, as GW-BASIC does; its value is never used."""
        for x in operands(e):
            self.ev(x)
        message = self.an.bad_exprs[id(e)]
        if message:
            self.runtime_error(False, message)
        return np.float32(0)

    def ev_Num(self, e: A.Num):
        return e.value

    def ev_Var(self, e: A.Var):
        for scope in reversed(self.fn_locals):  # DEF FN parameters stand in for the globals while
            if e.name in scope:                  # their function runs (also for functions it calls)
                return scope[e.name]
        t = self.types.get(e.name)
        v = self.env.get(e.name)
        if v is None:
            v = self.zero(t)
        if t is not None and not isinstance(v, StrVal) and t.shape and not is_tile(v):
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
            x = self.logic_operand(v, LONG if numeric_kind(dtype_of(v)) is LONG else INT)
            return ew.bitwise_not(x) if is_tile(x) else const(~int(x), dtype_of(x))
        v = self.numeric(v)
        d = dtype_of(v)
        if d is INT:  # GW-BASIC negates an integer as a single (so -(-32768) is 32768)
            v, d = self.convert(v, SNG), SNG
        if is_tile(v):
            return ew.negative(v)
        return const(-v.item(), d)

    def ev_Binary(self, e: A.Binary):
        a = self.ev(e.left)
        b = self.ev(e.right)
        if isinstance(a, StrVal) or isinstance(b, StrVal):
            if e.op == "+":
                return self.concat(a, b)
            return self.compare(e.op, a, b)
        if e.op in _CMP:
            return self.numeric_compare(e.op, a, b)
        if e.op in _LOGIC:
            return self.logic(e.op, a, b)
        if e.op in ("\\", "MOD"):
            return self.int_divide(e.op, a, b)
        return self.arith(e.op, a, b)

    # ------------------------------------------------------------------ arithmetic

    def arith(self, op: str, a, b):
        """``a op b`` for + - * / ^ with GW-BASIC's types."""
        a, b = self.numeric(a), self.numeric(b)
        da, db = dtype_of(a), dtype_of(b)
        if shaped(a) or shaped(b):
            return self.tile_arith(op, a, b)
        if op == "^":
            return self.power(a, b)
        d = arith_dtype(da, db, op)
        x, y = self.convert(a, d), self.convert(b, d)
        if op == "/":
            return self.divide(x, y, d)
        if not is_tile(x) and not is_tile(y):
            if d.is_int:
                return const({"+": int(x) + int(y), "-": int(x) - int(y), "*": int(x) * int(y)}[op], d)
            p = SINGLE if d is SNG else DOUBLE
            try:
                return mbf_mul(x, y, p) if op == "*" else mbf_add(x, y, p, subtract=op == "-")
            except MbfOverflow:  # keep the sign of the exact result
                fx, fy = float(x), float(y)
                exact = fx * fy if op == "*" else fx + (-fy if op == "-" else fy)
                return self.clamp_const(const(math.copysign(np.inf, exact), d))
        if d is SNG:  # GW-BASIC's rounding
            r = single_op(self, op, as_tile(x, SNG) if not is_tile(x) else x, as_tile(y, SNG) if not is_tile(y) else y)
            return self.overflow_check(r) if op == "*" else r
        r = {"+": ew.add, "-": ew.sub, "*": ew.mul}[op](x, y)
        return self.overflow_check(r) if op == "*" and d.is_float else r

    def tile_arith(self, op: str, a, b):
        """Element-wise arithmetic on TILE-extension tiles (safetile's promotion rules)."""
        if op == "^":
            return ew.pow(self.to_float(a, dtype_of(a) if dtype_of(a).is_float else SNG), self.to_float(b))
        a, b = self.tile_operand(a), self.tile_operand(b)
        return {"+": ew.add, "-": ew.sub, "*": ew.mul, "/": ew.truediv}[op](a, b)

    def tile_operand(self, v):
        """A constant meeting a tile keeps the tile's dtype (a NumPy scalar would promote it)."""
        return v.item() if not is_tile(v) and not isinstance(v, (bool, np.bool_)) else v

    def clamp_const(self, r):
        """A folded float beyond the MBF range: *Overflow*, then the largest number."""
        d = dtype_of(r)
        if d.is_float and not abs(float(r)) <= float_max(d):
            self.soft_error(True, "Overflow")
            return const(-float_max(d) if float(r) < 0 else float_max(d), d)
        return r

    def divide(self, x, y, d):
        if not is_tile(x) and not is_tile(y):
            if float(y) == 0:
                self.soft_error(True, "Division by zero")
                return const(-float_max(d) if math.copysign(1.0, float(x)) < 0 else float_max(d), d)
            try:
                return mbf_div(x, y, SINGLE if d is SNG else DOUBLE)
            except MbfOverflow:
                return self.clamp_const(const(np.inf, d))
        if not is_tile(y) and float(y) != 0:
            q = ew.truediv(x, y)
            return q if abs(float(y)) >= 1 else self.overflow_check(q)  # |x / y| <= |x| cannot overflow
        zero = ew.equal(y, const(0, d))
        self.soft_error(zero, "Division by zero")
        q = self.overflow_check(ew.truediv(x, ew.where(zero, const(1, d), y)))
        if not is_tile(x):  # a constant dividend (e.g. 2D3 / Y): its sign is known now
            big = tconst(-float_max(d) if math.copysign(1.0, float(x)) < 0 else float_max(d), d)
        else:
            big = ew.where(self.sign_bit(x), tconst(-float_max(d), d), tconst(float_max(d), d))
        return ew.where(zero, big, q)

    @staticmethod
    def sign_bit(x: Tile) -> Tile:
        """Whether a float is negative, -0 included (GW-BASIC keeps the sign of a negated zero)."""
        bits = ew.bitcast(x, dt.int64 if x.dtype is DBL else dt.int32)
        return ew.less(bits, 0)

    def overflow_check(self, r: Tile) -> Tile:
        """A float result beyond the MBF range: *Overflow*, then the largest number."""
        d = r.dtype
        bad = ew.bitwise_not(ew.less_equal(ew.abs(r), const(float_max(d), d)))
        self.soft_error(bad, "Overflow")
        big = ew.where(ew.less(r, const(0, d)), tconst(-float_max(d), d), tconst(float_max(d), d))
        return ew.where(bad, big, r)

    def checked_float(self, v, e: A.Expr):
        """*Overflow* for a float result beyond the MBF range, where a sum or difference hands
        its value to an assignment or PRINT."""
        if not is_tile(v) or v.shape != () or not v.dtype.is_float:
            return v
        if not any(isinstance(x, A.Binary) and x.op in _MAY_OVERFLOW for x in walk_exprs(e)):
            return v
        return self.overflow_check(v)

    # ------------------------------------------------------------------ powers

    def power(self, a, b):
        """``a ^ b`` is always a single in GW-BASIC (doubles are rounded first)."""
        db = dtype_of(b)
        d = SNG
        if db.is_int or db.is_bool:
            return self.int_power(self.convert(a, d), b, d)
        x, y = self.convert(a, d), self.convert(b, d)
        if not is_tile(x) and not is_tile(y):
            fx, fy = float(x), float(y)
            if fx < 0 and not fy.is_integer():
                self.runtime_error(False, "Illegal function call")
                return const(0, d)
            if fx == 0 and fy < 0:
                self.soft_error(True, "Division by zero")
                return const(SINGLE_MAX, d)
            try:
                r = fx ** fy
            except OverflowError:
                r = math.inf
            return self.clamp_const(truncate_single(r) if d is SNG else const(r, d))
        x64, y64 = self.convert(x, DBL), self.convert(y, DBL)
        whole = ew.equal(ew.floor(y64), y64)
        self.runtime_error(ew.bitwise_or(ew.greater_equal(x64, 0.0), whole), "Illegal function call")
        zero_div = ew.bitwise_and(ew.equal(x64, 0.0), ew.less(y64, 0.0))
        self.soft_error(zero_div, "Division by zero")
        r = ew.pow(x64, y64)
        r = ew.where(zero_div, SINGLE_MAX, r)
        return self.overflow_check(self.truncate_to(r, d))

    def truncate_to(self, r64: Tile, d):
        """A float64 result stored as GW-BASIC stores it in a single (gwnumbers.truncate_single:
        the exponent from ``trunc(log2|x| - 23)``, the scaled magnitude truncated)."""
        if d is DBL:
            return r64
        a = ew.abs(r64)
        normal = ew.bitwise_and(ew.greater(a, 0.0), ew.less(a, math.inf))
        safe = ew.where(normal, a, 1.0)
        lg = ew.sub(ew.truediv(ew.log(safe), LN2), 23.0)
        e = ew.where(ew.less(lg, 0.0), ew.ceil(lg), ew.floor(lg))
        man = ew.floor(ew.mul(safe, _exact_pow2(ew.negative(e))))
        for _ in range(2):
            small = ew.less_equal(man, float(0x7FFFFF))
            man = ew.where(small, ew.mul(man, 2.0), man)
            e = ew.where(small, ew.sub(e, 1.0), e)
        for _ in range(2):
            big = ew.greater(man, float(0xFFFFFF))
            man = ew.where(big, ew.floor(ew.mul(man, 0.5)), man)
            e = ew.where(big, ew.add(e, 1.0), e)
        v = ew.mul(man, _exact_pow2(e))
        v = ew.where(ew.less(r64, 0.0), ew.negative(v), v)
        return ew.astype(ew.where(normal, v, r64), SNG)

    def int_power(self, x, e, d):
        """x ^ e for an integer e: left-to-right binary powering with GW-BASIC's products (its
        squarings); a negative e divides one by the power."""
        def times(u, v):
            if not is_tile(u) and not is_tile(v):
                return mbf_mul(u, v)
            st = self.scalar_type(d)
            return single_op(self, "*", self.materialize(u, st), self.materialize(v, st))

        if not is_tile(e):
            n = int(e)
            r = None
            try:
                for bit in bin(abs(n))[2:]:
                    r = None if r is None else times(r, r)
                    if bit == "1":
                        r = x if r is None else times(r, x)
            except MbfOverflow:
                return self.clamp_const(np.float32(np.inf))
            r = const(1, d) if r is None else r
            r = self.divide(const(1, d), r, d) if n < 0 else r
            return self.overflow_check(r) if is_tile(r) else r
        x_t = self.materialize(x, self.scalar_type(d))
        e32 = self.convert(e, LONG)
        magnitude = ew.abs(e32)
        from .numtext import helper_loop
        bits = 16 if dtype_of(e) is not LONG else 31

        def step(v, k):
            bit = ew.bitwise_and(ew.bitwise_rshift(magnitude, ew.sub(bits - 1, k)), 1)
            sq = times(v["r"], v["r"])
            v["r"] = ew.where(ew.equal(bit, 1), times(sq, x_t), sq)
        out = helper_loop(self, "for", {"r": self.materialize(const(1, d), self.scalar_type(d))}, None, step,
                          bounds=[as_tile(np.int32(0), LONG), as_tile(np.int32(bits), LONG),
                                  as_tile(np.int32(1), LONG)])
        r = out["r"]
        negative = ew.less(e32, 0)
        inverse = self.divide(const(1, d), ew.where(negative, r, const(1, d)), d)
        return self.overflow_check(ew.where(negative, inverse, r))

    @staticmethod
    def scalar_type(d):
        from ...ir.types import TileType
        return TileType(d, ())

    # ------------------------------------------------------------------ integers and logic

    def logic_operand(self, v, d):
        """An operand of \\ MOD AND OR XOR EQV IMP NOT: rounded to an integer (16-bit unless
        a 32-bit integer takes part)."""
        return self.round_int(v, d, check=d is INT)

    def logic(self, op: str, a, b):
        ta = (is_tile(a) and a.dtype.is_bool) or isinstance(a, (bool, np.bool_))
        tb = (is_tile(b) and b.dtype.is_bool) or isinstance(b, (bool, np.bool_))
        if ta and tb:  # comparisons joined by AND/OR: stay booleans
            if not is_tile(a) and not is_tile(b):
                p, q = bool(a), bool(b)
                return {"AND": p and q, "OR": p or q, "XOR": p != q, "EQV": p == q, "IMP": (not p) or q}[op]
            x = a if is_tile(a) else as_tile(bool(a), BOOL)
            y = b if is_tile(b) else as_tile(bool(b), BOOL)
        else:
            d = LONG if LONG in (numeric_kind(dtype_of(self.numeric(a))), numeric_kind(dtype_of(self.numeric(b)))) \
                else INT
            if shaped(a) or shaped(b):
                d = dt.int32
            x, y = self.logic_operand(a, d), self.logic_operand(b, d)
            if not is_tile(x) and not is_tile(y):
                i, j = int(x), int(y)
                r = {"AND": i & j, "OR": i | j, "XOR": i ^ j, "EQV": ~(i ^ j), "IMP": ~i | j}[op]
                return const(r, d)
        if op == "AND":
            return ew.bitwise_and(x, y)
        if op == "OR":
            return ew.bitwise_or(x, y)
        if op == "XOR":
            return ew.bitwise_xor(x, y)
        if op == "EQV":
            return ew.bitwise_not(ew.bitwise_xor(x, y))
        return ew.bitwise_or(ew.bitwise_not(x), y)

    def int_divide(self, op: str, a, b):
        """``\\`` (truncating) and MOD (the dividend's sign) of operands rounded to integers.
        By zero: *Division by zero* and the largest single (the result is then a single)."""
        a, b = self.numeric(a), self.numeric(b)
        if shaped(a) or shaped(b):
            return self.tile_int_divide(op, a, b)
        d = LONG if LONG in (numeric_kind(dtype_of(a)), numeric_kind(dtype_of(b))) else INT
        x, y = self.logic_operand(a, d), self.logic_operand(b, d)
        if not is_tile(y):
            j = int(y)
            if j == 0:
                self.soft_error(True, "Division by zero")
                big = -SINGLE_MAX if (not is_tile(x) and int(x) < 0) else SINGLE_MAX
                if is_tile(x):
                    return ew.where(ew.less(x, const(0, d)), np.float32(-SINGLE_MAX), np.float32(SINGLE_MAX))
                return np.float32(big)
            if not is_tile(x):
                i = int(x)
                q = abs(i) // abs(j) * (1 if (i >= 0) == (j > 0) else -1)
                return const(q if op == "\\" else i - j * q, d)
            return self.trunc_div(op, x, y)
        zero = ew.equal(y, const(0, d))
        self.soft_error(zero, "Division by zero")
        safe = ew.where(zero, const(1, d), y)
        r = self.trunc_div(op, self.materialize(x, self.scalar_type(d)), safe)
        big = ew.where(ew.less(x, const(0, d)) if is_tile(x) else as_tile(int(x) < 0, BOOL),
                       np.float32(-SINGLE_MAX), np.float32(SINGLE_MAX))
        return ew.where(zero, big, ew.astype(r, SNG))

    def trunc_div(self, op: str, x, y):
        """Truncating quotient (``\\``) or remainder with the dividend's sign (MOD)."""
        d = dtype_of(x) if is_tile(x) else dtype_of(y)
        wide = dt.int32
        xi, yi = self.convert(x, wide), self.convert(y, wide)
        q = ew.floordiv(xi, yi)
        exact = ew.equal(ew.mul(q, yi), xi)
        q = ew.where(ew.bitwise_and(ew.less(q, 0), ew.bitwise_not(exact)), ew.add(q, 1), q)
        r = q if op == "\\" else ew.sub(xi, ew.mul(q, yi))
        return ew.astype(r, d) if d is not wide else r

    def tile_int_divide(self, op: str, a, b):
        a, b = self.tile_operand(a), self.tile_operand(b)
        fa = is_tile(a) and a.dtype.is_float or isinstance(a, float)
        fb = is_tile(b) and b.dtype.is_float or isinstance(b, float)
        if op == "MOD":
            r = ew.mod(a, b)  # sign of b; BASIC's MOD takes the sign of a
            fix = ew.bitwise_and(ew.not_equal(r, 0), ew.not_equal(ew.less(r, 0), ew.less(a, 0)))
            return ew.where(fix, ew.sub(r, b), r)
        if fa or fb:
            q = ew.truediv(a, b)
            return ew.where(ew.less(q, 0), ew.ceil(q), ew.floor(q))
        q = ew.floordiv(a, b)
        exact = ew.equal(ew.mul(q, b), a)
        return ew.where(ew.bitwise_and(ew.less(q, 0), ew.bitwise_not(exact)), ew.add(q, 1), q)

    # ------------------------------------------------------------------ comparisons

    def numeric_compare(self, op: str, a, b):
        a, b = self.numeric(a), self.numeric(b)
        if shaped(a) or shaped(b):
            return getattr(ew, _CMP[op])(self.tile_operand(a), self.tile_operand(b))
        da, db = dtype_of(a), dtype_of(b)
        if da.is_float or db.is_float:
            d = DBL if DBL in (da, db) else SNG
        else:
            d = LONG if LONG in (da, db) else INT
        x, y = self.convert(a, d), self.convert(b, d)
        if not is_tile(x) and not is_tile(y):
            return bool(_CMP_PY[op](x, y))
        return getattr(ew, _CMP[op])(x, y)


def _exact_pow2(e: Tile) -> Tile:
    """2**e for an integral float64 ``e`` in the normal range, built from its bits: exact on every
    backend (a libm/libdevice ``pow`` may be an ulp off, and a truncated mantissa then loses a
    unit: SQR(9) printed 2.999999 on the GPU)."""
    biased = ew.astype(ew.add(ew.minimum(ew.maximum(e, -1022.0), 1023.0), 1023.0), dt.int64)
    return ew.bitcast(ew.bitwise_lshift(biased, tconst(52, dt.int64)), dt.float64)
