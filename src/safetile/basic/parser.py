"""BASIC parser: token lines → ``ast.Program``.

Operator precedence, lowest first (GW-BASIC's): IMP, EQV, XOR, OR, AND, NOT, comparisons
(= <> < > <= >=), + -, MOD, integer division \\, * /, unary minus, ^ (left to right; its
right operand may carry a sign, so ``2^-1`` works). So ``-2^2`` is -4 and ``2^3^2`` is 64.

A line that does not parse becomes a ``Broken`` statement: GW-BASIC runs the lines before
it and stops there with *Syntax error*; the error is also reported (``safetile check``).
Every line is checked, so one run reports every syntax error.
"""
from __future__ import annotations

from . import ast as A
from .errors import BasicError
from .lexer import FUNCTIONS, TYPE_NAMES, Source, SourceLine, Token, tokenize

# binary operator precedences (higher binds tighter); NOT is a prefix at 6, unary minus
# at 12 and ^ (left to right) at 13
_BINARY = {"IMP": 1, "EQV": 2, "XOR": 3, "OR": 4, "AND": 5, "=": 7, "<>": 7, "<": 7, ">": 7, "<=": 7,
           ">=": 7, "+": 8, "-": 8, "MOD": 9, "\\": 10, "*": 11, "/": 11}
_NOT_PREC, _UNARY_PREC, _POW_PREC = 6, 12, 13
_DEF_SIGILS = {"DEFINT": "%", "DEFSNG": "!", "DEFDBL": "#", "DEFSTR": "$"}


