"""A small, independent BASIC interpreter used to derive the corpus's golden outputs.

It shares no code with ``safetile.basic``: it tokenizes with a regular expression, parses
expressions with precedence climbing and runs statements directly, classic-interpreter
style (a FOR pushes a frame that NEXT finds at run time, GOSUB pushes a return position,
a false block IF scans forward for its ELSE/ENDIF). It implements the language described
in docs/basic.md for classic programs (no tiles): single-precision (IEEE float32)
numbers, integer ``%`` variables (rounded on assignment), integer literals that stay exact
until mixed with floats, ``-2^2`` = -4, right-associative ``^``, truncating MOD and ``\\``,
comparisons giving -1/0, PRINT zones of 14 columns, numbers printed like ``% .7G`` plus a
trailing space, and RND from the documented counter-based hash.

Usage: ``python reference.py PROGRAM.bas [SEED]`` prints the program's output.
"""
from __future__ import annotations

import math
import re
import sys

import numpy as np

F32 = np.float32
KEYWORDS = set("""LET PRINT INPUT DIM TILE OUTPUT IF THEN ELSE ELSEIF ENDIF END FOR TO STEP NEXT WHILE WEND
GOTO GOSUB RETURN ON DATA READ RESTORE STOP REM AND OR XOR NOT MOD AS RANDOMIZE SPC TAB""".split())
FUNCS = {"ABS", "SQR", "INT", "FIX", "SGN", "SIN", "COS", "TAN", "ATN", "EXP", "LOG", "RND", "MIN", "MAX"}
TOKEN = re.compile(r"""\s*(?:(?P<num>\d+\.?\d*(?:[eE][+-]?\d+)?|\.\d+(?:[eE][+-]?\d+)?)|(?P<str>"[^"]*")|
    (?P<name>[A-Za-z_][A-Za-z0-9_]*[%!]?)|(?P<op><>|<=|>=|[-+*/^\\=<>(),;:?'])|(?P<bad>\S))""", re.X)


class Int:
    """An integer value; ``typed`` when it comes from a % variable (wraps to int32)."""
    __slots__ = ("v", "typed")

    def __init__(self, v, typed):
        self.v, self.typed = int(v), typed


def wrap(v):
    return (int(v) + 2 ** 31) % 2 ** 32 - 2 ** 31


def as_f32(x):
    if isinstance(x, Int):
        return F32(x.v)
    if isinstance(x, bool):
        return F32(-1.0 if x else 0.0)
    return F32(x)


def num(x):
    """Booleans as numbers: true = -1."""
    if isinstance(x, bool):
        return Int(-1 if x else 0, False)
    return x


def round_half_up(f):
    f = float(f)
    if math.isnan(f):
        return 0
    return int(math.floor(f + 0.5))


def fmt(x) -> str:
    x = num(x)
    if isinstance(x, Int) and x.typed:
        return "% d" % x.v
    return "% .7G" % (float(as_f32(x)) + 0.0)


def tokenize(text):
    toks = []
    pos = 0
    while pos < len(text):
        m = TOKEN.match(text, pos)
        if not m or m.end() == pos:
            break
        pos = m.end()
        kind = m.lastgroup
        val = m.group(kind)
        if kind == "name" and val.upper() in KEYWORDS:
            if val.upper() == "REM":
                break
            toks.append(("kw", val.upper()))
        elif kind == "op" and val == "'":
            break
        elif kind == "op" and val == "?":
            toks.append(("kw", "PRINT"))
        else:
            toks.append((kind, val))
    return toks


class Halt(Exception):
    pass


