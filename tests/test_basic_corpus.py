"""The BASIC corpus: every ``tests/basic_corpus/NAME.bas`` must print exactly
``NAME.out`` on the CPU backend.

The golden outputs of classic programs were produced by ``basic_corpus/reference.py``, a
small interpreter written independently of the compiler (classic run-time FOR/NEXT and
GOSUB stacks instead of compiled control flow) and checked by hand; this test also keeps
the reference honest by re-running it on them. Tile programs (several blocks, tile
variables, typed local arrays) have hand-derived goldens.
"""
from __future__ import annotations

import importlib.util
import pathlib

import pytest

from safetile.basic import compile_program

CORPUS = pathlib.Path(__file__).resolve().parent / "basic_corpus"
PROGRAMS = sorted(p.stem for p in CORPUS.glob("*.bas"))
HAND_DERIVED = {"tile_blocks", "tile_math", "tile_diverge", "local_types"}


def _reference():
    spec = importlib.util.spec_from_file_location("basic_reference", CORPUS / "reference.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_corpus_is_big_enough():
    assert len(PROGRAMS) >= 25
    for name in PROGRAMS:
        assert (CORPUS / f"{name}.out").exists(), f"{name}.bas has no golden output"


@pytest.mark.parametrize("name", PROGRAMS)
def test_corpus_program(name, capsys):
    source = (CORPUS / f"{name}.bas").read_text()
    expected = (CORPUS / f"{name}.out").read_text()
    prog = compile_program(source, f"{name}.bas")
    prog.run(seed=0)
    assert capsys.readouterr().out == expected


@pytest.mark.parametrize("name", [p for p in PROGRAMS if p not in HAND_DERIVED])
def test_reference_agrees_with_golden(name):
    ref = _reference()
    source = (CORPUS / f"{name}.bas").read_text()
    assert ref.run_program(source, seed=0) == (CORPUS / f"{name}.out").read_text()
