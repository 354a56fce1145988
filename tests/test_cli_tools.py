"""The ``safetile`` command's tools: ``cache info|clear``, ``bench``, ``check KERNELS.py``."""
from __future__ import annotations

import json
import textwrap
from pathlib import Path

import numpy as np
import pytest

import safetile as ct
from safetile.cli import main

KERNELS = textwrap.dedent("""
    import safetile as ct

    @ct.kernel
    def vec_add(a, b, c, TILE: ct.Constant[int]):
        i = ct.bid(0)
        ct.store(c, index=(i,), tile=ct.load(a, index=(i,), shape=(TILE,)) + ct.load(b, index=(i,), shape=(TILE,)))

    @ct.entry
    def add(z: ct.Mut[ct.f32, "B"], x: ct.Ref[ct.f32, -1], y: ct.Ref[ct.f32, -1]):
        z.store(ct.load_tile_like(x, z) + ct.load_tile_like(y, z))

    @ct.entry
    def walk(c: ct.MappedMut[ct.f32, ("BM", "BN")], a: ct.Ref[ct.f32, (-1, -1)], s: ct.f32):
        pa = a.partition((BM, BN))
        for idx in c.iter_indices():
            c.store(pa.load(tuple(idx)) * s, idx)

    @ct.kernel
    def broken(x, y):
        ct.store(y, index=(0,), tile=ct.load(x, index=(0,), shape=(3,)))

    def not_a_kernel():
        pass
    """)
BROKEN_LINE = 1 + KERNELS.splitlines().index("    ct.store(y, index=(0,), tile=ct.load(x, index=(0,), shape=(3,)))")


@pytest.fixture
def kernels(tmp_path):
    path = tmp_path / "kernels.py"
    path.write_text(KERNELS)
    return path


def run(capsys, *argv):
    rc = main([str(a) for a in argv])
    out = capsys.readouterr()
    return rc, out.out, out.err


# ---------------------------------------------------------------------------------- cache

def test_the_suite_does_not_use_the_users_cache():
    from safetile.backends.triton.cache import cache_dir
    root = cache_dir()
    assert root is not None and not str(root).startswith(str(Path.home() / ".cache" / "safetile"))


def test_cache_info_and_clear(tmp_path, monkeypatch, capsys):
    from triton_interp import triton_interpreter
    root = tmp_path / "cache"
    monkeypatch.setenv("SAFETILE_CACHE_DIR", str(root))
    monkeypatch.setenv("TRITON_CACHE_DIR", str(tmp_path / "triton"))
    rc, out, _ = run(capsys, "cache", "info")
    assert rc == 0 and f"safetile cache: {root}" in out and "not created yet" in out

    @ct.kernel
    def double(x, y, T: ct.Constant[int]):
        ct.store(y, index=(ct.bid(0),), tile=ct.load(x, index=(ct.bid(0),), shape=(T,)) * 2)
    x = np.arange(64, dtype=np.float32)
    y = np.full_like(x, np.nan)
    with triton_interpreter():
        ct.launch(None, (4,), double, (x, y, 16))
    assert np.array_equal(y, 2 * x)
    sources = list(root.glob("*/st_*.py"))
    assert len(sources) == 1
    (root / "tune").mkdir()
    (root / "tune" / "k.json").write_text("{}")
    (root / "notes.txt").write_text("not ours")
    (tmp_path / "triton" / "ABC").mkdir(parents=True)
    (tmp_path / "triton" / "ABC" / "k.cubin").write_bytes(b"\0" * 100)

    rc, out, _ = run(capsys, "cache", "info")
    lines = {line.split("  ")[1].strip(): line for line in out.splitlines() if line.startswith("  ")}
    assert "     1 files" in lines["generated Triton sources"] and "     1 files" in lines["autotuning results"]
    assert "     2 files" in lines["total"]
    assert f"Triton's binary cache: {tmp_path / 'triton'} (TRITON_CACHE_DIR): 1 files, 100 B" in out

    rc, out, _ = run(capsys, "cache", "clear")
    assert rc == 0 and "removed 2 files" in out and f"from {root}" in out
    assert not sources[0].exists() and not (root / "tune").exists()
    assert (root / "notes.txt").read_text() == "not ours"  # only safetile's own files go
    assert (tmp_path / "triton" / "ABC" / "k.cubin").exists()
    rc, out, _ = run(capsys, "cache", "clear", "--triton")
    assert "removed 0 files" in out and "removed 1 files (100 B) from Triton's cache" in out
    assert not (tmp_path / "triton" / "ABC").exists()


