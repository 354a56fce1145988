"""Random classic BASIC programs for differential testing against GW-BASIC (PC-BASIC).

``program(rng)`` writes a short program: numeric, integer and string variables, arrays,
DEF FN, DATA/READ, FOR/NEXT, WHILE/WEND, IF/THEN/ELSE, GOSUB, ON ... GOTO and PRINT with
every separator, over expressions mixing GW-BASIC's operators and built-in functions. Loops
are bounded and jumps go forward or to subroutines, so a program ends; some programs stop on
a run-time error or print a warning, as GW-BASIC does, and those must agree too.

``python tests/gwfuzz.py N [SEED]`` runs N programs through PC-BASIC and safetile and reports
the agreement (and the first disagreements).
"""
from __future__ import annotations

import random

NUM_VARS = ["A", "B", "C", "X", "Y"]
INT_VARS = ["I%", "J%", "K%"]
STR_VARS = ["S$", "T$", "U$"]
NUMBERS = ["0", "1", "2", "3", "7", "10", "12", "100", "255", "1000", "32767", "40000", ".5", "1.5", "2.25",
           "3.14159", "0.1", "1E3", "2.5E-3", "1E10", "-1", "-4", "123456.7", "1E-5", "65536", ".3333333",
           "12345678", "1.5#", "2D3"]
STRINGS = ['""', '"A"', '"HELLO"', '"Hello, World"', '"GW-BASIC"', '"  spaced  "', '"123"', '"-4.5"',
           '"3E2"', '"ab"', '"ZZ"', '"The quick brown fox"']
STRING_CHARS = ["42", '"-"', "65"]
NUM_FUNCS = ["ABS", "INT", "FIX", "SGN", "SQR", "CINT", "SIN", "COS", "ATN", "EXP", "LOG", "CSNG", "TAN"]


