"""The ``safetile`` command line, run as a subprocess: ``run`` and ``check``, exit statuses,
stdout carrying only PRINT output, OUTPUT arrays written as NAME.npy."""
from __future__ import annotations

import os
import pathlib
import subprocess
import sys

import numpy as np
import pytest

ROOT = pathlib.Path(__file__).resolve().parent.parent
EXAMPLES = ROOT / "examples" / "basic"


def safetile(*args, cwd=None, module=True):
    env = dict(os.environ)
    env["PYTHONPATH"] = str(ROOT / "src") + os.pathsep + env.get("PYTHONPATH", "")
    cmd = [sys.executable, "-m", "safetile", *map(str, args)]
    return subprocess.run(cmd, capture_output=True, text=True, env=env, cwd=cwd, timeout=300)


def test_vector_add_through_cli(tmp_path):
    r = safetile("run", EXAMPLES / "vector_add.bas", "--input", "N=1000", "--input", "A=random",
                 "--input", "B=random", "--output-dir", tmp_path / "out", "--seed", "3")
    assert r.returncode == 0, r.stderr
    assert r.stdout == ""
    c = np.load(tmp_path / "out" / "C.npy")
    assert c.shape == (1000,) and c.dtype == np.float32
    # the random inputs are reproducible from the seed: uniform in [-1, 1)
    rng = np.random.default_rng(3)
    a = rng.uniform(-1, 1, 1000).astype(np.float32)
    b = rng.uniform(-1, 1, 1000).astype(np.float32)
    np.testing.assert_array_equal(c, a + b)


def test_gemm_through_cli_matches_numpy(tmp_path):
    rng = np.random.default_rng(0)
    a = rng.standard_normal((300, 200)).astype(np.float32)
    b = rng.standard_normal((200, 260)).astype(np.float32)
    np.save(tmp_path / "a.npy", a)
    np.save(tmp_path / "b.npy", b)
    r = safetile("run", EXAMPLES / "gemm.bas", "-i", "M=300", "-i", "N=260", "-i", "K=200",
                 "-i", f"A=@{tmp_path / 'a.npy'}", "-i", f"B=@{tmp_path / 'b.npy'}", "-o", tmp_path)
    assert r.returncode == 0, r.stderr
    c = np.load(tmp_path / "C.npy")
    ref = a.astype(np.float64) @ b
    assert np.linalg.norm(c - ref) / np.linalg.norm(ref) <= 1e-5


def test_gemm_random_inputs_through_cli(tmp_path):
    """``safetile run gemm.bas --input M=.. --input A=random ...`` equals NumPy (rel. error ≤ 1e-5)."""
    r = safetile("run", EXAMPLES / "gemm.bas", "--input", "M=256", "--input", "N=384", "--input", "K=160",
                 "--input", "A=random", "--input", "B=random", "--output-dir", tmp_path, "--seed", "5")
    assert r.returncode == 0, r.stderr
    rng = np.random.default_rng(5)  # random inputs are drawn in INPUT order
    a = rng.uniform(-1, 1, (256, 160)).astype(np.float32)
    b = rng.uniform(-1, 1, (160, 384)).astype(np.float32)
    c = np.load(tmp_path / "C.npy")
    ref = a.astype(np.float64) @ b
    assert np.linalg.norm(c - ref) / np.linalg.norm(ref) <= 1e-5


def test_print_output_is_the_only_stdout():
    r = safetile("run", EXAMPLES / "hello.bas")
    assert r.returncode == 0
    assert r.stdout.splitlines() == ["Hello, World!", "X =  42 ", "Y =  84 ", "Y is large",
                                     "I =  1 ", "I =  2 ", "I =  3 ", "I =  4 ", "I =  5 "]
    assert r.stderr == ""


def test_check_reports_errors_with_exit_status(tmp_path):
    bad = tmp_path / "bad.bas"
    bad.write_text("10 FOR I = 1 TO 3\n20 GOTO 99\n30 PRINT ABS(1, 2)\n")
    r = safetile("check", bad)
    assert r.returncode == 1
    assert "line 20: Undefined line number: there is no line 99" in r.stderr
    assert "FOR I without NEXT" in r.stderr
    assert "Traceback" not in r.stderr
    good = safetile("check", EXAMPLES / "gemm.bas")
    assert good.returncode == 0 and "no errors" in good.stdout


@pytest.mark.parametrize("what,marker", [("tokens", "kw(PRINT)"), ("ast", "Print("), ("ir", "kernel @basic_hello")])
def test_check_dump(what, marker):
    r = safetile("check", EXAMPLES / "hello.bas", "--dump", what)
    assert r.returncode == 0 and marker in r.stdout


def test_runtime_error_keeps_printed_output(tmp_path):
    p = tmp_path / "r.bas"
    p.write_text('10 PRINT "before"\n20 GOSUB 40\n40 RETURN\n')
    r = safetile("run", p)
    assert r.returncode == 1
    assert r.stdout == "before\nRETURN without GOSUB in 40\n"  # on the screen, as GW-BASIC shows it
    assert "runtime error" in r.stderr and "RETURN without GOSUB in 40" in r.stderr


def test_output_into_a_closed_pipe_stops_quietly(tmp_path):
    """``safetile run p.bas | head -1``: no error message when the reader goes away."""
    p = tmp_path / "many.bas"
    p.write_text('10 FOR I = 1 TO 20000: PRINT "line"; I: NEXT\n')
    env = dict(os.environ)
    env["PYTHONPATH"] = str(ROOT / "src") + os.pathsep + env.get("PYTHONPATH", "")
    r = subprocess.run(f'"{sys.executable}" -m safetile run "{p}" | head -1', shell=True, capture_output=True,
                       text=True, env=env, timeout=300)
    assert r.stdout == "line 1 \n"
    assert r.stderr == ""


def test_usage_errors(tmp_path):
    r = safetile("run", EXAMPLES / "vector_add.bas", "-i", "N=10")
    assert r.returncode == 2 and "missing input array A" in r.stderr
    r = safetile("run", EXAMPLES / "vector_add.bas", "-i", "N")
    assert r.returncode == 2 and "NAME=VALUE" in r.stderr
    r = safetile("run", tmp_path / "missing.bas")
    assert r.returncode == 2 and "cannot read" in r.stderr
    r = safetile("run", EXAMPLES / "vector_add.bas", "-i", "N=10", "-i", "A=@/nonexistent.npy", "-i", "B=random")
    assert r.returncode == 2 and "cannot load" in r.stderr


def test_console_script_entry_point_is_cli_main():
    import tomllib
    meta = tomllib.loads((ROOT / "pyproject.toml").read_text())
    assert meta["project"]["scripts"]["safetile"] == "safetile.cli:main"
    from safetile.cli import main
    assert main(["check", str(EXAMPLES / "hello.bas")]) == 0