def test_cache_disabled(monkeypatch, capsys):
    monkeypatch.setenv("SAFETILE_CACHE_DIR", "off")
    rc, out, _ = run(capsys, "cache", "info")
    assert rc == 0 and "safetile cache: disabled" in out
    rc, out, _ = run(capsys, "cache", "clear")
    assert rc == 0 and "nothing to clear" in out


# ---------------------------------------------------------------------------------- bench

def test_bench_runs_a_cpu_section_and_prints_its_table(tmp_path, capfd):
    out_json = tmp_path / "cpu.json"
    rc = main(["bench", "--device", "cpu", "add", "--repeat", "1", "--out", str(out_json)])
    out = capfd.readouterr().out
    assert rc == 0, out
    assert "$ cpu_bench.py --only add --repeat 1" in out
    table = out.splitlines()
    head = next(i for i, line in enumerate(table) if line.startswith("case"))
    assert "safetile ms" in table[head] and table[head + 1].startswith("vector add 2^24 f32")
    rows = json.loads(out_json.read_text())["results"]
    assert [r["case"] for r in rows] == ["vector add 2^24 f32, tile 1024"] and rows[0]["safetile_s"] > 0


def test_bench_sections_and_usage(capsys):
    rc, out, _ = run(capsys, "bench", "--device", "cpu", "--list")
    assert rc == 0 and "cpu sections: add, gemm, softmax, exec-modes" in out
    rc, out, _ = run(capsys, "bench", "--device", "gpu", "--list")
    assert "gpu sections: copy, add, gemm" in out
    rc, _, err = run(capsys, "bench", "--device", "cpu", "attention")
    assert rc == 2 and "unknown cpu benchmark section attention" in err
    rc, _, err = run(capsys, "bench", "--device", "cpu", "--bench-dir", "/nonexistent", "add")
    assert rc == 2 and "no benchmark suite at /nonexistent" in err


# ---------------------------------------------------------------------------------- check

def test_check_compiles_every_kernel_of_a_file(kernels, tmp_path, capsys):
    spec = tmp_path / "spec.json"
    spec.write_text(json.dumps({
        "vec_add": "f32[1000], f32[1000], f32[1000], 128",
        "add": ["f32[1000]/128, f32[1000], f32[1000]", "f32[64]/64, f32[64], f32[64]"],
        "walk": {"args": "f32[100,96]/(32,32)@5, f32[100,96], f32(0.5)"},
        "broken": "f32[16], f32[16]",
    }))
    rc, out, _ = run(capsys, "check", kernels, "--spec", spec)
    assert rc == 1
    lines = out.splitlines()
    assert f"{kernels}: vec_add(f32[1000], f32[1000], f32[1000], 128): ok" in lines
    assert f"{kernels}: add(f32[64]/64, f32[64], f32[64]): ok" in lines
    assert f"{kernels}: walk(f32[100,96]/(32,32)@5, f32[100,96], f32(0.5)): ok" in lines
    i = lines.index(f"{kernels}: broken(f32[16], f32[16]): error")
    assert lines[i + 1] == "TileTypeError: tile dimensions must be powers of two, got shape (3,)"
    assert lines[i + 2] == f'  File "{kernels}", line {BROKEN_LINE}, column 34, in broken'
    assert lines[-1] == f"{kernels}: 4 compiled, 1 error"
    assert "not_a_kernel" not in out