class Gen:
    def __init__(self, rng: random.Random):
        self.rng = rng
        self.fns: list[tuple[str, int, bool]] = []  # (name, arity, string?)

    def choice(self, xs):
        return self.rng.choice(xs)

    # ------------------------------------------------------------------ expressions

    def num(self, depth: int = 0) -> str:
        r = self.rng.random()
        if depth > 2 or r < 0.25:
            return self.num_atom()
        if r < 0.55:
            op = self.choice(["+", "-", "*", "/", "^", "\\", "MOD", "+", "-", "*"])
            right = self.num(depth + 1)
            if op == "^":
                right = self.choice(["2", "3", "0.5", "-1", "2", "(" + self.num_atom() + ")"])
            return f"{self.num(depth + 1)} {op} {right}"
        if r < 0.65:
            return f"({self.num(depth + 1)})"
        if r < 0.72:
            return f"-{self.num_atom()}"
        if r < 0.80:
            f = self.choice(NUM_FUNCS)
            arg = self.num(depth + 1)
            if f in ("SQR", "LOG") and self.rng.random() < 0.8:
                arg = f"ABS({arg}) + 1"
            if f in ("EXP",) and self.rng.random() < 0.8:
                arg = f"{arg} / 100"
            return f"{f}({arg})"
        if r < 0.86:
            s = self.str_(depth + 1)
            return self.choice([f"LEN({s})", f'ASC({s} + "X")', f"VAL({s})", f'INSTR({s}, "A")'])
        if r < 0.92:
            op = self.choice(["=", "<>", "<", ">", "<=", ">="])
            if self.rng.random() < 0.3:
                return f"({self.str_(depth + 1)} {op} {self.str_(depth + 1)})"
            return f"({self.num(depth + 1)} {op} {self.num(depth + 1)})"
        if r < 0.96:
            op = self.choice(["AND", "OR", "XOR"])
            return f"({self.int_atom()} {op} {self.int_atom()})"
        if self.fns:
            name, arity, string = self.choice(self.fns)
            if not string:
                return f"FN{name}({', '.join(self.num(depth + 1) for _ in range(arity))})"
        return f"NOT {self.int_atom()}"

    def int_atom(self) -> str:
        return self.choice(INT_VARS + ["1", "2", "3", "7", "255", "-1", "0", "12"])

    def num_atom(self) -> str:
        r = self.rng.random()
        if r < 0.4:
            return self.choice(NUMBERS)
        if r < 0.7:
            return self.choice(NUM_VARS)
        if r < 0.85:
            return self.choice(INT_VARS)
        return f"D({self.rng.randint(0, 10)})"

    def str_(self, depth: int = 0) -> str:
        r = self.rng.random()
        if depth > 2 or r < 0.3:
            return self.choice(STRINGS + STR_VARS + STR_VARS)
        if r < 0.45:
            return f"{self.str_(depth + 1)} + {self.str_(depth + 1)}"
        if r < 0.55:
            return f"LEFT$({self.str_(depth + 1)}, {self.small()})"
        if r < 0.62:
            return f"RIGHT$({self.str_(depth + 1)}, {self.small()})"
        if r < 0.72:
            return f"MID$({self.str_(depth + 1)}, {self.rng.randint(1, 6)}" + (
                f", {self.small()})" if self.rng.random() < 0.6 else ")")
        if r < 0.8:
            return f"STR$({self.num(depth + 1)})"
        if r < 0.85:
            return f"CHR$({self.rng.randint(32, 126)})"
        if r < 0.9:
            return f"STRING$({self.small()}, {self.choice(STRING_CHARS)})"
        if r < 0.94:
            return f"SPACE$({self.small()})"
        if r < 0.97:
            return f"E$({self.rng.randint(0, 5)})"
        return f"HEX$({self.choice(['255', '16', '-1', '1000'])})"

    def small(self) -> str:
        return self.choice(["0", "1", "2", "3", "5", "10", "I%", "J%"])

    # ------------------------------------------------------------------ statements

    def print_stmt(self) -> str:
        items = []
        for _ in range(self.rng.randint(0, 4)):
            r = self.rng.random()
            if r < 0.45:
                items.append(self.num())
            elif r < 0.8:
                items.append(self.str_())
            elif r < 0.9:
                items.append(f"TAB({self.rng.randint(1, 60)})")
            else:
                items.append(f"SPC({self.rng.randint(0, 12)})")
            items.append(self.choice(["; ", ", ", ";", " ", "; "]))
        if items and self.rng.random() < 0.6:
            items.pop()
        text = "".join(items).rstrip()
        if text and text.endswith(" "):
            text = text.rstrip()
        return ("PRINT " + text).rstrip()

    def assign(self) -> str:
        r = self.rng.random()
        if r < 0.45:
            return f"{self.choice(NUM_VARS)} = {self.num()}"
        if r < 0.6:
            return f"{self.choice(INT_VARS)} = {self.choice(['1', '2', '7', '100', '-3', '2.5', '3.5', '-2.5'])}"
        if r < 0.85:
            return f"{self.choice(STR_VARS)} = {self.str_()}"
        if r < 0.93:
            return f"D({self.rng.randint(0, 10)}) = {self.num()}"
        return f"E$({self.rng.randint(0, 5)}) = {self.str_()}"

    def simple(self) -> str:
        r = self.rng.random()
        if r < 0.4:
            return self.print_stmt()
        if r < 0.85:
            return self.assign()
        if r < 0.93:
            return f"READ {self.choice(NUM_VARS)}" if self.rng.random() < 0.6 else f"READ {self.choice(STR_VARS)}"
        return f"SWAP {self.choice(NUM_VARS)}, {self.choice(NUM_VARS)}"

    def body(self) -> list[str]:
        out = []
        for _ in range(self.rng.randint(4, 10)):
            r = self.rng.random()
            if r < 0.55:
                out.append(" : ".join(self.simple() for _ in range(self.rng.randint(1, 2))))
            elif r < 0.68:
                var = self.choice(["N", "M", "Q%"])
                lo, hi = self.rng.randint(-2, 3), self.rng.randint(-1, 5)
                step = self.choice(["", "", " STEP 2", " STEP -1", " STEP .5"])
                out.append(f"FOR {var} = {lo} TO {hi}{step} : {self.simple()} : NEXT {var}")
                if self.rng.random() < 0.5:
                    out.append(f"PRINT {var}")
            elif r < 0.8:
                cond = self.choice([self.num(1), f"{self.str_(1)} = {self.str_(1)}", f"{self.num_atom()} > 2"])
                tail = f" ELSE {self.simple()}" if self.rng.random() < 0.5 else ""
                out.append(f"IF {cond} THEN {self.simple()}{tail}")
            elif r < 0.86:
                out.append(f"W = 0 : WHILE W < {self.rng.randint(0, 4)} : {self.simple()} : W = W + 1 : WEND")
            elif r < 0.92:
                out.append("GOSUB 900")
            else:
                out.append(f"ON {self.rng.randint(0, 3)} GOSUB 900, 950")
        return out

    def program(self) -> str:
        lines = ["DIM D(10), E$(5)"]
        for k in range(self.rng.randint(0, 2)):
            name = "ABC"[k]
            if self.rng.random() < 0.75:
                arity = self.rng.randint(1, 2)
                params = ["P", "Q"][:arity]
                body = self.num(1).replace("A", "P") if self.rng.random() < 0.5 else f"P * 2 + {self.num_atom()}"
                lines.append(f"DEF FN{name}({', '.join(params)}) = {body}")
                self.fns.append((name, arity, False))
        lines += self.body()
        lines.append("END")
        numbered = [f"{10 * (i + 1)} {s}" for i, s in enumerate(lines)]
        numbered.append("900 " + self.print_stmt() + " : RETURN")
        numbered.append("950 " + self.assign() + " : RETURN")
        data = [self.choice(["1", "2.5", "-3", "HELLO", '"A, B"', "1E3", "", "  7  ", "X1", ".5"])
                for _ in range(self.rng.randint(3, 8))]
        numbered.append("990 DATA " + ", ".join(data))
        return "\n".join(numbered) + "\n"


