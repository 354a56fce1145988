"""The BASIC front end: cutile-basic's examples, tile extensions, classic semantics,
errors and the Python API, checked on printed output and on numbers (CPU backend; the
Triton backend under its interpreter where it is importable)."""
from __future__ import annotations

import pathlib
import re

import numpy as np
import pytest
from triton_interp import triton_interpreter

from safetile.basic import BasicError, BasicInputError, compile_program
from safetile.errors import TileError, TileRuntimeError

ROOT = pathlib.Path(__file__).resolve().parent.parent
EXAMPLES = ROOT / "examples" / "basic"

CUTILE_GEMM = """\
10  REM GEMM: C(M,N) = A(M,K) * B(K,N)
20  INPUT M, N, K, A(), B()
30  DIM A(M, K), B(K, N), C(M, N)
40  TILE A(128, 32), B(32, 128), C(128, 128), ACC(128, 128)
50  LET TILEM = INT(BID / INT(N / 128))
60  LET TILEN = BID MOD INT(N / 128)
70  LET ACC = 0.0
80  FOR KI = 0 TO INT(K / 32) - 1
90    LET ACC = MMA(A(TILEM, KI), B(KI, TILEN), ACC)
100 NEXT KI
110 LET C(TILEM, TILEN) = ACC
120 OUTPUT C
130 END
"""


def run(source: str, inputs=None, capsys=None, seed: int = 0, backend: str = "cpu"):
    prog = compile_program(source, "test.bas")
    outs = prog.run(inputs or {}, backend=backend, seed=seed)
    text = capsys.readouterr().out if capsys is not None else None
    return outs, text


def out_of(source: str, capsys, **kw) -> str:
    return run(source, capsys=capsys, **kw)[1]


def rel_err(a, b) -> float:
    a, b = np.asarray(a, np.float64), np.asarray(b, np.float64)
    return float(np.linalg.norm(a - b) / max(np.linalg.norm(b), 1e-30))


# ----------------------------------------------------------------------------- examples

def test_hello_example(capsys):
    prog = compile_program((EXAMPLES / "hello.bas").read_text(), "hello.bas")
    prog.run()
    assert capsys.readouterr().out == (
        "Hello, World!\nX =  42 \nY =  84 \nY is large\n"
        "I =  1 \nI =  2 \nI =  3 \nI =  4 \nI =  5 \n")