class _LineParser:
    def __init__(self, src: Source, line: SourceLine):
        self.src = src
        self.line = line
        self.toks = line.tokens
        self.i = 0
        self.number = line.number

    # ------------------------------------------------------------------ token helpers

    def peek(self, k: int = 0) -> Token | None:
        j = self.i + k
        toks = self.toks
        return toks[j] if j < len(toks) else None

    def token(self) -> Token:
        """The next token, where the caller has seen that there is one."""
        return self.toks[self.i]

    def at_end(self) -> bool:
        return self.i >= len(self.toks)

    def is_op(self, op: str, k: int = 0) -> bool:
        t = self.peek(k)
        return t is not None and t.kind == "op" and t.value == op

    def is_kw(self, kw: str, k: int = 0) -> bool:
        t = self.peek(k)
        return t is not None and t.kind == "kw" and t.value == kw

    def advance(self) -> Token:
        t = self.toks[self.i]
        self.i += 1
        return t

    def error(self, message: str, tok: Token | None = None) -> BasicError:
        tok = tok or self.peek()
        if tok is None:
            end = len(self.line.text.rstrip())
            return self.src.error(message, self.line.index, end, end + 1, self.number)
        return self.src.error(message, tok.line, tok.col, tok.end, self.number)

    def describe(self, tok: Token | None) -> str:
        if tok is None:
            return "the end of the line"
        if tok.kind == "str":
            return "a string"
        if tok.kind == "rem":
            return "a comment"
        return repr(tok.text)

    def expect_op(self, op: str, what: str | None = None) -> Token:
        if not self.is_op(op):
            raise self.error(f"expected {what or repr(op)}, found {self.describe(self.peek())}")
        return self.advance()

    def expect_kw(self, kw: str) -> Token:
        if not self.is_kw(kw):
            raise self.error(f"expected {kw}, found {self.describe(self.peek())}")
        return self.advance()

    def pos(self, first: Token, last: Token | None = None) -> A.Pos:
        last = last or first
        return (first.line, first.col, last.end if last.line == first.line else first.end)

    def last_pos(self, first: Token) -> A.Pos:
        return self.pos(first, self.toks[self.i - 1] if self.i > 0 else first)

    def stmt_end(self, in_if: bool) -> bool:
        t = self.peek()
        return t is None or (t.kind == "op" and t.value == ":") or t.kind == "rem" or \
            (in_if and t.kind == "kw" and t.value == "ELSE")

    # ------------------------------------------------------------------ lines and statements

    def parse_line(self) -> list[A.Stmt]:
        self.done: list[A.Stmt] = []  # the line's statements parsed so far (they run before an error)
        stmts = self.stmt_list(in_if=False, top=True)
        if not self.at_end():
            raise self.error(f"unexpected {self.describe(self.peek())}")
        return stmts

    def stmt_list(self, in_if: bool, top: bool = False) -> list[A.Stmt]:
        stmts: list[A.Stmt] = self.done if top else []
        while True:
            t = self.peek()
            if t is None or (in_if and t.kind == "kw" and t.value == "ELSE"):
                return stmts
            if t.kind == "op" and t.value == ":":
                self.advance()
                continue
            stmts.extend(self.statement(in_if))
            t = self.peek()
            if t is None or (in_if and t.kind == "kw" and t.value == "ELSE"):
                return stmts
            if t.kind == "rem":
                continue
            if t.kind == "op" and t.value == ":":
                continue
            raise self.error(f"expected ':' or the end of the line after the statement, found "
                             f"{self.describe(t)}")

    def statement(self, in_if: bool) -> list[A.Stmt]:
        t = self.token()
        if t.kind == "rem":
            self.advance()
            return [A.Rem(self.pos(t), self.number, str(t.value))]
        if t.kind == "name":
            return [self.assignment(t, in_if)]
        if t.kind != "kw":
            raise self.error(f"expected a statement, found {self.describe(t)}")
        kw = t.value
        method = getattr(self, "st_" + kw, None)
        if method is None:
            if kw in ("THEN", "TO", "STEP", "AS", "AND", "OR", "XOR", "EQV", "IMP", "NOT", "MOD", "SPC", "TAB",
                      "FN", "USING"):
                raise self.error(f"{kw} cannot start a statement")
            raise self.error(f"expected a statement, found {kw}")
        self.advance()
        out = method(t, in_if)
        return out if isinstance(out, list) else [out]

    def assignment(self, first: Token, in_if: bool) -> A.Let:
        target = self.target()
        if not self.is_op("="):
            if self.at_end() or self.stmt_end(in_if):
                raise self.error(f"unknown statement {first.text!r}; an assignment needs '='", first)
            raise self.error(f"expected '=' in the assignment to {first.text}, found {self.describe(self.peek())}")
        self.advance()
        value = self.expr()
        return A.Let(self.last_pos(first), self.number, target, value)

    def target(self) -> A.Target:
        t = self.peek()
        if t is None or t.kind != "name":
            raise self.error(f"expected a variable, found {self.describe(t)}")
        self.advance()
        if t.value == "BID":
            raise self.error("BID is the block index and cannot be assigned", t)
        if t.value in FUNCTIONS or t.value.startswith("FN"):
            raise self.error(f"{t.value} is a function and cannot be assigned", t)
        if self.is_op("("):
            args = self.arg_list()
            return A.Index(self.last_pos(t), t.value, args)
        return A.Var(self.pos(t), t.value)

    def st_LET(self, t, in_if):
        first = self.peek()
        if first is None or first.kind != "name":
            raise self.error(f"LET needs a variable, found {self.describe(first)}")
        let = self.assignment(first, in_if)
        let.pos = self.last_pos(t)
        return let

    def st_PRINT(self, t, in_if):
        items: list = []
        if self.is_kw("USING"):
            raise self.error("PRINT USING is not supported")
        while not self.stmt_end(in_if):
            tok = self.token()
            if tok.kind == "op" and tok.value in (";", ","):
                self.advance()
                items.append(A.PrintSep(self.pos(tok), tok.value))
                continue
            if tok.kind == "kw" and tok.value in ("SPC", "TAB"):
                self.advance()
                self.expect_op("(", f"'(' after {tok.value}")
                arg = self.expr()
                self.expect_op(")", f"')' to close {tok.value}(")
                items.append(A.PrintFn(self.last_pos(tok), tok.value, arg))
                continue
            items.append(self.expr())
        return A.Print(self.last_pos(t), self.number, items)

    def _type_suffix(self) -> str | None:
        if not self.is_kw("AS"):
            return None
        self.advance()
        t = self.peek()
        if t is None or t.kind != "name" or t.value.upper() not in TYPE_NAMES:
            raise self.error("expected a type after AS (SINGLE, INTEGER, HALF, BFLOAT16 or DOUBLE), found "
                             f"{self.describe(t)}")
        self.advance()
        return TYPE_NAMES[t.value.upper()]

    def st_INPUT(self, t, in_if):
        prompt = None
        first = self.peek()
        if first is not None and first.kind == "str":
            prompt = self.advance().value
            if self.is_op(";") or self.is_op(","):
                self.advance()
            else:
                raise self.error("expected ';' or ',' after the INPUT prompt")
        items = []
        while True:
            n = self.peek()
            if n is None or n.kind != "name":
                raise self.error(f"INPUT expects a name (N or A()), found {self.describe(n)}")
            self.advance()
            is_array = False
            if self.is_op("("):
                self.advance()
                self.expect_op(")", "')' (an INPUT array is written A())")
                is_array = True
            dtype = self._type_suffix()
            items.append(A.InputItem(self.last_pos(n), n.value, is_array, dtype))
            if not self.is_op(","):
                break
            self.advance()
        return A.Input(self.last_pos(t), self.number, prompt, items)

    def _decl(self, what: str):
        n = self.peek()
        if n is None or n.kind != "name":
            raise self.error(f"{what} expects an array name, found {self.describe(n)}")
        self.advance()
        if not self.is_op("("):
            raise self.error(f"{what} {n.value} needs its sizes in parentheses, e.g. {n.value}(10)")
        args = self.arg_list()
        dtype = self._type_suffix()
        return n, args, dtype

    def st_DIM(self, t, in_if):
        decls = []
        while True:
            n, sizes, dtype = self._decl("DIM")
            decls.append(A.DimDecl(self.last_pos(n), n.value, sizes, dtype))
            if not self.is_op(","):
                break
            self.advance()
        return A.Dim(self.last_pos(t), self.number, decls)

    def st_TILE(self, t, in_if):
        decls = []
        while True:
            n, dims, dtype = self._decl("TILE")
            decls.append(A.TileDeclItem(self.last_pos(n), n.value, dims, dtype))
            if not self.is_op(","):
                break
            self.advance()
        return A.TileDecl(self.last_pos(t), self.number, decls)

    def st_OUTPUT(self, t, in_if):
        names = []
        while True:
            n = self.peek()
            if n is None or n.kind != "name":
                raise self.error(f"OUTPUT expects an array name, found {self.describe(n)}")
            self.advance()
            if self.is_op("("):
                self.advance()
                self.expect_op(")", "')'")
            names.append(A.OutputName(self.last_pos(n), n.value))
            if not self.is_op(","):
                break
            self.advance()
        return A.Output(self.last_pos(t), self.number, names)

    def _line_number(self, what: str) -> tuple[int, A.Pos]:
        t = self.peek()
        if t is None or t.kind != "num" or not t.text.isdigit():
            raise self.error(f"{what} needs a line number, found {self.describe(t)}")
        self.advance()
        return int(t.text), self.pos(t)

    def _branch(self, in_if: bool) -> list[A.Stmt]:
        """The statements after THEN or ELSE: a line number (GOTO) or statements."""
        t = self.peek()
        if t is not None and t.kind == "num" and t.text.isdigit():
            target, pos = self._line_number("THEN")
            return [A.Goto(pos, self.number, target, pos)]
        return self.stmt_list(in_if=True)

    def st_IF(self, t, in_if):
        cond = self.expr()
        then: list[A.Stmt]
        if self.is_kw("GOTO"):
            g = self.advance()
            target, pos = self._line_number("GOTO")
            then = [A.Goto(self.pos(g), self.number, target, pos)]
        else:
            self.expect_kw("THEN")
            nxt = self.peek()
            if nxt is None or (nxt.kind == "rem" and nxt.text.startswith("'")):  # THEN ends the line
                if in_if:
                    raise self.error("a block IF (THEN at the end of the line) cannot be nested in a "
                                     "single-line IF")
                return A.If(self.last_pos(t), self.number, cond, None, None, True)
            then = self._branch(in_if)
        orelse = None
        if self.is_kw("ELSE"):
            self.advance()
            orelse = self._branch(in_if)
        return A.If(self.pos(t), self.number, cond, then, orelse, False)

    def st_ELSEIF(self, t, in_if):
        if in_if:
            raise self.error("ELSEIF belongs to a block IF, not a single-line IF", t)
        cond = self.expr()
        self.expect_kw("THEN")
        if not (self.at_end() or self.token().kind == "rem"):
            raise self.error("ELSEIF ... THEN must end its line (block IF)")
        return A.ElseIf(self.last_pos(t), self.number, cond)

    def st_ELSE(self, t, in_if):
        return A.Else(self.pos(t), self.number)

    def st_ENDIF(self, t, in_if):
        return A.EndIf(self.pos(t), self.number)

    def st_END(self, t, in_if):
        if self.is_kw("IF"):
            last = self.advance()
            return A.EndIf(self.pos(t, last), self.number)
        return A.End(self.pos(t), self.number, "END")

    def st_STOP(self, t, in_if):
        return A.End(self.pos(t), self.number, "STOP")

    def st_FOR(self, t, in_if):
        v = self.peek()
        if v is None or v.kind != "name":
            raise self.error(f"FOR needs a loop variable, found {self.describe(v)}")
        self.advance()
        if v.value.upper() == "BID":
            raise self.error("BID cannot be a loop variable", v)
        if self.is_op("("):
            raise self.error("a FOR loop variable must be a simple variable, not an array element")
        self.expect_op("=", "'=' after the FOR variable")
        start = self.expr()
        self.expect_kw("TO")
        stop = self.expr()
        step = None
        if self.is_kw("STEP"):
            self.advance()
            step = self.expr()
        return A.For(self.last_pos(t), self.number, v.value, self.pos(v), start, stop, step)

    def st_NEXT(self, t, in_if):
        if self.stmt_end(in_if):
            return A.Next(self.pos(t), self.number, None)
        out: list[A.Next] = []
        while True:
            v = self.peek()
            if v is None or v.kind != "name":
                raise self.error(f"NEXT expects a loop variable, found {self.describe(v)}")
            self.advance()
            out.append(A.Next(self.pos(t, v) if not out else self.pos(v), self.number, v.value))
            if not self.is_op(","):
                return out
            self.advance()

    def st_WHILE(self, t, in_if):
        cond = self.expr()
        return A.While(self.last_pos(t), self.number, cond)

    def st_WEND(self, t, in_if):
        return A.Wend(self.pos(t), self.number)

    def st_GOTO(self, t, in_if):
        target, pos = self._line_number("GOTO")
        return A.Goto(self.last_pos(t), self.number, target, pos)

    def st_GOSUB(self, t, in_if):
        target, pos = self._line_number("GOSUB")
        return A.Gosub(self.last_pos(t), self.number, target, pos)

    def st_RETURN(self, t, in_if):
        return A.Return(self.pos(t), self.number)

    def st_ON(self, t, in_if):
        e = self.expr()
        if self.is_kw("GOTO"):
            gosub = False
        elif self.is_kw("GOSUB"):
            gosub = True
        else:
            raise self.error(f"expected GOTO or GOSUB after ON expression, found {self.describe(self.peek())}")
        self.advance()
        targets = []
        while True:
            targets.append(self._line_number("ON ... GOTO"))
            if not self.is_op(","):
                break
            self.advance()
        return A.OnGoto(self.last_pos(t), self.number, e, targets, gosub)

    def st_DATA(self, t, in_if):
        """The items of the raw text after DATA: split at commas outside quotes; blanks around
        an item are dropped; a quoted item keeps its text as written (text after its closing
        quote makes it unreadable)."""
        raw = self.advance()
        text, base = raw.value, raw.col
        pieces, start, quoted = [], 0, False
        for k, c in enumerate(text):
            if c == '"':
                quoted = not quoted
            elif c == "," and not quoted:
                pieces.append((start, text[start:k]))
                start = k + 1
        pieces.append((start, text[start:]))
        items: list[A.DataItem] = []
        for offset, piece in pieces:
            lead = len(piece) - len(piece.lstrip())
            body = piece.strip()
            pos = (raw.line, base + offset + lead, base + offset + lead + max(len(body), 1))
            if body.startswith('"'):
                close = body.find('"', 1)
                if close < 0:
                    items.append(A.DataItem(pos, body[1:], True))
                else:
                    items.append(A.DataItem(pos, None if body[close + 1:].strip() else body[1:close], True))
            else:
                items.append(A.DataItem(pos, body, False))
        return A.Data(self.last_pos(t), self.number, items)

    def st_READ(self, t, in_if):
        targets = [self.target()]
        while self.is_op(","):
            self.advance()
            targets.append(self.target())
        return A.Read(self.last_pos(t), self.number, targets)

    def st_RESTORE(self, t, in_if):
        if self.stmt_end(in_if):
            return A.Restore(self.pos(t), self.number, None, None)
        target, pos = self._line_number("RESTORE")
        return A.Restore(self.last_pos(t), self.number, target, pos)

    def st_RANDOMIZE(self, t, in_if):
        seed = None if self.stmt_end(in_if) else self.expr()
        return A.Randomize(self.last_pos(t), self.number, seed)

    def st_DEF(self, t, in_if):
        """DEF FNname[(params)] = expr (also DEF FN name ...)."""
        n = self.peek()
        if n is not None and n.kind == "kw" and n.value == "FN":
            self.advance()
            n = self.peek()
            name = n.value if n is not None and n.kind == "name" else None
        else:
            name = n.value[2:] if n is not None and n.kind == "name" and n.value.startswith("FN") else None
        if not name:
            raise self.error(f"DEF needs a function name starting with FN, found {self.describe(n)}")
        self.advance()
        params: list[tuple[str, A.Pos]] = []
        if self.is_op("("):
            self.advance()
            while True:
                v = self.peek()
                if v is None or v.kind != "name":
                    raise self.error(f"expected a parameter name, found {self.describe(v)}")
                self.advance()
                params.append((v.value, self.pos(v)))
                if not self.is_op(","):
                    break
                self.advance()
            self.expect_op(")", "',' or ')'")
        self.expect_op("=", "'=' after DEF FN" + name)
        try:
            body, broken = self.expr(), None
        except BasicError as e:  # GW-BASIC reads the body only when the function is called
            while not self.at_end() and not self.is_op(":") and self.token().kind != "rem":
                self.advance()
            body, broken = None, e
        return A.DefFn(self.last_pos(t), self.number, name, params, body, broken)

    def _def_type(self, t, in_if):
        letters = ""
        while True:
            a = self.peek()
            if a is None or a.kind != "name" or len(a.value) != 1 or not a.value.isalpha():
                raise self.error(f"{t.value} expects letters, e.g. {t.value} A-Z, found {self.describe(a)}")
            self.advance()
            last = a.value
            if self.is_op("-"):
                self.advance()
                b = self.peek()
                if b is None or b.kind != "name" or len(b.value) != 1 or not b.value.isalpha() or b.value < last:
                    raise self.error(f"expected a letter range like A-Z, found {self.describe(b)}")
                self.advance()
                last = b.value
            letters += "".join(chr(c) for c in range(ord(a.value), ord(last) + 1))
            if not self.is_op(","):
                break
            self.advance()
        return A.DefType(self.last_pos(t), self.number, _DEF_SIGILS[t.value], letters)

    st_DEFINT = st_DEFSNG = st_DEFDBL = st_DEFSTR = _def_type

    def st_SWAP(self, t, in_if):
        a = self.target()
        self.expect_op(",", "',' between the two variables of SWAP")
        b = self.target()
        return A.Swap(self.last_pos(t), self.number, a, b)

    def st_CLS(self, t, in_if):
        return A.NoOp(self.pos(t), self.number, t.value)

    st_BEEP = st_CLS

    def st_REM(self, t, in_if):  # pragma: no cover - REM is lexed as a comment token
        return A.Rem(self.pos(t), self.number, "")

    # ------------------------------------------------------------------ expressions

    def arg_list(self) -> list[A.Expr]:
        self.expect_op("(")
        args = [] if self.is_op(")") else [self.expr()]
        while self.is_op(","):
            self.advance()
            args.append(self.expr())
        self.expect_op(")", "',' or ')'")
        return args

    def expr(self) -> A.Expr:
        return self.climb(1)

    def climb(self, min_prec: int) -> A.Expr:
        """Precedence climbing over ``_BINARY``; prefix NOT and unary minus, ``^`` left to right."""
        toks = self.toks
        first = self.peek()
        if first is None:
            raise self.error("expected an expression, found the end of the line")
        if first.kind == "kw" and first.value == "NOT":
            self.i += 1
            operand = self.climb(_NOT_PREC)
            left: A.Expr = A.Unary(self.last_pos(first), "NOT", operand)
        elif first.kind == "op" and first.value in ("-", "+"):
            self.i += 1
            operand = self.climb(_UNARY_PREC)
            left = operand if first.value == "+" else A.Unary(self.last_pos(first), "-", operand)
        else:
            left = self.atom()
        while self.i < len(toks):
            t = toks[self.i]
            if t.kind != "op" and t.kind != "kw":
                break
            op = t.value
            if op == "^":
                if _POW_PREC < min_prec:
                    break
                self.i += 1
                right = self.exponent()
                left = A.Binary(self.last_pos(first), "^", left, right)
                continue
            prec = _BINARY.get(op)
            if prec is None or prec < min_prec:
                break
            self.i += 1
            right = self.climb(prec + 1)
            left = A.Binary(self.last_pos(first), op, left, right)
        return left

    def exponent(self) -> A.Expr:
        """The right operand of ``^``: an atom, possibly signed (``2^-1``)."""
        t = self.peek()
        if t is not None and t.kind == "op" and t.value in ("-", "+"):
            self.i += 1
            operand = self.exponent()
            return operand if t.value == "+" else A.Unary(self.last_pos(t), "-", operand)
        return self.atom()

    def atom(self) -> A.Expr:
        t = self.peek()
        if t is None:
            raise self.error("expected an expression, found the end of the line")
        if t.kind == "num":
            self.advance()
            return A.Num(self.pos(t), t.value, t.text)
        if t.kind == "str":
            self.advance()
            return A.Str(self.pos(t), t.value)
        if t.kind == "op" and t.value == "(":
            self.advance()
            e = self.expr()
            self.expect_op(")", "')'")
            return e
        if t.kind == "name":
            self.advance()
            name = t.value
            if name == "BID":
                if self.is_op("("):
                    raise self.error("BID is a variable, not an array or function", t)
                return A.Bid(self.pos(t))
            if name in FUNCTIONS:
                if self.is_op("("):
                    args = self.arg_list()
                    return A.Call(self.last_pos(t), name, args)
                if name == "RND":
                    return A.Call(self.pos(t), name, [])
                raise self.error(f"{name} is a function: write {name}(...)", t)
            if name.startswith("FN") and len(name) > 2:
                return self.fn_call(t, name[2:])
            if self.is_op("("):
                args = self.arg_list()
                return A.Index(self.last_pos(t), name, args)
            return A.Var(self.pos(t), name)
        if t.kind == "kw" and t.value == "FN":
            self.advance()
            n = self.peek()
            if n is None or n.kind != "name":
                raise self.error(f"expected a function name after FN, found {self.describe(n)}")
            self.advance()
            return self.fn_call(t, n.value)
        if t.kind == "kw":
            raise self.error(f"expected an expression, found the keyword {t.value}")
        raise self.error(f"expected an expression, found {self.describe(t)}")


    def fn_call(self, first: Token, name: str) -> A.FnCall:
        args = self.arg_list() if self.is_op("(") else []
        return A.FnCall(self.last_pos(first), name, args)