def test_check_with_args_dumps_ir_and_reports_untyped_kernels(kernels, tmp_path, capsys):
    rc, out, _ = run(capsys, "check", kernels, "--kernel", "add", "--args", "f32[1000]/128, f32[1000], f32[1000]",
                     "--dump", "ir")
    assert rc == 0
    assert "kernel @add(%z0: array<?:float32>, %x1: array<?:float32,ro>" in out
    assert "load(%x1" in out and "{shape=(128,)" in out
    spec = tmp_path / "one.json"
    spec.write_text(json.dumps({"add": "f32[64]/64, f32[64], f32[64]"}))
    rc, out, _ = run(capsys, "check", kernels, "--spec", spec)
    assert rc == 0 and f"{kernels}: vec_add: not compiled (no argument types" in out
    assert out.splitlines()[-1] == f"{kernels}: 1 compiled, 0 errors, 3 without argument types"
    rc, out, err = run(capsys, "check", kernels)
    assert rc == 2 and "nothing was compiled" in err


def test_check_refuses_what_a_launch_would_refuse(kernels, capsys):
    rc, out, _ = run(capsys, "check", kernels, "--kernel", "add", "--args", "f32[1000]/100, f32[1000], f32[1000]")
    assert rc == 1 and "LaunchTypeError" in out and "must be powers of two" in out
    rc, out, _ = run(capsys, "check", kernels, "--kernel", "add", "--args", "f32[1000]/128, f32[1000], f16[1000]")
    assert rc == 1 and "argument 'y' has element type float16 but the parameter is declared float32" in out


def test_check_dumps_triton_source(kernels, capsys):
    pytest.importorskip("triton")
    rc, out, _ = run(capsys, "check", kernels, "--kernel", "vec_add", "--args", "f32[1000], f32[1000], f32[1000], 128",
                     "--dump", "triton", "--target", "90")
    assert rc == 0 and "@triton.jit" in out and "def st_vec_add(" in out


@pytest.mark.parametrize("argv,words", [
    (["--args", "f32[8], f32[8], f32[8], 8"], "--args gives the types of one kernel; name it with --kernel"),
    (["--kernel", "nope", "--args", "f32[8]"], "has no kernel 'nope'"),
    (["--kernel", "add", "--args", "f32[8]/8, q32[8], f32[8]"], "'q32' is not an element type"),
    (["--kernel", "add", "--args", "f32[8]/8, f32[8"], "cannot read argument types"),
    (["--kernel", "vec_add", "--args", "f32[8]/8, f32[8], f32[8], 8"], "a partition (/...) is for @ct.entry"),
    (["--kernel", "add", "--args", "f32[0]/8, f32[8], f32[8]"], "sizes must be positive integers"),
    (["--dump", "tokens"], "--dump tokens is for BASIC programs"),
])
def test_check_usage_errors(kernels, capsys, argv, words):
    rc, _, err = run(capsys, "check", kernels, *argv)
    assert rc == 2 and words in err, err


def test_check_reports_an_import_failure_with_the_files_own_frames(tmp_path, capsys):
    bad = tmp_path / "bad.py"
    bad.write_text("import safetile as ct\n\nSCALE = 1 / 0\n")
    rc, _, err = run(capsys, "check", bad)
    assert rc == 2 and f"importing {bad} failed:" in err and "ZeroDivisionError" in err
    assert f'File "{bad}", line 3' in err and "importlib" not in err


def test_check_of_a_basic_program_refuses_triton_dumps(tmp_path, capsys):
    prog = tmp_path / "p.bas"
    prog.write_text('10 PRINT "HI"\n')
    rc, _, err = run(capsys, "check", prog, "--dump", "triton")
    assert rc == 2 and "--dump triton is for Python kernel files" in err
    rc, out, _ = run(capsys, "check", prog)
    assert rc == 0 and "no errors" in out
