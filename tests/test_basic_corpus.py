"""The BASIC corpus: every ``tests/basic_corpus/NAME.bas`` must print exactly ``NAME.out`` on
the CPU backend.

The goldens of the classic programs are GW-BASIC's output, produced by PC-BASIC (a GW-BASIC
emulator) with ``basic_corpus/make_goldens.py``; where PC-BASIC is installed, this test also
re-runs it to keep them honest. The few programs using safetile's extensions (tiles, BID,
block IF, MIN/MAX, AS types) have hand-checked goldens.
"""
from __future__ import annotations

import importlib.util
import pathlib

import pytest

from safetile.basic import compile_program
from safetile.errors import TileRuntimeError

CORPUS = pathlib.Path(__file__).resolve().parent / "basic_corpus"
PROGRAMS = sorted(p.stem for p in CORPUS.glob("*.bas"))


def _extensions() -> set[str]:
    spec = importlib.util.spec_from_file_location("make_goldens", CORPUS / "make_goldens.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod.EXTENSIONS


EXTENSIONS = _extensions()
CLASSIC = [p for p in PROGRAMS if p not in EXTENSIONS]


def test_corpus_is_big_enough():
    assert len(CLASSIC) >= 60
    for name in PROGRAMS:
        assert (CORPUS / f"{name}.out").exists(), f"{name}.bas has no golden output"


@pytest.mark.parametrize("name", PROGRAMS)
def test_corpus_program(name, capsys):
    source = (CORPUS / f"{name}.bas").read_text()
    expected = (CORPUS / f"{name}.out").read_text()
    prog = compile_program(source, f"{name}.bas")
    try:
        prog.run(seed=0)
    except TileRuntimeError:
        pass  # a program that stops with a GW-BASIC error shows it in its output
    assert capsys.readouterr().out == expected


@pytest.mark.parametrize("name", CLASSIC)
def test_golden_is_gw_basics_output(name):
    reference = pytest.importorskip("gwbasic_reference")
    if not reference.available():
        pytest.skip("PC-BASIC is not installed")
    assert reference.run_reference((CORPUS / f"{name}.bas").read_text(), seconds=120) == (CORPUS / f"{name}.out").read_text()