class Interp:
    def __init__(self, text: str, seed: int = 0):
        self.lines = []  # (number, tokens)
        for raw in text.splitlines():
            if not raw.strip():
                continue
            m = re.match(r"\s*(\d+)", raw)
            number = int(m.group(1)) if m else None
            self.lines.append((number, tokenize(raw[m.end():] if m else raw)))
        self.line_index = {n: i for i, (n, _) in enumerate(self.lines) if n is not None}
        self.vars = {}
        self.arrays = {}
        self.data = []
        self.data_line = {}
        for i, (n, toks) in enumerate(self.lines):
            for j, t in enumerate(toks):
                if t == ("kw", "DATA"):
                    if n is not None and n not in self.data_line:
                        self.data_line[n] = len(self.data)
                    k = j + 1
                    while k < len(toks) and toks[k] != ("op", ":"):
                        sign = 1
                        while toks[k][1] in "+-":
                            sign = -sign if toks[k][1] == "-" else sign
                            k += 1
                        v = toks[k][1]
                        self.data.append(sign * (int(v) if v.isdigit() else float(v)))
                        k += 1
                        if k < len(toks) and toks[k] == ("op", ","):
                            k += 1
        self.dp = 0
        self.out = []
        self.col = 0
        self.seed = seed
        self.rnd_key = self.key(seed)
        self.rnd_n = 0
        self.rnd_last = F32(0)
        self.for_stack = []
        self.gosub_stack = []
        self.while_stack = []

    # --------------------------------------------------------------- random numbers (documented hash)
    @staticmethod
    def mix(h):
        h = np.uint32(h)
        with np.errstate(over="ignore"):
            h ^= h >> np.uint32(16)
            h = np.uint32(h * np.uint32(0x85EBCA6B))
            h ^= h >> np.uint32(13)
            h = np.uint32(h * np.uint32(0xC2B2AE35))
            h ^= h >> np.uint32(16)
        return h

    def key(self, seed, bid=0):
        s = np.uint32(seed % 2 ** 32)
        with np.errstate(over="ignore"):
            return self.mix(np.uint32(s * np.uint32(0x9E3779B9) + np.uint32(bid) * np.uint32(0x85EBCA6B)
                                      + np.uint32(0x27D4EB2F)))

    def rnd(self):
        self.rnd_n = (self.rnd_n + 1) % 2 ** 32
        with np.errstate(over="ignore"):
            h = self.mix(np.uint32(self.rnd_key + np.uint32(self.rnd_n) * np.uint32(0x9E3779B9)))
        self.rnd_last = F32(F32(h >> np.uint32(8)) / F32(16777216.0))
        return self.rnd_last

    # --------------------------------------------------------------- expressions
    def parse_expr(self, toks, i, level=0):
        """Precedence climbing; returns (value, next index). Levels: XOR OR AND NOT cmp + MOD \\ * unary ^."""
        return self.level(toks, i, 0)

    LEVELS = [("XOR",), ("OR",), ("AND",), "NOT", ("=", "<>", "<", ">", "<=", ">="), ("+", "-"), ("MOD",),
              ("\\",), ("*", "/"), "UNARY"]

    def level(self, toks, i, k):
        if k == len(self.LEVELS):
            return self.power(toks, i)
        spec = self.LEVELS[k]
        if spec == "NOT":
            if i < len(toks) and toks[i] == ("kw", "NOT"):
                v, i = self.level(toks, i + 1, k)
                return self.op_not(v), i
            return self.level(toks, i, k + 1)
        if spec == "UNARY":
            if i < len(toks) and toks[i] in (("op", "-"), ("op", "+")):
                v, j = self.level(toks, i + 1, k)
                return (self.neg(v) if toks[i][1] == "-" else v), j
            return self.power(toks, i)
        v, i = self.level(toks, i, k + 1)
        while i < len(toks) and toks[i][1] in spec and toks[i][0] in ("op", "kw"):
            op = toks[i][1]
            w, i = self.level(toks, i + 1, k + 1)
            v = self.binop(op, v, w)
        return v, i

    def power(self, toks, i):
        v, i = self.atom(toks, i)
        if i < len(toks) and toks[i] == ("op", "^"):
            sign = 1
            i += 1
            while toks[i] in (("op", "-"), ("op", "+")):
                sign = -sign if toks[i][1] == "-" else sign
                i += 1
            w, i = self.power(toks, i)
            if sign < 0:
                w = self.neg(w)
            with np.errstate(all="ignore"):
                v = F32(np.power(as_f32(num(v)), as_f32(num(w))))
        return v, i

    def args(self, toks, i):
        assert toks[i] == ("op", "(")
        out = []
        i += 1
        while True:
            v, i = self.parse_expr(toks, i)
            out.append(v)
            if toks[i] == ("op", ","):
                i += 1
                continue
            assert toks[i] == ("op", ")")
            return out, i + 1

    def atom(self, toks, i):
        kind, val = toks[i]
        if kind == "num":
            if re.fullmatch(r"\d+", val):
                return Int(int(val), False), i + 1
            return F32(float(val)), i + 1
        if val == "(":
            v, i = self.parse_expr(toks, i + 1)
            return v, i + 1
        if kind == "name":
            up = val.upper()
            if up in FUNCS:
                if i + 1 < len(toks) and toks[i + 1] == ("op", "("):
                    a, j = self.args(toks, i + 1)
                    return self.call(up, a), j
                if up == "RND":
                    return self.rnd(), i + 1
            if i + 1 < len(toks) and toks[i + 1] == ("op", "("):
                a, j = self.args(toks, i + 1)
                return self.array_get(val, a), j
            return self.get(val), i + 1
        raise SyntaxError(f"bad token {val}")

    def get(self, name):
        if name in self.vars:
            return self.vars[name]
        return Int(0, True) if name.endswith("%") else F32(0)

    def set(self, name, v):
        v = num(v)
        if name.endswith("%"):
            self.vars[name] = Int(wrap(v.v) if isinstance(v, Int) else wrap(round_half_up(v)), True)
        else:
            self.vars[name] = as_f32(v)

    def index(self, v):
        v = num(v)
        return v.v if isinstance(v, Int) else int(math.floor(float(v)))

    def array_get(self, name, a):
        arr = self.arrays[name]
        idx = tuple(self.index(x) for x in a)
        return arr[idx]

    def array_set(self, name, a, v):
        arr = self.arrays[name]
        idx = tuple(self.index(x) for x in a)
        v = num(v)
        if name.endswith("%"):
            arr[idx] = Int(wrap(v.v) if isinstance(v, Int) else wrap(round_half_up(v)), True)
        else:
            arr[idx] = as_f32(v)

    def neg(self, v):
        v = num(v)
        if isinstance(v, Int):
            return Int(wrap(-v.v) if v.typed else -v.v, v.typed)
        return F32(-v)

    def op_not(self, v):
        if isinstance(v, bool):
            return not v
        v = num(v)
        i = v.v if isinstance(v, Int) else round_half_up(v)
        return Int(wrap(~i), True)

    def binop(self, op, a, b):
        if op in ("AND", "OR", "XOR"):
            if isinstance(a, bool) and isinstance(b, bool):
                return {"AND": a and b, "OR": a or b, "XOR": a != b}[op]
            ia = [x.v if isinstance(x, Int) else round_half_up(x) for x in (num(a), num(b))]
            return Int(wrap({"AND": ia[0] & ia[1], "OR": ia[0] | ia[1], "XOR": ia[0] ^ ia[1]}[op]), True)
        a, b = num(a), num(b)
        both_int = isinstance(a, Int) and isinstance(b, Int)
        with np.errstate(all="ignore"):
            if op in ("=", "<>", "<", ">", "<=", ">="):
                x, y = (a.v, b.v) if both_int else (as_f32(a), as_f32(b))
                return bool({"=": x == y, "<>": x != y, "<": x < y, ">": x > y, "<=": x <= y, ">=": x >= y}[op])
            if op == "/":
                return F32(as_f32(a) / as_f32(b))
            if not both_int:
                x, y = as_f32(a), as_f32(b)
                if op == "+":
                    return F32(x + y)
                if op == "-":
                    return F32(x - y)
                if op == "*":
                    return F32(x * y)
                if op == "MOD":
                    return F32(np.fmod(x, y))
                if op == "\\":
                    return F32(np.trunc(x / y))
            x, y = a.v, b.v
            typed = a.typed or b.typed
            if op == "+":
                r = x + y
            elif op == "-":
                r = x - y
            elif op == "*":
                r = x * y
            elif op == "MOD":
                r = 0 if y == 0 else x - y * int(math.copysign(abs(x) // abs(y), x * y if x * y else 1))
            else:  # "\\"
                r = 0 if y == 0 else int(math.copysign(abs(x) // abs(y), x * y if x * y else 1))
            return Int(wrap(r) if typed else r, typed)

    def call(self, name, a):
        if name == "RND":
            x = float(as_f32(num(a[0]))) if a else 1.0
            if x == 0:
                return self.rnd_last
            if x < 0:
                bits = np.array([as_f32(num(a[0]))], dtype=np.float32).view(np.uint32)[0]
                with np.errstate(over="ignore"):
                    self.rnd_key = self.mix(np.uint32(bits * np.uint32(0x9E3779B9) + np.uint32(0x165667B1)))
                self.rnd_n = 0
            return self.rnd()
        if name in ("MIN", "MAX"):
            x, y = num(a[0]), num(a[1])
            if isinstance(x, Int) and isinstance(y, Int):
                return (min if name == "MIN" else max)(x, y, key=lambda t: t.v)
            return F32((min if name == "MIN" else max)(as_f32(x), as_f32(y)))
        x = num(a[0])
        if isinstance(x, Int):
            if name in ("INT", "FIX"):
                return x
            if name == "ABS":
                return Int(abs(x.v), x.typed)
            if name == "SGN":
                return Int((x.v > 0) - (x.v < 0), True)
        f = as_f32(x)
        with np.errstate(all="ignore"):
            if name == "SGN":
                return Int(int(f > 0) - int(f < 0), True)
            fn = {"ABS": np.abs, "SQR": np.sqrt, "INT": np.floor, "FIX": np.trunc, "SIN": np.sin, "COS": np.cos,
                  "TAN": np.tan, "ATN": np.arctan, "EXP": np.exp, "LOG": np.log}[name]
            return F32(fn(f))

    # --------------------------------------------------------------- statements
    def split(self, toks):
        """Split a token list at top-level ':' (IF bodies keep the rest of the line)."""
        parts, cur = [], []
        for t in toks:
            if t == ("op", ":"):
                parts.append(cur)
                cur = []
            else:
                cur.append(t)
        parts.append(cur)
        return parts

    def run(self):
        self.pos = (0, 0)
        try:
            while self.pos[0] < len(self.lines):
                li, si = self.pos
                stmts = self.split(self.lines[li][1])
                if si >= len(stmts):
                    self.pos = (li + 1, 0)
                    continue
                self.pos = (li, si + 1)
                self.execute(stmts[si], li, si, stmts)
        except Halt:
            pass
        return "".join(self.out)

    def write(self, text):
        self.out.append(text)
        nl = text.rfind("\n")
        self.col = len(text) - nl - 1 if nl >= 0 else self.col + len(text)

    def goto(self, number):
        self.pos = (self.line_index[number], 0)

    def execute(self, toks, li, si, stmts):
        if not toks:
            return
        kind, val = toks[0]
        if kind == "name":
            self.assign(toks, 0)
            return
        if val == "LET":
            self.assign(toks, 1)
        elif val == "PRINT":
            self.print_(toks[1:])
        elif val in ("DIM",):
            i = 1
            while i < len(toks):
                name = toks[i][1]
                a, i = self.args(toks, i + 1)
                shape = tuple(self.index(x) + 1 for x in a)
                arr = np.empty(shape, dtype=object)
                arr.fill(Int(0, True) if name.endswith("%") else F32(0))
                self.arrays[name] = arr
                if i < len(toks) and toks[i] == ("op", ","):
                    i += 1
        elif val in ("REM", "DATA", "INPUT", "TILE", "OUTPUT"):
            pass
        elif val == "IF":
            self.if_(toks, li, si, stmts)
        elif val == "ELSE" or val == "ELSEIF":  # reached from a taken branch: skip to ENDIF
            self.skip_block(li, si, stop=("ENDIF",))
        elif val == "ENDIF" or (val == "END" and len(toks) > 1 and toks[1] == ("kw", "IF")):
            pass
        elif val in ("END", "STOP"):
            raise Halt
        elif val == "FOR":
            name = toks[1][1]
            j = toks.index(("kw", "TO"))
            start, _ = self.parse_expr(toks, 3)
            lim, k = self.parse_expr(toks, j + 1)
            step = Int(1, False)
            if k < len(toks) and toks[k] == ("kw", "STEP"):
                step, _ = self.parse_expr(toks, k + 1)
            self.set(name, start)
            typed = name.endswith("%")
            lim = self.conv(lim, typed)
            step = self.conv(step, typed)
            if not self.for_ok(self.get(name), lim, step):
                self.skip_for(li, si)
                return
            self.for_stack.append((name, lim, step, self.pos))
        elif val == "NEXT":
            names = [t[1] for t in toks[1:] if t[0] == "name"] or [None]
            for nm in names:
                name, lim, step, body = self.for_stack[-1]
                assert nm is None or nm == name, f"NEXT {nm} vs FOR {name}"
                self.set(name, self.binop("+", self.get(name), step))
                if self.for_ok(self.get(name), lim, step):
                    self.pos = body
                    return
                self.for_stack.pop()
        elif val == "WHILE":
            c, _ = self.parse_expr(toks, 1)
            if self.truth(c):
                self.while_stack.append((li, si))
            else:
                self.skip_while(li, si)
        elif val == "WEND":
            self.pos = self.while_stack.pop()
        elif val == "GOTO":
            self.goto(int(toks[1][1]))
        elif val == "GOSUB":
            self.gosub_stack.append(self.pos)
            self.goto(int(toks[1][1]))
        elif val == "RETURN":
            if not self.gosub_stack:
                raise RuntimeError("RETURN without GOSUB")
            ret = self.gosub_stack.pop()
            if ret[0] == "inline":
                self.pos = ret[2]
                self.exec_seq(ret[1])
            else:
                self.pos = ret
        elif val == "ON":
            j = next(k for k, t in enumerate(toks) if t in (("kw", "GOTO"), ("kw", "GOSUB")))
            v, _ = self.parse_expr(toks, 1)
            k = self.index(self.conv(v, True))
            targets = [int(t[1]) for t in toks[j + 1:] if t[0] == "num"]
            if 1 <= k <= len(targets):
                if toks[j][1] == "GOSUB":
                    self.gosub_stack.append(self.pos)
                self.goto(targets[k - 1])
        elif val == "READ":
            i = 1
            while i < len(toks):
                if self.dp >= len(self.data):
                    raise RuntimeError("out of DATA")
                d = self.data[self.dp]
                self.dp += 1
                v = Int(d, False) if isinstance(d, int) else F32(d)
                name = toks[i][1]
                if i + 1 < len(toks) and toks[i + 1] == ("op", "("):
                    a, i = self.args(toks, i + 1)
                    self.array_set(name, a, v)
                else:
                    self.set(name, v)
                    i += 1
                if i < len(toks) and toks[i] == ("op", ","):
                    i += 1
        elif val == "RESTORE":
            if len(toks) > 1:
                n = int(toks[1][1])
                later = [self.data_line[m] for m in self.data_line if m >= n]
                self.dp = min(later) if later else len(self.data)
            else:
                self.dp = 0
        elif val == "RANDOMIZE":
            if len(toks) > 1:
                v, _ = self.parse_expr(toks, 1)
                self.rnd_key = self.key(self.conv(v, True).v % 2 ** 32)
            else:
                self.rnd_key = self.key(self.seed)
            self.rnd_n = 0
        else:
            raise SyntaxError(f"statement {val}")

    def conv(self, v, typed):
        v = num(v)
        if typed:
            return Int(wrap(v.v) if isinstance(v, Int) else wrap(round_half_up(v)), True)
        return as_f32(v)

    def for_ok(self, v, lim, step):
        s = float(as_f32(num(step)))
        x, y = float(as_f32(num(v))), float(as_f32(num(lim)))
        if isinstance(v, Int) and isinstance(lim, Int):
            x, y = v.v, lim.v
        return x <= y if s >= 0 else x >= y

    def truth(self, c):
        if isinstance(c, bool):
            return c
        c = num(c)
        return (c.v != 0) if isinstance(c, Int) else float(c) != 0

    def assign(self, toks, i):
        name = toks[i][1]
        if toks[i + 1] == ("op", "("):
            a, j = self.args(toks, i + 1)
            v, _ = self.parse_expr(toks, j + 1)
            self.array_set(name, a, v)
        else:
            v, _ = self.parse_expr(toks, i + 2)
            self.set(name, v)

    def if_(self, toks, li, si, stmts):
        rest = [t for part in stmts[si:] for t in part + [("op", ":")]][:-1]  # IF ... to the end of line
        then_at = rest.index(("kw", "THEN")) if ("kw", "THEN") in toks else None
        if then_at is not None and then_at == len(rest) - 1:  # block IF
            c, _ = self.parse_expr(toks, 1)
            if not self.truth(c):
                self.skip_block(li, si + 1, stop=("ELSE", "ELSEIF", "ENDIF"))
            return
        self.pos = (li + 1, 0)
        self.single_if(rest)

    def single_if(self, toks):
        """``IF c THEN a ELSE b`` where the branches run to the end of the line."""
        has_then = ("kw", "THEN") in toks
        j = toks.index(("kw", "THEN")) if has_then else toks.index(("kw", "GOTO"))
        c, _ = self.parse_expr(toks, 1)
        after = toks[j + 1:]
        depth, split = 0, None
        for n, t in enumerate(after):
            if t == ("kw", "IF"):
                depth += 1
            elif t == ("kw", "ELSE"):
                if depth == 0:
                    split = n
                    break
                depth -= 1
        then, orelse = (after[:split], after[split + 1:]) if split is not None else (after, [])
        branch = then if self.truth(c) else orelse
        if not has_then and branch is then:
            branch = [("kw", "GOTO")] + then
        self.exec_seq(branch)

    def exec_seq(self, toks):
        """Run the statements of a single-line IF branch; stop when control jumps."""
        parts = self.split(toks)
        if len(parts) == 1 and len(parts[0]) == 1 and parts[0][0][0] == "num":
            self.goto(int(parts[0][0][1]))
            return
        for k, p in enumerate(parts):
            if not p:
                continue
            if p[0] == ("kw", "IF"):
                self.single_if([t for q in parts[k:] for t in q + [("op", ":")]][:-1])
                return
            if p[0] in (("kw", "FOR"), ("kw", "NEXT"), ("kw", "WHILE"), ("kw", "WEND")):
                raise SyntaxError("loops inside a single-line IF are not supported by the reference")
            before = self.pos
            if p[0] == ("kw", "GOSUB"):
                remaining = [t for q in parts[k + 1:] for t in q + [("op", ":")]][:-1]
                self.gosub_stack.append(("inline", remaining, self.pos))
                self.goto(int(p[1][1]))
                return
            self.execute(p, before[0], 0, parts)
            if self.pos != before:
                return

    # --------------------------------------------------------------- skipping
    def stmts_from(self, li, si):
        for i in range(li, len(self.lines)):
            stmts = self.split(self.lines[i][1])
            for j in range(si if i == li else 0, len(stmts)):
                yield i, j, stmts[j]

    def skip_block(self, li, si, stop):
        depth = 0
        for i, j, s in self.stmts_from(li, si):
            if not s:
                continue
            if s[0] == ("kw", "IF") and s[-1] == ("kw", "THEN"):
                depth += 1
                continue
            w = "ENDIF" if (s[0] == ("kw", "END") and len(s) > 1 and s[1] == ("kw", "IF")) else s[0][1]
            if depth == 0 and w in stop:
                if w == "ELSEIF":
                    c, _ = self.parse_expr(s, 1)
                    if self.truth(c):
                        self.pos = (i, j + 1)
                        return
                    continue
                self.pos = (i, j + 1)
                return
            if w == "ENDIF":
                depth -= 1

    def skip_for(self, li, si):
        depth = 0
        for i, j, s in self.stmts_from(li, si):
            if s and s[0] == ("kw", "FOR"):
                depth += 1
            elif s and s[0] == ("kw", "NEXT"):
                depth -= max(1, sum(1 for t in s if t[0] == "name"))
                if depth <= 0:
                    self.pos = (i, j + 1)
                    return

    def skip_while(self, li, si):
        depth = 0
        for i, j, s in self.stmts_from(li, si):
            if s and s[0] == ("kw", "WHILE"):
                depth += 1
            elif s and s[0] == ("kw", "WEND"):
                depth -= 1
                if depth == 0:
                    self.pos = (i, j + 1)
                    return

    # --------------------------------------------------------------- PRINT
    def print_(self, toks):
        i = 0
        last = "start"
        sep_last = False
        while i < len(toks):
            t = toks[i]
            if t == ("op", ";"):
                sep_last = True
                i += 1
                continue
            if t == ("op", ","):
                r = self.col % 14
                pad = (14 - r) % 14 if last == "num" else 14 - r
                self.write(" " * pad)
                last = "comma"
                sep_last = True
                i += 1
                continue
            sep_last = False
            if t[0] == "str":
                self.write(t[1][1:-1])
                last = "text"
                i += 1
                continue
            if t in (("kw", "SPC"), ("kw", "TAB")):
                a, i = self.args(toks, i + 1)
                n = self.conv(a[0], True).v
                pad = n if t[1] == "SPC" else n - 1 - self.col
                self.write(" " * max(0, min(pad, 255)))
                last = "text"
                continue
            v, i = self.parse_expr(toks, i)
            self.write(fmt(v) + " ")
            last = "num"
        if not sep_last:
            self.write("\n")


def run_program(text: str, seed: int = 0) -> str:
    return Interp(text, seed).run()


if __name__ == "__main__":  # pragma: no cover
    with open(sys.argv[1]) as f:
        sys.stdout.write(run_program(f.read(), int(sys.argv[2]) if len(sys.argv) > 2 else 0))
