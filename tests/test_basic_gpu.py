"""BASIC programs on a real GPU through the command line and the Python API: the same
results as NumPy and as the CPU backend. Skipped without a CUDA GPU."""
from __future__ import annotations

import pathlib

import numpy as np
import pytest

from safetile.basic import compile_program
from test_basic_cli import EXAMPLES, safetile

ROOT = pathlib.Path(__file__).resolve().parent.parent

torch = pytest.importorskip("torch")
pytestmark = [pytest.mark.gpu,
              pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")]


def rel_err(x, ref) -> float:
    return float(np.linalg.norm(x - ref) / np.linalg.norm(ref))


def test_vector_add_cli_on_gpu(tmp_path):
    rng = np.random.default_rng(11)
    a = rng.standard_normal(100_003).astype(np.float32)
    b = rng.standard_normal(100_003).astype(np.float32)
    np.save(tmp_path / "a.npy", a)
    np.save(tmp_path / "b.npy", b)
    r = safetile("run", EXAMPLES / "vector_add.bas", "--backend", "gpu", "-i", "N=100003",
                 "-i", f"A=@{tmp_path / 'a.npy'}", "-i", f"B=@{tmp_path / 'b.npy'}", "-o", tmp_path)
    assert r.returncode == 0, r.stderr
    np.testing.assert_array_equal(np.load(tmp_path / "C.npy"), a + b)


@pytest.mark.parametrize("m,n,k", [(300, 260, 200), (1024, 1024, 1024)])
def test_gemm_cli_on_gpu(tmp_path, m, n, k):
    rng = np.random.default_rng(m + n + k)
    a = rng.standard_normal((m, k)).astype(np.float32)
    b = rng.standard_normal((k, n)).astype(np.float32)
    np.save(tmp_path / "a.npy", a)
    np.save(tmp_path / "b.npy", b)
    r = safetile("run", EXAMPLES / "gemm.bas", "--backend", "gpu", "-i", f"M={m}", "-i", f"N={n}",
                 "-i", f"K={k}", "-i", f"A=@{tmp_path / 'a.npy'}", "-i", f"B=@{tmp_path / 'b.npy'}",
                 "-o", tmp_path)
    assert r.returncode == 0, r.stderr
    assert rel_err(np.load(tmp_path / "C.npy"), a.astype(np.float64) @ b) <= 1e-5


@pytest.mark.parametrize("name", ["tile_diverge", "tile_math", "gcd", "data_read"])
def test_corpus_tile_programs_on_gpu(name, capsys):
    prog = compile_program((ROOT / "tests" / "basic_corpus" / f"{name}.bas").read_text(), f"{name}.bas")
    cpu = prog.run()
    gpu = prog.run(backend="gpu")
    torch.cuda.synchronize()
    assert cpu.keys() == gpu.keys()
    for key in cpu:
        np.testing.assert_allclose(gpu[key], cpu[key], rtol=1e-6, atol=1e-6)


CORPUS = ROOT / "tests" / "basic_corpus"


@pytest.mark.parametrize("name", sorted(p.stem for p in CORPUS.glob("*.bas")))
def test_corpus_prints_the_same_on_gpu(name, capsys):
    """Every corpus program prints on the GPU exactly its golden (GW-BASIC's output, or the
    hand-checked one of an extension program): device prints are formatted by the host."""
    from safetile.errors import TileRuntimeError
    prog = compile_program((CORPUS / f"{name}.bas").read_text(), f"{name}.bas")
    try:
        prog.run(seed=0, backend="gpu")
    except TileRuntimeError:
        pass  # a program that stops with a GW-BASIC error shows it in its output
    torch.cuda.synchronize()
    assert capsys.readouterr().out == (CORPUS / f"{name}.out").read_text()