@pytest.mark.parametrize("n", [1000, 1024, 1, 129])
def test_vector_add_example(n):
    prog = compile_program((EXAMPLES / "vector_add.bas").read_text(), "vector_add.bas")
    rng = np.random.default_rng(n)
    a = rng.standard_normal(n).astype(np.float32)
    b = rng.standard_normal(n).astype(np.float32)
    assert prog.grid({"N": n}) == -(-n // 128)
    out = prog.run({"N": n, "A": a, "B": b})
    np.testing.assert_array_equal(out["C"], a + b)


@pytest.mark.parametrize("m,n,k", [(256, 256, 128), (300, 200, 70), (128, 384, 96), (1, 1, 1)])
def test_gemm_example(m, n, k):
    prog = compile_program((EXAMPLES / "gemm.bas").read_text(), "gemm.bas")
    rng = np.random.default_rng(m + n + k)
    a = rng.standard_normal((m, k)).astype(np.float32)
    b = rng.standard_normal((k, n)).astype(np.float32)
    out = prog.run({"A": a, "B": b})  # M, N, K come from the shapes
    assert out["C"].shape == (m, n)
    assert rel_err(out["C"], a.astype(np.float64) @ b) <= 1e-5


def test_cutile_gemm_verbatim():
    """cutile-basic's own gemm.bas (sizes must be multiples of the tiles)."""
    prog = compile_program(CUTILE_GEMM, "gemm.bas")
    rng = np.random.default_rng(7)
    a = rng.standard_normal((256, 128)).astype(np.float32)
    b = rng.standard_normal((128, 384)).astype(np.float32)
    out = prog.run({"M": 256, "N": 384, "K": 128, "A": a, "B": b})
    assert prog.grid({"M": 256, "N": 384, "K": 128}) == 6
    assert rel_err(out["C"], a.astype(np.float64) @ b) <= 1e-5


def test_gemm_k_loop_is_a_counted_for_loop():
    """A GEMM lowers to one structured ``for`` over K carrying the accumulator (fast on GPUs)."""
    prog = compile_program((EXAMPLES / "gemm.bas").read_text(), "gemm.bas")
    ir = prog.ir()
    assert ir.count("= for(") == 1 and "while" not in ir
    loop = ir[ir.index("= for("):].splitlines()
    assert "tile<128x128xfloat32>" in loop[0]
    body = [re.match(r"\s*(?:%\w+ = )?(\w+)\(", line).group(1) for line in loop[2:6]]
    assert body == ["load", "load", "mma", "yield"]  # nothing else runs per K step


# ----------------------------------------------------------------------------- tile extensions

def test_partial_edge_tiles_and_broadcasting():
    src = """
10 INPUT N, X()
20 DIM X(N), Y(N)
30 TILE X(64), Y(64)
40 Y(BID) = 2 * X(BID) + 1 - BID
50 OUTPUT Y
"""
    x = np.arange(100, dtype=np.float32)
    out = compile_program(src).run({"N": 100, "X": x})
    expect = 2 * x + 1 - (np.arange(100) // 64)
    np.testing.assert_array_equal(out["Y"], expect.astype(np.float32))


def test_two_dimensional_output_grid_and_elementwise_functions():
    src = """
10 INPUT R, C, A()
20 DIM A(R, C), B(R, C)
30 TILE A(16, 8), B(16, 8)
40 NC = INT((C + 7) / 8)
50 I = INT(BID / NC): J = BID MOD NC
60 B(I, J) = SQR(ABS(A(I, J))) * SGN(A(I, J)) + MAX(A(I, J), 0.5)
70 OUTPUT B
"""
    rng = np.random.default_rng(3)
    a = rng.standard_normal((40, 20)).astype(np.float32)
    prog = compile_program(src)
    assert prog.grid({"R": 40, "C": 20}) == 3 * 3
    out = prog.run({"R": 40, "C": 20, "A": a})
    expect = np.sqrt(np.abs(a)) * np.sign(a) + np.maximum(a, 0.5)
    np.testing.assert_allclose(out["B"], expect, rtol=1e-6)


def test_integer_and_half_arrays():
    src = """
10 INPUT N, A%(), H()
20 DIM A%(N), H(N) AS HALF, S%(N), G(N) AS HALF
30 TILE A%(32), H(32), S%(32), G(32)
40 S%(BID) = A% (BID) * 3 + 1
50 G(BID) = H(BID) * 2 + A%(BID)
60 OUTPUT S%, G
"""
    rng = np.random.default_rng(5)
    a = rng.integers(-50, 50, 70).astype(np.int32)
    h = rng.standard_normal(70).astype(np.float16)
    out = compile_program(src).run({"N": 70, "A%": a, "H": h})
    assert out["S%"].dtype == np.int32 and out["G"].dtype == np.float16
    np.testing.assert_array_equal(out["S%"], a * 3 + 1)
    np.testing.assert_allclose(out["G"].astype(np.float32), (h * np.float16(2) + a.astype(np.float16)).astype(np.float32),
                               rtol=2e-3, atol=2e-2)


def test_half_precision_gemm_accumulates_in_float32():
    src = """
10 INPUT M, N, K, A(), B()
20 DIM A(M, K) AS HALF, B(K, N) AS HALF, C(M, N)
30 TILE A(32, 16), B(16, 32), C(32, 32), ACC(32, 32)
40 NB = INT((N + 31) / 32)
50 ACC = 0
60 FOR KI = 0 TO INT((K + 15) / 16) - 1
70   ACC = MMA(A(INT(BID / NB), KI), B(KI, BID MOD NB), ACC)
80 NEXT KI
90 C(INT(BID / NB), BID MOD NB) = ACC
100 OUTPUT C
"""
    rng = np.random.default_rng(11)
    a = rng.standard_normal((50, 40)).astype(np.float16)
    b = rng.standard_normal((40, 70)).astype(np.float16)
    out = compile_program(src).run({"A": a, "B": b})
    ref = a.astype(np.float64) @ b.astype(np.float64)
    assert out["C"].dtype == np.float32
    assert rel_err(out["C"], ref) <= 1e-5


def test_inout_array_scalar_float_input_and_element_access():
    src = """
10 INPUT N, ALPHA AS SINGLE, V(), W()
20 DIM V(N), W(N)
30 TILE W(16)
40 S = 0
50 FOR I = 0 TO N - 1: S = S + V(I): NEXT I
60 W(BID) = W(BID) * ALPHA + S
70 IF BID = 0 THEN PRINT "sum"; S
80 OUTPUT W
"""
    v = np.array([1, 2, 3, 4, 5], np.float32)
    w = np.arange(5, dtype=np.float32)
    out = compile_program(src).run({"N": 5, "ALPHA": 0.5, "V": v, "W": w})
    np.testing.assert_array_equal(out["W"], w * 0.5 + 15)


def test_every_block_prints_in_block_order(capsys):
    src = """
10 INPUT N, A()
20 DIM A(N), C(N)
30 TILE A(4), C(4)
40 T = A(BID)
50 C(BID) = T
60 PRINT "block"; BID; "sum"; SUM(T)
70 OUTPUT C
"""
    a = np.arange(16, dtype=np.float32)
    run(src, {"N": 16, "A": a})
    assert capsys.readouterr().out == "".join(
        f"block {b} sum {int(a[4 * b:4 * b + 4].sum())} \n" for b in range(4))


def test_printing_a_tile(capsys):
    src = "10 DIM C(4)\n20 TILE C(4), T(4)\n30 T = 1.5\n40 PRINT T\n50 C(0) = T\n60 OUTPUT C\n"
    text = out_of(src, capsys)
    assert "1.5" in text and text.endswith("\n")


# ----------------------------------------------------------------------------- classic semantics

@pytest.mark.parametrize("src,expected", [
    ("10 PRINT -2^2; 2^3^2; 2^-1", "-4  64  .5 \n"),
    ("10 PRINT INT(-3.5); INT(3.5); 7 MOD 3; -7 MOD 3; 7.5 MOD 2", "-4  3  1 -1  0 \n"),
    ("10 PRINT 1/3; 1E7; 1E-5; 123.456; -.5", " .3333334  1E+07  .00001  123.456 -.5 \n"),
    ("10 PRINT \"100%\"; 5; \"%d\"", "100% 5 %d\n"),
    ("10 A% = 2.5: B% = -2.5: C% = 3.5: PRINT A%; B%; C%", " 3 -3  4 \n"),
    ("10 PRINT 3 > 2; 3 < 2; NOT 0", "-1  0 -1 \n"),
    ("10 PRINT 1,2;3", " 1             2  3 \n"),
    ("10 PRINT \"A\";\n20 PRINT \"B\"", "AB\n"),
    ("10 X = 5: IF X > 2 THEN PRINT \"a\";: PRINT \"b\" ELSE PRINT \"c\"\n20 PRINT \"d\"", "ab\nd\n"),
    ("10 X = 1: IF X > 2 THEN PRINT \"a\";: PRINT \"b\" ELSE PRINT \"c\"\n20 PRINT \"d\"", "c\nd\n"),
    ("10 IF 1 THEN REM a comment body\n20 IF 1 THEN ' opens a block\n30 PRINT \"in\"\n40 ENDIF", "in\n"),
    ("10 PRINT NOT 1 = 2; 5 + NOT 0; 2 * -3 ^ 2", "-1  4 -18 \n"),
    ("10 x = 5: PRINT X; x", " 5  5 \n"),  # names are case-insensitive
    ("10 FOR I = 5 TO 1: PRINT I: NEXT: PRINT I", " 6 \n"),  # a loop that never runs still steps
    ("10 PRINT Q(3); R$(2); \"|\"", " 0 |\n"),  # arrays used without DIM have 11 elements
])
def test_classic_semantics(src, expected, capsys):
    assert out_of(src, capsys) == expected


def test_goto_gosub_are_real_control_flow(capsys):
    src = """
10 GOSUB 100
20 GOSUB 100
30 IF N < 5 THEN 20
40 PRINT "N ="; N
50 END
100 N = N + 1: PRINT N;
110 RETURN
"""
    assert out_of(src, capsys) == " 1  2  3  4  5 N = 5 \n"


def test_while_exits_early_and_variables_survive_loops(capsys):
    src = """
10 WHILE I < 1000000
20   I = I + 1: IF I = 3 THEN J = 7
30   IF I >= 4 THEN GOTO 50
40 WEND
50 PRINT I; J
"""
    assert out_of(src, capsys) == " 4  7 \n"


def test_input_scalars_are_variables(capsys):
    src = "10 INPUT N, X AS SINGLE, S$\n20 WHILE N > 0: PRINT N;: N = N - 1: WEND\n30 X = X / 2: PRINT X; S$ + \"!\""
    assert out_of(src, capsys, inputs={"N": 3, "X": 5, "s$": "hi"}) == " 3  2  1  2.5 hi!\n"


def test_read_inside_loop_walks_the_data(capsys):
    src = "10 FOR I = 1 TO 4: READ X: PRINT X;: NEXT: RESTORE: READ Y: PRINT Y\n20 DATA 4, -5, 6.5, 7\n"
    assert out_of(src, capsys) == " 4 -5  6.5  7  4 \n"


def test_rnd_is_gw_basics_generator(capsys):
    """GW-BASIC's sequence from the default seed; ``--seed`` and each block start elsewhere."""
    src = "10 PRINT RND; RND; RND(0)"
    assert out_of(src, capsys) == " .1213501  .651861  .651861 \n"
    assert out_of(src, capsys, seed=1) == out_of(src, capsys, seed=1) != out_of(src, capsys)


# ----------------------------------------------------------------------------- errors

@pytest.mark.parametrize("src,fragment,line,col", [
    ("10 PRINT 1\n20 NEXT I", "NEXT I without FOR", 20, 4),
    ("10 FOR I = 1 TO 3\n20 PRINT I", "FOR I without NEXT", 10, 4),
    ("10 WEND", "WEND without WHILE", 10, 4),
    ("10 ELSE", "ELSE without a block IF", 10, 4),
    ("10 DIM A(10)\n20 TILE A(100)", "not a power of two", 20, 11),
    ("10 DIM C(10)\n20 OUTPUT C", "OUTPUT array C has no TILE", 10, 8),
    ("10 PRINT ABS(1, 2)", "ABS takes 1 argument, got 2", 10, 10),
    ("10 PRINT MMA(1)", "MMA takes 3 arguments, got 1", 10, 10),
    ("10 FOR I = 1 TO 3\n20 FOR J = 1 TO 3\n30 NEXT I\n40 NEXT J", "NEXT I comes before NEXT J", 30, 4),
    ("20 PRINT\n10 PRINT", "line numbers must increase", 10, 1),
    ("10 PRINT\n10 PRINT", "used twice", 10, 1),
    ("10 INPUT N, A()\n20 DIM A(N)\n30 A(1) = 2", "INPUT array and is read-only", 30, 4),
    ("10 DIM A(8), B(8)\n20 TILE A(8), B(8)\n30 B(0) = 1\n40 OUTPUT B", "only INPUT and OUTPUT arrays are tiled",
     20, 9),
    ("10 INPUT M, K, A(), B()\n20 DIM A(M,K), B(K,K), C(M,K)\n30 TILE A(64,32), B(64,64), C(64,64), ACC(64,64)\n"
     "40 ACC = MMA(A(0,0), B(0,0), ACC)\n50 C(0,0) = ACC\n60 OUTPUT C", "MMA shape mismatch: 64x32 times 64x64", 40, 10),
    ("10 DIM C(8)\n20 TILE C(8), T(4)\n30 C(0) = T\n40 OUTPUT C", "cannot store a 4 tile into C", 30, 11),
    ("10 DIM C(8)\n20 TILE C(8)\n30 IF C(0) > 1 THEN PRINT 1\n40 OUTPUT C", "a condition must be a number", 30, 7),
    ("10 DIM A(X)", "not known before the program runs", 10, 10),
    ("10 IF 1 THEN\n20 PRINT 2", "IF ... THEN without ENDIF", 10, 4),
    ("10 X = 1 @ 2", "unexpected character '@'", 10, 10),
    ("10 DIM A(3)\n20 DIM A(4)", "dimensioned with other sizes", 20, 8),
    ("10 DEF FNA(X) = FNA(X) + 1\n20 PRINT FNA(1)", "FNA calls itself", 10, 17),
])
def test_compile_errors(src, fragment, line, col):
    with pytest.raises(BasicError) as info:
        compile_program(src, "bad.bas")
    err = info.value
    assert isinstance(err, TileError)
    match = [e for e in err.errors if fragment in e.message]
    assert match, f"{fragment!r} not in {[e.message for e in err.errors]}"
    e = match[0]
    assert e.basic_line == line
    assert e.loc.col + 1 == col
    text = str(e)
    assert f"bad.bas:{e.loc.line}:{col}: line {line}: " in text and "^" in text


@pytest.mark.parametrize("src,fragment,line,col,printed", [
    ("10 PRINT 1\n20 GOTO 500", "Undefined line number: there is no line 500", 20, 9, " 1 \nUndefined line number in 20\n"),
    ("10 PRINT 2\n20 X = 5 +* 3", "Syntax error: expected an expression, found '*'", 20, 11,
     " 2 \nSyntax error in 20\n"),
    ("10 PRINT \"A\"; 1 + \"B\"", "Type mismatch", 10, 15, "A\nType mismatch in 10\n"),
    ("10 A$ = 2.5", "Type mismatch", 10, 9, "Type mismatch in 10\n"),
    ("10 PRINT 1 : BID = 2", "BID is the block index", 10, 14, " 1 \nSyntax error in 10\n"),
    ("10 RETURN", "RETURN without GOSUB", 10, 4, "RETURN without GOSUB in 10\n"),
    ("10 RESTORE 77", "Undefined line number: there is no line 77", 10, 12, "Undefined line number in 10\n"),
    ("10 PRINT FNQ(1)", "Undefined user function", 10, 10, "Undefined user function in 10\n"),
])
def test_errors_gw_basic_raises_when_the_line_runs(src, fragment, line, col, printed, capsys):
    """Found while compiling (``safetile check`` lists them) but raised where GW-BASIC raises
    them: the lines before still run."""
    prog = compile_program(src, "bad.bas")
    match = [e for e in prog.deferred if fragment in e.message]
    assert match, f"{fragment!r} not in {[e.message for e in prog.deferred]}"
    assert match[0].basic_line == line and match[0].loc.col + 1 == col
    with pytest.raises(TileRuntimeError):
        prog.run()
    assert capsys.readouterr().out == printed


def test_all_syntax_errors_are_reported_together():
    prog = compile_program("10 X = \n20 PRINT (\n30 PRINT \"fine\"\n40 Y = 2 +")
    assert [e.basic_line for e in prog.deferred] == [10, 20, 40]


@pytest.mark.parametrize("src,message,printed", [
    ("10 PRINT \"a\"\n20 GOSUB 40\n30 PRINT \"b\"\n40 PRINT \"sub\"\n50 RETURN", "RETURN without GOSUB in 50",
     "a\nsub\nb\nsub\n"),
    ("10 READ A, B\n20 PRINT A\n30 READ C\n40 DATA 1, 2", "Out of DATA in 30", " 1 \n"),
    ("10 DIM A(3)\n20 FOR I = 0 TO 4: A(I) = I: NEXT", "Subscript out of range in 20", ""),
    ("10 GOSUB 10", "Out of memory in 10", ""),
    ("10 PRINT SQR(4); SQR(-1)", "Illegal function call in 10", " 2 \n"),
    ("10 X = -1: PRINT LOG(X + 1)", "Illegal function call in 10", ""),
    ("10 A% = 32767: A% = A% + 1", "Overflow in 10", ""),
    ("10 DIM A(2): DIM A(2)", "Duplicate Definition in 10", ""),
    ("10 A$ = STRING$(200, 65): A$ = A$ + A$", "String too long in 10", ""),
])
def test_runtime_errors(src, message, printed, capsys):
    prog = compile_program(src)
    with pytest.raises(TileRuntimeError) as info:
        prog.run()
    assert message in str(info.value)
    assert capsys.readouterr().out == printed + ("\n" if printed and not printed.endswith("\n") else "") + \
        message + "\n"


@pytest.mark.parametrize("src,printed", [
    # outputs are PC-BASIC's (GW-BASIC's): a double overflows to the largest MBF double, and a
    # double too large for the single it is stored in is a soft Overflow
    ("10 DIM D(10)\n20 PRINT 2D3 / D(9)", "Division by zero\n 1.701411834604692D+38 \n"),
    ("10 PRINT 2D3 / 0 - 1", "Division by zero\n 1.701411834604692D+38 \n"),
    ("10 X# = -2D3 / J% : PRINT X#; X# * 2", "Division by zero\n-1.701411834604692D+38 Overflow\n"
     "-1.701411834604692D+38 \n"),
    ("10 Z = 1D30 * 1D30 : PRINT Z", "Overflow\nOverflow\n 1.701412E+38 \n"),
    ("10 Y# = 1D30: FOR I = 1 TO 2: Y# = Y# * 1D5: NEXT: Z = Y#: PRINT Y#; Z",
     "Overflow\nOverflow\n 1.701411834604692D+38  1.701412E+38 \n"),
])
def test_double_overflow_is_gw_basics(src, printed, capsys):
    compile_program(src).run()
    assert capsys.readouterr().out == printed


def test_input_errors():
    prog = compile_program((EXAMPLES / "vector_add.bas").read_text())
    with pytest.raises(BasicInputError, match="missing input N"):
        prog.run({})
    with pytest.raises(BasicInputError, match="shape"):
        prog.run({"N": 10, "A": np.zeros(11, np.float32), "B": "random"})
    with pytest.raises(BasicInputError, match="unknown input"):
        prog.run({"N": 10, "A": "random", "B": "random", "Z": 1})


# ----------------------------------------------------------------------------- API

def test_program_metadata():
    prog = compile_program((EXAMPLES / "gemm.bas").read_text(), "gemm.bas")
    assert [(p.name, p.kind, p.role) for p in prog.parameters] == [
        ("M", "scalar", "input"), ("N", "scalar", "input"), ("K", "scalar", "input"),
        ("A", "array", "input"), ("B", "array", "input"), ("C", "array", "output")]
    assert prog.outputs == ["C"]
    assert prog.tiles == {"A": (128, 32), "B": (32, 128), "C": (128, 128), "ACC": (128, 128)}
    assert prog.dims("C") == ["M", "N"]
    assert prog.array_shape("C", {"M": 300, "N": 200, "K": 5}) == (300, 200)
    assert prog.grid({"M": 300, "N": 200, "K": 5}) == 3 * 2
    assert prog.ir().startswith("kernel @basic_gemm(")


def test_kernel_launches_with_ct_launch():
    import safetile as ct
    prog = compile_program((EXAMPLES / "vector_add.bas").read_text())
    a = np.ones(300, np.float32)
    b = np.full(300, 2, np.float32)
    c = np.zeros(300, np.float32)
    ct.launch(None, (3,), prog.kernel, (300, a, b, c))
    np.testing.assert_array_equal(c, 3)


def test_local_arrays_are_per_block():
    src = """
10 DIM T(3), C(16)
20 TILE C(4)
30 FOR I = 0 TO 3: T(I) = T(I) + BID * 10 + I: NEXT I
40 C(BID) = T(BID MOD 4)
50 OUTPUT C
"""
    out = compile_program(src).run()
    expect = np.repeat([b * 10 + b % 4 for b in range(4)], 4).astype(np.float32)
    np.testing.assert_array_equal(out["C"], expect)


# ----------------------------------------------------------------------------- Triton backend

def test_vector_add_on_triton_interpreter():
    prog = compile_program((EXAMPLES / "vector_add.bas").read_text(), "vector_add.bas")
    rng = np.random.default_rng(1)
    a = rng.standard_normal(1000).astype(np.float32)
    b = rng.standard_normal(1000).astype(np.float32)
    with triton_interpreter():
        out = prog.run({"N": 1000, "A": a, "B": b}, backend="gpu")
    np.testing.assert_array_equal(out["C"], a + b)


def test_gemm_on_triton_interpreter():
    prog = compile_program((EXAMPLES / "gemm.bas").read_text(), "gemm.bas")
    rng = np.random.default_rng(2)
    a = rng.standard_normal((130, 40)).astype(np.float32)
    b = rng.standard_normal((40, 140)).astype(np.float32)
    with triton_interpreter():
        out = prog.run({"A": a, "B": b}, backend="gpu")
    assert rel_err(out["C"], a.astype(np.float64) @ b) <= 1e-5


def test_hello_on_triton_interpreter(capsys):
    """PRINT runs through the device print; its text layout is the backend's own."""
    prog = compile_program((EXAMPLES / "hello.bas").read_text(), "hello.bas")
    with triton_interpreter():
        prog.run(backend="gpu")
    text = capsys.readouterr().out
    assert "Hello, World!" in text and "Y is large" in text and "Y is small" not in text


@pytest.mark.parametrize("name", ["tile_diverge", "tile_math", "gcd", "data_read"])
def test_corpus_programs_on_triton_interpreter(name, capsys):
    """The same kernels on the Triton backend: OUTPUT arrays and printed text equal the CPU
    backend's."""
    source = (ROOT / "tests" / "basic_corpus" / f"{name}.bas").read_text()
    prog = compile_program(source, f"{name}.bas")
    cpu = prog.run()
    cpu_text = capsys.readouterr().out
    with triton_interpreter():
        gpu = prog.run(backend="gpu")
    gpu_text = capsys.readouterr().out
    for k in cpu:
        np.testing.assert_array_equal(gpu[k], cpu[k])
    assert gpu_text == cpu_text


def test_bfloat16_arrays():
    import ml_dtypes
    src = """
10 INPUT N, X(), Y()
20 DIM X(N) AS BFLOAT16, Y(N) AS BFLOAT16, Z(N) AS BFLOAT16
30 TILE X(64), Y(64), Z(64)
40 Z(BID) = X(BID) * Y(BID) + 1
50 OUTPUT Z
"""
    x = np.linspace(-2, 2, 100).astype(ml_dtypes.bfloat16)
    y = np.linspace(1, 3, 100).astype(ml_dtypes.bfloat16)
    out = compile_program(src).run({"X": x, "Y": y})
    assert out["Z"].dtype == ml_dtypes.bfloat16
    ref = x.astype(np.float32) * y.astype(np.float32) + 1
    np.testing.assert_allclose(out["Z"].astype(np.float32), ref, rtol=2e-2, atol=2e-2)
