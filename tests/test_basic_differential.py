"""Differential fuzzing against GW-BASIC: random classic programs (tests/gwfuzz.py) run under
PC-BASIC and on safetile's CPU backend must print the same, warnings and errors included.

Runs only where PC-BASIC is importable (``.ci/run`` installs it when it installs cleanly).
A few dozen programs keep it to about half a minute; ``python tests/gwfuzz.py 1000`` runs a
longer campaign and prints the disagreements.
"""
from __future__ import annotations

import random

import gwbasic_reference
import gwfuzz
import pytest

pytestmark = pytest.mark.skipif(not gwbasic_reference.available(), reason="PC-BASIC is not installed")


def test_random_programs_agree_with_gw_basic():
    agree, total, bad = gwfuzz.compare(40, seed=20251124, show=3)
    report = "\n".join(f"{src}--- GW-BASIC ---\n{ref}--- safetile ---\n{ours}" for src, ref, ours in bad)
    assert total >= 35, "too many programs ran too long under PC-BASIC"
    assert agree >= total - 1, f"{total - agree} of {total} programs disagree:\n{report}"


def test_the_generator_covers_the_language():
    text = "".join(gwfuzz.program(random.Random(k)) for k in range(40))
    for word in ("DEF FN", "GOSUB", "WHILE", "FOR", "READ", "MID$", "STR$", "TAB(", "SPC(", "MOD", "\\", "^",
                 "SWAP", "ON ", "ELSE", "E$(", "D("):
        assert word in text, word