def parse(src: Source, errors: list[BasicError] | None = None, lines: list[SourceLine] | None = None,
          broken: list[BasicError] | None = None) -> A.Program:
    """Parse a whole program (tokenizing it unless ``lines`` are given). Errors are collected
    (and raised together if ``errors`` is not given); syntax errors inside a line go to
    ``broken`` where it is given (the line then stops the program when it runs)."""
    own = errors is None
    errors = [] if errors is None else errors
    if lines is None:
        lines = tokenize(src, errors)
    out: list[A.Line] = []
    seen: dict[int, int] = {}
    last_number = None
    for sl in lines:
        if sl.number is not None:
            tok = sl.number_token
            assert tok is not None  # the lexer keeps a line number's token
            if sl.number in seen:
                errors.append(src.error(f"line number {sl.number} is used twice (first on source line "
                                        f"{seen[sl.number] + 1})", tok.line, tok.col, tok.end, sl.number))
            elif last_number is not None and sl.number < last_number:
                errors.append(src.error(f"line numbers must increase: {sl.number} comes after {last_number}",
                                        tok.line, tok.col, tok.end, sl.number))
            seen.setdefault(sl.number, sl.index)
            last_number = max(sl.number, last_number if last_number is not None else sl.number)
        p = _LineParser(src, sl)
        first = sl.number_token or (sl.tokens[0] if sl.tokens else None)
        pos = (sl.index, first.col if first else 0, len(sl.text))
        try:
            stmts = p.parse_line()
        except BasicError as e:
            (errors if broken is None else broken).append(e)
            at = (e.loc.line - 1, e.loc.col, e.loc.end_col) if e.loc is not None else pos
            stmts = [s for s in getattr(p, "done", []) if not isinstance(s, (A.For, A.While, A.If))]
            stmts.append(A.Broken(pos, sl.number, e.message, at))
        out.append(A.Line(sl.number, sl.index, stmts, pos))
    if own and errors:
        raise BasicError.collect(errors)
    return A.Program(out, src)