def program(rng: random.Random) -> str:
    return Gen(rng).program()


def safetile_output(source: str, backend: str = "cpu") -> str:
    """What ``safetile run`` prints on stdout for the program (errors included, as GW-BASIC)."""
    import contextlib
    import io

    from safetile.basic import BasicError, compile_program
    from safetile.errors import TileRuntimeError
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        try:
            compile_program(source, "fuzz.bas").run(backend=backend)
        except TileRuntimeError:
            pass
        except BasicError as e:
            print(f"<compile error: {str(e).splitlines()[0]}>")
    return buf.getvalue()


def compare(n: int, seed: int = 0, show: int = 3) -> tuple[int, int, list[tuple[str, str, str]]]:
    """(agreeing programs, programs compared, first disagreements (source, gw, safetile))."""
    from gwbasic_reference import run_reference
    rng = random.Random(seed)
    agree = total = 0
    bad: list[tuple[str, str, str]] = []
    for _ in range(n):
        src = program(rng)
        ref = run_reference(src, max_steps=20_000)
        if ref is None:
            continue
        total += 1
        ours = safetile_output(src)
        if ours == ref:
            agree += 1
        elif len(bad) < show:
            bad.append((src, ref, ours))
    return agree, total, bad


if __name__ == "__main__":  # pragma: no cover - a tool
    import sys
    count = int(sys.argv[1]) if len(sys.argv) > 1 else 200
    seed = int(sys.argv[2]) if len(sys.argv) > 2 else 0
    agree, total, bad = compare(count, seed, show=int(sys.argv[3]) if len(sys.argv) > 3 else 5)
    for src, ref, ours in bad:
        print("=" * 70)
        print(src)
        print("--- GW-BASIC ---")
        print(ref)
        print("--- safetile ---")
        print(ours)
    print(f"agreement {agree}/{total} = {agree / max(total, 1):.1%}")
