#!/usr/bin/env python
"""Run round 6's attacks with the rounds' sequential runner (attacks/sequential_runner.py, which says
what an attack prints): python run_all.py [-k substring] [--timeout S] [--triton]"""
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
from sequential_runner import main  # noqa: E402

HEADER = ("Round-6 red-team results (docs only: README.md, docs/safe.md, safety.md, semantics.md, torch.md; src/ and\n"
          "tests/ not read). Run: cd attacks/round6 && python run_all.py  (sequential, CPU backend; --triton adds the\n"
          "Triton-interpreter run of attacks marked '# BACKENDS: cpu triton').\n\n")

if __name__ == "__main__":
    sys.exit(main(HERE, r"^6\d\d[a-z]?_.*\.py$", HEADER))
